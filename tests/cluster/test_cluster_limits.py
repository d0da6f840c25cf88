"""A worker's share of the cluster's judge limit: slots come from the run's coordinator in
blocks and pass from call to call in the worker, so most calls make no round trip, while the
calls in flight over all workers never pass the limit and every slot goes back. The coordinator
is the real one, on an event loop of its own; its handle calls it as a Dask actor's does
(``run_coroutine_threadsafe``), after a round trip's delay."""

import asyncio
import threading
import time
from collections import Counter

import pytest

from evaldag._cluster import limits
from evaldag._cluster.coordinator import RunCoordinator
from evaldag._cluster.limits import ClusterBudget, ClusterLimit, LimitSharing

KEY = ("openai/mock-judge", "http://127.0.0.1:9", 8)


class _Handle:
    """The coordinator's handle as a worker holds it, counting the calls made through it."""

    def __init__(self, coordinator, loop, round_trip=0.002):
        self.coordinator, self.loop, self.round_trip = coordinator, loop, round_trip
        self.calls = Counter()
        self.lost = False
        self.hung = False  # calls never answered, as a Dask actor's whose worker died may not

    def bind(self):
        pass

    def call(self, method, *args):
        self.calls[method] += 1

        async def called():
            await asyncio.sleep(self.round_trip)
            if self.hung:
                await asyncio.Event().wait()
            if self.lost:
                raise ConnectionError("the actor's worker died")
            return await getattr(self.coordinator, method)(*args)

        return asyncio.run_coroutine_threadsafe(called(), self.loop)


@pytest.fixture
def coordinator():
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    yield RunCoordinator(None), loop
    loop.call_soon_threadsafe(loop.stop)
    thread.join(5)


def _workers(handle, calls, size=8, latency=0.01, sharing=None, lanes=None, gap=0.0):
    """Two workers (threads, each with its event loop and its ClusterLimit) making ``calls``
    judge calls each, all at once (or in ``lanes`` of calls one after another, ``gap``
    seconds apart, as rows take their turns); the most in flight over both."""
    in_flight, most = [0], [0]
    lock = threading.Lock()

    async def work(limit):
        async def one():
            async with limit:
                with lock:
                    in_flight[0] += 1
                    most[0] = max(most[0], in_flight[0])
                await asyncio.sleep(latency)
                with lock:
                    in_flight[0] -= 1
                limit.succeeded()

        async def lane(count):
            for _ in range(count):
                await asyncio.sleep(gap)
                await one()

        if lanes is None:
            await asyncio.gather(*(one() for _ in range(calls)))
        else:
            await asyncio.gather(*(lane(calls // lanes) for _ in range(lanes)))

    sharing = sharing or LimitSharing()
    limits = [ClusterLimit(handle, KEY, size, 30.0, sharing) for _ in range(2)]
    threads = [threading.Thread(target=asyncio.run, args=(work(limit),)) for limit in limits]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not any(thread.is_alive() for thread in threads)
    return most[0]


def _leases_left(coordinator, loop):
    time.sleep(0.2)  # the last slots' way back
    return asyncio.run_coroutine_threadsafe(_held(coordinator), loop).result(5)


async def _held(coordinator):
    return {lease: held[2] for lease, held in coordinator._leases.items()}


def test_slots_pass_from_call_to_call_and_all_go_back(coordinator):
    coordinator, loop = coordinator
    handle = _Handle(coordinator, loop)
    most = _workers(handle, calls=120)
    assert most == 8  # the whole limit used, never passed
    assert handle.calls["acquire"] < 240 / 4  # most calls took a slot a call before them freed
    assert _leases_left(coordinator, loop) == {}


def test_a_slot_freed_a_moment_before_the_next_call_takes_it_stays_here(coordinator):
    """Rows take their turns: a call starts a moment after the one before it ended (its row's
    next step, the next row). The slot waits here for it, instead of going back to the
    coordinator and being asked for again: two round trips per call."""
    coordinator, loop = coordinator
    handle = _Handle(coordinator, loop)
    most = _workers(handle, calls=120, lanes=4, gap=0.003)
    assert most == 8
    # 2 per call before; under load a call may start past RELEASE_SECONDS after the one before
    assert handle.calls["acquire"] + handle.calls["release"] < 240 / 3
    assert _leases_left(coordinator, loop) == {}


def test_a_lost_coordinator_leaves_each_worker_a_limit_of_its_own(coordinator):
    coordinator, loop = coordinator
    handle = _Handle(coordinator, loop)
    handle.lost = True
    most = _workers(handle, calls=40, sharing=LimitSharing(2))
    assert most <= 8  # each worker's share of the limit: no call lost, none waits forever


def test_a_coordinator_that_never_answers_is_found_lost_by_a_probe(coordinator):
    """A call to a Dask actor whose worker died may never end: a call that waits long for its
    block asks whether the coordinator is alive, and without an answer goes on alone."""
    coordinator, loop = coordinator
    handle = _Handle(coordinator, loop)
    handle.hung = True
    most = _workers(handle, calls=40, sharing=LimitSharing(2, probe_after=0.2, probe_wait=0.2))
    assert 0 < most <= 8
    assert handle.calls["spent"] <= 2 * 40  # one probe at a time per worker, not one per call


def test_a_busy_coordinator_is_not_taken_for_lost(coordinator):
    """Calls that wait longer than a probe's delay for a slot (others hold them all) stay
    under the coordinator's limit: it answers the probe."""
    coordinator, loop = coordinator
    handle = _Handle(coordinator, loop)
    most = _workers(handle, calls=60, latency=0.05, sharing=LimitSharing(probe_after=0.02))
    assert most == 8 and handle.calls["spent"] > 0
    assert _leases_left(coordinator, loop) == {}


def test_a_budget_whose_coordinator_never_answers_is_judged_on_this_worker_s_spending(
    coordinator, monkeypatch
):
    """One read that gets no answer in time, then none: each later check would block a judge
    call for the whole wait."""
    monkeypatch.setattr(limits, "BUDGET_WAIT_SECONDS", 0.2)
    coordinator, loop = coordinator
    handle = _Handle(coordinator, loop)
    handle.hung = True
    budget = ClusterBudget(1.0, handle, spent_usd=0.5)
    for _ in range(3):
        assert not budget.spent
        time.sleep(limits.BUDGET_REFRESH_SECONDS * 2)
    assert handle.calls["spent"] == 1
    budget.spent_usd = 1.0  # its own spending still counts
    assert budget.spent
