"""The clusters row batches run on: Dask and Ray, started here or reached at an address.

A backend runs a task and waits for its value (``run``), ships a value once to every task
(``shared``) and gives the run's :class:`~evaldag._cluster.coordinator.RunCoordinator`, an actor
whose handle any worker can call (``coordinator``): on Dask an actor of its own; on Ray one of
the coordinators the client process's actor holds (:class:`RunCoordinators`, started once).
Tasks of a worker that died run again elsewhere (Dask reschedules them; Ray starts the actor
that ran them again, there or elsewhere, and retries them), and a shared value every copy of
which died with its workers is shipped again (Dask cancels the tasks that need it).

A worker process runs two row batches at once (per thread on Dask, per CPU on Ray), so the next
one starts while the last rows of another wait on their slowest calls (a judge's slow replies),
and its judge calls do not wait for a batch's tail: on Dask a task leaves the worker's thread
pool (``secede``) as it starts, once one of :data:`DASK_BATCHES_PER_THREAD` places per thread is
free; on Ray the batches go to :class:`BatchRunner` actors, one per CPU, each running
:data:`RAY_BATCHES_PER_CPU` at once (more tasks than CPUs would be more processes: measured, no
faster and dearer in CPU). The client sends each batch to the worker (runner) running fewest.

No wait for the cluster is without bound (:data:`NO_WORKERS_SECONDS`): a cluster with nothing
to run the batches on (a Dask scheduler without a running worker, a Ray cluster without a CPU,
a Ray runner stopped or hung) fails the run naming its address and the fix, while a batch that
runs is waited for however long it takes.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future
from contextlib import contextmanager
from typing import Any, Protocol, TypeVar

from evaldag._cluster.coordinator import RunCoordinator, RunCoordinators
from evaldag.errors import EvalDagError

_logger = logging.getLogger(__name__)
_T = TypeVar("_T")

#: Concurrent calls Ray's async coordinator actor serves: every row waiting for a judge slot
#: holds one, and a release must never queue behind them.
RAY_ACTOR_CONCURRENCY = 100_000
#: Retries of a Ray task whose worker died (Dask's own default is 3).
RAY_TASK_RETRIES = 3
#: Times a Dask task is submitted again after the last copy of a shared value it needs was lost.
DASK_RESHARES = 3
#: Seconds a run waits for the coordinators' actor of earlier runs to answer (else it starts
#: another).
RAY_COORDINATORS_WAIT = 10.0
#: Tasks a Dask worker runs at once per thread it has.
DASK_BATCHES_PER_THREAD = 2
#: Seconds between two readings of a Dask cluster's workers (the places batches go to, and
#: whether there are any), and between two pings of a Ray batch runner, while a batch waits.
WORKERS_CHECK_SECONDS = 5.0
#: Seconds a run waits for a cluster with nothing to run its batches on: a Dask scheduler with
#: no worker, a Ray cluster with no CPU, a Ray batch runner answering no ping (its process
#: stopped or hung). Long enough for a worker to be restarted or an autoscaler to add a machine;
#: then the run fails naming the cluster and the fix, the batches finished kept by
#: ``checkpoint=`` or ``out=`` a directory. A batch that runs, however long, is never bounded.
NO_WORKERS_SECONDS = 300.0
#: Seconds a Dask scheduler may take to say which workers it has.
SCHEDULER_ANSWER_SECONDS = 60.0
#: Row batches a Ray batch runner (one per CPU) runs at once.
RAY_BATCHES_PER_CPU = 2


class Coordinator(Protocol):
    """A handle on the run's coordinator actor, which pickles to workers."""

    def bind(self) -> None:
        """Make the handle callable from any thread of this process (called in a task)."""

    def call(self, method: str, *args: Any) -> Future[Any]:
        """Call one of the coordinator's methods; its value comes in the future."""

    def close(self) -> None:
        """End the actor once its run is over (called by the client)."""


