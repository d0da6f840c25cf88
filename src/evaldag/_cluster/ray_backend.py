"""Row batches on Ray: :class:`BatchRunner` actors, one per CPU, each running
:data:`RAY_BATCHES_PER_CPU` batches at once, and the run's coordinator in the client process's
:class:`~evaldag._cluster.coordinator.RunCoordinators` actor (started once). Ray starts a runner
whose process or node died again and retries its batches; a runner alive but stopped or hung,
or a cluster with no CPU, fails the run within
:data:`~evaldag._cluster.backends.NO_WORKERS_SECONDS`.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from evaldag._cluster import backends
from evaldag._cluster.backends import Coordinator, Placement
from evaldag._cluster.coordinator import RunCoordinators
from evaldag.errors import EvalDagError

_logger = logging.getLogger(__name__)

#: Concurrent calls Ray's async coordinator actor serves: every row waiting for a judge slot
#: holds one, and a release must never queue behind them.
RAY_ACTOR_CONCURRENCY = 100_000
#: Retries of a Ray task whose worker died (Dask's own default is 3).
RAY_TASK_RETRIES = 3
#: Seconds a run waits for the coordinators' actor of earlier runs to answer (else it starts
#: another).
RAY_COORDINATORS_WAIT = 10.0
#: Row batches a Ray batch runner (one per CPU) runs at once.
RAY_BATCHES_PER_CPU = 2
#: Seconds a runner that has not answered yet may take to start (Ray placing it, its process
#: importing the run's code: long on a busy node) before it counts as hung, if longer than
#: :data:`~evaldag._cluster.backends.NO_WORKERS_SECONDS`, the bound on a started one's silence.
RUNNER_START_SECONDS = 300.0


def ray_started(ray: Any, address: str | None) -> None:
    """Connect to a Ray cluster, or start one here whose workers import what this process
    imports (its ``sys.path``), as Dask's local workers do."""
    if address is not None:
        ray.init(address=address, log_to_driver=False)
        return
    paths = [p for p in (*sys.path, os.environ.get("PYTHONPATH", "")) if p]
    ray.init(
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join(paths)}},
    )


def require_connected_to(ray: Any, address: str) -> None:
    """A process connected to Ray runs on that connection (Ray keeps one per process): refused
    when it is not to ``address``."""
    connected = _connected_address(ray)
    if connected == address:
        return
    raise EvalDagError(
        "INVALID_EXECUTOR",
        f"executor={address!r}, but this process is connected to another Ray cluster already "
        f"({connected}), and Ray keeps one connection per process: run with executor='ray' to "
        "use that one, or call ray.shutdown() first",
        details={"executor": address, "connected": connected},
    )


def _connected_address(ray: Any) -> str:
    """Where this process is connected to Ray: ``ray://HOST:PORT`` through Ray Client, else the
    address of the cluster's GCS (a driver started by ``ray.init()``)."""
    from ray.util.client import ray as client

    if client.is_connected():
        # Ray Client keeps the address it connected to only here (Ray 2.x).
        address = getattr(client.get_context().client_worker, "_conn_str", None)
        return f"ray://{address}" if address else "a Ray Client connection"
    return f"the driver of the cluster at {ray.get_runtime_context().gcs_address}"


class BatchRunner:
    """A Ray actor that runs row batches, up to ``RAY_BATCHES_PER_CPU`` at once (in threads of
    one process: they share its driver, engine loop and judge slots)."""

    def run(self, task: Callable[..., Any], *args: Any) -> Any:
        """``task(*args)``."""
        return task(*args)

    def where(self) -> tuple[int, str]:
        """The runner's process id and node (answered in a thread of its own, beside its
        batches, see :func:`_pinged_runner`: a runner that does not answer is stopped or
        hung)."""
        import ray

        return os.getpid(), ray.util.get_node_ip_address()


def _pinged_runner(ray: Any) -> Any:
    """:class:`BatchRunner` as a Ray actor class whose ``where`` runs in a thread of its own
    (a class made here travels by value, with its method's group: through Ray Client too,
    where a call cannot name a group)."""

    class PingedBatchRunner(BatchRunner):
        @ray.method(concurrency_group="ping")
        def where(self) -> tuple[int, str]:
            return BatchRunner.where(self)

    return ray.remote(concurrency_groups={"ping": 1})(PingedBatchRunner)


