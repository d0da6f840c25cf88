"""The interpreter lock's switch interval while a run's judge calls run beside its batches."""

import sys

from overlapping import seen_by_the_first

from evaldag import create_scorer, run_evals
from evaldag._util.lock_handover import SWITCH_SECONDS, quick_lock_handover


def test_a_run_hands_the_lock_over_quickly_and_sets_the_interval_back():
    seen = []

    def interval(run):
        seen.append(sys.getswitchinterval())
        return 1.0

    before = sys.getswitchinterval()
    sys.setswitchinterval(0.002)  # the process's own setting
    try:
        run_evals(
            [{"input": "a", "output": "b"}],
            scorers=[create_scorer("interval").generate_score(interval)],
            progress=False,
        )
        assert seen == [SWITCH_SECONDS]
        assert sys.getswitchinterval() == 0.002
    finally:
        sys.setswitchinterval(before)


def test_a_shorter_interval_of_the_process_is_kept():
    before = sys.getswitchinterval()
    sys.setswitchinterval(SWITCH_SECONDS / 2)
    try:
        with quick_lock_handover():
            assert sys.getswitchinterval() == SWITCH_SECONDS / 2
    finally:
        sys.setswitchinterval(before)


def test_overlapping_runs_keep_it_until_the_last_ends():
    before = sys.getswitchinterval()
    assert seen_by_the_first(quick_lock_handover, sys.getswitchinterval) == SWITCH_SECONDS
    assert sys.getswitchinterval() == before
