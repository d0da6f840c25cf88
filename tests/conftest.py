"""Test setup: litellm stays offline (no price-map download, no telemetry), and every test
module gets the ``judge_server`` fixture (a fresh scripted judge server per test) and the score
store fixtures (``store_url``: a SQLite file, then a database on a real PostgreSQL server), and
``full_disk`` (a small real file system to fill, where the tests run as root) and
``everything_logged`` (every log record at DEBUG); the tests run in a working directory of their
own."""

import os
from collections.abc import Iterator

import pytest
from judge_server import judge_server_fixture  # noqa: F401 (registers the fixture)
from logged import everything_logged  # noqa: F401 (registers the fixture)
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


#: The test files that take longest (benchmarks/results/suite_time.json, "slowest_files" and
#: "cpu_files"), longest first. Under ``-n 2 --dist loadfile`` each file is one unit of work and
#: a worker takes the next one when it is idle; pytest-xdist queues the files with the most tests
#: first by default, which put these (few tests, each a cluster, a process or a whole mypy run)
#: last, and the suite waited for whichever of them started late. They start first; the rest
#: keep their order.
LONGEST_FIRST = (
    "cluster/test_cluster_ray.py",
    "scorers/test_compiled_tagger.py",
    "cluster/test_cluster.py",
    "project/test_types.py",
    "live/test_live_process.py",
    "store/test_score_store.py",
    "scorers/test_parity_completeness_prose.py",
    "local_judge/test_local_judge.py",
    "scorers/llm/test_llm_faithfulness.py",
    "project/test_dataflows.py",
    "judge/test_judge_transport.py",
    "engine/test_timeouts.py",
    "cli/test_cli.py",
    "project/test_architecture.py",
)


def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config.option, "loadscopereorder"):  # pytest-xdist: keep the order below
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        path = item.nodeid.split("::")[0].removeprefix("tests/")
        return LONGEST_FIRST.index(path) if path in LONGEST_FIRST else len(LONGEST_FIRST)

    items.sort(key=rank)  # stable: each file's tests, and the other files, keep their order
