"""Context precision through the loopback judge server: Mastra's answers for the same judge
replies, context from an extractor, verdicts put in context order, mean average precision."""

from __future__ import annotations

import pytest
from llm_scorer_cases import (
    Deviation,
    assert_like_mastra,
    assert_scorer_like_mastra,
    parametrized_cases,
    replayed,
)

from evaldag import EvalDagError, scorers

_UNSORTED = [
    {"context_index": 2, "verdict": "Yes ", "reason": "Lists what to include."},
    {"context_index": 0, "verdict": "no", "reason": "History is irrelevant."},
    {"context_index": 3, "verdict": "NO", "reason": "About passport cards."},
    {"context_index": 1, "verdict": "YES", "reason": "Names the renewal form."},
]
DEVIATIONS = {
    "context-precision-unsorted-indices-scale": [
        Deviation(
            "judge.analyze.output",
            {"verdicts": sorted(_UNSORTED, key=lambda verdict: verdict["context_index"])},
            {"verdicts": _UNSORTED},
            "the judge record keeps the judge's order; Mastra's score step sorts the judge's "
            "object in place, so its record shows the sorted list (both analyze results are "
            "sorted)",
        )
    ],
}
#: Our extra step: analyze (function) after the judged analyze, verdicts in context order.
ADDED_STEPS = (1,)


@parametrized_cases("context-precision")
def test_scores_like_mastra_for_the_same_judge_replies(judge_server, entry):
    options = entry["case"].get("options", {})
    scorer = scorers.context_precision(
        judge_server.judge(), context=options.get("context"), scale=options.get("scale", 1)
    )
    outcome = replayed(scorer, entry, judge_server)
    assert_like_mastra(outcome, entry, DEVIATIONS.get(entry["case"]["name"], ()), scorer)
    if entry["expected"]["ok"]:
        assert_scorer_like_mastra(scorer, entry["expected"]["scorer"], ADDED_STEPS)


def _verdict(index, value):
    return {"context_index": index, "verdict": value, "reason": "r"}


def _scored(server, verdicts, context=("a", "b", "c", "d")):
    server.script({"verdicts": verdicts}, "The score is explained.")
    scorer = scorers.context_precision(server.judge(), context=list(context))
    return scorer.run(input="q", output="o")


@pytest.mark.parametrize(
    ("values", "score"),
    [
        (["yes", "no", "yes", "no"], 0.83),  # (1/1 + 2/3) / 2
        (["no", "no", "no", "yes"], 0.25),
        (["yes", "yes", "no", "no"], 1.0),
        (["no", "no", "no", "no"], 0.0),
    ],
)
def test_mean_average_precision(judge_server, values, score):
    verdicts = [_verdict(index, value) for index, value in enumerate(values)]
    result = _scored(judge_server, verdicts)
    assert result.score == score
    assert result.analyze_step_result == {"verdicts": verdicts}


def test_missing_and_repeated_indexes_are_scored_by_context_position(judge_server):
    # Mastra: sorted verdicts [0 yes, 0 no, 3 yes, 9 yes] give (1 + 2/3 + 3/4) / 3 = 0.81.
    judged = [_verdict(3, "yes"), _verdict(0, "yes"), _verdict(0, "no"), _verdict(9, "yes")]
    result = _scored(judge_server, judged)
    analysis = result.analyze_step_result
    assert [v["context_index"] for v in analysis["verdicts"]] == [0, 1, 2, 3]
    assert [v["verdict"] for v in analysis["verdicts"]] == ["yes", "no", "no", "yes"]
    assert analysis["verdictCountMismatch"] == {"expected": 4, "received": 4}
    assert result.score == 0.75  # (1/1 + 2/4) / 2


def test_the_extractor_is_called_for_any_run(judge_server):
    seen = []

    def extract(run_input, run_output):
        seen.append((run_input, run_output))
        return ["Piece one.", "Piece two."]

    judge_server.script({"verdicts": [_verdict(0, "yes"), _verdict(1, "no")]}, "Explained.")
    result = scorers.context_precision(judge_server.judge(), context_extractor=extract).run(
        input="plain question", output="plain answer"
    )
    assert result.score == 1
    assert "[0] Piece one.\n[1] Piece two." in result.analyze_prompt
    assert seen[0] == ("plain question", "plain answer")


def test_an_empty_extracted_context_is_not_scorable_before_any_judge_call(judge_server):
    async def extract(run_input, run_output):
        return []

    scorer = scorers.context_precision(judge_server.judge(), context_extractor=extract)
    result = scorer.run(input="q", output="o")
    assert result.score is None
    assert result.not_scorable.step == "preprocess"
    assert result.not_scorable.reason == (
        "no context: the function given as context_extractor returned none for this run"
    )
    assert judge_server.requests == []


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({}, "Either context or contextExtractor is required"),
        ({"context": []}, "Context array cannot be empty if provided"),
        ({"context": 1}, "context of context_precision(...) must be a list of strings"),
        ({"context_extractor": "f"}, "context_extractor of context_precision(...) must be a"),
    ],
)
def test_options_are_checked_when_the_scorer_is_built(options, named):
    with pytest.raises(EvalDagError) as raised:
        scorers.context_precision("openai/gpt-4o-mini", **options)
    assert named in raised.value.message
