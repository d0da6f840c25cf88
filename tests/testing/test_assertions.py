"""evaldag.testing's assertions on results read back from disk."""

import pandas as pd
import pytest

from evaldag import EvalResult, UntrustworthyRunError, checks, create_scorer, run_evals
from evaldag.testing import (
    EvalAssertionError,
    assert_evals,
    has_verdict,
    passes_gates,
    passes_thresholds,
)


def test_a_result_that_cannot_be_trusted_passes_no_verdict_assertion(tmp_path):
    # The run raised UntrustworthyRunError, but its results file read 'passed': a test that
    # asserted on the file passed on a scorer that failed on every item.
    broken = create_scorer("broken").generate_score(lambda run: 1 / 0)
    out = tmp_path / "results.parquet"
    with pytest.raises(UntrustworthyRunError):
        run_evals(
            pd.DataFrame({"input": ["a", "b"], "output": ["x", "y"]}),
            scorers=[broken.with_threshold(0)],
            gates=[checks.excludes("BAD")],
            out=out,
        )
    result = EvalResult.read_parquet(out)
    for check in (
        assert_evals,
        passes_gates,
        lambda r: has_verdict(r, r.verdict),
    ):
        with pytest.raises(EvalAssertionError) as raised:
            check(result)
        assert raised.value.failures[0].startswith(
            "the run's verdict cannot be trusted: Scorer 'broken' failed on every item"
        )
    with pytest.raises(EvalAssertionError, match="cannot be trusted"):
        passes_thresholds(result)


def test_a_failure_line_never_shows_the_figure_on_its_requirement():
    # With four significant digits, a gate of 0.99996 read 'score 1, required at least 1'.
    data = pd.DataFrame({"id": ["a", "b"], "input": ["a", "b"], "output": ["x", "y"]})
    result = run_evals(
        data,
        scorers=[create_scorer("near").generate_score(lambda run: 0.8496).with_threshold(0.85)],
        gates=[create_scorer("almost").generate_score(lambda run: 0.99996)],
        progress=False,
    )
    with pytest.raises(EvalAssertionError) as raised:
        assert_evals(result)
    assert raised.value.failures == [
        (
            "gate 'almost' failed: score 0.99996, required at least 1.00; worst items: "
            "a (0.99996), b (0.99996)"
        ),
        (
            "threshold of 'near' missed: average 0.8496, required >= 0.85; worst items: "
            "a (0.8496), b (0.8496)"
        ),
    ]