class Backend(Protocol):
    """A cluster row batches run on."""

    #: The cluster's task slots: its worker processes' threads (Dask: read again once the
    #: coordinator runs) or CPUs (Ray).
    slots: int
    #: Tasks the cluster runs at once.
    batches: int

    def shared(self, value: Any) -> Any:
        """``value`` stored once on the cluster; tasks given the reference get the value."""

    def run(self, task: Callable[..., Any], *args: Any) -> Any:
        """Run ``task(*args)`` on a worker; its value."""

    def coordinator(self, budget_usd: float | None) -> Coordinator:
        """Start the run's coordinator actor."""

    def close(self) -> None:
        """End what the run started on the cluster to run its tasks."""


def _missing(extra: str, error: ImportError) -> EvalDagError:
    return EvalDagError(
        "EXECUTOR_UNAVAILABLE",
        f"executor={extra!r} needs the '{extra}' extra: pip install 'evaldag[{extra}]'",
        category="SYSTEM",
        cause=error,
    )


@contextmanager
def cluster_backend(executor: Any) -> Iterator[Backend]:
    """The cluster ``executor`` names; a cluster started here is stopped after.

    :param executor: ``"dask"`` (a local Dask cluster), ``"dask://HOST:PORT"`` (a Dask
        scheduler), a ``dask.distributed.Client``, ``"ray"`` (the Ray cluster of
        ``RAY_ADDRESS`` or this machine's, else a local one) or ``"ray://HOST:PORT"`` (a Ray
        head's client server).
    """
    if isinstance(executor, str) and (executor == "dask" or executor.startswith("dask://")):
        try:
            from distributed import Client, LocalCluster
        except ImportError as error:
            raise _missing("dask", error) from error
        if executor == "dask":
            with (
                LocalCluster(processes=True, dashboard_address=":0") as cluster,
                Client(cluster) as client,
            ):
                yield DaskBackend(client)
        else:
            with Client(f"tcp://{executor.removeprefix('dask://')}", timeout=30) as client:
                yield DaskBackend(client)
    elif isinstance(executor, str) and (executor == "ray" or executor.startswith("ray://")):
        try:
            import ray

            if executor != "ray":
                import grpc  # noqa: F401 (Ray Client's transport, which plain `pip install ray` lacks)
        except ImportError as error:
            raise _missing("ray", error) from error
        started = not ray.is_initialized()
        if started:
            _ray_started(ray, None if executor == "ray" else executor)
        elif executor != "ray":
            _require_connected_to(ray, executor)
        backend = RayBackend()
        try:
            yield backend
        finally:
            backend.close()
            if started:
                ray.shutdown()
    elif type(executor).__name__ == "Client" and type(executor).__module__.startswith(
        "distributed"
    ):
        yield DaskBackend(executor)
    else:
        raise EvalDagError(
            "INVALID_EXECUTOR",
            "executor must be 'dask', 'ray', 'dask://HOST:PORT', 'ray://HOST:PORT' or a "
            f"dask.distributed.Client, got {executor!r}",
            details={"executor": repr(executor)},
        )


def _ray_started(ray: Any, address: str | None) -> None:
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


def _require_connected_to(ray: Any, address: str) -> None:
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


class _Placement:
    """The batches running on each place (a Dask worker, a Ray batch runner): the next one goes
    to the place running fewest for its room (its threads), so none runs dry while another
    queues (a Dask scheduler would see a worker whose tasks left its thread pool as idle)."""

    def __init__(self, room: Mapping[Any, int]) -> None:
        self._lock = threading.Lock()
        self._room: dict[Any, int] = {}
        self._running: dict[Any, int] = {}
        self.update(room)

    def update(self, room: Mapping[Any, int]) -> None:
        """The places there are now and the room of each (a place gone gets no more)."""
        with self._lock:
            self._room = {place: max(1, count) for place, count in room.items()}

    @contextmanager
    def place(self) -> Iterator[Any]:
        """The place a batch runs on while in this context (None when there is none)."""
        with self._lock:
            chosen = min(
                self._room, key=lambda p: self._running.get(p, 0) / self._room[p], default=None
            )
            self._running[chosen] = self._running.get(chosen, 0) + 1
        try:
            yield chosen
        finally:
            with self._lock:
                self._running[chosen] -= 1
                if not self._running[chosen]:
                    del self._running[chosen]


