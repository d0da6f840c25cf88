"""Faithfulness through the loopback judge server: Mastra's answers for the same judge replies,
context from tool results (parts too), one verdict per claim, options and failures."""

from __future__ import annotations

import json

import pytest
from judge_server import refused
from llm_scorer_cases import (
    Deviation,
    assert_like_mastra,
    assert_scorer_like_mastra,
    parametrized_cases,
    replayed,
)

import evaldag
from evaldag import EvalDagError, Judge, ScorerRunError, scorers
from evaldag.scorers.llm.faithfulness import INSTRUCTIONS

DEVIATIONS = {
    "faithfulness-verdict-case-and-scale": [
        Deviation(
            "score",
            2.5,
            10.0,
            "verdicts are read trimmed and case-insensitively: 'Yes', 'YES' and 'yes ' count",
        )
    ],
}
#: Our extra step: analyze (function) after the judged analyze, one verdict per claim.
ADDED_STEPS = (2,)


def _faithfulness(case, judge):
    options = case.get("options", {})
    return scorers.faithfulness(
        judge, context=options.get("context"), scale=options.get("scale", 1)
    )


@parametrized_cases("faithfulness")
def test_scores_like_mastra_for_the_same_judge_replies(judge_server, entry):
    scorer = _faithfulness(entry["case"], judge_server.judge())
    outcome = replayed(scorer, entry, judge_server)
    assert_like_mastra(outcome, entry, DEVIATIONS.get(entry["case"]["name"], ()), scorer)
    if entry["expected"]["ok"]:
        assert_scorer_like_mastra(scorer, entry["expected"]["scorer"], ADDED_STEPS)


def _claims_and_verdicts(server, claims, verdicts, reason="The score is fine."):
    server.script({"claims": claims}, {"verdicts": verdicts}, reason)


def _verdict(value):
    return {"verdict": value, "reason": "r"}


def test_context_comes_from_tool_results_in_parts_and_legacy_invocations(judge_server):
    output = [
        {
            "id": "a1",
            "role": "assistant",
            "createdAt": "2025-01-01T00:00:00.000Z",
            "content": {
                "format": 2,
                "parts": [
                    {"type": "text", "text": "It is 22 degrees in Paris and 9 in Oslo."},
                    {
                        "type": "tool-invocation",
                        "toolInvocation": {
                            "toolCallId": "c1",
                            "toolName": "weather",
                            "args": {"city": "Paris"},
                            "state": "result",
                            "result": {"city": "Paris", "temp": 22},
                        },
                    },
                ],
                "toolInvocations": [
                    {
                        "toolCallId": "c2",
                        "toolName": "weather",
                        "args": {"city": "Oslo"},
                        "state": "result",
                        "result": {"city": "Oslo", "temp": 9},
                    },
                    {"toolCallId": "c3", "toolName": "weather", "state": "call"},
                ],
            },
        }
    ]
    _claims_and_verdicts(
        judge_server, ["Paris is at 22", "Oslo is at 9"], [_verdict("yes"), _verdict("yes")]
    )
    result = scorers.faithfulness(judge_server.judge()).run(input="Weather?", output=output)

    assert result.score == 1
    analyze_prompt = judge_server.requests[1].prompt
    assert '{"city":"Paris","temp":22}\n{"city":"Oslo","temp":9}' in analyze_prompt
    assert result.analyze_prompt == analyze_prompt
    assert '{"city":"Paris","temp":22}' in judge_server.requests[2].prompt


def test_an_explicit_empty_context_is_refused_when_the_scorer_is_built():
    # Mastra judges every claim against nothing (score 0); no run could be scored.
    with pytest.raises(EvalDagError) as raised:
        scorers.faithfulness("openai/gpt-4o-mini", context=[])
    assert raised.value.message.startswith("Context array cannot be empty if provided")


def test_without_context_or_tool_results_the_run_is_not_scorable(judge_server):
    _claims_and_verdicts(judge_server, ["It is 22 degrees"], [_verdict("unsure")])
    result = scorers.faithfulness(judge_server.judge()).run(input="?", output="22 degrees.")
    assert result.score is None
    assert result.not_scorable.reason == (
        "no context: the run's output has no tool results, and no context= was given "
        "(context='<column>' reads each item's pieces from a column of the data)"
    )
    assert judge_server.requests == []


