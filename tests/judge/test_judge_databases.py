"""SQL databases by URL as the score store and the judge cache reach them: every wait bounded,
on a real PostgreSQL server (``postgres_url``; skipped without one) and real SQLite files."""

import sqlite3
import threading

import pytest
import sqlalchemy as sa


def test_a_postgresql_statement_has_a_bound(postgres_url, monkeypatch):
    from evaldag._judge import databases

    monkeypatch.setattr(databases, "STATEMENT_WAIT", 1)  # the bound on one statement, shortened
    engine = databases.database_engine(sa.make_url(postgres_url))
    try:
        with engine.connect() as connection:
            assert connection.exec_driver_sql("SHOW statement_timeout").scalar() == "1s"
            with pytest.raises(sa.exc.OperationalError, match="statement timeout"):
                connection.exec_driver_sql("SELECT pg_sleep(5)")
    finally:
        engine.dispose()


def test_a_postgresql_url_keeps_its_own_bounds(postgres_url):
    from evaldag._judge import databases

    url = sa.make_url(postgres_url).update_query_dict({"options": "-c statement_timeout=7s"})
    engine = databases.database_engine(url)
    try:
        with engine.connect() as connection:
            assert connection.exec_driver_sql("SHOW statement_timeout").scalar() == "7s"
    finally:
        engine.dispose()


def test_a_sqlite_file_another_process_is_writing_is_put_in_wal_mode_once_it_can_be(tmp_path):
    # Another connection's write transaction on a file not yet in WAL mode (what a process
    # creating a new store holds): SQLite refuses the switch at once, without waiting as for a
    # lock; processes opening a new store together failed so ("database is locked").
    from evaldag._judge import databases

    path = tmp_path / "scores.db"
    writer = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    writer.execute("CREATE TABLE t (x)")
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("INSERT INTO t VALUES (1)")
    done = threading.Timer(0.5, writer.execute, args=("COMMIT",))
    done.start()
    engine = databases.database_engine(sa.make_url(f"sqlite:///{path}"))
    try:
        with engine.connect() as connection:
            assert connection.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert connection.exec_driver_sql("SELECT count(*) FROM t").scalar() == 1
    finally:
        done.join()
        writer.close()
        engine.dispose()