class DaskBackend:
    """Row batches as Dask tasks of ``client``'s cluster, each sent to the worker running
    fewest per thread (or, gone, to any); a wait for a task fails once the scheduler has had no
    running worker for :data:`NO_WORKERS_SECONDS` (Dask itself restarts or removes a worker
    whose heartbeats stopped for its ``distributed.scheduler.worker-ttl``, and runs its tasks
    elsewhere)."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.address = str(client.scheduler.address)
        self._lock = threading.Lock()
        self._placement = _Placement({})
        self._none_since: float | None = None
        self._workers_read = time.monotonic()
        self._sized(self._threads())

    def _sized(self, threads: Mapping[Any, int]) -> None:
        """The cluster's size and places as ``threads`` (its workers' threads) has them."""
        self.slots = max(1, sum(threads.values()))
        self.batches = DASK_BATCHES_PER_THREAD * self.slots
        self._placement.update(threads)
        self._none_since = None if threads else self._none_since or time.monotonic()

    def _threads(self) -> dict[Any, int]:
        """The threads of each worker that takes tasks (running: not paused, not closing)."""
        try:  # the scheduler's own reading of them, as the client's scatter asks it
            threads: dict[Any, int] = self.client.sync(
                self.client.scheduler.ncores_running, callback_timeout=SCHEDULER_ANSWER_SECONDS
            )
        except TimeoutError:
            raise EvalDagError(
                "CLUSTER_UNREACHABLE",
                f"the Dask scheduler at {self.address} did not say which workers it has within "
                f"{SCHEDULER_ANSWER_SECONDS:g} s: it is stopped, hung or out of reach; restart "
                "it (`dask scheduler`) and its workers, then run again (the batches finished "
                "are kept by checkpoint= or out= a directory)",
                category="SYSTEM",
                details={"executor": self.address},
            ) from None
        return threads

    def _check_workers(self) -> bool:
        """Whether the cluster has workers, read again if the last reading is older than
        :data:`WORKERS_CHECK_SECONDS`; fails once there has been none for the bound."""
        with self._lock:
            now = time.monotonic()
            if now - self._workers_read >= WORKERS_CHECK_SECONDS:
                self._workers_read = now
                threads = self._threads()
                self._placement.update(threads)
                if threads:
                    self._none_since = None
                elif self._none_since is None:
                    self._none_since = now
            if self._none_since is not None and now - self._none_since >= NO_WORKERS_SECONDS:
                raise _no_dask_workers(self.address, now - self._none_since)
            return self._none_since is None

    def _result(self, future: Any) -> Any:
        """``future``'s value, waited for while the cluster has workers (not by
        ``result(timeout=)``, which a future cancelled meanwhile breaks in Dask's ``sync``)."""
        ended = threading.Event()
        future.add_done_callback(lambda _: ended.set())  # finished, failed or cancelled
        while not ended.wait(WORKERS_CHECK_SECONDS):
            self._check_workers()
        return future.result()

    def shared(self, value: Any) -> Any:
        return self._scattering(lambda: _Scattered(self.client, value))

    def _scattering(self, scatter: Callable[[], _T]) -> _T:
        """``scatter()``, tried again while the scheduler has no running worker to take the
        value (:data:`NO_WORKERS_SECONDS` at most)."""
        deadline = time.monotonic() + NO_WORKERS_SECONDS
        while True:
            try:
                return scatter()
            except TimeoutError:  # the scheduler found no running worker in a check's time
                self._check_workers()
                if time.monotonic() >= deadline:
                    raise _no_dask_workers(self.address, NO_WORKERS_SECONDS) from None
                time.sleep(WORKERS_CHECK_SECONDS)

    def run(self, task: Callable[..., Any], *args: Any) -> Any:
        from distributed.client import FutureCancelledError

        self._check_workers()
        attempt = 0
        while True:
            sent = [arg.future() if isinstance(arg, _Scattered) else arg for arg in args]
            try:
                with self._placement.place() as worker:
                    return self._result(
                        self.client.submit(
                            _beside_others,
                            task,
                            *sent,
                            pure=False,
                            workers=None if worker is None else [worker],
                            allow_other_workers=True,
                        )
                    )
            except FutureCancelledError:
                # Dask cancels a task needing a value whose every copy died with its workers
                shared = [
                    (a, f) for a, f in zip(args, sent, strict=True) if isinstance(a, _Scattered)
                ]
                if attempt == DASK_RESHARES or not self._shared_again(shared):
                    raise
                attempt += 1

    def _shared_again(self, shared: list[tuple[_Scattered, Any]]) -> bool:
        """Whether a value of ``shared`` (each with the copies a task was sent) was lost and
        is scattered anew, once the cluster has a worker to take it (within the bound)."""
        return self._scattering(lambda: any(value.scattered_again(sent) for value, sent in shared))

    def coordinator(self, budget_usd: float | None) -> Coordinator:
        """The actor, once a worker runs it (an adaptive cluster with no worker starts one for
        the task); the cluster's size is read again then."""
        actor = self._result(self.client.submit(RunCoordinator, budget_usd, actor=True))
        self._sized(self._threads())
        return DaskCoordinator(actor)

    def close(self) -> None:
        """Nothing to end: the tasks ran on the cluster's own workers."""


