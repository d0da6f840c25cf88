"""The limit on judge calls in flight, one per endpoint and ``max_concurrency``, process-wide."""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from typing import Any


class SharedLimit:
    """A counting semaphore that coroutines on any event loop, in any thread, can await.

    ``asyncio.Semaphore`` binds to one loop; evaldag runs each stage node's rows on a fresh loop
    and may run scorers in threads, so waiters here are futures on their own loops, woken with
    ``call_soon_threadsafe``. A released slot passes straight to the oldest waiter (FIFO).
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self._held = 0
        self._waiters: deque[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = deque()
        self._lock = threading.Lock()

    @property
    def held(self) -> int:
        """Slots in use."""
        return self._held

    async def acquire(self) -> None:
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._held < self.size and not self._waiters:
                self._held += 1
                return
            waiter = (loop, loop.create_future())
            self._waiters.append(waiter)
        try:
            await waiter[1]
        except asyncio.CancelledError:
            with self._lock:
                granted = waiter not in self._waiters
                if not granted:
                    self._waiters.remove(waiter)
            if granted:  # the slot was handed over as we were cancelled: pass it on
                self.release()
            raise

    def release(self) -> None:
        with self._lock:
            while self._waiters:
                loop, future = self._waiters.popleft()
                if not loop.is_closed():
                    loop.call_soon_threadsafe(_wake, future)
                    return
            self._held -= 1

    async def __aenter__(self) -> None:
        await self.acquire()

    async def __aexit__(self, *exc: object) -> None:
        self.release()


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


_limits: dict[tuple[Any, ...], SharedLimit] = {}
_limits_lock = threading.Lock()


def shared_limit(endpoint: tuple[Any, ...], size: int) -> SharedLimit:
    """The process-wide limiter of ``endpoint`` for a given ``max_concurrency``."""
    key = (*endpoint, size)
    with _limits_lock:
        limit = _limits.get(key)
        if limit is None:
            limit = _limits[key] = SharedLimit(size)
        return limit
