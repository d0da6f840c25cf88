"""run_evals on a real local Dask cluster (``LocalCluster``, 2 worker processes): every case of
``tests/cluster_cases.py``, the scheduler reached by its address, and the executors refused."""

import operator
import os
import signal
import time
import types

import pytest
from cluster_cases import DATA, ClusterCases, within
from scorer_cases import length_scorer

from evaldag import EvalDagError, EvalResult, run_evals

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


@pytest.fixture
def kill_the_coordinator(dask_client):
    """Kills the worker process holding the run's coordinator actor (Dask does not start an
    actor again); its pid."""

    def kill():
        holders = [
            worker
            for key, workers in dask_client.who_has().items()
            if key.startswith("RunCoordinator")
            for worker in workers
        ]
        pid = dask_client.run(os.getpid, workers=holders)[holders[0]]
        os.kill(pid, signal.SIGKILL)
        return pid

    return kill


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


@pytest.mark.parametrize(
    "executor",
    [
        "dask://scheduler:pw-cluster-secret@127.0.0.1:9",
        "ray://head:pw-cluster-secret@127.0.0.1:9",
        "dask://127.0.0.1:9?token=pw-cluster-secret",
        "tls://scheduler:pw-cluster-secret@127.0.0.1:9",
    ],
)
def test_an_address_with_credentials_is_refused_without_them(executor, capsys):
    """Neither Dask nor Ray take credentials in an address, and Dask's own error shows it."""
    from evaldag._cli.main import main

    with pytest.raises(EvalDagError) as raised:
        run_evals(DATA, scorers=[length_scorer()], executor=executor)
    assert raised.value.id == "INVALID_EXECUTOR"
    assert "holds credentials" in raised.value.message
    assert "**********@127.0.0.1:9" in raised.value.message or "?token=**********" in str(
        raised.value.details
    )
    with pytest.raises(SystemExit) as exited:
        main(["run", "eval.py", "--executor", executor])
    assert exited.value.code == 3
    told = str(raised.value) + str(raised.value.details) + capsys.readouterr().err
    assert "pw-cluster-secret" not in told


