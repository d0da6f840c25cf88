"""Context relevance through the loopback judge server: Mastra's answers for the same judge
replies, relevance weights and penalties, one evaluation per context piece, options."""

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
from evaldag.scorers.llm.context_relevance import ContextRelevancePenalties

_MISSING_DOSAGE = ["Weight-based pediatric dosing for amoxicillin"]
_DOSAGE_ASSESSMENT = "The context lacks any dosing information."
DEVIATIONS = {
    "context-relevance-no-evaluations-missing": [
        Deviation(
            "analyzeStepResult",
            {
                "evaluations": [],
                "missingContext": _MISSING_DOSAGE,
                "overallAssessment": _DOSAGE_ASSESSMENT,
            },
            {
                "evaluations": [
                    {
                        "context_index": 0,
                        "contextPiece": "Amoxicillin is a penicillin-class antibiotic.",
                        "relevanceLevel": "none",
                        "wasUsed": False,
                        "reasoning": "The judge gave no evaluation for this context piece.",
                    }
                ],
                "missingContext": _MISSING_DOSAGE,
                "overallAssessment": _DOSAGE_ASSESSMENT,
                "verdictCountMismatch": {"expected": 1, "received": 0},
            },
            "one evaluation per context piece: a piece the judge skipped counts as relevance "
            "none (Mastra scores no evaluations as 0 or 1 by missingContext; the score is the "
            "same here)",
        )
    ],
}
#: Our extra step: analyze (function) after the judged analyze, one evaluation per piece.
ADDED_STEPS = (1,)


@parametrized_cases("context-relevance")
def test_scores_like_mastra_for_the_same_judge_replies(judge_server, entry):
    options = entry["case"].get("options", {})
    scorer = scorers.context_relevance(
        judge_server.judge(),
        context=options.get("context"),
        scale=options.get("scale", 1),
        penalties=options.get("penalties"),
    )
    outcome = replayed(scorer, entry, judge_server)
    assert_like_mastra(outcome, entry, DEVIATIONS.get(entry["case"]["name"], ()), scorer)
    if entry["expected"]["ok"]:
        assert_scorer_like_mastra(scorer, entry["expected"]["scorer"], ADDED_STEPS)


def _evaluation(index, level, used=True):
    return {
        "context_index": index,
        "contextPiece": f"piece {index}",
        "relevanceLevel": level,
        "wasUsed": used,
        "reasoning": "r",
    }


def _scored(server, evaluations, missing=(), context=("a", "b", "c"), **options):
    server.script(
        {
            "evaluations": evaluations,
            "missingContext": list(missing),
            "overallAssessment": "Summed up.",
        },
        "The score is explained.",
    )
    scorer = scorers.context_relevance(server.judge(), context=list(context), **options)
    return scorer.run(input="What is it?", output="It is a.")


@pytest.mark.parametrize(
    ("levels", "missing", "options", "score"),
    [
        (["high", "medium", "low"], 0, {}, 0.67),  # (1 + 0.7 + 0.3) / 3
        (["high", "high", "none"], 0, {}, 0.67),
        (["high", "high", "high"], 2, {}, 0.7),  # 1 - 2 × 0.15
        (["high", "high", "high"], 9, {}, 0.5),  # the missing penalty is capped at 0.5
        (["medium", "medium", "medium"], 0, {"scale": 10}, 7.0),
        (["low", "none", "none"], 1, {}, 0.0),  # 0.1 - 0.15, floored at 0
        (["high", "high", "high"], 1, {"penalties": {"missing_context_per_item": 0.3}}, 0.7),
    ],
)
def test_score_formula(judge_server, levels, missing, options, score):
    evaluations = [_evaluation(index, level) for index, level in enumerate(levels)]
    result = _scored(judge_server, evaluations, ["gap"] * missing, **options)
    assert result.score == score
    assert result.analyze_step_result.get("verdictCountMismatch") is None


def test_highly_relevant_pieces_left_unused_cost_a_penalty_each(judge_server):
    evaluations = [_evaluation(0, "high", False), _evaluation(1, "high", False)]
    result = _scored(judge_server, evaluations, context=("a", "b"))
    assert result.score == 0.8
    prompt = " ".join(result.generate_reason_prompt.split())
    assert "minus 0.1 for each highly relevant piece" in prompt
    assert "and 0.15 for each piece of missing information (at most 0.5 in all)" in prompt


