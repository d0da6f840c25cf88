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
import contextlib
import contextvars
import logging
import threading
import time
from collections import deque
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from evaldag._cluster.backends import Coordinator
from evaldag._judge.budget import JudgeBudget
from evaldag._judge.limiter import SharedLimit
from evaldag._judge.records import JudgeExecution
from evaldag._util.event_loop import engine_loop, later_on_engine_loop, wake

_logger = logging.getLogger(__name__)

#: Seconds a worker's figure of the run's spent budget may be old.
BUDGET_REFRESH_SECONDS = 0.05
#: Seconds a worker waits for the coordinator's figure; past it, its own figure is used.
BUDGET_WAIT_SECONDS = 10.0
#: Seconds the client waits for the coordinator's limits at the end of the run.
LIMITS_WAIT_SECONDS = 60.0


#: Seconds a block of slots is used again by this process's calls; then its slots go back to
#: the coordinator as their calls end, so a cut of the limit (a 429 another worker saw) and
#: another worker's demand reach this one within it.
BLOCK_SECONDS = 1.0
#: Seconds a slot nobody here waits for stays in this process before it goes back, with every
#: other slot freed meanwhile, in one call: the next call, usually a moment behind (its row's
#: next step, the next row), takes it without two round trips to the coordinator.
RELEASE_SECONDS = 0.02
#: At most this share of an endpoint's ``max_concurrency`` in one block: two workers asking at
#: once both get some.
BLOCK_SHARE = 0.5
#: Seconds a call waits for a block before it asks whether the coordinator is alive, and how
#: long the answer may take: a call to a Dask actor whose worker died may never end.
PROBE_AFTER_SECONDS = 10.0
PROBE_WAIT_SECONDS = 10.0


@dataclass(frozen=True)
class LimitSharing:
    """How the processes of a run share its limits: set by the client, shipped to each worker.

    :param processes: the processes whose judge calls share them (the cluster's task slots):
        a process that lost the coordinator keeps to its share.
    :param probe_after: seconds a call waits for a block before it probes the coordinator.
    :param probe_wait: seconds the probe's answer may take.
    """

    processes: int = 1
    probe_after: float = PROBE_AFTER_SECONDS
    probe_wait: float = PROBE_WAIT_SECONDS

    @classmethod
    def of_cluster(cls, processes: int) -> LimitSharing:
        """The sharing of ``processes``, with the probe's timings as this module sets them."""
        return cls(processes, PROBE_AFTER_SECONDS, PROBE_WAIT_SECONDS)


class _Block:
    """Slots of one lease, held by this process: used again by its calls while it is live."""

    __slots__ = ("born", "free", "held", "lease", "retired", "round", "successes")

    def __init__(self, lease: int, count: int, started: int) -> None:
        self.lease, self.round = lease, started
        #: Slots of the lease this process holds: in use by a call, or free.
        self.held = count
        self.free = count
        self.successes = 0  # calls that succeeded since the last slots went back
        self.born = time.monotonic()
        self.retired = False

    def live(self) -> bool:
        """Whether its slots may be used again (not past ``BLOCK_SECONDS``, not retired)."""
        if not self.retired and time.monotonic() - self.born > BLOCK_SECONDS:
            self.retired = True
        return not self.retired


class _Lease:
    __slots__ = ("block", "local", "succeeded")

    def __init__(self, block: _Block | None, local: SharedLimit | None = None) -> None:
        self.block, self.local, self.succeeded = block, local, False


#: The slot of the judge call running in this task (one at a time per task).
_lease: contextvars.ContextVar[_Lease | None] = contextvars.ContextVar(
    "evaldag_lease", default=None
)


class _Waiter:
    __slots__ = ("block", "future", "loop", "since")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop, self.future = loop, loop.create_future()
        self.since = time.monotonic()
        #: The block whose slot it was handed (None: go on alone, the coordinator is lost).
        self.block: _Block | None = None


