"""Score stores for tests: a SQLite file, and a fresh database on a real PostgreSQL server.

``store_url`` is parametrized over both databases; import it in a test module::

    from score_stores import store_url  # noqa: F401 (registers the fixture)

The PostgreSQL server's URL comes from ``EVALDAG_TEST_POSTGRES_URL`` (``.ci/run`` starts one as
root with ``.ci/postgres start``; so can a developer). Each test gets its own database on it,
dropped afterwards. Without a reachable server the PostgreSQL cases skip and say why.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

POSTGRES_ENV = "EVALDAG_TEST_POSTGRES_URL"


def postgres_server() -> str:
    """The test server's URL, or a skip that says why there is none."""
    url = os.environ.get(POSTGRES_ENV)
    if not url:
        pytest.skip(
            f"no PostgreSQL server: set {POSTGRES_ENV} to a server's URL (as root, "
            "'.ci/postgres start' starts one and prints it)"
        )
    return url


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """The URL of a new, empty database on the PostgreSQL test server."""
    import psycopg
    from sqlalchemy import make_url

    server = make_url(postgres_server())
    name = f"evaldag_test_{uuid.uuid4().hex[:12]}"
    admin = server.set(drivername="postgresql").render_as_string(hide_password=False)
    try:
        with psycopg.connect(admin, autocommit=True, connect_timeout=5) as connection:
            connection.execute(f'CREATE DATABASE "{name}"')
    except psycopg.OperationalError as error:
        pytest.skip(f"PostgreSQL server at {server.host}:{server.port} unreachable: {error}")
    yield server.set(database=name).render_as_string(hide_password=False)
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path) -> str:
    """A new store's location: a SQLite file, then a PostgreSQL database."""
    if request.param == "sqlite":
        return str(tmp_path / "scores.db")
    return request.getfixturevalue("postgres_url")


def store_contents(location: str) -> dict[str, list[dict]]:
    """What a store holds, without the times it was written: its score rows by id and its runs
    (their records included), to compare two ways of saving the same run."""
    import sqlalchemy as sa

    from evaldag._store import schema

    url = location if "://" in location else f"sqlite:///{location}"
    engine = sa.create_engine(url)
    try:
        with engine.connect() as connection:
            tables = {}
            for table in (schema.scores, schema.experiments):
                kept = [c for c in table.c if c.name not in ("created_at", "updated_at")]
                query = sa.select(*kept).order_by(table.c.id)
                tables[table.name] = [dict(row) for row in connection.execute(query).mappings()]
    finally:
        engine.dispose()
    return tables


def emptied(location: str) -> None:
    """Delete every score row and run of a store (its tables stay)."""
    import sqlalchemy as sa

    from evaldag._store import schema

    url = location if "://" in location else f"sqlite:///{location}"
    engine = sa.create_engine(url)
    try:
        with engine.begin() as connection:
            connection.execute(schema.scores.delete())
            connection.execute(schema.experiments.delete())
    finally:
        engine.dispose()
