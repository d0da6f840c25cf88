"""Context recall through the loopback judge server: Mastra's answers for the same judge replies,
claims from the ground truth, one verdict per claim, context from an extractor, options."""

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

_HOURS = [
    {"verdict": "YES ", "reason": "Weekday hours match context [0]."},
    {"verdict": "yes", "reason": "Saturday hours match context [1]."},
    {"verdict": "Yes", "reason": "Context [1] also says Sundays are closed."},
]
DEVIATIONS = {
    "context-recall-extra-verdicts-capped-scale": [
        Deviation(
            "analyzeStepResult",
            {"verdicts": _HOURS},
            {"verdicts": _HOURS[:2], "verdictCountMismatch": {"expected": 2, "received": 3}},
            "one verdict per claim: the third verdict has no claim and is dropped (Mastra caps "
            "the ratio at 1 instead; the score is the same)",
        )
    ],
    "context-recall-no-ground-truth": [
        Deviation(
            "notScorable",
            0,
            "no ground truth",
            "a run without ground truth is not scorable (no judge call); Mastra asks the judge "
            "about an empty reference answer and scores 0",
        )
    ],
}
#: Our extra step: analyze (function) after the judged analyze, one verdict per claim.
ADDED_STEPS = (2,)


def _recall(case, judge):
    options = case.get("options", {})
    return scorers.context_recall(
        judge, context=options.get("context"), scale=options.get("scale", 1)
    )


@parametrized_cases("context-recall")
def test_scores_like_mastra_for_the_same_judge_replies(judge_server, entry):
    scorer = _recall(entry["case"], judge_server.judge())
    outcome = replayed(scorer, entry, judge_server)
    assert_like_mastra(outcome, entry, DEVIATIONS.get(entry["case"]["name"], ()), scorer)
    if entry["expected"]["ok"]:
        assert_scorer_like_mastra(scorer, entry["expected"]["scorer"], ADDED_STEPS)


def _verdict(value):
    return {"verdict": value, "reason": "r"}


def _scored(server, claims, verdicts, *, ground_truth="A. B. C.", **options):
    server.script({"claims": claims}, {"verdicts": verdicts}, "The score is explained.")
    options.setdefault("context", ["A is so.", "C is so."])
    scorer = scorers.context_recall(server.judge(), **options)
    return scorer.run(input="q", output="A.", ground_truth=ground_truth)


def test_the_judge_reads_the_ground_truth_and_the_indexed_context(judge_server):
    result = _scored(judge_server, ["A", "B"], [_verdict("yes"), _verdict("no")], scale=10)
    assert result.score == 5
    assert "<reference_answer>\nA. B. C.\n</reference_answer>" in result.preprocess_prompt
    assert "[0] A is so.\n[1] C is so." in result.analyze_prompt
    assert "There are 2 claims" in result.analyze_prompt and "2. B" in result.analyze_prompt
    assert "from 0 to 10" in result.generate_reason_prompt
    assert "The score is 5 because" in result.generate_reason_prompt


def test_a_ground_truth_that_is_not_text_is_read_as_json(judge_server):
    result = _scored(
        judge_server, ["A"], [_verdict("yes")], ground_truth={"answer": "A", "year": 1.0}
    )
    assert '{"answer":"A","year":1}' in result.preprocess_prompt
    assert result.score == 1


@pytest.mark.parametrize(
    ("verdicts", "score", "mismatch"),
    [
        (["yes"], 0.33, {"expected": 3, "received": 1}),  # Mastra: 1/3 too, unrecorded
        (["yes", "yes", "no", "yes"], 0.67, {"expected": 3, "received": 4}),
        (["yes", "no", "yes"], 0.67, None),
    ],
)
def test_one_verdict_per_claim(judge_server, verdicts, score, mismatch):
    result = _scored(judge_server, ["A", "B", "C"], [_verdict(v) for v in verdicts])
    assert result.score == score
    analysis = result.analyze_step_result
    assert analysis.get("verdictCountMismatch") == mismatch
    assert len(analysis["verdicts"]) == 3
    if mismatch and mismatch["received"] < 3:
        assert analysis["verdicts"][2]["verdict"] == "no"


def test_zero_claims_scores_zero_and_still_asks_for_verdicts(judge_server):
    result = _scored(judge_server, [], [])
    assert result.score == 0
    assert "There are 0 claims" in result.analyze_prompt
    assert len(judge_server.requests) == 3


@pytest.mark.parametrize("ground_truth", [None, "", float("nan")])
def test_without_ground_truth_the_run_is_not_scorable_and_the_judge_not_asked(
    judge_server, ground_truth
):
    result = _scored(judge_server, ["A"], [_verdict("yes")], ground_truth=ground_truth)
    assert result.score is None
    assert result.not_scorable.reason.startswith("no ground truth")
    assert judge_server.requests == []


def test_an_empty_response_is_not_read(judge_server):
    judge_server.script({"claims": ["A"]}, {"verdicts": [_verdict("yes")]}, "Explained.")
    scorer = scorers.context_recall(judge_server.judge(), context=["A"])
    result = scorer.run(input="q", output="", ground_truth="A.")
    assert result.score == 1


def test_context_comes_from_the_extractor_sync_or_async(judge_server):
    seen = []

    async def retrieved(run_input, run_output):
        seen.append((run_input, run_output))
        return [f"Context for {run_input}."]

    judge_server.script({"claims": ["A"]}, {"verdicts": [_verdict("yes")]}, "Explained.")
    scorer = scorers.context_recall(judge_server.judge(), context_extractor=retrieved)
    result = scorer.run(input="the question", output="the answer", ground_truth="A.")
    assert "[0] Context for the question." in result.analyze_prompt
    assert "[0] Context for the question." in result.generate_reason_prompt
    # the check that there is a context, analyze and generate_reason
    assert seen == [("the question", "the answer")] * 3


def test_an_extractor_that_returns_no_list_fails_the_run(judge_server):
    judge_server.script({"claims": ["A"]})
    scorer = scorers.context_recall(judge_server.judge(), context_extractor=lambda i, o: "text")
    with pytest.raises(ScorerRunError) as raised:
        scorer.run(input="q", output="o", ground_truth="A.")
    assert raised.value.failed_step == "preprocess"  # before any judge call
    assert "the list context_extractor returned" in raised.value.cause.message
    assert judge_server.requests == []


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({}, "Either context or contextExtractor is required for Context Recall scoring"),
        ({"context": []}, "Context array cannot be empty if provided"),
        ({"context": {"a": "b"}}, "context of context_recall(...) must be a list"),
        ({"context_extractor": "f"}, "context_extractor of context_recall(...) must be a"),
        ({"context": ["c"], "scale": 0}, "scale of context_recall(...) must be a number above 0"),
    ],
)
def test_bad_arguments_are_named(arguments, named):
    with pytest.raises(EvalDagError) as raised:
        scorers.context_recall("openai/gpt-4o-mini", **arguments)
    assert named in raised.value.message


def test_claims_without_any_verdict_fail_the_item(judge_server):
    with pytest.raises(ScorerRunError, match="gave no verdicts for the 3 claims it was given"):
        _scored(judge_server, ["A", "B", "C"], [])
