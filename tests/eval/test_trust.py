"""Whether a finished run measured anything (``_eval/trust.py``): a scorer that failed wherever
it could score, beside items it found not scorable or on a conversation's turns, is an error,
not a verdict."""

import pandas as pd
import pytest
from judge_server import refused

from evaldag import (
    PromptStep,
    UntrustworthyRunError,
    checks,
    create_scorer,
    not_scorable,
    run_evals,
)


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
