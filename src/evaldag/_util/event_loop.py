"""The engine loop: one event loop per process, in a daemon thread, where every wait runs.

Steps that wait (judge calls, async steps) run on it for the life of the process, so connection
pools opened on it (the http transport's) outlive the stage nodes, batches and runs that use
them. ``run_sync`` runs a coroutine from sync code, even inside a running loop (Jupyter).
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextvars
import os
import threading
from collections.abc import Callable, Coroutine
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
    except concurrent.futures.CancelledError:
        # The rows were stopped (see BatchSlots.stop): asyncio's CancelledError, a
        # BaseException, ends the batch's Hamilton execution without its error report.
        raise asyncio.CancelledError from None
    except BaseException:
        future.cancel()  # e.g. KeyboardInterrupt: the rows in flight stop too
        raise


def in_engine_thread() -> bool:
    """Whether this code runs on the engine loop's thread."""
    return _engine is not None and threading.current_thread() is _engine[2]


def later_on_engine_loop(delay: float, callback: Callable[[], object]) -> None:
    """Call ``callback`` on the engine loop in ``delay`` seconds, from any thread."""
    loop = engine_loop()
    if in_engine_thread():
        loop.call_later(delay, callback)
    else:
        loop.call_soon_threadsafe(loop.call_later, delay, callback)


def wake(loop: asyncio.AbstractEventLoop, future: asyncio.Future[None]) -> None:
    """Resolve ``future`` (a waiter on ``loop``): at once when this thread runs ``loop``, its
    waiting task going on in the loop's next pass, else from ``loop``'s thread (a thread-safe
    call, which also wakes the loop's selector). Raises RuntimeError if ``loop`` has closed."""
    try:
        here = asyncio.get_running_loop() is loop
    except RuntimeError:  # no loop runs in this thread
        here = False
    if here:
        _resolved(future)
    else:
        loop.call_soon_threadsafe(_resolved, future)


def _resolved(future: asyncio.Future[None]) -> None:
    if not future.done():  # a waiter cancelled meanwhile hands its slot on itself
        future.set_result(None)


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
