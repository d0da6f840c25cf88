"""SQL databases by URL through SQLAlchemy, as the score store and the judge's reply cache reach
them: every wait bounded, SQLite in WAL mode with a writer's lock taken as its transaction
begins, a forked child on connections of its own, and a failure said without the URL's secrets.
"""

from __future__ import annotations

import functools
import os
import sqlite3
import time
import weakref
from typing import Any

import sqlalchemy as sa

from evaldag._util.credentials import redacted

#: Seconds a writer waits for another's lock: SQLite's write lock, PostgreSQL's row and
#: advisory locks.
LOCK_WAIT = 30
#: Seconds a PostgreSQL connection may take to open.
CONNECT_WAIT = 10
#: Seconds one PostgreSQL statement may run: the largest write or read of a run takes a few.
STATEMENT_WAIT = 300
#: Seconds of silence before a PostgreSQL connection is probed (libpq's TCP keepalives), so a
#: server gone mid-statement (a dropped network) is noticed within about a minute.
_KEEPALIVE_IDLE = 30
#: The execution option of a transaction that may write: on SQLite it takes the write lock as
#: it begins (``BEGIN IMMEDIATE``), so that two writers never deadlock upgrading read locks.
WRITE = "evaldag_write"
#: Seconds between two tries to put a SQLite database in WAL mode.
_WAL_RETRY_SECONDS = 0.02


def database_engine(url: sa.URL, **options: Any) -> sa.Engine:
    """An engine for ``url`` whose every wait has a bound (unless the URL sets its own), whose
    connections are checked before use, and which a forked child does not share.

    :param options: more of ``sqlalchemy.create_engine``'s options (JSON serializers).
    """
    options["pool_pre_ping"] = True
    if url.get_backend_name() != "sqlite":
        bounds = {
            "connect_timeout": CONNECT_WAIT,
            "options": f"-c lock_timeout={LOCK_WAIT}s -c statement_timeout={STATEMENT_WAIT}s",
            "keepalives": 1,
            "keepalives_idle": _KEEPALIVE_IDLE,
            "keepalives_interval": 10,
            "keepalives_count": 3,
        }
        given = {k: v for k, v in bounds.items() if k not in url.query}
        engine = sa.create_engine(url, connect_args=given, **options)
    else:
        engine = sa.create_engine(url, connect_args={"timeout": LOCK_WAIT}, **options)

        @sa.event.listens_for(engine, "connect")
        def _connected(dbapi_connection: Any, _record: Any) -> None:
            # The driver's own transaction handling would begin transactions lazily and
            # deferred; evaldag begins them itself (below) so that a writer takes the lock up
            # front.
            dbapi_connection.isolation_level = None
            _in_wal_mode(dbapi_connection)
            dbapi_connection.execute("PRAGMA synchronous=NORMAL")

        @sa.event.listens_for(engine, "begin")
        def _begun(connection: sa.Connection) -> None:
            write = connection.get_execution_options().get(WRITE)
            connection.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")

    # A forked child opens its own connections; the parent's stay the parent's.
    os.register_at_fork(after_in_child=functools.partial(_forked, weakref.ref(engine)))
    return engine


def _in_wal_mode(dbapi_connection: Any) -> None:
    """Put the database in WAL mode, which its file keeps once set. Switching needs every other
    connection out of the way, and SQLite answers "database is locked" at once, without waiting
    as for a lock, while another process switches or creates the file (processes opening a new
    store together: 2 rounds in 10 failed with 6 processes); it is tried again until
    ``LOCK_WAIT`` has passed."""
    deadline = time.monotonic() + LOCK_WAIT
    while True:
        try:
            if dbapi_connection.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                dbapi_connection.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() >= deadline:
                raise
            time.sleep(_WAL_RETRY_SECONDS)


def _forked(engine: weakref.ref[sa.Engine]) -> None:
    opened = engine()
    if opened is not None:
        opened.dispose(close=False)


def database_problem(error: BaseException, secrets: tuple[str, ...]) -> str:
    """What went wrong with a database, in one line without ``secrets``: the driver's own
    message when there is one."""
    text = str(getattr(error, "orig", None) or error).strip() or type(error).__name__
    return redacted(text.splitlines()[0], secrets)
