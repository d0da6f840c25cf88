"""The limit on judge calls in flight, one per endpoint and ``max_concurrency``, process-wide.

The limit adapts to the endpoint (AIMD, as TCP does): a 429 halves it, at most once per round
of calls and once per the ``Retry-After`` the server gave with the last cut, and calls that
succeed grow it back by one per round, never above the user's ``max_concurrency``. Its changes
are kept, with the time of each, for the run's usage summary.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol

from evaldag._judge.redaction import endpoint_name
from evaldag._judge.settings import Judge, call_limit
from evaldag._util.event_loop import wake

#: Limit changes kept per endpoint (a long run under a 429 storm changes it often).
HISTORY_LENGTH = 10_000


class SharedLimit:
    """A counting semaphore that coroutines on any event loop, in any thread, can await; its
    size adapts between 1 and ``ceiling``.

    ``asyncio.Semaphore`` binds to one loop, and scorers may run in threads of their own, so
    waiters here are futures on their own loops (woken with ``call_soon_threadsafe`` from
    another thread). A freed slot passes straight to the oldest waiter (FIFO) while fewer than
    ``size`` are held.
    ``async with limit as started:`` gives the round the call started in, for :meth:`throttled`.
    """

    def __init__(self, ceiling: int) -> None:
        self.ceiling = ceiling
        self.size = ceiling
        #: (time.time(), size) at the start and after each change.
        self.history: deque[tuple[float, int]] = deque(
            [(time.time(), ceiling)], maxlen=HISTORY_LENGTH
        )
        #: time.time() of the last call that asked for a slot.
        self.last_used = 0.0
        self._held = 0
        self._round = 0  # one more after each cut
        self._calm_until = 0.0  # no cut before this time.monotonic(): the last Retry-After
        self._credit = 0.0
        self._waiters: deque[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = deque()
        self._lock = threading.Lock()

    @property
    def held(self) -> int:
        """Slots in use."""
        return self._held

    async def acquire(self) -> int:
        """Wait for a slot; the round it was granted in."""
        loop = asyncio.get_running_loop()
        self.last_used = time.time()
        with self._lock:
            if self._held < self.size and not self._waiters:
                self._held += 1
                return self._round
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
        return self._round

    def try_acquire(self) -> bool:
        """Take a slot if one is free and nobody waits; whether one was taken."""
        with self._lock:
            if self._held < self.size and not self._waiters:
                self._held += 1
                self.last_used = time.time()
                return True
            return False

    def release(self) -> None:
        with self._lock:
            self._held -= 1
            self._woken()

    def throttled(self, started: int, retry_after: float | None = None) -> None:
        """A call that started in round ``started`` was rate-limited: halve the size, unless it
        was cut since that call started or within the server's last ``Retry-After``."""
        now = time.monotonic()
        with self._lock:
            if started != self._round or now < self._calm_until:
                return
            self._round += 1
            self._credit = 0.0
            self._calm_until = now + (retry_after or 0.0)
            self._resized(max(1, self.size // 2))

    def succeeded(self) -> None:
        """A call succeeded: a round of them (``size`` calls) grows the size by one."""
        if self.size >= self.ceiling:  # the common case, without the lock
            return
        with self._lock:
            self._credit += 1 / self.size
            if self._credit >= 1 and self.size < self.ceiling:
                self._credit -= 1
                self._resized(self.size + 1)
                self._woken()

    def _resized(self, size: int) -> None:
        if size != self.size:
            self.size = size
            self.history.append((time.time(), size))

    def _woken(self) -> None:
        """Hand free slots to the oldest waiters (with the lock held)."""
        while self._waiters and self._held < self.size:
            loop, future = self._waiters.popleft()
            try:
                wake(loop, future)
            except RuntimeError:  # its loop has closed: nobody waits there any more
                continue
            self._held += 1

    async def __aenter__(self) -> int:
        return await self.acquire()

    async def __aexit__(self, *exc: object) -> None:
        self.release()


_limits: dict[tuple[Any, ...], SharedLimit] = {}
_limits_lock = threading.Lock()


class LimitRegistry(Protocol):
    """Where the limits of a run's judge calls live when not in this process (a cluster's)."""

    def limit(self, key: tuple[Any, ...], size: int, hold: float) -> Any:
        """The limit of ``key``: ``async with`` it gives the round, as a SharedLimit's does."""

    def kept(self, key: tuple[Any, ...]) -> SharedLimit | None:
        """The limit of ``key`` as it is now, for the usage summary; None if never used."""


_registry: contextvars.ContextVar[LimitRegistry | None] = contextvars.ContextVar(
    "evaldag_limit_registry", default=None
)


@contextmanager
def limits_in(registry: LimitRegistry) -> Iterator[None]:
    """Judge calls started in this context share ``registry``'s limits instead of the
    process's (calls on every worker of a cluster share one limit per endpoint)."""
    token = _registry.set(registry)
    try:
        yield
    finally:
        _registry.reset(token)


def shared_limit(endpoint: tuple[Any, ...], size: int, hold: float = 0.0) -> Any:
    """The limiter of ``endpoint`` for a given ``max_concurrency``: the process-wide one, or the
    cluster's (see :func:`limits_in`).

    :param hold: the longest a call holds its slot: a cluster frees the slot of a worker that
        died holding it after that.
    """
    key = (*endpoint, size)
    registry = _registry.get()
    if registry is not None:
        return registry.limit(key, size, hold)
    with _limits_lock:
        limit = _limits.get(key)
        if limit is None:
            limit = _limits[key] = SharedLimit(size)
        return limit


def _kept(key: tuple[Any, ...]) -> SharedLimit | None:
    registry = _registry.get()
    if registry is not None:
        return registry.kept(key)
    with _limits_lock:
        return _limits.get(key)


def judge_limits(judges: Iterable[Judge], since: float) -> list[dict[str, Any]]:
    """The limits the calls of ``judges`` share, if used since ``since`` (a ``time.time()``): per
    endpoint its max_concurrency, lowest and final limit and its changes from then on, as
    (seconds since ``since``, limit)."""
    found = []
    for model, api_base, size in dict.fromkeys(_limit_key(j) for j in judges):
        limit = _kept((model, api_base, size))
        if limit is None or limit.last_used < since:
            continue
        with limit._lock:
            history = list(limit.history)
        before = [size for at, size in history if at <= since] or [history[0][1]]
        changes = [(0.0, before[-1])]
        for at, size in history:
            if at > since and size != changes[-1][1]:  # a limit made during the run is no change
                changes.append((round(at - since, 3), size))
        found.append(
            {
                "endpoint": endpoint_name(model, api_base),
                "max_concurrency": limit.ceiling,
                "lowest": min(size for _, size in changes),
                "final": changes[-1][1],
                "changes": changes,
            }
        )
    return found


def _limit_key(judge: Judge) -> tuple[str | None, str | None, int]:
    """Which limit a judge's calls share: one per model, api_base and max_concurrency."""
    return judge.model, judge.api_base, call_limit(judge)