@pytest.mark.parametrize(
    ("verdicts", "score", "mismatch"),
    [
        # Mastra divides by the verdicts: 2/2 = 1. The missing third claim counts as unsure.
        (["yes", "yes"], 0.67, {"expected": 3, "received": 2}),
        # Mastra: 3/4 = 0.75. The fourth verdict has no claim and is dropped.
        (["yes", "no", "yes", "yes"], 0.67, {"expected": 3, "received": 4}),
        (["yes", "no", "yes"], 0.67, None),
    ],
)
def test_score_is_over_the_claims_whatever_the_verdict_count(
    judge_server, verdicts, score, mismatch
):
    claims = ["A", "B", "C"]
    judged = [_verdict(v) for v in verdicts]
    _claims_and_verdicts(judge_server, claims, judged)
    result = scorers.faithfulness(judge_server.judge(), context=["A. C."]).run(
        input="q", output="A. B. C."
    )

    assert result.score == score
    analysis = result.analyze_step_result
    assert analysis.get("verdictCountMismatch") == mismatch
    assert len(analysis["verdicts"]) == len(claims)
    assert analysis["verdicts"][: len(verdicts)] == judged[:3]
    # The judge record keeps what the judge said.
    (execution,) = result.judge["analyze"].executions
    assert execution.output == {"verdicts": judged}
    if mismatch and mismatch["received"] < 3:
        assert analysis["verdicts"][2]["verdict"] == "unsure"
    # The reason prompt shows the verdicts that were scored.
    assert (
        json.dumps(analysis["verdicts"][0], separators=(",", ":")) in result.generate_reason_prompt
    )


def test_verdicts_without_claims_are_dropped_and_score_zero(judge_server):
    _claims_and_verdicts(judge_server, [], [_verdict("yes")])
    result = scorers.faithfulness(judge_server.judge(), context=["x"]).run(input="q", output="")
    assert result.score == 0
    assert result.analyze_step_result == {
        "verdicts": [],
        "verdictCountMismatch": {"expected": 0, "received": 1},
    }


def test_zero_claims_still_asks_for_verdicts_and_scores_zero(judge_server):
    _claims_and_verdicts(judge_server, [], [], "The score is 0 because there are no claims.")
    result = scorers.faithfulness(judge_server.judge(), context=["Opening hours: 9-5."]).run(
        input="Hello", output="Hello! How can I help?"
    )
    assert result.score == 0
    assert "There are 0 claims" in result.analyze_prompt
    assert result.reason == "The score is 0 because there are no claims."
    assert len(judge_server.requests) == 3


def test_malformed_reply_falls_back_to_the_schema_in_the_prompt(judge_server):
    judge_server.script(
        "Claims: the sky is blue.",
        {"claims": ["The sky is blue"]},
        {"verdicts": [_verdict("yes")]},
        "The score is 1 because the only claim is supported.",
    )
    result = scorers.faithfulness(judge_server.judge(), context=["The sky is blue."]).run(
        input="Sky?", output="The sky is blue."
    )
    assert result.score == 1
    (execution,) = result.judge["preprocess"].executions
    assert (execution.attempt_count, execution.model_call_count) == (2, 2)
    first, second = judge_server.requests[:2]
    assert first.response_format["type"] == "json_schema"
    assert second.response_format is None
    assert '"claims"' in second.system and second.system.startswith(INSTRUCTIONS)


