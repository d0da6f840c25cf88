"""Trajectory accuracy (LLM) through the loopback judge server: Mastra's answers for the same
judge replies (a right trajectory scores 1, not 0.9), the steps as text, expectations, options."""

from __future__ import annotations

import pytest
from llm_scorer_cases import (
    Deviation,
    assert_like_mastra,
    assert_scorer_like_mastra,
    parametrized_cases,
    replayed_with_run_fields,
)

from evaldag import EvalDagError, ScorerRunError, scorers
from evaldag.scorers.llm.trajectory_accuracy import formatted_expectation, formatted_steps

#: Our step that pads evaluations up to the steps taken, after the judged analyze step.
ADDED_STEPS = (2,)
_WHY = (
    "the completeness weight: Mastra subtracts 0.1 × missing/(taken + missing) from "
    "0.6 × necessary + 0.3 × in order, so a trajectory with every step right scores 0.9; "
    "evaldag adds 0.1 × (1 − missing/(taken + missing)), which is Mastra's score + 0.1"
)
DEVIATIONS = {
    "trajectory-accuracy-llm-flight-booking": [Deviation("score", 0.7, 0.8, _WHY)],
    "trajectory-accuracy-llm-missing-step-constructor-expected": [
        Deviation("score", 0.72, 0.82, _WHY)
    ],
    "trajectory-accuracy-llm-nested-steps-trajectory-expected": [
        Deviation("score", 0.9, 1.0, _WHY)
    ],
}


@parametrized_cases("trajectory-accuracy-llm")
def test_scores_like_mastra_for_the_same_judge_replies(judge_server, entry):
    expected = entry["case"].get("args", {}).get("expectedTrajectory")
    scorer = scorers.trajectory_accuracy_llm(judge_server.judge(), expected_trajectory=expected)
    outcome = replayed_with_run_fields(scorer, entry, judge_server)
    assert_like_mastra(outcome, entry, DEVIATIONS.get(entry["case"]["name"], ()))
    if entry["expected"]["ok"]:
        assert_scorer_like_mastra(scorer, entry["expected"]["scorer"], ADDED_STEPS)


def _evaluation(name, necessary=True, in_order=True):
    return {"stepName": name, "wasNecessary": necessary, "wasInOrder": in_order, "reasoning": "r"}


_STEPS = [
    {"stepType": "tool_call", "name": "search", "toolArgs": {"q": "x"}},
    {"stepType": "tool_call", "name": "fetch", "toolResult": {"ok": True}},
    {"stepType": "tool_call", "name": "answer"},
]


def _scored(server, evaluations, missing=(), extra=(), output=None, **options):
    server.script(
        {
            "stepEvaluations": evaluations,
            "missingSteps": list(missing),
            "extraSteps": list(extra),
            "overallAssessment": "Summed up.",
        },
        "The score is explained.",
    )
    scorer = scorers.trajectory_accuracy_llm(server.judge(), **options)
    return scorer.run(input="Find x.", output=_STEPS if output is None else output)


@pytest.mark.parametrize(
    ("evaluations", "missing", "extra", "score"),
    [
        ([(True, True)] * 3, 0, 0, 1.0),  # Mastra: 0.9
        ([(True, True), (False, True), (True, True)], 0, 0, 0.8),  # 0.4 + 0.3 + 0.1
        ([(True, True), (True, False)], 2, 0, 0.8),  # 0.6 + 0.15 + 0.1 × 2/4
        ([(False, False)] * 2, 0, 0, 0.1),
        ([], 1, 0, 0.0),  # no steps, no evaluations: missing steps -> 0
        ([], 0, 1, 0.5),  # ... extra steps -> 0.5
        ([], 0, 0, 1.0),  # ... nothing wrong -> 1
    ],
)
def test_score_formula(judge_server, evaluations, missing, extra, score):
    judged = [_evaluation(f"s{n}", *flags) for n, flags in enumerate(evaluations)]
    steps = [{"stepType": "tool_call", "name": f"s{n}"} for n in range(len(evaluations))]
    output = {"steps": steps, "rawOutput": [{"role": "assistant", "content": "x is 42."}]}
    result = _scored(judge_server, judged, ["m"] * missing, ["e"] * extra, output=output)
    assert result.score == score
    assert "verdictCountMismatch" not in result.analyze_step_result


