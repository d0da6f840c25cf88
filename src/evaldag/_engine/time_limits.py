"""Calls under a time limit: a step or a target that overruns it ends in an error, the run goes on.

An async call is cancelled at the limit. A sync call runs in a daemon thread that the run stops
waiting for at the limit: Python cannot stop a thread, so the function runs on until it returns
(its result is dropped), and being a daemon it does not hold the process at exit. Sync steps
over a column run one after another in one such thread, watched row by row, so a limit costs
the column one thread, not one per row; after an overrun the next rows go on in a new thread.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from evaldag._scorer.steps import is_async_callable

T = TypeVar("T")
R = TypeVar("R")


async def limited_call(
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    seconds: float | None,
    overrun: Callable[[bool], BaseException],
) -> Any:
    """``fn(*args, **kwargs)``, awaited if it is async; ``overrun(is_async)`` is raised when it
    takes longer than ``seconds`` (None: no limit, and a sync ``fn`` runs here, as before)."""
    if seconds is None:
        value = fn(*args, **kwargs)
        return await value if hasattr(value, "__await__") else value
    is_async = is_async_callable(fn)
    call = fn(*args, **kwargs) if is_async else in_daemon_thread(fn, args, kwargs)
    return await _within(call, seconds, lambda: overrun(is_async))


async def _within(
    awaitable: Awaitable[T], seconds: float, overrun: Callable[[], BaseException]
) -> T:
    task = asyncio.ensure_future(awaitable)
    try:
        done, _ = await asyncio.wait({task}, timeout=seconds)
    except BaseException:  # the row itself was cancelled
        task.cancel()
        raise
    if task in done:
        return task.result()
    # Not awaited after the cancel: a call that ignores cancellation must not hold the row.
    task.cancel()
    task.add_done_callback(_retrieved)
    raise overrun()


def _retrieved(task: asyncio.Future[Any]) -> None:
    if not task.cancelled():
        task.exception()  # read, so that asyncio does not log it as never retrieved


async def in_daemon_thread(
    fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """``fn(*args, **kwargs)`` in a daemon thread of its own, in the caller's context
    variables; cancelling the await abandons the thread, which runs on and holds nothing."""
    loop = asyncio.get_running_loop()
    future = loop.create_future()
    context = contextvars.copy_context()

    def settled(value: Any, error: BaseException | None) -> None:
        if not future.done():
            future.set_result(value) if error is None else future.set_exception(error)

    def work() -> None:
        value, error = None, None
        try:
            value = context.run(fn, *args, **kwargs)
        except BaseException as raised:  # handed to the awaiting row
            error = raised
        try:
            loop.call_soon_threadsafe(settled, value, error)
        except RuntimeError:  # the loop closed while the call overran: nobody waits
            pass

    threading.Thread(target=work, name="evaldag-timed-call", daemon=True).start()
    value = await future
    return await value if hasattr(value, "__await__") else value


class _Watched:
    """The state of a column's worker thread, read by the thread that watches it."""

    __slots__ = ("abandoned", "condition", "done", "error", "index", "results", "started")

    def __init__(self, start: int) -> None:
        self.condition = threading.Condition()
        self.index = start
        self.started = time.monotonic()
        self.results: list[Any] = []
        self.done = self.abandoned = False
        self.error: BaseException | None = None


def limited_rows(
    call: Callable[[T], R], items: Sequence[T], seconds: float, overrun: Callable[[T], R]
) -> list[R]:
    """``call`` of each item, in order, in a daemon worker thread; an item whose call takes
    longer than ``seconds`` gets ``overrun(item)`` instead, and the items after it go on in a
    new thread. ``call`` must return, not raise, for an item that fails."""
    results: list[R] = []
    start = 0
    context = contextvars.copy_context()
    while start < len(items):
        watched = _Watched(start)
        worker = threading.Thread(
            target=context.copy().run,
            args=(_worked, watched, call, items),
            name="evaldag-timed-steps",
            daemon=True,
        )
        worker.start()
        try:
            overran = _watched_until_done(watched, seconds)
        finally:
            with watched.condition:
                watched.abandoned = not watched.done  # e.g. KeyboardInterrupt: stop after the row
        results += watched.results
        if overran is None:
            if watched.error is not None:
                raise watched.error
            break
        results.append(overrun(items[overran]))
        start = overran + 1
    return results


def _watched_until_done(watched: _Watched, seconds: float) -> int | None:
    """None once the worker is done, or the index of the item whose call overran."""
    with watched.condition:
        while not watched.done:
            remaining = watched.started + seconds - time.monotonic()
            if remaining <= 0:
                watched.abandoned = True  # under the lock: the row's result can no longer land
                return watched.index
            watched.condition.wait(remaining)
    return None


def _worked(watched: _Watched, call: Callable[[Any], Any], items: Sequence[Any]) -> None:
    condition = watched.condition
    try:
        for index in range(watched.index, len(items)):
            value = call(items[index])
            with condition:
                if watched.abandoned:
                    return
                watched.results.append(value)
                watched.index = index + 1
                watched.started = time.monotonic()
    except BaseException as error:  # re-raised by the watching thread, unless it went on
        with condition:
            if watched.abandoned:
                return
            watched.error = error
    with condition:
        watched.done = True
        condition.notify()