def test_a_shared_value_whose_every_copy_died_is_shipped_again():
    """A run's setup is on every worker; when each worker holding a copy dies (the workers
    started in their place hold none), Dask cancels the tasks that need it: they are sent
    again with a new copy, not lost with it. (A cluster of its own: the module's may be
    restarting a worker another case killed.)"""
    import distributed

    from evaldag._cluster.backends import DaskBackend

    with (
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0"
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        backend = DaskBackend(client)
        shared = backend.shared(types.SimpleNamespace(answer=42))
        lost = shared.future()
        os.kill(next(iter(client.run(os.getpid).values())), signal.SIGKILL)
        deadline = time.monotonic() + 60
        while lost.status == "finished" and time.monotonic() < deadline:
            time.sleep(0.05)
        assert lost.status != "finished", "Dask did not notice the copy was lost in 60 s"
        client.wait_for_workers(1, timeout=60)
        assert backend.run(operator.attrgetter("answer"), shared) == 42
        assert shared.future() is not lost


def test_a_batch_sent_while_the_cluster_has_no_worker_waits_for_one(monkeypatch):
    """The workers all gone when a batch is sent (the backend has read that there is none):
    the batch goes to whichever worker comes next, not to a named one (Dask refuses
    ``allow_other_workers`` without ``workers``: the run failed with its ValueError)."""
    import distributed

    from evaldag._cluster import backends

    monkeypatch.setattr(backends, "WORKERS_CHECK_SECONDS", 0.2)
    with (
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0"
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        backend = backends.DaskBackend(client)
        cluster.scale(0)
        deadline = time.monotonic() + 60
        while backend._check_workers() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not backend._check_workers(), "the workers were not gone within 60 s"
        cluster.scale(1)
        assert backend.run(operator.add, 40, 2) == 42


def test_a_coordinator_that_cannot_be_ended_loses_no_result(dask_client, monkeypatch, caplog):
    from evaldag._cluster.backends import DaskCoordinator

    def refused(self):
        raise RuntimeError("the cluster is gone")

    monkeypatch.setattr(DaskCoordinator, "close", refused)
    local = run_evals(DATA, scorers=[length_scorer()], progress=False)
    remote = run_evals(DATA, scorers=[length_scorer()], executor=dask_client, progress=False)
    assert remote.scores == local.scores
    assert "coordinator could not be ended (the cluster is gone)" in caplog.text


def test_two_batches_at_once_in_one_worker_each_report_their_own_cache_figures(tmp_path):
    """A worker of two threads runs the next batch while the last one's slow call is in
    flight; a cache row the second batch drops meanwhile is counted once, not by both. (A
    cluster of its own: one worker, so both batches run in one process.)"""
    import sqlite3

    import distributed
    from judge_server import JudgeServer, Reply

    from evaldag import PromptStep, create_scorer
    from evaldag._judge.cache import FILE_NAME

    with JudgeServer(Reply({"score": 0.5}, latency=0.2)) as server:
        server.on("Score slow", Reply({"score": 0.5}, latency=2.0))
        judge = server.judge(instructions="Grade it.", cache=tmp_path)
        scorer = create_scorer("cached", judge=judge).generate_score(
            PromptStep("score", lambda run: f"Score {run.output}")
        )
        scorer.run(output="x")
        with sqlite3.connect(tmp_path / FILE_NAME) as connection:
            connection.execute("UPDATE replies SET reply = 'not json {'")
        with (
            distributed.LocalCluster(
                n_workers=1, threads_per_worker=2, processes=True, dashboard_address=":0"
            ) as cluster,
            distributed.Client(cluster) as client,
        ):
            result = run_evals(
                [{"input": "a", "output": "slow"}, {"input": "b", "output": "x"}],
                scorers=[scorer],
                executor=client,
                batch_size=1,
                progress=False,
            )
        assert server.max_in_flight == 2  # the second batch's call went while the first's hung
    assert result.items["cached.score"].tolist() == [0.5, 0.5]
    assert result.summary.judge_cache_rows_dropped == 1


@pytest.fixture
def short_waits(monkeypatch):
    """The bound on a cluster with no workers, and the checks' cadence, cut for a test."""
    from evaldag._cluster import backends

    monkeypatch.setattr(backends, "NO_WORKERS_SECONDS", 1.0)
    monkeypatch.setattr(backends, "WORKERS_CHECK_SECONDS", 0.2)


def test_a_scheduler_with_no_workers_fails_the_run_naming_it_and_the_fix(short_waits):
    import distributed

    with distributed.LocalCluster(n_workers=0, dashboard_address=":0") as cluster:
        address = cluster.scheduler_address
        with pytest.raises(EvalDagError) as raised:
            within(60, lambda: run_evals(
                DATA, scorers=[length_scorer()], executor=f"dask://{address.removeprefix('tcp://')}",
                progress=False,
            ))  # fmt: skip
    assert raised.value.id == "CLUSTER_NO_WORKERS"
    assert f"the Dask scheduler at {address} has had no running worker" in raised.value.message
    assert f"`dask worker {address}`" in raised.value.message


@pytest.mark.parametrize("kept", ["checkpoint", "out"])
def test_workers_gone_mid_run_fail_it_and_the_same_run_again_finishes_it(
    kept, short_waits, tmp_path
):
    """Every worker gone mid-run: the batches waiting fail the run within the bound; the batches
    finished stay in the checkpoint (or the results directory's parts), and the same run again,
    once a worker is back, scores only the rest."""
    import distributed
    from cluster_cases import graded, scored
    from judge_server import JudgeServer, Reply
    from parquet_folders import parquet_folder

    data = DATA if kept == "checkpoint" else parquet_folder(DATA, tmp_path / "data")
    where = {"checkpoint": tmp_path / "run.parquet"} if kept == "checkpoint" else {
        "out": tmp_path / "out"
    }  # fmt: skip
    with (
        JudgeServer(Reply({"score": 0.25})) as server,
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0"
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        local = run_evals(DATA, scorers=[graded(server)], progress=False)
        gone = []

        def close_the_workers(item, output, results):
            if not gone:
                gone.append(item["input"])
                cluster.scale(0)

        options = {"scorers": [graded(server)], "executor": client, "batch_size": 8, **where}
        with pytest.raises(EvalDagError) as raised:
            within(120, lambda: run_evals(
                data, **options, on_item_complete=close_the_workers, progress=False
            ))  # fmt: skip
        assert raised.value.id == "CLUSTER_NO_WORKERS" and gone
        before = len(server.requests)
        cluster.scale(1)
        client.wait_for_workers(1, timeout=60)
        resumed = within(120, lambda: run_evals(data, **options, progress=False))
        again = len(server.requests) - before
    assert 0 < again <= len(DATA) - 8  # the first batch at least was kept, not judged again
    if kept == "out":
        resumed = EvalResult.read_parquet(tmp_path / "out")
    assert scored(resumed) == scored(local)


def test_a_stopped_worker_is_restarted_by_the_scheduler_and_the_run_finishes(tmp_path):
    """A worker alive but stopped sends no heartbeat: Dask's scheduler restarts it after its
    worker-ttl (5 minutes by default; 10 heartbeats, 5 s, at least), and its batches run
    elsewhere, each once."""
    import distributed
    from cluster_cases import resumed, scored, stopping_length

    (tmp_path / "stop").touch()
    local = run_evals(DATA, scorers=[stopping_length(tmp_path / "none")], progress=False)
    with (
        distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            dashboard_address=":0",
            scheduler_kwargs={"worker_ttl": "1s"},
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        try:
            remote = within(120, lambda: run_evals(
                DATA, scorers=[stopping_length(tmp_path)], executor=client, batch_size=4,
                progress=False,
            ))  # fmt: skip
        finally:
            resumed(tmp_path / "stopped")
    assert (tmp_path / "stopped").exists()
    assert remote.items["input"].tolist() == DATA["input"].tolist()  # each item once, in order
    assert scored(remote) == scored(local)