@pytest.mark.parametrize(
    ("evaluations", "score"),
    [
        ([], 0.1),  # 0.1 × nothing missing: no step necessary, none in order
        ([(True, True)], 0.4),  # 0.6 / 3 + 0.3 / 3 + 0.1
        ([(True, True)] * 5, 1.0),  # a step's children evaluated one by one
    ],
)
def test_steps_the_judge_did_not_evaluate_count_against_the_path(judge_server, evaluations, score):
    # Before: a judge that evaluated none of the three steps scored the path 1, and one that
    # evaluated only the first (right) step scored 1 too.
    judged = [_evaluation(f"s{n}", *flags) for n, flags in enumerate(evaluations)]
    result = _scored(judge_server, judged)
    assert result.score == score
    received = len(evaluations)
    if received < len(_STEPS):
        mismatch = {"expected": 3, "received": received}
        assert result.analyze_step_result["verdictCountMismatch"] == mismatch
        assert result.analyze_step_result["stepEvaluations"][-1] == {
            "stepName": "answer",
            "wasNecessary": False,
            "wasInOrder": False,
            "reasoning": "The judge gave no evaluation for this step.",
        }
    assert result.judge["analyze"].executions[0].output["stepEvaluations"] == judged


def test_the_judge_reads_the_request_the_steps_and_the_final_response(judge_server):
    output = {"steps": _STEPS, "rawOutput": [{"role": "assistant", "content": "x is 42."}]}
    result = _scored(judge_server, [_evaluation("search")], output=output)
    prompt = result.analyze_prompt
    assert "<user_request>\nFind x.\n</user_request>" in prompt
    assert "<final_response>\nx is 42.\n</final_response>" in prompt
    assert (
        '<actual_steps>\n1. [tool_call] search (args: {"q":"x"})\n'
        '2. [tool_call] fetch (result: {"ok":true})\n3. [tool_call] answer\n</actual_steps>'
    ) in prompt
    assert "<expected_steps>" not in prompt
    assert result.preprocess_step_result["hasSteps"] is True
    assert "expectedTrajectoryFormatted" not in result.preprocess_step_result


def test_agent_messages_become_the_trajectory(judge_server):
    messages = [
        {
            "id": "a1",
            "role": "assistant",
            "createdAt": "2025-01-01T00:00:00.000Z",
            "content": {
                "parts": [{"type": "text", "text": "It is sunny."}],
                "toolInvocations": [
                    {
                        "toolCallId": "c1",
                        "toolName": "weather",
                        "args": {"city": "Rome"},
                        "state": "result",
                        "result": {"sky": "sunny"},
                    }
                ],
            },
        }
    ]
    result = _scored(judge_server, [_evaluation("weather")], output=messages)
    assert (
        '1. [tool_call] weather (args: {"city":"Rome"}, result: {"sky":"sunny"})'
        in result.analyze_prompt
    )
    assert "<final_response>\nIt is sunny.\n</final_response>" in result.analyze_prompt


def test_no_steps_are_shown_as_none_taken(judge_server):
    result = _scored(judge_server, [], ["search"], output={"steps": []})
    assert "<actual_steps>\n(the agent took no steps)\n</actual_steps>" in result.analyze_prompt
    assert result.preprocess_step_result["hasSteps"] is False
    assert result.score == 0


