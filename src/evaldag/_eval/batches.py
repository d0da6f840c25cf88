"""Row batches through the eval DAG, in dataset order, the next one running beside the last rows
of the current one.

Each batch is one ``execute()`` of the graph. With judges, async steps or a target, a batch ends
in a tail: its last rows wait on their slowest calls while most slots idle. So the next batch's
``execute()`` runs alongside, in a worker thread (one batch ahead at most, which bounds the
memory), taking the slots the current one leaves free: both share the run's
:class:`~evaldag._engine.concurrency.RowSlots`, so ``concurrency`` holds across them and the
earlier batch is served first. Batches are handed on in dataset order; a batch run ahead that is
no longer wanted (the run failed fast, raised or was interrupted) is stopped and waited for.
"""

from __future__ import annotations

import contextvars
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pandas as pd

from evaldag._engine.concurrency import BatchSlots, RowSlots, batch_running

#: Batches running ahead of the one handed on next.
AHEAD = 1


@dataclass
class Batch:
    """One row batch: ``items`` a checkpoint saved, else the ``values`` of its ``execute()``.

    ``rows`` are its rows, or where to read them (a streamed run's batches are read where they
    run: ``evaldag._eval.streamed_batches``).
    """

    start: int
    rows: Any
    items: pd.DataFrame | None = None
    values: Any = None


@dataclass
class _Ahead:
    batch: Batch
    values: Future[Any] | None = None
    slots: BatchSlots | None = None


def row_batches(dataset: pd.DataFrame, size: int) -> Iterator[tuple[int, pd.DataFrame]]:
    """Each batch of ``size`` rows of ``dataset``, in order, with its first row's position."""
    for start in range(0, len(dataset), size):
        yield start, dataset.iloc[start : start + size]


def batches(
    pieces: Iterable[tuple[int, Any]],
    execute: Callable[[int, Any], Any],
    *,
    saved_items: Callable[[int, Any], pd.DataFrame | None] | None = None,
    slots: RowSlots | None = None,
    ahead: int | None = None,
) -> Generator[Batch, None, None]:
    """Each batch of ``pieces`` (its first row's position, and its rows), in order, with its
    saved items or values.

    :param execute: the graph's ``execute()`` of a batch's rows (given its first row's position).
    :param saved_items: a checkpoint's items of the batch at a row, or None to execute it.
    :param slots: the run's slots for rows waiting on a call: the next batch then runs while the
        current one's last rows are in flight; None runs one batch after another, here.
    :param ahead: batches run ahead of the one handed on (default: ``AHEAD`` with ``slots``,
        else none): a cluster runs as many as it has room for.
    """
    remaining = iter(pieces)

    def next_batch() -> Batch | None:
        piece = next(remaining, None)
        if piece is None:
            return None
        start, rows = piece
        return Batch(start, rows, saved_items(start, rows) if saved_items else None)

    if ahead is None:
        ahead = 0 if slots is None else AHEAD
    if ahead == 0:
        while (batch := next_batch()) is not None:
            if batch.items is None:
                batch.values = execute(batch.start, batch.rows)
            yield batch
        return
    queue: deque[_Ahead] = deque()
    pool = ThreadPoolExecutor(ahead + 1, thread_name_prefix="evaldag-batch")
    try:
        while True:
            while sum(running.values is not None for running in queue) <= ahead:
                batch = next_batch()
                if batch is None:
                    break
                running = _Ahead(batch)
                if batch.items is None:
                    running.slots = None if slots is None else BatchSlots(slots, batch.start)
                    context = contextvars.copy_context()  # the caller's context variables
                    running.values = pool.submit(
                        context.run, _executed, execute, batch, running.slots
                    )
                queue.append(running)
            if not queue:
                return
            head = queue[0]
            if head.values is not None:
                head.batch.values = head.values.result()
            queue.popleft()
            yield head.batch
    finally:
        for running in queue:  # not handed on: the run stops here
            if running.slots is not None:
                running.slots.stop()
        pool.shutdown(wait=True, cancel_futures=True)


def _executed(execute: Callable[[int, Any], Any], batch: Batch, slots: BatchSlots | None) -> Any:
    if slots is None:
        return execute(batch.start, batch.rows)
    with batch_running(slots):
        return execute(batch.start, batch.rows)