class RayBackend:
    """Row batches on Ray: one :class:`BatchRunner` actor per CPU, each running up to
    ``RAY_BATCHES_PER_CPU`` batches at once, a batch handed to the one running fewest. A run
    fails once the cluster has had no CPU, or a batch's runner answered no ping, for
    :data:`~evaldag._cluster.backends.NO_WORKERS_SECONDS` (Ray restarts a runner whose process
    or node died, but not one that is alive and stopped)."""

    def __init__(self) -> None:
        import ray

        self.ray = ray
        self.address, self.head = _ray_addresses(ray)
        self.slots = self._first_cpus()
        self.batches = RAY_BATCHES_PER_CPU * self.slots
        self._runners: list[Any] = []
        self._where: dict[int, Any] = {}  # each runner's last answer to a ping
        self._placement = Placement({})
        self._lock = threading.Lock()

    def _first_cpus(self) -> int:
        """The cluster's CPUs, once it has one (within the bound)."""
        deadline = time.monotonic() + backends.NO_WORKERS_SECONDS
        while not (cpus := int(self.ray.cluster_resources().get("CPU", 0))):
            if time.monotonic() >= deadline:
                raise self._no_cpus()
            time.sleep(min(1.0, backends.NO_WORKERS_SECONDS))
        return cpus

    def _no_cpus(self) -> EvalDagError:
        return EvalDagError(
            "CLUSTER_NO_WORKERS",
            f"the Ray cluster at {self.address} has had no CPU for "
            f"{backends.NO_WORKERS_SECONDS:.0f} s (its head was started with --num-cpus=0 and no "
            "worker node joined, or they all left), so the run's batches cannot run: start a "
            "worker node (`ray start "
            f"--address={self.head}`); the batches finished are kept by checkpoint= or out= a "
            "directory, and the same run again (evaldag run --resume) goes on from them",
            category="USER",
            details={"executor": self.address},
        )

    def shared(self, value: Any) -> Any:
        return self.ray.put(value)

    def run(self, task: Callable[..., Any], *args: Any) -> Any:
        with self._lock:
            if not self._runners:
                # As many runners as CPUs, reserving none: a runner holding a CPU for the whole
                # run would keep another run (or a runner restarted after its node died) from
                # ever being placed while this run lasts; its batches wait on judges, not CPU.
                actor = _pinged_runner(self.ray).options(
                    num_cpus=0,
                    max_concurrency=RAY_BATCHES_PER_CPU,
                    max_restarts=-1,
                    max_task_retries=RAY_TASK_RETRIES,
                    scheduling_strategy="SPREAD",
                )
                self._runners = [actor.remote() for _ in range(self.slots)]
                self._where = {n: self._ping(n) for n in range(self.slots)}  # kept for errors
                self._placement.update(dict.fromkeys(range(self.slots), 1))
        with self._placement.place() as runner:
            return self._result(runner, self._runners[runner].run.remote(task, *args))

    def _result(self, runner: int, ref: Any) -> Any:
        """``ref``'s value, waited for while its runner answers a ping within the bound (a
        runner still starting, within :data:`RUNNER_START_SECONDS`)."""
        silent_since: float | None = None
        while True:
            ready, _ = self.ray.wait([ref], timeout=backends.WORKERS_CHECK_SECONDS)
            if ready:
                return self.ray.get(ref)
            sent = time.monotonic()
            ping = self._ping(runner)
            try:
                self.ray.get(ping, timeout=backends.WORKERS_CHECK_SECONDS)
                self._where[runner] = ping
                silent_since = None
            except TimeoutError:
                silent_since = silent_since or sent
                if time.monotonic() - silent_since >= self._silence_bound(runner):
                    raise self._silent(runner) from None

    def _silence_bound(self, runner: int) -> float:
        """The seconds ``runner`` may answer no ping: longer while it has never answered."""
        if self.ray.wait([self._where[runner]], timeout=0)[0]:  # it answered once at least
            return backends.NO_WORKERS_SECONDS
        return max(backends.NO_WORKERS_SECONDS, RUNNER_START_SECONDS)

    def _ping(self, runner: int) -> Any:
        """The reference of ``runner``'s answer to where it runs."""
        return self._runners[runner].where.remote()

    def _silent(self, runner: int) -> EvalDagError:
        """The error of a runner that answered no ping for the bound."""
        if not self.ray.cluster_resources().get("CPU", 0):
            return self._no_cpus()
        try:  # its last answer (the one it gave when it started, at least)
            pid, node = self.ray.get(self._where[runner], timeout=0)
        except Exception:  # it never answered
            where, end = "it never answered, so it never started", "see why in `ray logs`"
        else:
            where, end = f"process {pid} on node {node}", f"end it (`kill -9 {pid}` on {node})"
        return EvalDagError(
            "CLUSTER_WORKER_HUNG",
            f"a batch runner of the Ray cluster at {self.address} ({where}) has answered no "
            f"ping for {self._silence_bound(runner):.0f} s, so its batches cannot finish: its "
            "process is stopped or hung (Ray restarts a runner whose process died, not one that "
            f"is alive); {end}, or restart its node (`ray stop` there, then `ray start --address="
            f"{self.head}`); the batches finished are kept by checkpoint= or out= a directory, "
            "and the same run again (evaldag run --resume) goes on from them",
            category="SYSTEM",
            details={"executor": self.address, "runner": where},
        )

    def coordinator(self, budget_usd: float | None) -> Coordinator:
        return RayCoordinator(_ray_coordinators(self.ray), str(uuid.uuid4()), budget_usd)

    def close(self) -> None:
        """End the run's batch runners."""
        for runner in self._runners:
            try:
                self.ray.kill(runner)
            except Exception as error:  # the run's result (or its error) is worth more
                _logger.warning("a batch runner of the run could not be ended (%s)", error)