def test_the_runs_expected_steps_are_used_without_a_static_expectation(judge_server):
    judge_server.script(
        {"stepEvaluations": [_evaluation("search")], "overallAssessment": "ok"}, "Explained."
    )
    scorer = scorers.trajectory_accuracy_llm(judge_server.judge())
    result = scorer.run(
        input="Find x.",
        output=_STEPS,
        expected_trajectory={"steps": [{"name": "search", "toolArgs": {"q": "x"}}]},
    )
    assert '<expected_steps>\n1. search ({"toolArgs":{"q":"x"}})\n</expected_steps>' in (
        result.analyze_prompt
    )


def test_a_static_expectation_wins_over_the_runs(judge_server):
    judge_server.script({"stepEvaluations": [], "overallAssessment": "ok"}, "Explained.")
    scorer = scorers.trajectory_accuracy_llm(
        judge_server.judge(), expected_trajectory=[{"stepType": "tool_call", "name": "static"}]
    )
    result = scorer.run(
        input="Find x.", output=_STEPS, expected_trajectory={"steps": [{"name": "from_run"}]}
    )
    assert "1. [tool_call] static" in result.analyze_prompt
    assert "from_run" not in result.analyze_prompt


def test_formatted_steps_nest_children():
    steps = [
        {
            "stepType": "agent_run",
            "name": "researcher",
            "children": [
                {"stepType": "model_generation", "name": "draft", "modelId": "m-1"},
                {"stepType": "workflow_step", "name": "save", "output": {"id": 3}},
            ],
        },
        {"stepType": "model_generation", "name": "final"},
    ]
    assert formatted_steps(steps) == (
        "1. [agent_run] researcher\n  1. [model_generation] draft (model: m-1)\n"
        '  2. [workflow_step] save (output: {"id":3})\n2. [model_generation] final'
    )
    expectation = [
        {"stepType": "agent_run", "name": "researcher", "children": {"steps": [{"name": "draft"}]}}
    ]
    assert formatted_expectation(expectation) == "1. [agent_run] researcher\n  1. draft"


def test_an_output_that_is_no_trajectory_fails_the_preprocess_step(judge_server):
    scorer = scorers.trajectory_accuracy_llm(judge_server.judge())
    with pytest.raises(ScorerRunError) as raised:
        scorer.run(input="q", output=42)
    assert raised.value.failed_step == "preprocess"
    assert raised.value.cause.id == "EVALDAG_INVALID_TRAJECTORY"
    assert judge_server.requests == []


def test_an_expectation_of_an_apps_own_keys_fails_the_run_before_any_judge_call(judge_server):
    # Mastra judges the path as if no expectation were given.
    scorer = scorers.trajectory_accuracy_llm(judge_server.judge())
    with pytest.raises(ScorerRunError) as raised:
        scorer.run(input="Find x.", output=_STEPS, expected_trajectory={"question": "x", "id": 3})
    assert raised.value.failed_step == "preprocess"
    assert "run.expected_trajectory must be a trajectory expectation with some of the keys" in (
        raised.value.message
    )
    assert "got a dict with keys ['question', 'id']" in raised.value.message
    assert judge_server.requests == []


def test_a_raw_output_no_reader_takes_fails_the_run_not_an_empty_response(judge_server):
    # Mastra asks its judge about an empty final response (AGENT FINAL RESPONSE: "").
    scorer = scorers.trajectory_accuracy_llm(judge_server.judge())
    output = {"steps": _STEPS, "rawOutput": {"answer": "x is 42."}}
    with pytest.raises(ScorerRunError) as raised:
        scorer.run(input="Find x.", output=output)
    assert "run.output.rawOutput must be a string, a message or a list of messages for " in (
        raised.value.message
    )
    assert judge_server.requests == []


@pytest.mark.parametrize(
    ("expected", "named"),
    [
        ([], "expected_trajectory of trajectory_accuracy_llm(...) has no steps"),
        ({"steps": []}, "has no steps"),
        ("search", "must be a trajectory"),
    ],
)
def test_bad_arguments_are_named(expected, named):
    with pytest.raises(EvalDagError) as raised:
        scorers.trajectory_accuracy_llm("openai/gpt-4o-mini", expected_trajectory=expected)
    assert named in raised.value.message
