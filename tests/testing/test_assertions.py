"""evaldag.testing's assertions on results read back from disk, and on what an average leaves
out."""

import litellm
import pandas as pd
import pytest
from judge_server import Reply

from evaldag import (
    EvalResult,
    PromptStep,
    UntrustworthyRunError,
    checks,
    create_scorer,
    run_evals,
)
from evaldag.testing import (
    EvalAssertionError,
    assert_evals,
    has_verdict,
    passes_gates,
    passes_thresholds,
    score_above,
    score_below,
)

USAGE = {"prompt_tokens": 1000, "completion_tokens": 500, "total_tokens": 1500}


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


def test_a_score_matcher_passes_no_result_that_cannot_be_trusted(tmp_path):
    # The scorer failed on half the items, more than max_error_share allows: the run raised,
    # but score_above on its results file passed on the average of the other half.
    half_down = create_scorer("s").generate_score(lambda run: 1 / (run.input != "b"))
    out = tmp_path / "results.parquet"
    with pytest.raises(UntrustworthyRunError):
        run_evals(
            [{"input": key, "output": key} for key in "ab"],
            scorers=[half_down],
            out=out,
            max_error_share=0.25,
        )
    result = EvalResult.read_parquet(out)
    assert result.scores == {"s": 1.0}
    for check in (lambda r: score_above(r, "s", 0.5), lambda r: score_below(r, "s", 1.5)):
        with pytest.raises(EvalAssertionError, match="^the run's verdict cannot be trusted: "):
            check(result)


def test_a_score_matcher_fails_on_items_the_scorer_failed_on():
    # A threshold fails on them; score_above passed on the average of the items left.
    flaky = create_scorer("s").generate_score(lambda run: 1 / (run.input not in "bcde"))
    data = [{"id": f"q{key}", "input": key, "output": key} for key in "abcdefgh"]
    result = run_evals(data, scorers=[flaky], progress=False)
    assert result.scores == {"s": 1.0} and result.summary.untrustworthy is None
    with pytest.raises(EvalAssertionError) as raised:
        score_above(result, "s", 0.5)
    assert raised.value.failures == [
        (
            "the score of 's' leaves out 4 of 8 items the scorer failed on (qb, qc, qd and 1 "
            "more): its average checked only the rest"
        )
    ]
    with pytest.raises(EvalAssertionError) as raised:
        score_below(result, "s", 0.5)
    assert raised.value.failures[0] == "expected the score of 's' below 0.5, got 1.0"
    assert raised.value.failures[1].startswith("the score of 's' leaves out 4 of 8 items")


def test_a_score_matcher_fails_on_items_the_judge_budget_left_unjudged(judge_server):
    judge_server.reply = Reply({"score": 1}, usage=USAGE)
    judge = judge_server.judge("openai/gpt-4o-mini", instructions="Grade it.")
    graded = create_scorer("graded", judge=judge).generate_score(
        PromptStep("Grade", lambda run: f"Grade: {run.output}")
    )
    prices = litellm.get_model_info("gpt-4o-mini", custom_llm_provider="openai")
    one_call = 1000 * prices["input_cost_per_token"] + 500 * prices["output_cost_per_token"]
    result = run_evals(
        [{"id": f"q{n}", "input": "q", "output": f"a{n}"} for n in range(4)],
        scorers=[graded],
        concurrency=1,
        budget_usd=1.5 * one_call,
        progress=False,
    )
    assert result.scores == {"graded": 1.0} and result.summary.not_scorable == {"graded": 2}
    with pytest.raises(EvalAssertionError) as raised:
        score_above(result, "graded", 0.5)
    assert raised.value.failures == [
        (
            "the score of 'graded' leaves out 2 of 4 items the judge budget left unjudged "
            "(q2, q3): its average checked only the rest"
        )
    ]
