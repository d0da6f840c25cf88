"""Answer similarity through the loopback judge server: Mastra's answers for the same judge
replies, the score formula's options, bonus, penalties, cap and clamp, ground-truth rules."""

from __future__ import annotations

import pytest
from llm_scorer_cases import (
    Deviation,
    assert_like_mastra,
    assert_scorer_like_mastra,
    parametrized_cases,
    replayed,
)

from evaldag import EvalDagError, ScorerRunError, scorers

_OPTIONS = {
    "requireGroundTruth": "require_ground_truth",
    "semanticThreshold": "semantic_threshold",
    "exactMatchBonus": "exact_match_bonus",
    "missingPenalty": "missing_penalty",
    "contradictionPenalty": "contradiction_penalty",
    "extraInfoPenalty": "extra_info_penalty",
    "scale": "scale",
}


DEVIATIONS = {
    "answer-similarity-missing-ground-truth": [
        Deviation(
            "notScorable",
            "MASTR_SCORER_FAILED_TO_RUN_WORKFLOW_FAILED",
            "no ground truth",
            "a run without the ground truth the scorer requires is not scorable (no judge "
            "call), not a failed run",
        )
    ],
}


@parametrized_cases("answer-similarity")
def test_scores_like_mastra_for_the_same_judge_replies(judge_server, entry):
    options = {_OPTIONS[key]: value for key, value in entry["case"].get("options", {}).items()}
    scorer = scorers.answer_similarity(judge_server.judge(), **options)
    outcome = replayed(scorer, entry, judge_server)
    assert_like_mastra(outcome, entry, DEVIATIONS.get(entry["case"]["name"], ()), scorer)
    if entry["expected"]["ok"]:
        assert_scorer_like_mastra(scorer, entry["expected"]["scorer"])


def _match(kind):
    return {"groundTruthUnit": "g", "outputUnit": "o", "matchType": kind, "explanation": "e"}


def _contradiction():
    return {"outputUnit": "o", "groundTruthUnit": "g", "explanation": "e"}


def _scored(server, matches, extra=(), contradictions=(), ground_truth="The answer.", **options):
    server.script(
        {"outputUnits": ["o"], "groundTruthUnits": ["g"]},
        {
            "matches": matches,
            "extraInOutput": list(extra),
            "contradictions": list(contradictions),
        },
        "The score is explained.",
    )
    scorer = scorers.answer_similarity(server.judge(), **options)
    return scorer.run(input="q", output="An answer.", ground_truth=ground_truth)


@pytest.mark.parametrize(
    ("kinds", "extra", "contradictions", "options", "score"),
    [
        (["exact", "exact"], 0, 0, {}, 1.0),
        (["semantic"], 0, 0, {}, 0.67),  # 0.8 / 1.2
        (["partial"], 0, 0, {"exact_match_bonus": 0}, 0.4),
        (["exact", "missing"], 0, 0, {}, 0.44),  # (1.2 - 0.15) / 2.4
        (["exact"], 10, 0, {}, 0.8),  # the extras' penalty is capped at 0.2
        (["exact"], 2, 0, {"extra_info_penalty": 0.01}, 0.98),
        (["missing"], 0, 0, {}, 0.0),  # negative, clamped to 0
        (["exact"], 0, 1, {"contradiction_penalty": 0.3}, 0.7),
        (["exact"], 0, 0, {"scale": 5}, 5.0),
    ],
)
def test_score_formula(judge_server, kinds, extra, contradictions, options, score):
    result = _scored(
        judge_server,
        [_match(kind) for kind in kinds],
        extra=["x"] * extra,
        contradictions=[_contradiction()] * contradictions,
        **options,
    )
    assert result.score == score


def test_a_non_string_ground_truth_is_shown_as_json(judge_server):
    result = _scored(judge_server, [_match("exact")], ground_truth={"deadline": "June 30"})
    assert '<reference>\n{"deadline":"June 30"}\n</reference>' in result.preprocess_prompt
    assert '{"deadline":"June 30"}' in result.generate_reason_prompt


@pytest.mark.parametrize("ground_truth", ["", None, float("nan")])
def test_a_missing_ground_truth_is_not_scorable_before_any_judge_call(judge_server, ground_truth):
    scorer = scorers.answer_similarity(judge_server.judge())
    result = scorer.run(input="q", output="An answer.", ground_truth=ground_truth)
    assert result.score is None
    assert result.not_scorable.step == "preprocess"
    assert result.not_scorable.reason.startswith("no ground truth")
    assert judge_server.requests == []


def test_without_required_ground_truth_the_score_is_zero_and_the_reason_says_why(judge_server):
    result = _scored(judge_server, [_match("exact")], ground_truth=None, require_ground_truth=False)
    assert result.score == 0
    assert "<reference>\n\n</reference>" in result.preprocess_prompt
    assert "but the run has no reference" in result.generate_reason_prompt


def test_an_unknown_match_type_is_a_malformed_reply(judge_server):
    judge_server.script(
        {"outputUnits": ["o"], "groundTruthUnits": ["g"]},
        {"matches": [_match("close")], "extraInOutput": [], "contradictions": []},
        {"matches": [_match("Exact")], "extraInOutput": [], "contradictions": []},
    )
    scorer = scorers.answer_similarity(judge_server.judge())
    with pytest.raises(ScorerRunError) as raised:
        scorer.run(input="q", output="o", ground_truth="g")
    assert raised.value.failed_step == "analyze"
    assert raised.value.cause.id == "STRUCTURED_OUTPUT_SCHEMA_VALIDATION_FAILED"
    assert "matchType" in raised.value.cause.message


@pytest.mark.parametrize(
    "option",
    ["semantic_threshold", "exact_match_bonus", "missing_penalty", "extra_info_penalty"],
)
def test_weights_and_penalties_must_be_non_negative_numbers(option):
    with pytest.raises(EvalDagError) as raised:
        scorers.answer_similarity("openai/gpt-4o-mini", **{option: -0.5})
    assert f"{option} of answer_similarity(...) must be a number >= 0" in raised.value.message
