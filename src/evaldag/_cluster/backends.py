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
from typing import Any, Protocol

from evaldag._cluster.coordinator import RunCoordinator, RunCoordinators
from evaldag.errors import EvalDagError

_logger = logging.getLogger(__name__)

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
#: Seconds between two readings of a Dask cluster's workers (the places batches go to).
DASK_WORKERS_REFRESH_SECONDS = 5.0
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

    #: The cluster's task slots: its worker processes' threads (Dask) or CPUs (Ray).
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
    fewest per thread (or, gone, to any)."""

    def __init__(self, client: Any) -> None:
        self.client = client
        threads = client.nthreads()
        self.slots = max(1, sum(threads.values()))
        self.batches = DASK_BATCHES_PER_THREAD * self.slots
        self._placement = _Placement(threads)
        self._workers_read = time.monotonic()

    def shared(self, value: Any) -> Any:
        return _Scattered(self.client, value)

    def run(self, task: Callable[..., Any], *args: Any) -> Any:
        from distributed.client import FutureCancelledError

        if time.monotonic() - self._workers_read > DASK_WORKERS_REFRESH_SECONDS:
            self._workers_read = time.monotonic()
            self._placement.update(self.client.nthreads())
        attempt = 0
        while True:
            sent = [arg.future() if isinstance(arg, _Scattered) else arg for arg in args]
            try:
                with self._placement.place() as worker:
                    return self.client.submit(
                        _beside_others,
                        task,
                        *sent,
                        pure=False,
                        workers=None if worker is None else [worker],
                        allow_other_workers=True,
                    ).result()
            except FutureCancelledError:
                # Dask cancels a task needing a value whose every copy died with its workers
                shared = [
                    (a, f) for a, f in zip(args, sent, strict=True) if isinstance(a, _Scattered)
                ]
                if attempt == DASK_RESHARES or not any(a.scattered_again(f) for a, f in shared):
                    raise
                attempt += 1

    def coordinator(self, budget_usd: float | None) -> Coordinator:
        actor = self.client.submit(RunCoordinator, budget_usd, actor=True).result()
        return DaskCoordinator(actor)

    def close(self) -> None:
        """Nothing to end: the tasks ran on the cluster's own workers."""


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
        return self.client.scatter(self.value, broadcast=True, hash=False)

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


class RayBackend:
    """Row batches on Ray: one :class:`BatchRunner` actor per CPU, each running up to
    ``RAY_BATCHES_PER_CPU`` batches at once, a batch handed to the one running fewest."""

    def __init__(self) -> None:
        import ray

        self.ray = ray
        self.slots = max(1, int(ray.cluster_resources().get("CPU", 1)))
        self.batches = RAY_BATCHES_PER_CPU * self.slots
        self._runners: list[Any] = []
        self._placement = _Placement({})
        self._lock = threading.Lock()

    def shared(self, value: Any) -> Any:
        return self.ray.put(value)

    def run(self, task: Callable[..., Any], *args: Any) -> Any:
        with self._lock:
            if not self._runners:
                # As many runners as CPUs, reserving none: a runner holding a CPU for the whole
                # run would keep another run (or a runner restarted after its node died) from
                # ever being placed while this run lasts; its batches wait on judges, not CPU.
                actor = self.ray.remote(BatchRunner).options(
                    num_cpus=0,
                    max_concurrency=RAY_BATCHES_PER_CPU,
                    max_restarts=-1,
                    max_task_retries=RAY_TASK_RETRIES,
                    scheduling_strategy="SPREAD",
                )
                self._runners = [actor.remote() for _ in range(self.slots)]
                self._placement.update(dict.fromkeys(range(self.slots), 1))
        with self._placement.place() as runner:
            return self.ray.get(self._runners[runner].run.remote(task, *args))

    def coordinator(self, budget_usd: float | None) -> Coordinator:
        return RayCoordinator(_ray_coordinators(self.ray), str(uuid.uuid4()), budget_usd)

    def close(self) -> None:
        """End the run's batch runners."""
        for runner in self._runners:
            try:
                self.ray.kill(runner)
            except Exception as error:  # the run's result (or its error) is worth more
                _logger.warning("a batch runner of the run could not be ended (%s)", error)


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
