"""Running coroutines from synchronous Hamilton nodes, bounded and Jupyter-safe.

Steps that wait (judge calls, async steps) run on the **engine loop**: one event loop per
process, in a daemon thread, for the life of the process. Connection pools opened on it outlive
the stage nodes and batches that use them, and a row can go on to its next step while other rows
are still in flight (see :mod:`evaldag._engine.stages`).
"""

from __future__ import annotations

import asyncio
import atexit
import contextvars
import gc
import os
import threading
from collections.abc import Awaitable, Coroutine, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

T = TypeVar("T")

_engine: tuple[int, asyncio.AbstractEventLoop, threading.Thread] | None = None
_engine_lock = threading.Lock()


def engine_loop() -> asyncio.AbstractEventLoop:
    """The process's long-lived event loop, started in a daemon thread on first use (and again
    in a forked child, which does not inherit the thread)."""
    global _engine
    with _engine_lock:
        if _engine is None or _engine[0] != os.getpid():
            if _engine is None:
                atexit.register(_stopped_engine)
            loop = asyncio.new_event_loop()
            thread = threading.Thread(
                target=loop.run_forever, name="evaldag-engine-loop", daemon=True
            )
            thread.start()
            _engine = (os.getpid(), loop, thread)
        return _engine[1]


def on_engine_loop(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run ``coroutine`` on the engine loop, in the caller's context variables, and wait.

    Called from the engine loop's own thread (a step that runs a scorer synchronously), the
    coroutine gets a private loop instead: waiting here would stop the loop it waits for.
    """
    loop = engine_loop()
    if in_engine_thread():
        return run_sync(coroutine)
    future = asyncio.run_coroutine_threadsafe(coroutine, loop)
    try:
        return future.result()
    except BaseException:
        future.cancel()  # e.g. KeyboardInterrupt: the rows in flight stop too
        raise


def in_engine_thread() -> bool:
    """Whether this code runs on the engine loop's thread."""
    return _engine is not None and threading.current_thread() is _engine[2]


def _stopped_engine() -> None:
    if _engine is None or _engine[0] != os.getpid():
        return
    _, loop, thread = _engine
    loop.call_soon_threadsafe(loop.stop)
    thread.join(5)


def run_sync(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run ``coroutine`` to completion from sync code, even inside a running event loop.

    With no loop running this is ``asyncio.run``. Inside one (a Jupyter cell, an async web
    handler) the coroutine runs on a private loop in a worker thread, because the running loop
    cannot be re-entered.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    box: dict[str, Any] = {}
    context = contextvars.copy_context()  # the worker sees the caller's context variables

    def target() -> None:
        try:
            box["value"] = context.run(asyncio.run, coroutine)
        except BaseException as error:  # re-raised in the calling thread
            box["error"] = error

    worker = threading.Thread(target=target, name="evaldag-run-sync")
    worker.start()
    worker.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


async def gather_limited(awaitables: Iterable[Awaitable[T]], limit: int) -> list[T]:
    """Await all of ``awaitables`` with at most ``limit`` in flight; results in input order."""
    semaphore = asyncio.Semaphore(max(1, limit))

    async def bounded(awaitable: Awaitable[T]) -> T:
        async with semaphore:
            return await awaitable

    return list(await asyncio.gather(*(bounded(a) for a in awaitables)))


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a loop allocates many short-lived objects.

    Scoring a column creates several objects per row and no reference cycles; with the collector
    on, its repeated scans of the growing heap cost more than the scoring itself (measured: 2.5x
    on 10,000 rows x 3 scorers, ``benchmarks/scorer_overhead.py``).
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
