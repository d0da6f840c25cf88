"""run_evals on a real local Dask cluster (``LocalCluster``, 2 worker processes): every case of
``tests/cluster_cases.py``, the scheduler reached by its address, and the executors refused."""

import os
import signal
import threading
import time

import pytest
from cluster_cases import DATA, ClusterCases, graded
from judge_server import JudgeServer, Reply
from scorer_cases import length_scorer

from evaldag import EvalDagError, run_evals

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def dask_client():
    distributed = pytest.importorskip("distributed")
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        yield client


@pytest.fixture
def executor(dask_client):
    return dask_client


@pytest.fixture
def executor_option(dask_client):
    return f"dask://{dask_client.scheduler.address.removeprefix('tcp://')}"


class TestOnDask(ClusterCases):
    """Every case, on Dask."""


def test_a_scheduler_by_address(dask_client):
    address = dask_client.scheduler.address.removeprefix("tcp://")
    local = run_evals(DATA, scorers=[length_scorer()], progress=False)
    remote = run_evals(
        DATA, scorers=[length_scorer()], executor=f"dask://{address}", progress=False
    )
    assert remote.scores == local.scores


def test_unknown_executor():
    with pytest.raises(EvalDagError, match="executor must be 'dask', 'ray'"):
        run_evals(DATA, scorers=[length_scorer()], executor="spark")


@pytest.mark.parametrize("where", ["spark", "dask://nohost", "ray:/x:1"])
def test_evaldag_run_names_what_executor_takes(where, capsys):
    from evaldag._cli.main import main

    with pytest.raises(SystemExit) as exited:
        main(["run", "eval.py", "--executor", where])
    assert exited.value.code == 3
    assert "must be dask, ray, dask://HOST:PORT or ray://HOST:PORT" in capsys.readouterr().err


def test_the_coordinator_s_worker_killed_mid_run_loses_no_item_and_waits_not_forever(
    dask_client, monkeypatch
):
    """Dask does not start an actor again: the other worker's calls, waiting for slots from
    a coordinator that may never answer, probe it, find it lost and go on under their share of
    the limit (the probe's timings, shortened here, travel with the run)."""
    from evaldag._cluster import limits

    monkeypatch.setattr(limits, "PROBE_AFTER_SECONDS", 0.5)
    monkeypatch.setattr(limits, "PROBE_WAIT_SECONDS", 0.5)
    killed = []
    with JudgeServer(Reply({"score": 1}), latency=0.05) as server:

        def kill_the_coordinator_s_worker():
            deadline = time.monotonic() + 60
            while len(server.requests) < 20 and time.monotonic() < deadline:
                time.sleep(0.01)
            holders = [
                worker
                for key, workers in dask_client.who_has().items()
                if key.startswith("RunCoordinator")
                for worker in workers
            ]
            pid = dask_client.run(os.getpid, workers=holders)[holders[0]]
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

        killer = threading.Thread(target=kill_the_coordinator_s_worker)
        killer.start()
        ran = {}
        options = {"executor": dask_client, "batch_size": 10, "progress": False}
        scorers = [graded(server, max_concurrency=4)]
        runner = threading.Thread(
            target=lambda: ran.update(result=run_evals(DATA, scorers=scorers, **options)),
            daemon=True,
        )
        runner.start()
        runner.join(120)
        killer.join()
        assert "result" in ran, "the run still waits on its lost coordinator after 120 s"
        result = ran["result"]
        assert server.max_in_flight <= 2 * 4  # a lost block's calls end beside the shares
    assert killed
    assert result.items["input"].tolist() == DATA["input"].tolist()  # each item once, in order
    assert result.items["graded.score"].notna().all() and result.scores == {"graded": 1.0}
