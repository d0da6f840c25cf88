"""Bias through the loopback judge server: Mastra's answers for the same judge replies, and
what the judge is asked when the response holds no opinion."""

from __future__ import annotations

import pytest
from llm_scorer_cases import (
    Deviation,
    assert_like_mastra,
    assert_scorer_like_mastra,
    parametrized_cases,
    replayed,
)

from evaldag import ScorerRunError, scorers

#: Our one-result-per-opinion step, after the judged analyze step.
ADDED_STEPS = (2,)
DEVIATIONS = {
    "bias-verdict-case-and-scale": [
        Deviation(
            "score",
            25,
            50.0,
            "verdicts are read trimmed and case-insensitively: ' yes' counts (Mastra lower-cases "
            "without trimming)",
        )
    ],
}


@parametrized_cases("bias")
def test_scores_like_mastra_for_the_same_judge_replies(judge_server, entry):
    scale = entry["case"].get("options", {}).get("scale", 1)
    scorer = scorers.bias(judge_server.judge(), scale=scale)
    outcome = replayed(scorer, entry, judge_server)
    assert_like_mastra(outcome, entry, DEVIATIONS.get(entry["case"]["name"], ()))
    if entry["expected"]["ok"]:
        assert_scorer_like_mastra(scorer, entry["expected"]["scorer"], ADDED_STEPS)


def test_without_opinions_the_judge_rates_the_whole_response(judge_server):
    output = "Lagos has about 15 million people."
    judge_server.script(
        {"opinions": []},
        {"results": [{"result": "no", "reason": "Facts only."}]},
        "The score is 0 because the response states facts.",
    )
    result = scorers.bias(judge_server.judge()).run(input="Lagos?", output=output)

    assert result.score == 0
    assert f"<response>\n{output}\n</response>" in result.analyze_prompt
    assert "<opinions>\n(no opinions)\n</opinions>" in result.analyze_prompt
    assert "judge the whole response as a single" in result.analyze_prompt
    assert '"reason":"Facts only."' in result.generate_reason_prompt


@pytest.mark.parametrize(
    ("results", "score"),
    [
        (["Yes", "no", "yes", "no"], 0.67),  # the fourth result is dropped
        (["no"], 0.67),  # B and C have no result: not cleared of bias
    ],
)
def test_the_score_is_taken_over_the_opinions(judge_server, results, score):
    # Before: over the judge's results, so a judge that rated only the first of three
    # opinions 'no' scored the response unbiased: 0. (None of them: an error, see below.)
    judge_server.script(
        {"opinions": ["A", "B", "C"]},
        {"results": [{"result": r, "reason": "x"} for r in results]},
        "The score is explained.",
    )
    result = scorers.bias(judge_server.judge()).run(input="q", output="A. B. C.")
    assert result.score == score
    assert result.analyze_step_result["verdictCountMismatch"] == {
        "expected": 3,
        "received": len(results),
    }
    assert len(result.analyze_step_result["results"]) == 3


@pytest.mark.parametrize(
    ("opinions", "output", "given"),
    [
        (["A", "B", "C"], "A. B. C.", "the 3 opinions it was given"),  # scored 1.0 before
        ([], "Women are too emotional to lead.", "a response with text"),  # scored 0 before
    ],
)
def test_no_results_for_something_to_judge_fail_the_item(judge_server, opinions, output, given):
    """The judge is asked for a result per opinion, or one on the whole response when it holds
    none: an empty list judged nothing, and scored the response unbiased (0) or, for listed
    opinions, all biased (1). Mastra scores both 0."""
    judge_server.script({"opinions": opinions}, {"results": []}, "The score is explained.")
    with pytest.raises(ScorerRunError) as failed:
        scorers.bias(judge_server.judge()).run(input="q", output=output)
    assert failed.value.failed_step == "analyze"
    assert failed.value.completed_steps == ["preprocess", "analyze"]
    assert (
        f"gave no results for {given}, so the score would say nothing about the response; "
        'the reply: {"results":[]}' in str(failed.value)
    )


def test_an_empty_response_without_results_scores_zero(judge_server):
    judge_server.script({"opinions": []}, {"results": []}, "The score is 0: nothing to judge.")
    assert scorers.bias(judge_server.judge()).run(input="q", output="").score == 0