def _no_dask_workers(address: str, waited: float) -> EvalDagError:
    return EvalDagError(
        "CLUSTER_NO_WORKERS",
        f"the Dask scheduler at {address} has had no running worker for {waited:.0f} s, so the "
        f"run's batches cannot run: start workers (`dask worker {address}`), or see in their logs "
        "why they died; the batches finished are kept by checkpoint= or out= a directory, and "
        "the same run again (evaldag run --resume) goes on from them",
        category="USER",
        details={"executor": address, "waited_seconds": round(waited, 1)},
    )


#: The tasks this Dask worker may run at once, once it ran one.
_worker_batches: threading.BoundedSemaphore | None = None
_worker_batches_lock = threading.Lock()


def _beside_others(task: Callable[..., Any], *args: Any) -> Any:
    """``task(*args)`` on a Dask worker, out of its thread pool once one of the worker's
    ``DASK_BATCHES_PER_THREAD`` places per thread is free: the worker's thread takes its next
    task meanwhile (the place is waited for in the thread, so the worker takes no more)."""
    from distributed import get_worker, secede

    global _worker_batches
    with _worker_batches_lock:
        if _worker_batches is None:
            places = DASK_BATCHES_PER_THREAD * get_worker().state.nthreads
            _worker_batches = threading.BoundedSemaphore(places)
        running = _worker_batches
    with running:
        secede()
        return task(*args)


class _Scattered:
    """A value on every worker of a Dask cluster, scattered again when its copies are lost
    (the workers that held them died; workers started in their place hold none)."""

    def __init__(self, client: Any, value: Any) -> None:
        self.client = client
        self.value = value
        self._lock = threading.Lock()
        self._future = self._scattered()

    def _scattered(self) -> Any:
        # waiting for a worker to take it as long as a check of the workers (within the bound)
        return self.client.scatter(
            self.value, broadcast=True, hash=False, timeout=WORKERS_CHECK_SECONDS
        )

    def future(self) -> Any:
        """The future of the value's current copies."""
        with self._lock:
            return self._future

    def scattered_again(self, sent: Any) -> bool:
        """Whether the copies ``sent`` were lost, and the value is scattered anew (once for
        every task that sent them)."""
        with self._lock:
            if self._future is not sent:
                return True
            if sent.status == "finished":
                return False
            self._future = self._scattered()
            return True