def _ray_addresses(ray: Any) -> tuple[str, str]:
    """The address of the Ray cluster this process is connected to, and the address worker
    nodes join it at (``ray start --address=...``)."""
    try:
        head = str(ray.get_runtime_context().gcs_address)
    except Exception:  # not told (a Ray Client connection)
        head = "HEAD:6379"
    connected = _connected_address(ray)
    return (connected if connected.startswith("ray://") else head), head


#: The actor of this process's runs' coordinators, and the Ray connection it was started on.
_kept_coordinators: tuple[tuple[str, str] | None, Any] | None = None
_kept_lock = threading.Lock()


def _ray_coordinators(ray: Any) -> Any:
    """The :class:`RunCoordinators` actor of this process's runs on Ray's cluster: the one an
    earlier run started on the same connection if it answers, else a new one (it was killed,
    or Ray was started again)."""
    global _kept_coordinators
    try:
        context = ray.get_runtime_context()
        connection: tuple[str, str] | None = (str(context.gcs_address), str(context.get_job_id()))
    except Exception:  # not told (a Ray Client connection): the actor's answer decides
        connection = None
    with _kept_lock:
        if _kept_coordinators is not None and _kept_coordinators[0] == connection:
            try:
                ray.get(_kept_coordinators[1].runs.remote(), timeout=RAY_COORDINATORS_WAIT)
            except Exception:  # dead (killed, its node lost) or not answering: another one
                pass
            else:
                return _kept_coordinators[1]
        actor = ray.remote(RunCoordinators).options(max_concurrency=RAY_ACTOR_CONCURRENCY)
        _kept_coordinators = (connection, actor.remote())
        return _kept_coordinators[1]


class RayCoordinator:
    """A run's coordinator in the :class:`RunCoordinators` actor of the client process; it
    pickles as Ray's handles do."""

    def __init__(self, actor: Any, run: str, budget_usd: float | None) -> None:
        self.actor, self.run, self.budget_usd = actor, run, budget_usd

    def bind(self) -> None:
        """Nothing to bind: Ray's handles work from any thread."""

    def call(self, method: str, *args: Any) -> Future[Any]:
        return self.actor.call.remote(self.run, self.budget_usd, method, *args).future()

    def close(self) -> None:
        """Drop the run's coordinator; the actor stays for the process's next runs (one
        process, ~130 MB, for all of them, ended with the client's Ray connection)."""
        self.actor.end.remote(self.run)
