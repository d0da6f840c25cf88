"""Hallucination through the loopback judge server: Mastra's answers for the same judge
replies, context from a function or the tool results, one verdict per claim."""

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
    "hallucination-no-context": [
        Deviation(
            "notScorable",
            1,
            "no context",
            "a run without context (none given, no tool results) is not scorable (no judge "
            "call); Mastra judges every claim against nothing and scores 1",
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
    assert_like_mastra(outcome, entry, DEVIATIONS.get(entry["case"]["name"], ()), scorer)
    if entry["expected"]["ok"]:
        assert_scorer_like_mastra(scorer, entry["expected"]["scorer"], ADDED_STEPS)


def _verdict(value):
    return {"verdict": value, "reason": "r"}


def _script(server, claims, verdicts):
    server.script({"claims": claims}, {"verdicts": verdicts}, "The score is explained.")


def test_a_context_function_gets_the_run_in_each_step_that_reads_the_context(judge_server):
    calls = []

    def context(run):
        calls.append(run.input)
        return [f"Context for {run.input}."]

    _script(judge_server, ["A"], [_verdict("no")])
    result = scorers.hallucination(judge_server.judge(), context=context).run(
        input="q", output="A."
    )
    assert result.score == 0
    assert calls == ["q"] * 3  # the check that there is a context, analyze, generate_reason
    assert "<context>\nContext for q.\n</context>" in result.analyze_prompt
    assert "<context>\nContext for q.\n</context>" in result.generate_reason_prompt


def test_an_async_context_function_is_awaited(judge_server):
    async def context(run):
        return ["From the function."]

    _script(judge_server, ["A"], [_verdict("yes")])
    result = scorers.hallucination(judge_server.judge(), context=context).run(
        input="q", output="A."
    )
    assert result.score == 1
    assert "From the function." in result.analyze_prompt


def test_get_context_is_gone():
    # Mastra's getContext({run, results, score, step}) is context=lambda run: ... here.
    with pytest.raises(TypeError, match="get_context"):
        scorers.hallucination("openai/gpt-4o-mini", get_context=lambda run: ["c"])


def test_a_context_function_must_return_a_list_of_strings(judge_server):
    _script(judge_server, ["A"], [_verdict("yes")])
    scorer = scorers.hallucination(judge_server.judge(), context=lambda run: "one string")
    with pytest.raises(ScorerRunError) as raised:
        scorer.run(input="q", output="A.")
    assert raised.value.failed_step == "preprocess"
    assert "the list context returned of hallucination(...)" in raised.value.message
    assert judge_server.requests == []


def test_a_context_function_is_checked_when_the_scorer_is_built():
    with pytest.raises(EvalDagError) as raised:
        scorers.hallucination("openai/gpt-4o-mini", context=lambda run, claims: [])
    assert "context of hallucination(...) must be a function (run)" in raised.value.message


def test_without_context_the_tool_results_are_the_context(judge_server):
    output = [
        {
            "role": "assistant",
            "content": "A. B.",
            "toolInvocations": [
                {"toolCallId": "c", "toolName": "t", "state": "result", "result": {"a": 1}}
            ],
        }
    ]
    _script(judge_server, ["A", "B"], [_verdict("no"), _verdict("yes")])
    result = scorers.hallucination(judge_server.judge()).run(input="q", output=output)
    assert result.score == 0.5
    assert '<context>\n{"a":1}\n</context>' in result.analyze_prompt


def test_without_context_or_tool_results_the_run_is_not_scorable(judge_server):
    _script(judge_server, ["A", "B"], [_verdict("yes"), _verdict("yes")])
    result = scorers.hallucination(judge_server.judge()).run(input="q", output="A. B.")
    assert result.score is None
    assert result.not_scorable.reason.startswith("no context")
    assert judge_server.requests == []


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


def test_claims_without_any_verdict_fail_the_item(judge_server):
    """The judge listed two claims and judged none: filled with 'yes', the response scored 1,
    all hallucinated (Mastra: 0, none), from no verdict at all. The item fails, naming the
    reply; a response the judge finds no claim in still scores 0, as Mastra's."""
    _script(judge_server, ["The tower is in Berlin", "It was built in 1850"], [])
    scorer = scorers.hallucination(judge_server.judge(), context=["The tower is in Paris."])
    with pytest.raises(ScorerRunError) as failed:
        scorer.run(input="Where is the tower?", output="It is in Berlin, built in 1850.")
    assert failed.value.failed_step == "analyze"
    assert failed.value.cause.details == {
        "step": "analyze",
        "key": "verdicts",
        "items": 2,
        "reply": '{"verdicts":[]}',
    }
    assert "gave no verdicts for the 2 claims it was given" in str(failed.value)
    _script(judge_server, [], [])
    assert scorer.run(input="Where is the tower?", output="Hello! Ask me anything.").score == 0
