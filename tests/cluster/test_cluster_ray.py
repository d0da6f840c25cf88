"""run_evals on a real local Ray instance with 2 workers: every case of
``tests/cluster_cases.py``, as on Dask (``test_cluster.py``, which runs side by side with this
file under ``pytest -n 2 --dist loadfile``)."""

import os
import re
import signal
import socket
import subprocess
import sys
import time

import pytest
from cluster_cases import DATA, ClusterCases, run_arguments, scored, within
from scorer_cases import length_scorer

from evaldag import EvalDagError, EvalResult, run_evals

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def ray_cluster():
    """Ray started once for the module: 2 CPUs (2 workers), no dashboard, and the workers
    import what this process imports (its ``sys.path``), as ``run_evals`` sets it up."""
    ray = pytest.importorskip("ray", reason="the 'ray' extra is not installed")
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}},
    )
    yield "ray"
    ray.shutdown()


@pytest.fixture
def executor(ray_cluster):
    """``"ray"``: the Ray instance this module started (run_evals finds it initialized)."""
    return ray_cluster


@pytest.fixture
def executor_option(ray_cluster):
    return ray_cluster


@pytest.fixture
def kill_the_coordinator(ray_cluster):
    """Kills the process of the run's coordinator actor (the newest live one: this process's
    runs share one, which Ray does not restart, and the next run starts another); its pid."""
    # The actors' table without the dashboard, which ray.util.state asks.
    from ray._private import state

    def kill():
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # Ray's actor table may lag the actor's start
            actors = [
                (actor["StartTime"], actor["Pid"])
                for actor in state.actors().values()
                if actor["ActorClassName"] == "RunCoordinators" and actor["State"] == "ALIVE"
            ]
            if actors:
                pid = max(actors)[1]
                os.kill(pid, signal.SIGKILL)
                return pid
            time.sleep(0.05)
        raise AssertionError("no live coordinator actor within 30 s")

    return kill


class TestOnRay(ClusterCases):
    """Every case, on Ray (which retries the tasks of a worker killed)."""


@pytest.fixture
def ray_client_address(ray_cluster):
    """``ray://HOST:PORT`` of a Ray Client server on the module's Ray instance (the server
    ``ray start --head`` runs on port 10001)."""
    import ray

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "ray.util.client.server", "--mode", "legacy", "--host",
         "127.0.0.1", "--port", str(port), "--address", ray.get_runtime_context().gcs_address],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while server.poll() is None and time.monotonic() < deadline:
            with socket.socket() as client:
                if client.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.1)
        else:
            pytest.fail("the Ray Client server did not start listening within 60 s")
        yield f"ray://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait(30)


def test_evaldag_run_on_a_ray_cluster_by_address_exits_as_locally(ray_client_address, tmp_path):
    """``--executor ray://HOST:PORT`` (Ray Client, the ``ray`` extra's ``client``), from a
    process of its own: a process connected to Ray another way, as this one is, refuses another
    address (below)."""
    from evaldag._cli.main import main

    run = run_arguments(tmp_path)
    local = main([*run, "--out", str(tmp_path / "local.parquet")])
    remote = subprocess.run(
        [sys.executable, "-m", "evaldag", *run, "--out", str(tmp_path / "cluster.parquet"),
         "--executor", ray_client_address],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)},
        capture_output=True,
        text=True,
        timeout=300,
    )  # fmt: skip
    assert [local, remote.returncode] == [2, 2], remote.stderr  # the gate fails, as locally
    local, remote = (
        EvalResult.read_parquet(tmp_path / f"{n}.parquet") for n in ("local", "cluster")
    )
    assert scored(remote) == scored(local)


def test_ray_client_without_its_transport_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "grpc", None)  # as after `pip install ray` alone
    with pytest.raises(EvalDagError, match=re.escape("pip install 'evaldag[ray]'")) as raised:
        run_evals(DATA, scorers=[length_scorer()], executor="ray://127.0.0.1:1")
    assert raised.value.id == "EXECUTOR_UNAVAILABLE"


def test_runs_share_one_coordinator_process_and_drop_their_coordinators(ray_cluster):
    """Ray starts a process for each actor, which a run waited for (several seconds on a busy
    machine): a client's runs share one actor, which keeps no run's coordinator once the run is
    over, and stays the only one however many runs there were."""
    import ray
    from ray._private import state

    def alive():
        return [
            actor["ActorID"]
            for actor in state.actors().values()
            if actor["ActorClassName"] == "RunCoordinators" and actor["State"] == "ALIVE"
        ]

    from evaldag._cluster import ray_backend

    for _ in range(2):
        run_evals(DATA, scorers=[length_scorer()], executor=ray_cluster, progress=False)
    coordinators = ray_backend._ray_coordinators(ray)  # the runs' own, if it answers
    assert ray.get(coordinators.runs.remote(), timeout=30) == 0
    deadline = time.monotonic() + 30
    while len(alive()) != 1 and time.monotonic() < deadline:  # Ray's table may lag
        time.sleep(0.1)
    assert len(alive()) == 1