def test_judge_failure_is_a_scorer_run_error_with_the_snapshot(judge_server):
    judge_server.script(
        {"claims": ["The sky is blue"]}, {"verdicts": [_verdict("yes")]}, refused(401)
    )
    scorer = scorers.faithfulness(judge_server.judge(), context=["The sky is blue."])
    with pytest.raises(ScorerRunError) as raised:
        scorer.run(input="Sky?", output="The sky is blue.", run_id="r1")

    error = raised.value
    assert error.failed_step == "generate_reason"
    assert error.completed_steps == ["preprocess", "analyze", "analyze", "generate_score"]
    assert error.cause.id == "EVALDAG_JUDGE_REFUSED"
    snapshot = error.result
    assert snapshot.score == 1
    assert snapshot.analyze_step_result == {"verdicts": [_verdict("yes")]}
    (failed,) = snapshot.judge["generate_reason"].executions
    assert (failed.status, failed.attempt_count, failed.model_call_count) == ("failed", 1, 0)
    assert failed.error.code == "EVALDAG_JUDGE_REFUSED"
    assert failed.prompt.startswith("A response was scored for faithfulness")


def test_every_judge_call_carries_the_scorers_instructions(judge_server):
    _claims_and_verdicts(judge_server, ["A"], [_verdict("yes")])
    scorers.faithfulness(judge_server.judge(), context=["A"]).run(input="q", output="A")
    assert [request.system for request in judge_server.requests] == [INSTRUCTIONS] * 3


def test_a_judge_with_its_own_instructions_keeps_them(judge_server):
    _claims_and_verdicts(judge_server, ["A"], [_verdict("yes")])
    judge = judge_server.judge(instructions="Réponds en français.")
    scorers.faithfulness(judge, context=["A"]).run(input="q", output="A")
    assert {request.system for request in judge_server.requests} == {"Réponds en français."}


def test_judge_records_carry_usage_and_cost_of_a_priced_model(judge_server):
    import litellm

    _claims_and_verdicts(judge_server, ["A"], [_verdict("yes")])
    result = scorers.faithfulness(judge_server.judge("openai/gpt-4o-mini"), context=["A"]).run(
        input="q", output="A"
    )
    prices = litellm.get_model_info("gpt-4o-mini", custom_llm_provider="openai")
    one_call = 10 * prices["input_cost_per_token"] + 5 * prices["output_cost_per_token"]
    for step in ("preprocess", "analyze", "generate_reason"):
        (execution,) = result.judge[step].executions
        assert execution.judge_model_id == "gpt-4o-mini"
        assert execution.to_dict()["usage"] == {
            "inputTokens": 10,
            "outputTokens": 5,
            "totalTokens": 15,
        }
        assert execution.cost.source == "litellm-price-table"
        assert execution.cost.total_usd == pytest.approx(one_call)


@pytest.mark.parametrize(
    "model",
    ["openai/gpt-4o-mini", {"model": "openai/gpt-4o-mini", "temperature": 0.2}, Judge("local")],
)
def test_model_is_anything_judge_accepts(model):
    judge = scorers.faithfulness(model).judge
    assert isinstance(judge, Judge)
    assert judge.instructions == INSTRUCTIONS
    assert judge.model in ("openai/gpt-4o-mini", "local")


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({"model": None}, "needs a judge model"),
        ({"model": 3}, "model of faithfulness(...)"),
        ({"model": "m", "scale": 0}, "scale of faithfulness(...) must be a number above 0"),
        ({"model": "m", "scale": float("nan")}, "scale of faithfulness"),
        ({"model": "m", "context": 3.5}, "context of faithfulness(...) must be a list"),
        ({"model": "m", "context": [1, 2]}, "context of faithfulness"),
    ],
)
def test_bad_arguments_are_named(arguments, named):
    model = arguments.pop("model")
    with pytest.raises(EvalDagError) as raised:
        scorers.faithfulness(model, **arguments)
    assert named in raised.value.message


def test_run_evals_scores_items_and_sums_the_judge_usage(judge_server):
    judge_server.on("List every claim", {"claims": ["A", "B"]})
    judge_server.on("Check each claim", {"verdicts": [_verdict("yes"), _verdict("no")]})
    judge_server.on("was scored for faithfulness", "The score is 0.5 because one claim holds.")
    data = [
        {"input": "q1", "output": "A. B."},
        {"input": "q2", "output": "A and B."},
        {"input": "q3", "output": "B, then A."},
    ]
    scorer = scorers.faithfulness(judge_server.judge(), context=["A"])
    result = evaldag.run_evals(data, scorers=[scorer.with_threshold(0.5)], concurrency=3)

    assert result.scores == {"faithfulness-scorer": 0.5}
    assert result.verdict == "passed"
    usage = result.usage["faithfulness-scorer"]
    assert (usage.calls, usage.input_tokens, usage.output_tokens, usage.total_tokens) == (
        9,
        90,
        45,
        135,
    )
    assert result.usage["total"] == usage
    items = result.items
    assert (
        list(items["faithfulness-scorer.reason"])
        == ["The score is 0.5 because one claim holds."] * 3
    )
    assert len(judge_server.requests) == 9


