"""SQL databases by URL as the score store and the judge cache reach them: every wait bounded,
on a real PostgreSQL server (``postgres_url``; skipped without one)."""

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
