"""Rows waiting on calls, bounded: the run's row slots, shared by its batches in flight.

Steps that wait (judge calls, async steps) run on the engine loop
(:mod:`evaldag._util.event_loop`), and a row can go on to its next step while other rows are
still in flight (see :mod:`evaldag._engine.stages`).

Rows waiting on a call hold a slot of a **row limit**: ``concurrency`` slots per scorer and for
the target. ``run_evals`` runs the next row batch while the current one's last rows are in
flight; both take their slots from one :class:`RowSlots` per run, so the run's limits hold across
the batches, and the earlier batch is served first.
"""

from __future__ import annotations

import asyncio
import contextvars
import heapq
import itertools
import threading
from collections.abc import Awaitable, Hashable, Iterable, Iterator
from contextlib import AbstractAsyncContextManager, contextmanager
from typing import Any, TypeVar

from evaldag._util.event_loop import wake

T = TypeVar("T")


async def gather_limited(
    awaitables: Iterable[Awaitable[T]], limit: int, key: Hashable = None
) -> list[T]:
    """Await all of ``awaitables`` with at most ``limit`` in flight (in a batch of ``run_evals``,
    the run's slots of ``key``: see :func:`row_limit`); results in input order."""
    slots = row_limit(key, limit)

    async def bounded(awaitable: Awaitable[T]) -> T:
        async with slots:
            return await awaitable

    return list(await asyncio.gather(*(bounded(a) for a in awaitables)))


class RowSlots:
    """The slots of one run's rows waiting on a call: ``size`` per key (a scorer, the target),
    shared by the row batches in flight together.

    Waiters are futures on their own event loops (the engine loop for scorer rows, a batch's own
    loop for target calls), woken with ``call_soon_threadsafe``. A freed slot goes to the waiter
    of the earliest batch (the lowest rank), then the oldest, so a batch run ahead only fills the
    slots the one before it leaves idle.
    """

    def __init__(self, size: int) -> None:
        self.size = max(1, size)
        self._held: dict[Hashable, int] = {}
        self._waiters: dict[Hashable, list[tuple[int, int, Any, asyncio.Future[None]]]] = {}
        self._order = itertools.count()
        self._lock = threading.Lock()

    def held(self, key: Hashable) -> int:
        """Slots of ``key`` in use."""
        return self._held.get(key, 0)

    async def acquire(self, key: Hashable, rank: int) -> None:
        """Wait for a slot of ``key``, served by ``rank``, then in order of asking."""
        loop = asyncio.get_running_loop()
        with self._lock:
            waiters = self._waiters.setdefault(key, [])
            if self._held.get(key, 0) < self.size and not waiters:
                self._held[key] = self._held.get(key, 0) + 1
                return
            waiter = (rank, next(self._order), loop, loop.create_future())
            heapq.heappush(waiters, waiter)
        try:
            await waiter[3]
        except asyncio.CancelledError:
            with self._lock:
                granted = waiter not in waiters
                if not granted:
                    waiters.remove(waiter)
                    heapq.heapify(waiters)
            if granted:  # the slot was handed over as we were cancelled: pass it on
                self.release(key)
            raise

    def release(self, key: Hashable) -> None:
        with self._lock:
            self._held[key] -= 1
            waiters = self._waiters[key]
            while waiters and self._held[key] < self.size:
                *_, loop, future = heapq.heappop(waiters)
                try:
                    wake(loop, future)
                except RuntimeError:  # its loop has closed: nobody waits there any more
                    continue
                self._held[key] += 1


class BatchSlots:
    """One row batch's share of its run's :class:`RowSlots`: served by ``rank`` (its first
    row), and able to stop every row of the batch that holds or waits for a slot."""

    def __init__(self, slots: RowSlots, rank: int) -> None:
        self.slots = slots
        self.rank = rank
        self.stopped = False
        self._rows: dict[asyncio.Task[Any], asyncio.AbstractEventLoop] = {}
        self._lock = threading.Lock()

    def limit(self, key: Hashable) -> _BatchLimit:
        """``async with`` it to hold one of ``key``'s slots for this batch."""
        return _BatchLimit(self, key)

    def stop(self) -> None:
        """Cancel the batch's rows that hold or wait for a slot (and so the rows chained on
        them); rows that ask for one later are cancelled as they ask."""
        with self._lock:
            self.stopped = True
            rows = list(self._rows.items())
        for task, loop in rows:
            try:
                loop.call_soon_threadsafe(task.cancel)
            except RuntimeError:  # its loop has closed: the row is over
                continue


class _BatchLimit:
    __slots__ = ("batch", "key")

    def __init__(self, batch: BatchSlots, key: Hashable) -> None:
        self.batch, self.key = batch, key

    async def __aenter__(self) -> None:
        batch, task = self.batch, asyncio.current_task()
        with batch._lock:
            if batch.stopped:
                raise asyncio.CancelledError
            if task is not None:
                batch._rows[task] = asyncio.get_running_loop()
        try:
            await batch.slots.acquire(self.key, batch.rank)
        except BaseException:
            self._forget(task)
            raise

    async def __aexit__(self, *exc: object) -> None:
        self.batch.slots.release(self.key)
        self._forget(asyncio.current_task())

    def _forget(self, task: asyncio.Task[Any] | None) -> None:
        with self.batch._lock:
            self.batch._rows.pop(task, None)  # type: ignore[arg-type]


#: The row batch whose Hamilton execution runs in this context (set by ``run_evals``).
_batch: contextvars.ContextVar[BatchSlots | None] = contextvars.ContextVar(
    "evaldag_batch", default=None
)


@contextmanager
def batch_running(batch: BatchSlots) -> Iterator[None]:
    """Rows started in this context take their slots from ``batch``."""
    token = _batch.set(batch)
    try:
        yield
    finally:
        _batch.reset(token)


def row_limit(key: Hashable, size: int) -> AbstractAsyncContextManager[Any]:
    """The limit on rows of ``key`` (a scorer, the target) waiting on a call: in a batch of
    ``run_evals``, the batch's share of the run's slots of ``key``; else ``size`` slots of
    their own."""
    batch = _batch.get()
    if batch is None or key is None:
        return asyncio.Semaphore(max(1, size))
    return batch.limit(key)
