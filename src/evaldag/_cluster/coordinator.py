"""The run's coordinator on a cluster: one judge limit per endpoint and one budget for all workers.

It runs as an actor (a Ray actor, a Dask actor), so every worker's judge calls ask the same
object: a worker takes a **lease** on a block of slots of an endpoint's
:class:`~evaldag._judge.limiter.SharedLimit` (the same AIMD limit a local run has, so a 429 seen
by any worker halves everyone's limit), its calls use them (see
:class:`~evaldag._cluster.limits.ClusterLimit`), and it gives them back. A lease runs out after
the longest a block can hold its slots (the judge's timeout, its slack and a block's life): the
slots of a worker that died holding them are not lost to the run. The budget sums what every
worker's judge calls cost.

Every method is a coroutine: both Ray's async actors and Dask's actors run them on one event
loop, where a waiting ``acquire`` does not block a ``release``. On Ray, the coordinators of a
client process's runs live in one actor, :class:`RunCoordinators`: Ray starts a process for
each actor, which a run would otherwise wait for (several seconds on a busy machine).
"""

from __future__ import annotations

import asyncio
import itertools
import time
from typing import Any

from evaldag._judge.limiter import SharedLimit

#: Seconds between checks for leases that ran out.
LEASE_CHECK_SECONDS = 1.0
#: Seconds a lease outlives the longest call: the time its grant and release take to travel.
LEASE_MARGIN_SECONDS = 10.0


class RunCoordinator:
    """The limits and the budget of one run, shared by its workers."""

    def __init__(self, budget_usd: float | None) -> None:
        self.budget_usd = budget_usd
        self.spent_usd = 0.0
        self.refused = 0
        self._limits: dict[tuple[Any, ...], SharedLimit] = {}
        self._leases: dict[int, list[Any]] = {}  # id: [key, deadline, slots held]
        self._ids = itertools.count(1)
        self._reaper: asyncio.Task[None] | None = None

    def _limit(self, key: tuple[Any, ...], size: int) -> SharedLimit:
        limit = self._limits.get(key)
        if limit is None:
            limit = self._limits[key] = SharedLimit(size)
        return limit

    async def acquire(
        self, key: tuple[Any, ...], size: int, hold: float, want: int = 1
    ) -> tuple[int, int, int, int]:
        """Wait for a slot of ``key``'s limit, then take up to ``want`` in all of those free;
        the lease (held ``hold`` seconds at most), its slots, the round it was granted in and
        the limit's size then."""
        if self._reaper is None:
            self._reaper = asyncio.get_running_loop().create_task(self._expired_leases())
        limit = self._limit(key, size)
        started = await limit.acquire()
        count = 1
        while count < want and limit.try_acquire():
            count += 1
        lease = next(self._ids)
        self._leases[lease] = [key, time.monotonic() + hold + LEASE_MARGIN_SECONDS, count]
        return lease, count, started, limit.size

    async def release(self, returned: list[tuple[int, int, int]]) -> None:
        """Give back slots: for each lease, ``count`` of its slots (none if it ran out), and
        the ``succeeded`` calls made with them since, each of which grows the limit."""
        for lease, count, succeeded in returned:
            self._released(lease, count, succeeded)

    def _released(self, lease: int, count: int, succeeded: int) -> None:
        held = self._leases.get(lease)
        if held is None:
            return
        limit = self._limits[held[0]]
        for _ in range(succeeded):
            limit.succeeded()
        count = min(count, held[2])
        held[2] -= count
        if not held[2]:
            del self._leases[lease]
        for _ in range(count):
            limit.release()

    async def throttled(
        self, key: tuple[Any, ...], started: int, retry_after: float | None
    ) -> None:
        """A call of ``key`` that started in round ``started`` got a 429."""
        self._limits[key].throttled(started, retry_after)

    async def spend(self, usd: float) -> float:
        """Add what a judge execution cost; the run's total so far."""
        self.spent_usd += usd
        return self.spent_usd

    async def refuse(self) -> None:
        """Count a judge call the budget refused."""
        self.refused += 1

    async def spent(self) -> float:
        """What the run's judge calls cost so far."""
        return self.spent_usd

    async def limits(self) -> list[tuple[tuple[Any, ...], int, list[tuple[float, int]], float]]:
        """Each limit: its key, ceiling, changes as (``time.time()``, size) and last use."""
        return [
            (key, limit.ceiling, list(limit.history), limit.last_used)
            for key, limit in self._limits.items()
        ]

    def close(self) -> None:
        """Stop checking leases: the run is over."""
        if self._reaper is not None:
            self._reaper.cancel()

    async def _expired_leases(self) -> None:
        while True:
            await asyncio.sleep(LEASE_CHECK_SECONDS)
            now = time.monotonic()
            for lease, (_, deadline, count) in list(self._leases.items()):
                if deadline < now:
                    self._released(lease, count, 0)


class RunCoordinators:
    """The coordinators of one client process's runs, by run id, in one Ray actor.

    A run's coordinator is made by the first call for it (from the client or a worker, in
    whatever order they come) and dropped when the client ends the run. Slots given back to a
    run already ended (a worker's last ones, after its run) are ignored; any other call for it
    fails, as a call to a run's own actor killed after the run did.
    """

    def __init__(self) -> None:
        self._runs: dict[str, RunCoordinator] = {}
        self._ended: set[str] = set()

    async def call(self, run: str, budget_usd: float | None, method: str, *args: Any) -> Any:
        """``method(*args)`` of run ``run``'s coordinator (its budget ``budget_usd``)."""
        coordinator = self._runs.get(run)
        if coordinator is None:
            if run in self._ended:
                if method == "release":
                    return None
                raise LookupError(f"run {run} is over: its coordinator was dropped")
            coordinator = self._runs[run] = RunCoordinator(budget_usd)
        return await getattr(coordinator, method)(*args)

    async def end(self, run: str) -> None:
        """Drop run ``run``'s coordinator: the run is over."""
        self._ended.add(run)
        coordinator = self._runs.pop(run, None)
        if coordinator is not None:
            coordinator.close()

    async def runs(self) -> int:
        """How many runs' coordinators are kept."""
        return len(self._runs)
