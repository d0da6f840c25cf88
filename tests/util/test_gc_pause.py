"""The cyclic collector around runs: what exists when a run starts is frozen out of its passes
while the run lasts, and given back to them after."""

import gc
import weakref

from overlapping import seen_by_the_first

from evaldag import create_scorer, run_evals
from evaldag._util import gc_pause
from evaldag._util.gc_pause import heap_frozen, worker_heap_frozen


class Node:
    """An object that can be put in a reference cycle and watched by a weak reference."""

    def __init__(self):
        self.me = self


def test_a_run_freezes_the_heap_it_starts_with_and_gives_it_back():
    before = gc.get_freeze_count()
    seen = []

    def frozen(run):
        seen.append(gc.get_freeze_count())
        return 1.0

    result = run_evals(
        [{"input": "a", "output": "b"}],
        scorers=[create_scorer("frozen").generate_score(frozen)],
        progress=False,
    )
    assert result.scores == {"frozen": 1.0}
    assert seen and seen[0] > before
    assert gc.get_freeze_count() == before


def test_a_cycle_that_became_garbage_while_frozen_is_collected_after():
    node = Node()
    watched = weakref.ref(node)
    with heap_frozen():
        del node  # garbage now, but frozen: no pass of the collector sees it
        gc.collect()
        assert watched() is not None
    gc.collect()
    assert watched() is None


def test_runs_that_overlap_stay_frozen_until_the_last_ends():
    # the second run's end did not unfreeze the first's heap
    assert seen_by_the_first(heap_frozen, gc.get_freeze_count) > 0
    assert gc.get_freeze_count() == 0


def test_a_worker_collects_what_earlier_runs_left_before_it_freezes_again(monkeypatch):
    monkeypatch.setattr(gc_pause, "_frozen_here", False)  # the worker's freeze, undone after
    node = Node()
    watched = weakref.ref(node)
    try:
        worker_heap_frozen()  # an earlier run: the node alive, frozen
        del node
        gc.collect()
        assert watched() is not None
        worker_heap_frozen()  # the next run
        assert watched() is None
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()


def test_a_freeze_of_the_process_own_code_is_left_as_it_is():
    gc.freeze()  # e.g. a server's, before it forks
    frozen = gc.get_freeze_count()
    try:
        run_evals(
            [{"input": "a", "output": "b"}],
            scorers=[create_scorer("one").generate_score(lambda run: 1.0)],
            progress=False,
        )
        assert 0 < gc.get_freeze_count() <= frozen  # not unfrozen, nothing frozen to it
        worker_heap_frozen()
        assert 0 < gc.get_freeze_count() <= frozen
    finally:
        gc.unfreeze()
