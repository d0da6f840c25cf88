"""Hallucination through the loopback judge server: Mastra's answers for the same judge
replies, context from get_context, one verdict per claim."""

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

DEVIATIONS = {
    "hallucination-verdict-case-and-scale": [
        Deviation(
            "score",
            2.5,
            7.5,
            "verdicts are read trimmed and case-insensitively: 'Yes' and 'YES' count",
        )
    ],
}
#: Our extra step: analyze (function) after the judged analyze, one verdict per claim.
ADDED_STEPS = (2,)


@parametrized_cases("hallucination")
def test_scores_like_mastra_for_the_same_judge_replies(judge_server, entry):
    options = entry["case"].get("options", {})
    scorer = scorers.hallucination(
        judge_server.judge(), context=options.get("context"), scale=options.get("scale", 1)
    )
    outcome = replayed(scorer, entry, judge_server)
    assert_like_mastra(outcome, entry, DEVIATIONS.get(entry["case"]["name"], ()))
    if entry["expected"]["ok"]:
        assert_scorer_like_mastra(scorer, entry["expected"]["scorer"], ADDED_STEPS)


def _verdict(value):
    return {"verdict": value, "reason": "r"}


def _script(server, claims, verdicts):
    server.script({"claims": claims}, {"verdicts": verdicts}, "The score is explained.")


def test_get_context_gets_what_it_names_for_each_step(judge_server):
    calls = []

    def get_context(run, step, score):
        calls.append((run.input, step, score))
        return [f"Context for {step}."]

    _script(judge_server, ["A"], [_verdict("no")])
    result = scorers.hallucination(judge_server.judge(), get_context=get_context).run(
        input="q", output="A."
    )
    assert result.score == 0
    assert calls == [("q", "analyze", None), ("q", "generate_reason", 0.0)]
    assert "<context>\nContext for analyze.\n</context>" in result.analyze_prompt
    assert "<context>\nContext for generate_reason.\n</context>" in result.generate_reason_prompt


def test_async_get_context_with_results_wins_over_context(judge_server):
    seen = []

    async def get_context(results, **_):
        seen.append(sorted(results))
        return ["From the function."]

    _script(judge_server, ["A"], [_verdict("yes")])
    result = scorers.hallucination(
        judge_server.judge(), context=["Ignored."], get_context=get_context
    ).run(input="q", output="A.")
    assert result.score == 1
    assert "From the function." in result.analyze_prompt
    assert "Ignored." not in result.analyze_prompt
    assert seen[0] == ["preprocess_step_result"]
    assert "generate_score_step_result" in seen[1]


def test_get_context_must_return_a_list_of_strings(judge_server):
    _script(judge_server, ["A"], [_verdict("yes")])
    scorer = scorers.hallucination(judge_server.judge(), get_context=lambda run: "one string")
    with pytest.raises(ScorerRunError) as raised:
        scorer.run(input="q", output="A.")
    assert raised.value.failed_step == "analyze"
    assert "the list get_context returned of hallucination(...)" in raised.value.message


def test_get_context_parameters_are_checked_when_the_scorer_is_built():
    with pytest.raises(EvalDagError) as raised:
        scorers.hallucination("openai/gpt-4o-mini", get_context=lambda run, claims: [])
    assert "unknown parameters ['claims']" in raised.value.message


def test_without_context_every_claim_is_checked_against_nothing(judge_server):
    _script(judge_server, ["A", "B"], [_verdict("yes"), _verdict("yes")])
    result = scorers.hallucination(judge_server.judge()).run(input="q", output="A. B.")
    assert result.score == 1
    assert "<context>\n(no context was given)\n</context>" in result.analyze_prompt


@pytest.mark.parametrize(
    ("verdicts", "score", "mismatch"),
    [
        # Mastra: 0/1 = 0. The claim without a verdict counts as a hallucination.
        (["no"], 0.5, {"expected": 2, "received": 1}),
        # Mastra: 2/3. The third verdict has no claim and is dropped.
        (["no", "yes", "yes"], 0.5, {"expected": 2, "received": 3}),
    ],
)
def test_score_is_over_the_claims(judge_server, verdicts, score, mismatch):
    _script(judge_server, ["A", "B"], [_verdict(v) for v in verdicts])
    result = scorers.hallucination(judge_server.judge(), context=["A"]).run(
        input="q", output="A. B."
    )
    assert result.score == score
    assert result.analyze_step_result["verdictCountMismatch"] == mismatch
    assert len(result.analyze_step_result["verdicts"]) == 2
