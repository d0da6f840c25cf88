"""``SqlScoreStore``: score rows in SQLite (a file) or PostgreSQL, reached by URL through
SQLAlchemy; the ``ScoreStore`` evaldag opens for ``sqlite`` and ``postgresql`` locations.

Writes are upserts by row id (``INSERT ... ON CONFLICT (id) DO UPDATE``), so saving a row again
replaces it and keeps its ``created_at``. Concurrent writers are safe: on SQLite every write
transaction takes the database's write lock when it begins (``BEGIN IMMEDIATE``, WAL journal,
waiting up to 30 s for another writer), on PostgreSQL rows are upserted atomically (a lock is
waited for 30 s at most, a connection 10 s). A store object is safe to share between threads;
a forked child opens connections of its own.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import pandas as pd
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from evaldag._judge.databases import WRITE, database_engine, database_problem
from evaldag._results.eval_result import EvalResult, verdict_word
from evaldag._store import schema
from evaldag._store.experiments import experiment_id
from evaldag._store.results import experiment_record, result_from_rows, result_rows
from evaldag._store.rows import ROW_FIELDS, ScoreRow, Source
from evaldag._store.values import json_memo, loaded_json, nul_free, stored_json
from evaldag._util.credentials import url_secrets, url_without_credentials
from evaldag.errors import EvalDagError

#: Dialects whose INSERT has ``ON CONFLICT DO UPDATE``, the upsert the store relies on.
_UPSERTS: dict[str, Any] = {"sqlite": sqlite.insert, "postgresql": postgresql.insert}
_ROWS_PER_STATEMENT = 500


class SqlScoreStore:
    """A score store: Mastra's score rows in a SQL database that evaldag creates and migrates.

    It pickles as its URL: unpickled (in a scoring process), it opens connections of its own.

    :param location: a file path for SQLite (created if missing), or a SQLAlchemy URL such as
        ``"postgresql://user:password@host/db"`` (PostgreSQL needs ``evaldag[postgres]``).
    """

    def __init__(self, location: str | os.PathLike[str] = "scores.db") -> None:
        self.url = _url(location)
        full = self.url.render_as_string(hide_password=False)
        self.location = url_without_credentials(full)
        self._secrets = url_secrets(full)
        if self.url.get_backend_name() not in _UPSERTS:
            raise EvalDagError(
                "EVALDAG_STORE_UNSUPPORTED_DATABASE",
                f"The score store {self.location} is on '{self.url.get_backend_name()}'; evaldag "
                f"stores scores in {' or '.join(sorted(_UPSERTS))} (databases with "
                "INSERT ... ON CONFLICT)",
                domain="STORAGE",
                details={"store": self.location},
            )
        self._engine = database_engine(
            self.url, json_serializer=stored_json, json_deserializer=loaded_json
        )
        try:
            with self._transaction("open") as connection:
                schema.migrated(connection, self.location)
        except EvalDagError:
            self._engine.dispose()
            raise

    def save(self, rows: Iterable[ScoreRow | Mapping[str, Any]]) -> int:
        """Upsert ``rows`` (``ScoreRow``s or dicts of their fields) in one transaction.

        :return: how many rows were written.
        """
        now = datetime.now(UTC)
        records = [self._record(row, now) for row in rows]
        if records:
            with json_memo(), self._transaction("write to") as connection:
                _upsert(connection, records)
        return len(records)

    def save_result(
        self,
        result: EvalResult,
        *,
        entity: str | None = None,
        rows_saved_since: datetime | None = None,
    ) -> int:
        """Store a ``run_evals`` result: its experiment and one TEST row per item and scorer.
        The experiment's rows are the result's: a TEST row of an earlier save of the same
        experiment that this one does not write (a scorer the run no longer has) is deleted.

        :param entity: what produced the outputs (default ``"dataset"``).
        :param rows_saved_since: the result's rows were saved with ``save`` since this time, in
            parts (a streamed run's); ``result.items`` holds none of them, and the experiment's
            TEST rows saved before it are deleted.
        :return: how many score rows were written.
        """
        if result.experiment_id is None:
            raise EvalDagError(
                "EVALDAG_STORE_NO_EXPERIMENT_ID",
                "This result has no experiment id (it was written before evaldag kept one); "
                "run the eval again to store it",
                domain="STORAGE",
            )
        now = datetime.now(UTC)
        records = [self._record(row, now) for row in result_rows(result, entity=entity)]
        experiment = {
            "id": result.experiment_id,
            "name": result.name,
            "created_at": now,
            "verdict": verdict_word(result),
            "total_items": result.summary.total_items,
            "record": experiment_record(result),
        }
        insert = _UPSERTS[self.url.get_backend_name()](schema.experiments)
        with json_memo(), self._transaction("write to") as connection:
            connection.execute(
                insert.on_conflict_do_update(
                    index_elements=["id"],
                    set_={
                        c: insert.excluded[c] for c in ("name", "verdict", "total_items", "record")
                    },
                ),
                [experiment],
            )
            _upsert(connection, records)
            scores = schema.scores
            connection.execute(
                sa.delete(scores).where(
                    scores.c.experiment_id == result.experiment_id,
                    scores.c.source == "TEST",
                    scores.c.updated_at < (now if rows_saved_since is None else rows_saved_since),
                )
            )
        return len(records)

    def scores(
        self,
        *,
        experiment_id: str | None = None,
        scorer_id: str | None = None,
        source: Source | None = None,
    ) -> pd.DataFrame:
        """The stored rows matching every filter given, oldest first: one column per row field."""
        table = schema.scores
        query = sa.select(table).order_by(table.c.created_at, table.c.id)
        for column, value in (
            ("experiment_id", experiment_id),
            ("scorer_id", scorer_id),
            ("source", source),
        ):
            if value is not None:
                query = query.where(table.c[column] == value)
        with self._transaction("read") as connection:
            frame = pd.DataFrame(connection.execute(query).mappings().all(), columns=ROW_FIELDS)
        for column in ROW_FIELDS:
            if column in ("created_at", "updated_at"):
                frame[column] = pd.to_datetime(frame[column], utc=True)
            elif column != "score":  # missing text and JSON values are None, never NaN
                frame[column] = frame[column].astype(object).where(frame[column].notna(), None)
        return frame

    def experiments(self, name: str | None = None) -> pd.DataFrame:
        """The stored ``run_evals`` runs, oldest first: id, name, created_at, verdict,
        total_items. The verdict is ``passed``, ``scored``, ``failed``, None (no gates or
        thresholds) or ``untrustworthy``: the run measured nothing (``summary.untrustworthy``),
        whatever its gates said.

        :param name: only the runs of this name (``run_evals(name=...)``).
        """
        table = schema.experiments
        verdict = _stored_verdict(self.url.get_backend_name())
        query = sa.select(
            table.c.id, table.c.name, table.c.created_at, verdict, table.c.total_items
        ).order_by(table.c.created_at, table.c.id)
        if name is not None:
            query = query.where(table.c.name == name)
        with self._transaction("read") as connection:
            frame = pd.DataFrame(
                connection.execute(query).mappings().all(),
                columns=list(query.selected_columns.keys()),
            )
        frame["created_at"] = pd.to_datetime(frame["created_at"], utc=True)
        for column in ("name", "verdict"):  # a missing one is None, never NaN
            frame[column] = frame[column].astype(object).where(frame[column].notna(), None)
        return frame

    def experiment_id(self, experiment: str) -> str:
        """The id of the stored run ``experiment`` names: its id, its name (the latest run of
        that name), or the start of one id (at least 4 characters); anything else is an error
        listing the ids and names it is near."""
        with self._transaction("read") as connection:
            return experiment_id(connection, experiment, self.location)

    def result(self, experiment: str | None = None) -> EvalResult:
        """The stored run ``experiment`` (an id or a name, see ``experiment_id``; default: the
        latest run) as an ``EvalResult``."""
        table = schema.experiments
        query = sa.select(table.c.id, table.c.record)
        with self._transaction("read") as connection:
            if experiment is None:
                latest = query.order_by(table.c.created_at.desc(), table.c.id.desc()).limit(1)
                found = connection.execute(latest).first()
            else:
                wanted = experiment_id(connection, experiment, self.location)
                found = connection.execute(query.where(table.c.id == wanted)).first()
        if found is None:
            raise EvalDagError(
                "EVALDAG_STORE_NO_EXPERIMENT",
                f"The score store {self.location} holds no experiment; store one with "
                "run_evals(..., store=...)",
                domain="STORAGE",
                details={"store": self.location},
            )
        return result_from_rows(self.scores(experiment_id=found.id, source="TEST"), found.record)

    def close(self) -> None:
        """Close the store's connections."""
        self._engine.dispose()

    def __enter__(self) -> SqlScoreStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SqlScoreStore({self.location!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (SqlScoreStore, (self.url.render_as_string(hide_password=False),))

    def _record(self, row: ScoreRow | Mapping[str, Any], now: datetime) -> dict[str, Any]:
        """A row's fields as written: timestamps set; on PostgreSQL, which cannot hold NUL
        characters, each one replaced and the row's metadata saying so (``_store.values``)."""
        model = row if isinstance(row, ScoreRow) else ScoreRow.model_validate(row)
        record = model.__dict__.copy()  # its fields (dict(model) iterates them in Python)
        record["created_at"] = model.created_at or now
        record["updated_at"] = now
        return nul_free(record) if self.url.get_backend_name() == "postgresql" else record

    @contextmanager
    def _transaction(self, action: Literal["open", "write to", "read"]) -> Iterator[sa.Connection]:
        """A transaction; one that may write takes SQLite's write lock as it begins."""
        options = {WRITE: action != "read"}
        try:
            with self._engine.connect().execution_options(**options) as connection:
                with connection.begin():
                    yield connection
        except sa.exc.SQLAlchemyError as error:
            raise _store_error(self.location, action, error, self._secrets) from error


def _url(location: str | os.PathLike[str]) -> sa.URL:
    text = os.fspath(location)
    if "://" in text:
        try:
            return sa.make_url(text)
        except sa.exc.ArgumentError as error:
            raise EvalDagError(
                "EVALDAG_STORE_INVALID_URL",
                f"store={url_without_credentials(text)!r} is not a database URL (e.g. "
                "'postgresql://user@host/db') nor a file path",
                domain="STORAGE",
                cause=error,
            ) from error
    path = Path(text).expanduser()
    if not text.strip() or path.is_dir() or not path.parent.is_dir():
        problem = "is a directory" if path.is_dir() else "is not in an existing folder"
        raise EvalDagError(
            "EVALDAG_STORE_INVALID_URL",
            f"store={text!r} {problem}; give a SQLite file path or a database URL",
            domain="STORAGE",
            details={"store": text},
        )
    return sa.URL.create("sqlite", database=str(path.resolve()))


def _stored_verdict(dialect: str) -> sa.ColumnElement[Any]:
    """The verdict column, ``untrustworthy`` wherever the run's record says its verdict cannot
    be trusted: a run an older evaldag stored kept its gates' verdict (``passed``) there."""
    record = schema.experiments.c.record
    mark = (
        sa.func.jsonb_extract_path_text(record, "result", "summary", "untrustworthy")
        if dialect == "postgresql"
        else sa.func.json_extract(record, "$.result.summary.untrustworthy")
    )
    verdict = schema.experiments.c.verdict
    return sa.case((mark.is_not(None), "untrustworthy"), else_=verdict).label(verdict.name)


def _upsert(connection: sa.Connection, records: list[dict[str, Any]]) -> None:
    insert = _UPSERTS[connection.dialect.name](schema.scores)
    kept = ("id", "created_at")
    statement = insert.on_conflict_do_update(
        index_elements=["id"],
        set_={c.name: insert.excluded[c.name] for c in schema.scores.c if c.name not in kept},
    )
    for start in range(0, len(records), _ROWS_PER_STATEMENT):
        connection.execute(statement, records[start : start + _ROWS_PER_STATEMENT])


def _store_error(
    location: str, action: str, error: sa.exc.SQLAlchemyError, secrets: tuple[str, ...]
) -> EvalDagError:
    detail = database_problem(error, secrets)
    return EvalDagError(
        "EVALDAG_STORE_FAILED",
        f"Could not {action} the score store {location}: {detail}",
        domain="STORAGE",
        category="THIRD_PARTY",
        details={"store": location},
        cause=error,
    )
