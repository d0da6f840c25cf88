"""The clusters row batches run on: what a backend does, and Dask's (Ray's is in
:mod:`evaldag._cluster.ray_backend`; :func:`evaldag._cluster.batches.cluster_backend` starts or
reaches either).

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
free; on Ray the batches go to batch runner actors, one per CPU, each running two at once
(more tasks than CPUs would be more processes: measured, no faster and dearer in CPU). The
client sends each batch to the worker (runner) running fewest.

No wait for the cluster is without bound (:data:`NO_WORKERS_SECONDS`): a cluster with nothing
to run the batches on (a Dask scheduler without a running worker, a Ray cluster without a CPU,
a Ray runner stopped or hung) fails the run naming its address and the fix, while a batch that
runs is waited for however long it takes.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future
from contextlib import contextmanager
from typing import Any, Protocol, TypeVar

from evaldag._cluster.coordinator import RunCoordinator
from evaldag.errors import EvalDagError

_logger = logging.getLogger(__name__)
_T = TypeVar("_T")

#: Times a Dask task is submitted again after the last copy of a shared value it needs was lost.
DASK_RESHARES = 3
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


class Placement:
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
        self._placement = Placement({})
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
                            allow_other_workers=worker is not None,  # Dask refuses it alone
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
