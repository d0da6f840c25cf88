"""The store's tables, and how evaldag creates and migrates them.

``evaldag_scores`` holds the score rows (``ScoreRow``'s fields, one column each; nested values
as JSON text, JSONB on PostgreSQL), ``evaldag_experiments`` one row per stored ``run_evals`` run
(its averages, verdict and summary), ``evaldag_schema`` the schema versions applied. A new
database gets the current tables and is stamped with ``SCHEMA_VERSION``; a database made by an
older evaldag gets the steps of ``MIGRATIONS`` it misses, in order, each once. Both happen in
one transaction that holds the database's write lock (SQLite) or an advisory lock
(PostgreSQL), so processes opening one store at the same time migrate it once.

Tables of these names that evaldag did not make (an unstamped database that has one, or a
table without the columns its version has) are refused when the store opens: found only when
a run's rows are written, they would cost the run.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from evaldag._store.values import loaded_json, stored_json
from evaldag.errors import EvalDagError

#: The schema this evaldag writes.
SCHEMA_VERSION = 2
#: The key of PostgreSQL's advisory lock held while migrating (any fixed 64-bit number).
_MIGRATION_LOCK = 0x65_76_61_6C_64_61_67


class JsonText(sa.types.TypeDecorator):
    """JSON stored as text (``evaldag._store.values``: non-finite numbers kept). (SQLite's
    ``JSON`` columns have numeric affinity: the text ``0`` would come back as the number 0, and
    large integers as floats.)"""

    impl = sa.Text
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: sa.Dialect) -> str | None:
        return stored_json(value)

    def process_result_value(self, value: Any, dialect: sa.Dialect) -> Any:
        return loaded_json(value)


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
    sa.Column("name", sa.Text, info={"since": 2}),
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
    existing = set(sa.inspect(connection).get_table_names())
    found = 0
    if versions.name in existing:
        _require_own_table(connection, versions, location)
        found = connection.scalar(sa.select(sa.func.max(versions.c.version))) or 0
    if found > SCHEMA_VERSION:
        raise EvalDagError(
            "EVALDAG_STORE_SCHEMA_TOO_NEW",
            f"The score store {location} has schema version {found}, newer than this evaldag's "
            f"({SCHEMA_VERSION}); upgrade evaldag to use it",
            domain="STORAGE",
            details={"store": location, "version": found, "supported": SCHEMA_VERSION},
        )
    for table in (scores, experiments):
        if found == 0 and table.name in existing:
            raise _foreign_table(
                table, location, f"it has a table '{table.name}' but no evaldag schema version"
            )
        if found and table.name not in existing:
            raise _foreign_table(
                table, location, f"it is at schema version {found} but has no '{table.name}'"
            )
        if found:
            _require_own_table(connection, table, location, found)
    versions.create(connection, checkfirst=True)
    now = datetime.now(UTC)
    if found == 0:
        metadata.create_all(connection, tables=[scores, experiments])
        connection.execute(versions.insert(), [{"version": SCHEMA_VERSION, "applied_at": now}])
        return found
    for version in range(found + 1, SCHEMA_VERSION + 1):
        MIGRATIONS[version](connection)
        connection.execute(versions.insert(), [{"version": version, "applied_at": now}])
    return found


def _require_own_table(
    connection: sa.Connection, table: sa.Table, location: str, version: int = SCHEMA_VERSION
) -> None:
    """``table`` as the database has it holds every column evaldag's schema ``version`` has (a
    column's ``info["since"]``: the version that added it), and no column that evaldag's rows
    would leave empty but the database requires."""
    found = {column["name"]: column for column in sa.inspect(connection).get_columns(table.name)}
    missing = [
        column.name
        for column in table.c
        if column.name not in found and column.info.get("since", 1) <= version
    ]
    if missing:
        raise _foreign_table(
            table, location, f"its table '{table.name}' lacks the column(s) {', '.join(missing)}"
        )
    required = [
        name
        for name, column in found.items()
        if name not in table.c and not column["nullable"] and column.get("default") is None
    ]
    if required:
        raise _foreign_table(
            table,
            location,
            f"its table '{table.name}' requires column(s) evaldag does not fill: "
            + ", ".join(required),
        )


def _foreign_table(table: sa.Table, location: str, problem: str) -> EvalDagError:
    return EvalDagError(
        "EVALDAG_STORE_FOREIGN_TABLE",
        f"The score store {location} is not evaldag's as it stands: {problem}. evaldag keeps "
        "its rows in tables of these names; give the store a database of its own (another "
        "SQLite file, PostgreSQL database or schema), or rename the tables in the way",
        domain="STORAGE",
        details={"store": location, "table": table.name},
    )