class DaskCoordinator:
    """A Dask actor's handle whose calls any thread can make: they run on the event loop of
    the worker or client that holds the handle (bound where a task or the client runs)."""

    def __init__(self, actor: Any) -> None:
        self.actor = actor
        self._loop: asyncio.AbstractEventLoop | None = None

    def __reduce__(self) -> tuple[Any, ...]:
        return DaskCoordinator, (self.actor,)

    def bind(self) -> None:
        """Bind the handle to this worker (in a task) or client; calls made later from other
        threads (the engine loop's) go through it."""
        self.actor._try_bind_worker_client()  # where Dask finds its worker: the task's thread
        self._loop = self.actor._io_loop.asyncio_loop

    def call(self, method: str, *args: Any) -> Future[Any]:
        if self._loop is None:
            self.bind()
        assert self._loop is not None

        async def called() -> Any:
            return await getattr(self.actor, method)(*args)

        return asyncio.run_coroutine_threadsafe(called(), self._loop)

    def close(self) -> None:
        """Nothing to end: a Dask actor is an object in a worker process, dropped with its
        run's last reference."""


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
    :data:`NO_WORKERS_SECONDS` (Ray restarts a runner whose process or node died, but not
    one that is alive and stopped)."""

    def __init__(self) -> None:
        import ray

        self.ray = ray
        self.address, self.head = _ray_addresses(ray)
        self.slots = self._first_cpus()
        self.batches = RAY_BATCHES_PER_CPU * self.slots
        self._runners: list[Any] = []
        self._where: dict[int, Any] = {}  # each runner's last answer to a ping
        self._placement = _Placement({})
        self._lock = threading.Lock()

    def _first_cpus(self) -> int:
        """The cluster's CPUs, once it has one (within the bound)."""
        deadline = time.monotonic() + NO_WORKERS_SECONDS
        while not (cpus := int(self.ray.cluster_resources().get("CPU", 0))):
            if time.monotonic() >= deadline:
                raise self._no_cpus()
            time.sleep(min(1.0, NO_WORKERS_SECONDS))
        return cpus

    def _no_cpus(self) -> EvalDagError:
        return EvalDagError(
            "CLUSTER_NO_WORKERS",
            f"the Ray cluster at {self.address} has had no CPU for {NO_WORKERS_SECONDS:.0f} s "
            "(its head was started with --num-cpus=0 and no worker node joined, or they all "
            f"left), so the run's batches cannot run: start a worker node (`ray start "
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
        """``ref``'s value, waited for while its runner answers a ping within the bound."""
        silent_since: float | None = None
        while True:
            ready, _ = self.ray.wait([ref], timeout=WORKERS_CHECK_SECONDS)
            if ready:
                return self.ray.get(ref)
            sent = time.monotonic()
            ping = self._ping(runner)
            try:
                self.ray.get(ping, timeout=WORKERS_CHECK_SECONDS)
                self._where[runner] = ping
                silent_since = None
            except TimeoutError:
                silent_since = silent_since or sent
                if time.monotonic() - silent_since >= NO_WORKERS_SECONDS:
                    raise self._silent(runner) from None

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
            where, end = "it never answered", "restart the node it was placed on"
        else:
            where, end = f"process {pid} on node {node}", f"end it (`kill -9 {pid}` on {node})"
        return EvalDagError(
            "CLUSTER_WORKER_HUNG",
            f"a batch runner of the Ray cluster at {self.address} ({where}) has answered no "
            f"ping for {NO_WORKERS_SECONDS:.0f} s, so its batches cannot finish: its process is "
            "stopped or hung (Ray restarts a runner whose process died, not one that is alive); "
            f"{end}, or restart its node (`ray stop` there, then `ray start --address="
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
