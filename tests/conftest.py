"""Test setup: litellm stays offline (no price-map download, no telemetry), and every test
module gets the ``judge_server`` fixture (a fresh scripted judge server per test) and the score
store fixtures (``store_url``: a SQLite file, then a database on a real PostgreSQL server), and
``full_disk`` (a small real file system to fill, where the tests run as root); the tests run in
a working directory of their own."""

import os
from collections.abc import Iterator

import pytest
from judge_server import judge_server_fixture  # noqa: F401 (registers the fixture)
from score_stores import postgres_url, store_url  # noqa: F401 (registers the fixtures)
from small_disks import full_disk  # noqa: F401 (registers the fixture)

os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


@pytest.fixture(autouse=True, scope="session")
def _working_directory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The tests run in a directory of their own: what a run writes where it is started (an
    ``evaldag run`` without ``--out`` keeps its checkpoint in ``./.evaldag``) stays out of the
    repository."""
    started = os.getcwd()
    os.chdir(tmp_path_factory.mktemp("cwd"))
    yield
    os.chdir(started)
