"""The judge's reply cache in a database by URL (``cache="postgresql://user@host/db"``), which
the processes of several machines share: a cluster's workers, runs on other machines.

Replies live in the table ``evaldag_judge_replies`` (beside the score store's tables when the
cache and the store share a database), under the keys a cache file uses. Writers never conflict:
a key already stored keeps its reply (``INSERT ... ON CONFLICT DO NOTHING``; replies under one
key are the same question's answers). The table is created once however many processes open the
cache at the same time (under an advisory lock). The database is reached through the score
store's engine (``evaldag._judge.databases``): connecting waits 10 s at most, a statement 300 s,
and a server gone mid-statement is noticed within about a minute.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from evaldag._judge.databases import database_engine, database_problem
from evaldag._util.credentials import url_secrets, url_without_credentials
from evaldag.errors import EvalDagError

TABLE = "evaldag_judge_replies"
#: The key of PostgreSQL's advisory lock held while the table is created (any fixed number).
_CREATE_LOCK = 0x65_76_61_6C_63_61_63
#: Databases a cache opens by URL: SQLite (a file) and PostgreSQL, whose INSERT has
#: ``ON CONFLICT``.
_BACKENDS = ("postgresql", "sqlite")
_EXAMPLES = "'postgresql://user:password@host/db', 'sqlite:///path/cache.sqlite3' or a directory"

_metadata = sa.MetaData()
_replies = sa.Table(
    TABLE,
    _metadata,
    sa.Column("key", sa.Text, primary_key=True),
    sa.Column("reply", sa.Text, nullable=False),
    sa.Column("created", sa.Double, nullable=False),
)


def cache_url(text: str) -> sa.URL:
    """``cache=``'s database URL, or an error naming it (without its password) and the fix: a
    URL SQLAlchemy cannot read, a database evaldag keeps no cache in, a SQLite URL of no file."""
    shown = url_without_credentials(text)
    try:
        url = sa.make_url(text)
    except sa.exc.ArgumentError:
        raise _invalid(shown, "is not a database URL nor a directory") from None
    backend = url.get_backend_name()
    if backend not in _BACKENDS:
        raise _invalid(
            shown, f"is a '{backend}' database; evaldag keeps judge replies in PostgreSQL or SQLite"
        )
    if backend == "sqlite" and url.database in (None, "", ":memory:"):
        raise _invalid(shown, "names no file (a cache in memory would be this process's alone)")
    return url


def _invalid(shown: str, problem: str) -> EvalDagError:
    return EvalDagError(
        "EVALDAG_JUDGE_CACHE_INVALID_URL",
        f"cache={shown!r} {problem}: give {_EXAMPLES}, or cache=False for none",
        details={"cache": shown},
    )


class DatabaseReplies:
    """A cache's replies in a table of a PostgreSQL database (``evaldag._judge.cache.Replies``)."""

    errors: tuple[type[Exception], ...] = (sa.exc.SQLAlchemyError,)

    def __init__(self, url: sa.URL) -> None:
        full = url.render_as_string(hide_password=False)
        self.location = url_without_credentials(full)
        self._secrets = url_secrets(full)
        try:
            self._engine = database_engine(url)
        except (ImportError, sa.exc.ArgumentError) as error:
            raise self._unavailable(error, _driver_fix(error)) from None
        try:
            with self._engine.begin() as connection:
                connection.execute(sa.select(sa.func.pg_advisory_xact_lock(_CREATE_LOCK)))
                _metadata.create_all(connection, checkfirst=True)
                inspector = sa.inspect(connection)
                columns = {column["name"] for column in inspector.get_columns(TABLE)}
                keys = inspector.get_pk_constraint(TABLE)["constrained_columns"]
        except sa.exc.SQLAlchemyError as error:
            self._engine.dispose()
            raise self._unavailable(
                error,
                "check that the database is reachable from here (and from every worker of a "
                "cluster) and the URL's user, password and database, or pass cache=False",
            ) from None
        if columns != set(_replies.c.keys()) or keys != ["key"]:
            self._engine.dispose()
            raise EvalDagError(
                "EVALDAG_JUDGE_CACHE_FOREIGN",
                f"the judge cache {self.location} has a table '{TABLE}' evaldag did not make "
                f"(columns {sorted(columns)}, primary key {keys}): drop or rename it, point "
                "cache= at another database, or pass cache=False",
                details={"cache": self.location},
            )

    def read(self, key: str) -> str | None:
        with self._engine.begin() as connection:
            query = sa.select(_replies.c.reply).where(_replies.c.key == key)
            return connection.execute(query).scalar()

    def delete(self, key: str) -> None:
        with self._engine.begin() as connection:
            connection.execute(sa.delete(_replies).where(_replies.c.key == key))

    def write(self, rows: list[tuple[str, str, float]]) -> None:
        # One row a key, in key order: two writers' transactions then wait for each other's
        # keys in the same order, and never deadlock.
        unique = {key: (reply, created) for key, reply, created in rows}
        records = [
            {"key": key, "reply": reply, "created": created}
            for key, (reply, created) in sorted(unique.items())
        ]
        insert = postgresql.insert(_replies).on_conflict_do_nothing(index_elements=["key"])
        with self._engine.begin() as connection:
            connection.execute(insert, records)

    def count(self) -> int:
        with self._engine.begin() as connection:
            return connection.execute(sa.select(sa.func.count()).select_from(_replies)).scalar_one()

    def in_place(self) -> bool:
        return True

    def described(self, error: Exception) -> str:
        return database_problem(error, self._secrets)

    def _unavailable(self, error: Exception, fix: str) -> EvalDagError:
        return EvalDagError(
            "EVALDAG_JUDGE_CACHE_UNAVAILABLE",
            f"the judge cache cache={self.location!r} cannot open: "
            f"{database_problem(error, self._secrets)}. {fix[0].upper()}{fix[1:]}",
            category="THIRD_PARTY",
            details={"cache": self.location},
        )


def _driver_fix(error: Exception) -> str:
    """How to get the driver a URL names, or a right URL."""
    if isinstance(error, ImportError):
        return (
            f"install its driver ({error.name or error}): pip install 'evaldag[postgres]' for "
            "'postgresql://...' (psycopg 3), or pass cache=False"
        )
    return f"give a URL SQLAlchemy opens: {_EXAMPLES}, or cache=False for none"
