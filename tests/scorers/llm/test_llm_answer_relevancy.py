"""Answer relevancy through the loopback judge server: Mastra's answers for the same judge
replies, the options pitfall fixed, one result per statement."""

from __future__ import annotations

import pytest
from llm_scorer_cases import (
    assert_like_mastra,
    assert_scorer_like_mastra,
    parametrized_cases,
    replayed,
)

from evaldag import EvalDagError, ScorerRunError, scorers

#: Our extra step: analyze (function) after the judged analyze, one result per statement.
ADDED_STEPS = (2,)


def _result(value):
    return {"result": value, "reason": "r"}


@parametrized_cases("answer-relevancy")
def test_scores_like_mastra_for_the_same_judge_replies(judge_server, entry):
    options = entry["case"].get("options", {})
    scorer = scorers.answer_relevancy(
        judge_server.judge(),
        uncertainty_weight=options.get("uncertaintyWeight", 0.3),
        scale=options.get("scale", 1),
    )
    assert_like_mastra(replayed(scorer, entry, judge_server), entry)
    if entry["expected"]["ok"]:
        assert_scorer_like_mastra(scorer, entry["expected"]["scorer"], ADDED_STEPS)


def _run(server, statements, results, **options):
    server.script({"statements": statements}, {"results": results}, "The score is fine.")
    scorer = scorers.answer_relevancy(server.judge(), **options)
    return scorer.run(input="What is the capital of France?", output=" ".join(statements))


def test_giving_only_a_scale_keeps_the_default_uncertainty_weight(judge_server):
    # Mastra: options={scale: 2} drops uncertaintyWeight, and an 'unsure' makes the score NaN.
    result = _run(
        judge_server,
        ["Paris.", "France is in Europe.", "I like trains."],
        [_result("yes"), _result("unsure"), _result("no")],
        scale=2,
    )
    assert result.score == 0.87  # (1 + 0.3) / 3 * 2


@pytest.mark.parametrize(
    ("results", "score", "mismatch"),
    [
        ([_result("yes")], 0.5, {"expected": 2, "received": 1}),
        ([_result("yes"), _result("no"), _result("yes")], 0.5, {"expected": 2, "received": 3}),
        ([_result(" YES "), _result("Unsure")], 0.65, None),
    ],
)
def test_score_is_over_the_statements(judge_server, results, score, mismatch):
    result = _run(judge_server, ["Paris is the capital.", "It is big."], results)
    assert result.score == score
    assert result.analyze_step_result.get("verdictCountMismatch") == mismatch
    assert len(result.analyze_step_result["results"]) == 2
    if mismatch and mismatch["received"] == 1:
        assert result.analyze_step_result["results"][1]["result"] == "no"


def test_zero_statements_score_zero_and_the_judge_sees_none(judge_server):
    result = _run(judge_server, [], [])
    assert result.score == 0
    assert "There are 0 statements" in result.analyze_prompt
    assert "<user_message>\nWhat is the capital of France?\n</user_message>" in (
        result.analyze_prompt
    )


def test_uncertainty_weight_shows_in_the_reason_prompt(judge_server):
    result = _run(judge_server, ["Paris."], [_result("unsure")], uncertainty_weight=0.5)
    assert result.score == 0.5
    assert "partly relevant ones count 0.5" in result.generate_reason_prompt


@pytest.mark.parametrize("weight", [-0.1, 1.5, None, "0.3"])
def test_uncertainty_weight_must_be_between_0_and_1(weight):
    with pytest.raises(EvalDagError) as raised:
        scorers.answer_relevancy("openai/gpt-4o-mini", uncertainty_weight=weight)
    assert "uncertainty_weight of answer_relevancy(...) must be a number >= 0 and <= 1" in (
        raised.value.message
    )


def test_statements_without_any_result_fail_the_item(judge_server):
    with pytest.raises(ScorerRunError, match="gave no results for the 1 statement it was given"):
        _run(judge_server, ["Paris is the capital."], [])
