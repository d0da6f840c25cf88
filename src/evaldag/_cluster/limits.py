"""The coordinator's limits and budget as a worker's judge calls see them.

:class:`ClusterLimits` is the :class:`~evaldag._judge.limiter.LimitRegistry` of a run on a
cluster: a judge call takes its slot from the coordinator, tells it of a 429, and gives the slot
back (with whether the call succeeded, which grows the limit again). :class:`ClusterBudget` is
the run's :class:`~evaldag._judge.budget.JudgeBudget` on every worker: what any worker spends is
added up by the coordinator, and a worker asks it for the total before a judge call when its own
figure is older than :data:`BUDGET_REFRESH_SECONDS` (its own spending it adds at once). So, as in
a local run, the calls that pass the limit are those in flight when it was reached (and those
started within that time of another worker's spending).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import threading
import time
from concurrent.futures import Future
from typing import Any

from evaldag._cluster.backends import Coordinator
from evaldag._judge.budget import JudgeBudget
from evaldag._judge.limiter import SharedLimit
from evaldag._judge.records import JudgeExecution

_logger = logging.getLogger(__name__)

#: Seconds a worker's figure of the run's spent budget may be old.
BUDGET_REFRESH_SECONDS = 0.05
#: Seconds a worker waits for the coordinator's figure; past it, its own figure is used.
BUDGET_WAIT_SECONDS = 10.0
#: Seconds the client waits for the coordinator's limits at the end of the run.
LIMITS_WAIT_SECONDS = 60.0


class _Lease:
    __slots__ = ("id", "local", "succeeded")

    def __init__(self, lease: int | None, local: SharedLimit | None = None) -> None:
        self.id, self.local, self.succeeded = lease, local, False


#: The lease of the judge call running in this task (one at a time per task).
_lease: contextvars.ContextVar[_Lease | None] = contextvars.ContextVar(
    "evaldag_lease", default=None
)


async def _settled(future: Future[Any], on_abandoned: Any = None) -> Any:
    """The value of ``future``; if the waiter is cancelled, ``future`` is not, and
    ``on_abandoned`` gets its value when it comes."""
    try:
        return await asyncio.shield(asyncio.wrap_future(future))
    except asyncio.CancelledError:
        if on_abandoned is not None:
            future.add_done_callback(
                lambda done: done.exception() is None and on_abandoned(done.result())
            )
        raise


class ClusterLimit:
    """One endpoint's limit held by the coordinator: ``async with`` it around a judge call.

    Should the coordinator be lost (the worker holding a Dask actor died), the calls of this
    process go on under a limit of its own, said once: slower to adapt, but no item is lost.
    """

    def __init__(self, coordinator: Coordinator, key: tuple[Any, ...], size: int, hold: float):
        self.coordinator, self.key, self.ceiling, self.hold = coordinator, key, size, hold
        #: The limit's size as of the last slot granted here.
        self.size = size
        #: This process's own limit, once the coordinator was lost.
        self.alone: SharedLimit | None = None

    async def __aenter__(self) -> int:
        def abandoned(granted: tuple[int, int, int]) -> None:
            self.coordinator.call("release", granted[0], False)

        if self.alone is None:
            granted = self.coordinator.call("acquire", self.key, self.ceiling, self.hold)
            try:
                lease, started, self.size = await _settled(granted, abandoned)
            except Exception as error:  # not a cancellation: the coordinator is gone
                if self.alone is None:
                    _logger.warning(
                        "the run's judge limit coordinator is lost (%s); this worker's calls go "
                        "on under a limit of their own",
                        error,
                    )
                    self.alone = SharedLimit(self.ceiling)
            else:
                _lease.set(_Lease(lease))
                return started
        started = await self.alone.acquire()
        _lease.set(_Lease(None, self.alone))
        return started

    async def __aexit__(self, *exc: object) -> None:
        lease = _lease.get()
        if lease is None:
            return
        _lease.set(None)
        if lease.local is None:
            self.coordinator.call("release", lease.id, lease.succeeded)
            return
        if lease.succeeded:
            lease.local.succeeded()
        lease.local.release()

    def throttled(self, started: int, retry_after: float | None = None) -> None:
        if self.alone is not None:
            self.alone.throttled(started, retry_after)
        else:
            self.coordinator.call("throttled", self.key, started, retry_after)

    def succeeded(self) -> None:
        lease = _lease.get()
        if lease is not None:
            lease.succeeded = True


class ClusterLimits:
    """The limits of a run's judge calls, on its coordinator."""

    def __init__(self, coordinator: Coordinator) -> None:
        self.coordinator = coordinator
        self._limits: dict[tuple[Any, ...], ClusterLimit] = {}
        self._lock = threading.Lock()

    def limit(self, key: tuple[Any, ...], size: int, hold: float) -> ClusterLimit:
        with self._lock:
            limit = self._limits.get(key)
            if limit is None:
                limit = self._limits[key] = ClusterLimit(self.coordinator, key, size, hold)
            return limit

    def kept(self, key: tuple[Any, ...]) -> SharedLimit | None:
        try:
            limits = self.coordinator.call("limits").result(timeout=LIMITS_WAIT_SECONDS)
        except Exception as error:  # the result is worth more than this part of its summary
            _logger.warning("the run's judge limits could not be read (%s)", error)
            return None
        for found, ceiling, history, last_used in limits:
            if tuple(found) == key:
                limit = SharedLimit(ceiling)
                limit.history.clear()
                limit.history.extend(tuple(change) for change in history)
                limit.size = history[-1][1]
                limit.last_used = last_used
                return limit
        return None


class ClusterBudget(JudgeBudget):
    """The run's judge budget, summed by the coordinator over every worker."""

    def __init__(self, limit_usd: float, coordinator: Coordinator, spent_usd: float = 0.0):
        super().__init__(limit_usd, spent_usd)
        self.coordinator = coordinator
        self._asked = 0.0

    def __reduce__(self) -> tuple[Any, ...]:
        return ClusterBudget, (self.limit_usd, self.coordinator, self.spent_usd)

    @property
    def spent(self) -> bool:
        now = time.monotonic()
        if self.spent_usd < self.limit_usd and now - self._asked >= BUDGET_REFRESH_SECONDS:
            # A short wait, at most every BUDGET_REFRESH_SECONDS: a stale figure would let
            # this worker call on after the others spent the budget.
            self._asked = now
            answer = self.coordinator.call("spent")
            try:
                answer.result(timeout=BUDGET_WAIT_SECONDS)
            except Exception:  # the coordinator is out of reach: judged on what is known
                _logger.warning("the run's judge budget could not be read from its coordinator")
            else:
                self._told(answer)
        return self.spent_usd >= self.limit_usd

    def _told(self, answer: Future[Any]) -> None:
        """Take the run's total the coordinator gave (it only grows)."""
        if answer.exception() is None:
            self.spent_usd = max(self.spent_usd, answer.result())

    def refusal(self) -> str:
        self.coordinator.call("refuse")
        return super().refusal()

    def spend(self, execution: JudgeExecution | None) -> None:
        if execution is not None and execution.cost is not None:
            self.spent_usd += execution.cost.total_usd
            self.coordinator.call("spend", execution.cost.total_usd).add_done_callback(self._told)