def test_the_judge_reads_the_question_the_response_and_the_indexed_pieces(judge_server):
    result = _scored(judge_server, [_evaluation(i, "high") for i in range(3)])
    prompt = result.analyze_prompt
    assert "<user_question>\nWhat is it?\n</user_question>" in prompt
    assert "<response>\nIt is a.\n</response>" in prompt
    assert "There are 3 context pieces" in prompt and "[0] a\n[1] b\n[2] c" in prompt


def test_evaluations_are_one_per_piece_in_piece_order(judge_server):
    evaluations = [_evaluation(2, "low"), _evaluation(0, "high"), _evaluation(7, "high")]
    result = _scored(judge_server, evaluations)
    analysis = result.analyze_step_result
    assert [e["context_index"] for e in analysis["evaluations"]] == [0, 1, 2]
    assert analysis["evaluations"][1]["relevanceLevel"] == "none"
    assert analysis["evaluations"][1]["contextPiece"] == "b"
    assert analysis["verdictCountMismatch"] == {"expected": 3, "received": 3}
    assert result.score == 0.43  # (1 + 0 + 0.3) / 3; Mastra: (0.3 + 1 + 1) / 3 = 0.77


def test_an_evaluation_in_another_order_is_kept_as_the_judge_gave_it(judge_server):
    evaluations = [_evaluation(1, "none"), _evaluation(0, "high")]
    result = _scored(judge_server, evaluations, context=("a", "b"))
    assert result.analyze_step_result["evaluations"] == evaluations
    assert result.score == 0.5


def test_an_empty_response_is_judged(judge_server):
    judge_server.script(
        {"evaluations": [_evaluation(0, "high", False)], "overallAssessment": "Unused."},
        "The score is 0.9 because the response used nothing.",
    )
    scorer = scorers.context_relevance(judge_server.judge(), context=["a"])
    result = scorer.run(input="q", output="")
    assert result.score == 0.9
    assert "<response>\n\n</response>" in result.analyze_prompt
    assert "missingContext" not in result.analyze_step_result


def test_an_unknown_relevance_level_is_a_malformed_reply(judge_server):
    bad = {"evaluations": [_evaluation(0, "very high")], "overallAssessment": "x"}
    judge_server.script(bad, bad)
    scorer = scorers.context_relevance(judge_server.judge(), context=["a"])
    with pytest.raises(ScorerRunError) as raised:
        scorer.run(input="q", output="o")
    (execution,) = raised.value.result.judge["analyze"].executions
    assert execution.error.code == "STRUCTURED_OUTPUT_SCHEMA_VALIDATION_FAILED"
    assert execution.attempt_count == 2


def test_an_extractor_with_no_context_is_not_scorable_before_any_judge_call(judge_server):
    scorer = scorers.context_relevance(judge_server.judge(), context_extractor=lambda i, o: [])
    result = scorer.run(input="q", output="o")
    assert result.score is None
    assert result.not_scorable.reason.startswith("no context")
    assert judge_server.requests == []


def test_penalties_take_snake_case_camel_case_or_the_model():
    defaults = ContextRelevancePenalties()
    assert (
        defaults.unused_high_relevance_context,
        defaults.missing_context_per_item,
        defaults.max_missing_context_penalty,
    ) == (0.1, 0.15, 0.5)
    for penalties in (
        {"maxMissingContextPenalty": 0.2},
        {"max_missing_context_penalty": 0.2},
        ContextRelevancePenalties(max_missing_context_penalty=0.2),
    ):
        scorer = scorers.context_relevance("openai/gpt-4o-mini", context=["c"], penalties=penalties)
        assert scorer.id == "context-relevance-scorer"


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({}, "Either context or contextExtractor is required for Context Relevance scoring"),
        ({"context": []}, "Context array cannot be empty if provided"),
        ({"context": ["c"], "scale": -1}, "scale of context_relevance(...) must be a number"),
        ({"context": ["c"], "penalties": 0.1}, "penalties of context_relevance(...) must be"),
        ({"context": ["c"], "penalties": {"unused": 0.1}}, "penalties of context_relevance"),
        ({"context": ["c"], "penalties": {"missingContextPerItem": -1}}, "greater than or equal"),
        ({"context": ["c"], "penalties": {"missingContextPerItem": "0.1"}}, "valid number"),
    ],
)
def test_bad_arguments_are_named(arguments, named):
    with pytest.raises(EvalDagError) as raised:
        scorers.context_relevance("openai/gpt-4o-mini", **arguments)
    assert named in raised.value.message