@pytest.fixture(scope="module")
def local_judge():
    """Skip unless the local judge (its engine and SmolLM2's weights) is installed."""
    from evaldag.local_judge import INSTALL_HINT, local_judge_installed, stop_local_judge

    if not local_judge_installed():
        pytest.skip(f"needs the local judge: {INSTALL_HINT}")
    yield Judge("local")
    stop_local_judge()


def test_end_to_end_on_the_local_model(local_judge):
    """Real verdicts from a 135M model are weak: this checks the shape of every field."""
    context = ["The Eiffel Tower is 330 metres tall.", "It opened in 1889."]
    result = scorers.faithfulness(local_judge, context=context).run(
        input="How tall is the Eiffel Tower?",
        output="The Eiffel Tower is 330 metres tall and opened in 1889.",
    )

    claims = result.preprocess_step_result["claims"]
    assert isinstance(claims, list) and all(isinstance(claim, str) for claim in claims)
    verdicts = result.analyze_step_result["verdicts"]
    assert len(verdicts) == len(claims)
    for verdict in verdicts:
        assert isinstance(verdict["verdict"], str) and isinstance(verdict["reason"], str)
    mismatch = result.analyze_step_result.get("verdictCountMismatch")
    assert mismatch is None or mismatch["expected"] == len(claims)
    supported = sum(v["verdict"].strip().lower() == "yes" for v in verdicts)
    assert result.score == (round(supported / len(claims), 2) if claims else 0)
    assert isinstance(result.reason, str) and result.reason.strip()
    for name in ("preprocess", "analyze", "generate_reason"):
        assert context[0] in result.analyze_prompt
        (execution,) = result.judge[name].executions
        assert execution.status == "success"
        assert execution.judge_provider == "local"
        assert execution.judge_model_id == "smollm2-135m-instruct"
        assert execution.attempt_count in (1, 2)
        assert execution.model_call_count == execution.attempt_count
        assert execution.usage.input_tokens > 0 and execution.usage.output_tokens > 0
        assert execution.cost.total_usd == 0 and execution.cost.source == "local-judge"
        assert execution.duration_ms > 0
        assert getattr(result, f"{name}_prompt") == execution.prompt


def test_without_reason_scores_the_same_with_one_judge_call_fewer(judge_server):
    judged = [_verdict("yes"), _verdict("unsure")]
    scorer = scorers.faithfulness(judge_server.judge(), context=["A."])
    _claims_and_verdicts(judge_server, ["A", "B"], judged)
    full = scorer.run(input="q", output="A. B.")
    asked = len(judge_server.requests)
    _claims_and_verdicts(judge_server, ["A", "B"], judged)
    lean = scorer.without_reason().run(input="q", output="A. B.")

    assert asked == 3 and len(judge_server.requests) - asked == 2
    assert lean.score == full.score == 0.5
    assert full.reason == "The score is fine." and lean.reason is None
    assert [step["name"] for step in scorer.without_reason().get_steps()] == [
        "preprocess",
        "analyze",
        "analyze",
        "generate_score",
    ]


def test_claims_without_any_verdict_fail_the_item(judge_server):
    """Filled with 'unsure', claims the judge judged none of scored 0: a judge failure read as
    an unfaithful response."""
    _claims_and_verdicts(judge_server, ["A", "B"], [])
    with pytest.raises(ScorerRunError, match="gave no verdicts for the 2 claims it was given"):
        scorers.faithfulness(judge_server.judge(), context=["A."]).run(input="q", output="A. B.")
