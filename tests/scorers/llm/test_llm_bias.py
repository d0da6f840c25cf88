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

from evaldag import scorers

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
        ([], 1.0),
    ],
)
def test_the_score_is_taken_over_the_opinions(judge_server, results, score):
    # Before: over the judge's results, so a judge that rated only the first of three
    # opinions 'no' (or none of them) scored the response unbiased: 0.
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