def test_an_address_other_than_the_connected_one_is_refused_naming_both(ray_cluster):
    import ray

    with pytest.raises(EvalDagError) as raised:
        run_evals(DATA, scorers=[length_scorer()], executor="ray://127.0.0.1:1", progress=False)
    assert raised.value.id == "INVALID_EXECUTOR"
    message = raised.value.message
    assert "executor='ray://127.0.0.1:1'" in message
    assert ray.get_runtime_context().gcs_address in message and "executor='ray'" in message


CONNECTED = """
import sys

import ray

from evaldag import EvalDagError, checks, run_evals

address = sys.argv[1]
ray.init(address, log_to_driver=False)
data = [{"input": "q", "output": "x"}]
print(run_evals(data, scorers=[checks.includes("x")], executor=address, progress=False).scores)
try:
    run_evals(data, scorers=[checks.includes("x")], executor="ray://127.0.0.1:1", progress=False)
except EvalDagError as error:
    print(error.message)
"""


def test_a_process_connected_by_ray_client_runs_on_that_address_and_refuses_another(
    ray_client_address,
):
    connected = subprocess.run(
        [sys.executable, "-c", CONNECTED, ray_client_address],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert connected.returncode == 0, connected.stderr
    scores, refused = connected.stdout.strip().splitlines()[-2:]
    assert scores == "{'check-includes': 1.0}"
    assert "executor='ray://127.0.0.1:1'" in refused and f"({ray_client_address})" in refused


NO_CPU = """
import os
import sys

import ray

from evaldag import EvalDagError, checks, run_evals
from evaldag._cluster import backends

backends.NO_WORKERS_SECONDS = 1.0  # cut for the test
ray.init(num_cpus=0, include_dashboard=False, log_to_driver=False)
try:
    run_evals([{"input": "q", "output": "x"}], scorers=[checks.includes("x")], executor="ray")
except EvalDagError as error:
    print(error.id, error.message)
"""


def test_a_ray_cluster_with_no_cpu_fails_the_run_naming_it_and_the_fix():
    """A head started with --num-cpus=0 and no worker node (a Ray of its own, in a process of
    its own: Ray keeps one per process)."""
    ran = subprocess.run(
        [sys.executable, "-c", NO_CPU],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ran.returncode == 0, ran.stderr
    said = ran.stdout.strip()  # the run's error, else nothing
    assert said.startswith("CLUSTER_NO_WORKERS the Ray cluster at ")
    assert "has had no CPU for 1 s" in said and "`ray start --address=" in said


def test_a_runner_slow_to_start_is_waited_for_not_called_hung(ray_cluster, monkeypatch):
    """A runner that has not answered yet is starting (on a busy node its process takes longer
    than the bound to import the run's code): it is not a stopped runner, which answered before
    and then went silent. Here it takes 3 s to start, the bound on silence is 1 s."""
    import ray

    from evaldag._cluster import backends, ray_backend

    def slow_to_start(ray_module):
        class SlowRunner(ray_backend.BatchRunner):
            def __init__(self):
                time.sleep(3)

            @ray_module.method(concurrency_group="ping")
            def where(self):
                return ray_backend.BatchRunner.where(self)

        return ray_module.remote(concurrency_groups={"ping": 1})(SlowRunner)

    monkeypatch.setattr(backends, "NO_WORKERS_SECONDS", 1.0)
    monkeypatch.setattr(backends, "WORKERS_CHECK_SECONDS", 0.2)
    monkeypatch.setattr(ray_backend, "_pinged_runner", slow_to_start)
    assert ray.is_initialized()
    remote = within(120, lambda: run_evals(
        DATA, scorers=[length_scorer()], executor=ray_cluster, progress=False
    ))  # fmt: skip
    assert remote.scores == run_evals(DATA, scorers=[length_scorer()], progress=False).scores


def test_a_stopped_batch_runner_fails_the_run_and_the_same_run_again_finishes_it(
    ray_cluster, monkeypatch, tmp_path
):
    """A runner whose process is stopped (alive, so Ray restarts nothing) answers no ping: the
    run fails within the bound naming its process; the batches finished stay in the checkpoint,
    and the same run again finishes the run."""
    from cluster_cases import resumed, stopping_length

    from evaldag._cluster import backends

    # cut, but not below a runner's start on a busy machine (which answers no ping either)
    monkeypatch.setattr(backends, "NO_WORKERS_SECONDS", 10.0)
    monkeypatch.setattr(backends, "WORKERS_CHECK_SECONDS", 0.5)
    (tmp_path / "stop").touch()
    scorers = [stopping_length(tmp_path)]
    checkpoint = tmp_path / "run.parquet"
    options = {"executor": ray_cluster, "batch_size": 8, "checkpoint": checkpoint}
    try:
        with pytest.raises(EvalDagError) as raised:
            within(120, lambda: run_evals(DATA, scorers=scorers, **options, progress=False))
    finally:
        resumed(tmp_path / "stopped")
    assert raised.value.id == "CLUSTER_WORKER_HUNG"
    pid = (tmp_path / "stopped").read_text()
    assert f"(process {pid} on node " in raised.value.message
    assert list((tmp_path / "run.parquet.partial").glob("*.parquet"))  # finished batches
    again = within(120, lambda: run_evals(DATA, scorers=scorers, **options, progress=False))
    local = run_evals(DATA, scorers=scorers, progress=False)
    assert again.items["slow.score"].tolist() == local.items["slow.score"].tolist()
