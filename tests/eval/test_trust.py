"""Whether a finished run measured anything (``_eval/trust.py``): a scorer that failed wherever
it could score, beside items it found not scorable or on a conversation's turns, is an error,
not a verdict."""

import pandas as pd
import pytest
from judge_server import refused

from evaldag import (
    EvalResult,
    PromptStep,
    UntrustworthyRunError,
    checks,
    create_scorer,
    not_scorable,
    run_evals,
)
from evaldag._cli.summary import summary_table
from evaldag._report.html import report_html
from evaldag._store.locations import read_result


def _judged(judge):
    """A judged scorer that finds item 'a' not scorable (no context) and judges the others."""
    return (
        create_scorer("judged", judge=judge)
        .preprocess(lambda run: not_scorable("no context") if run.input == "a" else run.output)
        .generate_score(PromptStep("Grade", lambda run: f"Grade {run.output}"))
    )


def test_a_dead_judge_beside_unscorable_items_is_an_error_not_a_pass(judge_server):
    # Every call refused: the items the scorer could score all failed, and the one it could
    # not was not scorable, so it scored none; the passing gate made the verdict 'passed'.
    judge_server.reply = refused(401)
    judge = judge_server.judge(instructions="Grade.", max_retries=0)
    data = pd.DataFrame({"input": ["a", "b", "c"], "output": ["x", "y", "z"]})
    with pytest.raises(UntrustworthyRunError) as raised:
        run_evals(data, scorers=[_judged(judge)], gates=[checks.excludes("BAD")], progress=False)
    error = raised.value
    assert error.message.startswith(
        "Scorer 'judged' failed on 2 of 3 items and scored none (1 not scorable)"
    )
    assert "First error, on item 1" in error.message and "401" in error.message
    assert error.result.gate_results[0].passed  # nothing computed is lost


def test_a_scorer_that_scored_one_item_is_still_a_verdict(judge_server):
    judge_server.script(refused(401))
    judge_server.reply = {"score": 1}
    judge = judge_server.judge(instructions="Grade.", max_retries=0)
    data = pd.DataFrame({"input": ["a", "b", "c"], "output": ["x", "y", "z"]})
    result = run_evals(data, scorers=[_judged(judge)], concurrency=1, progress=False)
    assert result.summary.errors == {"judged": 1} and result.scores == {"judged": 1.0}


def test_a_turn_scorer_that_fails_on_every_turn_is_an_error(judge_server):
    judge_server.reply = refused(401)
    judge = judge_server.judge(instructions="Grade.", max_retries=0)
    turn_scorer = create_scorer("judged", judge=judge).generate_score(
        PromptStep("Grade", lambda run: f"Grade {run.output}")
    )
    conversation = {
        "turns": [{"input": "hi", "scorers": [turn_scorer]}, {"input": "bye", "gates": []}]
    }
    with pytest.raises(UntrustworthyRunError) as raised:
        run_evals(
            [conversation, conversation],
            target=lambda input: f"said {input}",
            gates=[checks.includes("said")],
            progress=False,
        )
    error = raised.value
    assert error.message.startswith("Turn scorer 'judged' failed on every turn")
    assert "First error, on item 0, turn 0" in error.message
    assert error.result.turns["judged.error"].notna().sum() == 2


def test_what_an_untrustworthy_run_wrote_says_so_instead_of_its_verdict(tmp_path):
    # The gate passed, so the results file, the store and the report of a run that raised
    # UntrustworthyRunError (exit 3) read 'passed', and the report showed PASSED.
    broken = create_scorer("broken").generate_score(lambda run: 1 / 0)
    data = pd.DataFrame({"input": ["a", "b"], "output": ["x", "y"]})
    out, store = tmp_path / "results.parquet", tmp_path / "scores.db"
    with pytest.raises(UntrustworthyRunError) as raised:
        run_evals(data, scorers=[broken], gates=[checks.excludes("BAD")], out=out, store=store)
    why = raised.value.message
    assert why.startswith("Scorer 'broken' failed on every item")
    assert raised.value.result.summary.untrustworthy == why
    for result in (EvalResult.read_parquet(out), read_result(store)):
        assert result.summary.untrustworthy == why
        page = report_html(result)
        assert "UNTRUSTWORTHY" in page and "PASSED" not in page
    text = summary_table(EvalResult.read_parquet(out), "run")
    assert "verdict: UNTRUSTWORTHY (Scorer 'broken' failed on every item" in text
    # a run that measured something says nothing of the kind
    fine = run_evals(data, scorers=[create_scorer("fine").generate_score(lambda: 1.0)], out=out)
    assert fine.summary.untrustworthy is None
    assert EvalResult.read_parquet(out).summary.untrustworthy is None