class ClusterLimit:
    """One endpoint's limit held by the coordinator: ``async with`` it around a judge call.

    Slots come from the coordinator in **blocks**: a call that finds no free slot here asks for
    as many as calls are waiting (at most ``BLOCK_SHARE`` of the limit), one request at a time,
    and a slot whose call ended passes straight to the next waiting call while its block is
    live (``BLOCK_SECONDS``). So most calls make no round trip to the coordinator at all, while
    the calls in flight over the whole cluster never pass what it granted: the limit. A slot
    nobody here waits for goes back within ``RELEASE_SECONDS`` (unless a call took it
    meanwhile), with every slot freed in that time, in one call; a 429 seen here retires this
    process's blocks (their slots go back as their calls end) besides cutting the limit on the
    coordinator, and gives back their free slots at once.

    Should the coordinator be lost (the worker holding a Dask actor died: a call to it fails,
    or a probe gets no answer), the calls of this process go on under a limit of their own,
    its share of the ceiling (``sharing.processes`` share it), said once: slower to adapt, but
    no item is lost and the cluster's calls stay within the limit.
    """

    def __init__(
        self,
        coordinator: Coordinator,
        key: tuple[Any, ...],
        size: int,
        hold: float,
        sharing: LimitSharing = LimitSharing(),
    ):
        self.coordinator, self.key, self.ceiling, self.hold = coordinator, key, size, hold
        self.sharing = sharing
        #: The limit's size as of the last block granted here.
        self.size = size
        #: This process's own limit, once the coordinator was lost.
        self.alone: SharedLimit | None = None
        self._blocks: list[_Block] = []
        self._waiters: deque[_Waiter] = deque()
        self._asking = False
        self._returning = False  # a give-back of the free slots is due
        self._watching = False  # a look at the waiting calls is due (see _watched)
        self._probed_at = 0.0  # time.monotonic() of the last probe's end
        self._probing: asyncio.Task[None] | None = None
        self._lock = threading.Lock()

    async def __aenter__(self) -> int:
        if self.alone is None:
            want, watch = 0, False
            with self._lock:
                block = self._free_block()
                if block is None:
                    waiter = _Waiter(asyncio.get_running_loop())
                    self._waiters.append(waiter)
                    want = self._wanted()
                    watch, self._watching = not self._watching, True
            if want:
                self._ask(want)
            if watch:
                later_on_engine_loop(self.sharing.probe_after, self._watched)
            if block is None:
                try:
                    await waiter.future
                except asyncio.CancelledError:
                    with self._lock:
                        handed = waiter not in self._waiters
                        if not handed:
                            self._waiters.remove(waiter)
                    if handed and waiter.block is not None:  # handed over as it was cancelled
                        self._ended(waiter.block, succeeded=False)
                    raise
                block = waiter.block
            if block is not None:
                _lease.set(_Lease(block))
                return block.round
        assert self.alone is not None
        started = await self.alone.acquire()
        _lease.set(_Lease(None, self.alone))
        return started

    async def __aexit__(self, *exc: object) -> None:
        lease = _lease.get()
        if lease is None:
            return
        _lease.set(None)
        if lease.block is not None:
            self._ended(lease.block, lease.succeeded)
            return
        assert lease.local is not None
        if lease.succeeded:
            lease.local.succeeded()
        lease.local.release()

    def _free_block(self) -> _Block | None:
        """A live block with a free slot, the slot taken (the lock held)."""
        for block in self._blocks:
            if block.free and block.live():
                block.free -= 1
                return block
        return None

    def _wanted(self) -> int:
        """The slots to ask the coordinator for, for the waiting calls; 0 while a request is
        out or none waits (the lock held: the request is made once it is let go, as its answer
        may come at once, in this thread)."""
        if self._asking or not self._waiters:
            return 0
        self._asking = True
        return max(1, min(len(self._waiters), int(self.ceiling * BLOCK_SHARE)))

    def _ask(self, want: int) -> None:
        hold = self.hold + BLOCK_SECONDS + RELEASE_SECONDS
        asked = self.coordinator.call("acquire", self.key, self.ceiling, hold, want)
        asked.add_done_callback(self._granted)

    def _granted(self, asked: Future[Any]) -> None:
        """A block came (or the coordinator is lost): its slots to the waiting calls."""
        try:
            lease, count, started, size = asked.result()
        except Exception as error:  # not a cancellation: the coordinator is gone
            self._lost(error)
            return
        block = _Block(lease, count, started)
        with self._lock:
            self._asking = False
            self.size = size
            self._blocks.append(block)
            while block.free and self._handed(block):
                pass
            if block.free:
                self._return_soon()
            want = self._wanted()
        if want:
            self._ask(want)

    def _handed(self, block: _Block) -> bool:
        """Hand a free slot of ``block`` to the oldest waiting call; whether one took it (the
        lock held)."""
        while self._waiters:
            waiter = self._waiters.popleft()
            waiter.block = block  # before it wakes, on its own loop's thread
            try:
                wake(waiter.loop, waiter.future)
            except RuntimeError:  # its loop has closed: nobody waits there any more
                continue
            block.free -= 1
            return True
        return False

    def _ended(self, block: _Block, succeeded: bool) -> None:
        """A call's slot is free: to the next waiting call while its block is live, else back
        to the coordinator soon (``RELEASE_SECONDS``)."""
        with self._lock:
            block.successes += succeeded
            block.free += 1
            if not (block.live() and self._handed(block)):
                self._return_soon()

    def _return_soon(self) -> None:
        """Give back the free slots in ``RELEASE_SECONDS``, on the engine loop (it outlives
        the task whose call freed them); the lock held."""
        if self._returning:
            return
        self._returning = True
        later_on_engine_loop(RELEASE_SECONDS, self._return_free)

    def _return_free(self) -> None:
        """Give back every free slot here, in one call (a live block has free slots only while
        no call waits here: a freed slot is handed to a waiting call first)."""
        with self._lock:
            self._returning = False
            returned = [
                (block.lease, self._given_back(block, block.free), self._successes(block))
                for block in list(self._blocks)
                if block.free
            ]
        if returned:
            self.coordinator.call("release", returned)

    def _given_back(self, block: _Block, count: int) -> int:
        """Take ``count`` free slots of ``block`` out of this process's hands (the lock held);
        how many, to release."""
        block.free -= count
        block.held -= count
        if not block.held and block in self._blocks:
            self._blocks.remove(block)
        return count

    @staticmethod
    def _successes(block: _Block) -> int:
        """The calls that succeeded with ``block``'s slots since the last went back, to tell
        the coordinator with them (the lock held)."""
        succeeded, block.successes = block.successes, 0
        return succeeded

    def _watched(self) -> None:
        """While calls wait here: once one has waited ``sharing.probe_after`` seconds since it
        began or since the last probe, probe the coordinator (a live one may make calls wait
        long; one whose worker died may never answer). One watch per limit, not a timer per
        call."""
        with self._lock:
            if not self._waiters or self.alone is not None:
                self._watching = False
                return
            since = max(self._waiters[0].since, self._probed_at)
        due = since + self.sharing.probe_after - time.monotonic()
        if due > 0:
            later_on_engine_loop(due, self._watched)
        else:  # kept: the loop holds its tasks weakly
            self._probing = engine_loop().create_task(self._probed())

    async def _probed(self) -> None:
        """Ask the coordinator whether it is alive; it is lost if it does not answer within
        ``sharing.probe_wait`` seconds. Then watch the waiting calls again."""
        probe = self.coordinator.call("spent")
        wait = self.sharing.probe_wait
        try:
            await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(probe)), wait)
        except TimeoutError:
            self._lost(TimeoutError(f"no answer to a probe within {wait:g} s"))
        except Exception as error:  # the actor's worker is gone
            self._lost(error)
        self._probed_at = time.monotonic()
        self._watched()

    def _lost(self, error: Exception) -> None:
        with self._lock:
            first = self.alone is None
            self.alone = self.alone or SharedLimit(max(1, self.ceiling // self.sharing.processes))
            self._asking = False
            while self._waiters:  # woken without a block: they go on alone
                waiter = self._waiters.popleft()
                with contextlib.suppress(RuntimeError):
                    wake(waiter.loop, waiter.future)
        if first:
            _logger.warning(
                "the run's judge limit coordinator is lost (%s: %s); this worker's calls go on "
                "under a limit of their own",
                type(error).__name__,
                error,
            )

    def throttled(self, started: int, retry_after: float | None = None) -> None:
        if self.alone is not None:
            self.alone.throttled(started, retry_after)
            return
        self.coordinator.call("throttled", self.key, started, retry_after)
        with self._lock:  # the limit is cut: this process's slots go back as their calls end
            for block in self._blocks:
                block.retired = True
        self._return_free()

    def succeeded(self) -> None:
        lease = _lease.get()
        if lease is not None:
            lease.succeeded = True


class ClusterLimits:
    """The limits of a run's judge calls, on its coordinator."""

    def __init__(self, coordinator: Coordinator, sharing: LimitSharing = LimitSharing()) -> None:
        self.coordinator, self.sharing = coordinator, sharing
        self._limits: dict[tuple[Any, ...], ClusterLimit] = {}
        self._lock = threading.Lock()

    def limit(self, key: tuple[Any, ...], size: int, hold: float) -> ClusterLimit:
        with self._lock:
            limit = self._limits.get(key)
            if limit is None:
                limit = self._limits[key] = ClusterLimit(
                    self.coordinator, key, size, hold, self.sharing
                )
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
        #: The coordinator did not answer: this process judges on its own figure from then on.
        self._alone = False

    def __reduce__(self) -> tuple[Any, ...]:
        return ClusterBudget, (self.limit_usd, self.coordinator, self.spent_usd)

    @property
    def spent(self) -> bool:
        now = time.monotonic()
        stale = now - self._asked >= BUDGET_REFRESH_SECONDS
        if self.spent_usd < self.limit_usd and stale and not self._alone:
            # A short wait, at most every BUDGET_REFRESH_SECONDS: a stale figure would let
            # this worker call on after the others spent the budget.
            self._asked = now
            answer = self.coordinator.call("spent")
            try:
                answer.result(timeout=BUDGET_WAIT_SECONDS)
            except Exception:  # out of reach (its worker died): not asked again, nor waited for
                self._alone = True
                _logger.warning(
                    "the run's judge budget could not be read from its coordinator; this "
                    "worker judges it on its own spending from now on"
                )
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
