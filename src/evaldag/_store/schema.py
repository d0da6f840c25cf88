"""The store's tables, and how evaldag creates and migrates them.

``evaldag_scores`` holds the score rows (``ScoreRow``'s fields, one column each; nested values
as JSON text, JSONB on PostgreSQL), ``evaldag_experiments`` one row per stored ``run_evals`` run
(its averages, verdict and summary), ``evaldag_schema`` the schema versions applied. A new
database gets the current tables and is stamped with ``SCHEMA_VERSION``; a database made by an
older evaldag gets the steps of ``MIGRATIONS`` it misses, in order, each once. Both happen in
one transaction that holds the database's write lock (SQLite) or an advisory lock
(PostgreSQL), so processes opening one store at the same time migrate it once.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import orjson
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from evaldag._compat.js import json_text
from evaldag.errors import EvalDagError

#: The schema this evaldag writes.
SCHEMA_VERSION = 2
#: The key of PostgreSQL's advisory lock held while migrating (any fixed 64-bit number).
_MIGRATION_LOCK = 0x65_76_61_6C_64_61_67


class JsonText(sa.types.TypeDecorator):
    """JSON stored as text. (SQLite's ``JSON`` columns have numeric affinity: the text ``0``
    would come back as the number 0, and large integers as floats.)"""

    impl = sa.Text
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: sa.Dialect) -> str | None:
        return json_text(value)

    def process_result_value(self, value: Any, dialect: sa.Dialect) -> Any:
        return None if value is None else orjson.loads(value)


_JSON = JsonText().with_variant(postgresql.JSONB(none_as_null=True), "postgresql")
_TIME = sa.DateTime(timezone=True)

metadata = sa.MetaData()

scores = sa.Table(
    "evaldag_scores",
    metadata,
    sa.Column("id", sa.Text, primary_key=True),
    sa.Column("scorer_id", sa.Text, nullable=False),
    sa.Column("entity_id", sa.Text, nullable=False),
    sa.Column("run_id", sa.Text),
    sa.Column("input", _JSON),
    sa.Column("output", _JSON),
    sa.Column("additional_context", _JSON),
    sa.Column("request_context", _JSON),
    sa.Column("score", sa.Float),
    sa.Column("reason", sa.Text),
    sa.Column("preprocess_step_result", _JSON),
    sa.Column("preprocess_prompt", sa.Text),
    sa.Column("analyze_step_result", _JSON),
    sa.Column("analyze_prompt", sa.Text),
    sa.Column("generate_score_prompt", sa.Text),
    sa.Column("generate_reason_prompt", sa.Text),
    sa.Column("extract_step_result", _JSON),
    sa.Column("extract_prompt", sa.Text),
    sa.Column("reason_prompt", sa.Text),
    sa.Column("scorer", _JSON, nullable=False),
    sa.Column("metadata", _JSON),
    sa.Column("source", sa.Text, nullable=False),
    sa.Column("entity", _JSON, nullable=False),
    sa.Column("entity_type", sa.Text),
    sa.Column("structured_output", sa.Boolean),
    sa.Column("trace_id", sa.Text),
    sa.Column("span_id", sa.Text),
    sa.Column("resource_id", sa.Text),
    sa.Column("thread_id", sa.Text),
    sa.Column("organization_id", sa.Text),
    sa.Column("project_id", sa.Text),
    sa.Column("batch_id", sa.Text),
    sa.Column("dataset_id", sa.Text),
    sa.Column("dataset_item_id", sa.Text),
    sa.Column("created_at", _TIME, nullable=False),
    sa.Column("updated_at", _TIME, nullable=False),
    sa.Column("experiment_id", sa.Text),
    sa.Column("error", sa.Text),
    sa.Column("failed_step", sa.Text),
    sa.Column("completed_steps", _JSON),
    sa.Column("not_scorable", _JSON),
    sa.Column("judge", _JSON),
    sa.Index("ix_evaldag_scores_experiment_id", "experiment_id"),
    sa.Index("ix_evaldag_scores_scorer_id_created_at", "scorer_id", "created_at"),
    sa.Index("ix_evaldag_scores_run_id", "run_id"),
    sa.Index("ix_evaldag_scores_trace_id", "trace_id"),
)

experiments = sa.Table(
    "evaldag_experiments",
    metadata,
    sa.Column("id", sa.Text, primary_key=True),
    sa.Column("created_at", _TIME, nullable=False),
    sa.Column("verdict", sa.Text),
    sa.Column("total_items", sa.Integer, nullable=False),
    sa.Column("record", _JSON, nullable=False),
    sa.Column("name", sa.Text),  # version 2
    sa.Index("ix_evaldag_experiments_name_created_at", "name", "created_at"),
)

versions = sa.Table(
    "evaldag_schema",
    metadata,
    sa.Column("version", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("applied_at", _TIME, nullable=False),
)


def _experiment_names(connection: sa.Connection) -> None:
    """Version 2: experiments get a name (``run_evals(name=...)``), found by an index; the runs
    stored before have none."""
    column = experiments.c.name
    kind = column.type.compile(dialect=connection.dialect)
    connection.execute(sa.text(f"ALTER TABLE {experiments.name} ADD COLUMN {column.name} {kind}"))
    for index in experiments.indexes:
        index.create(connection)


#: Steps from version ``n - 1`` to ``n``, for databases an older evaldag created.
MIGRATIONS: dict[int, Callable[[sa.Connection], None]] = {2: _experiment_names}


def migrated(connection: sa.Connection, location: str) -> int:
    """Bring the database behind ``connection`` (in a write transaction) to ``SCHEMA_VERSION``.

    :return: the version it had before: 0 for a new database.
    """
    if connection.dialect.name == "postgresql":
        connection.execute(sa.select(sa.func.pg_advisory_xact_lock(_MIGRATION_LOCK)))
    versions.create(connection, checkfirst=True)
    found = connection.scalar(sa.select(sa.func.max(versions.c.version))) or 0
    if found > SCHEMA_VERSION:
        raise EvalDagError(
            "EVALDAG_STORE_SCHEMA_TOO_NEW",
            f"The score store {location} has schema version {found}, newer than this evaldag's "
            f"({SCHEMA_VERSION}); upgrade evaldag to use it",
            domain="STORAGE",
            details={"store": location, "version": found, "supported": SCHEMA_VERSION},
        )
    now = datetime.now(UTC)
    if found == 0:
        metadata.create_all(connection, tables=[scores, experiments])
        connection.execute(versions.insert(), [{"version": SCHEMA_VERSION, "applied_at": now}])
        return found
    for version in range(found + 1, SCHEMA_VERSION + 1):
        MIGRATIONS[version](connection)
        connection.execute(versions.insert(), [{"version": version, "applied_at": now}])
    return found
