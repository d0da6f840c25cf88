"""Mastra's agent scorer config in run_evals: ``{"agent": [...], "trajectory": [...]}`` (spec §6.1
–§6.6), over recorded transcripts and callable targets returning them in any accepted shape."""

from __future__ import annotations

import json

import pytest
from repo_paths import FIXTURES

from evaldag import EvalDagError, checks, create_scorer, run_evals, scorers

TRAJECTORY = {"steps": [{"name": "get_weather"}]}


def _weather_call(city: str, result=None, error=None) -> dict:
    """An OpenAI chat transcript: a tool call, its result (or error) and the answer."""
    content = json.dumps(result if error is None else {"error": error})
    return [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": json.dumps({"city": city})},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": content},
        {"role": "assistant", "content": f"Here is the weather in {city}."},
    ]


RECORDED = [
    {
        "input": "Weather in Paris?",
        "output": [
            {
                "role": "assistant",
                "content": "Sunny, 22C.",
                "toolInvocations": [
                    {"toolName": "get_weather", "args": {"city": "Paris"}, "result": {"t": 22}}
                ],
            }
        ],
        "expected_trajectory": TRAJECTORY,
    },
    {"input": "Hi", "output": "Hello!", "expected_trajectory": TRAJECTORY},
]


def test_agent_and_trajectory_results_are_keyed_as_mastra_nests_them():
    result = run_evals(
        RECORDED,
        scorers={
            "agent": [checks.called_tool("get_weather").with_threshold(0.5)],
            "trajectory": [scorers.trajectory_accuracy()],
        },
        gates=[checks.no_tool_errors()],
    )
    assert result.scores == {
        "agent.check-called-tool": 0.5,
        "trajectory.code-trajectory-accuracy-scorer": 0.5,
    }
    assert result.to_dict()["scores"] == {
        "agent": {"check-called-tool": 0.5},
        "trajectory": {"code-trajectory-accuracy-scorer": 0.5},
    }
    assert [t.id for t in result.threshold_results] == ["agent.check-called-tool"]
    assert result.verdict == "passed"
    items = result.items
    assert items["agent.check-called-tool.score"].tolist() == [1.0, 0.0]
    assert items["trajectory.code-trajectory-accuracy-scorer.score"].tolist() == [1.0, 0.0]
    assert items["check-no-tool-errors.score"].tolist() == [1.0, 1.0]


def test_trajectory_scorers_get_the_extracted_trajectory_and_the_expected_one():
    seen = []

    def steps(run):
        seen.append((run.output, run.expected_trajectory))
        return 1

    probe = create_scorer("probe", type="trajectory").generate_score(steps)
    run_evals(RECORDED[:1], scorers={"trajectory": [probe]}, concurrency=1)
    ((trajectory, expected),) = seen
    assert trajectory["steps"] == [
        {
            "stepType": "tool_call",
            "name": "get_weather",
            "toolArgs": {"city": "Paris"},
            "toolResult": {"t": 22},
            "success": True,
        }
    ]
    assert trajectory["rawOutput"][0]["role"] == "assistant"
    assert expected == TRAJECTORY


def test_a_trajectory_gate_reads_the_trajectory_in_the_list_form_too():
    seen = []
    gate = create_scorer("path", type="trajectory").generate_score(
        lambda run: seen.append(run.output) or 1
    )
    run_evals(RECORDED[:1], scorers=[checks.called_tool("get_weather")], gates=[gate])
    assert [step["name"] for step in seen[0]["steps"]] == ["get_weather"]


@pytest.mark.parametrize("concurrency", [1, 4])
def test_a_callable_target_returning_openai_chat_feeds_every_group(concurrency):
    """Tool calls in OpenAI's shape (tool_calls, role 'tool') are read once into Mastra's
    messages: the checks, the gate and the trajectory scorer all see the same calls."""

    def agent(question: str):
        if "Atlantis" in question:
            return _weather_call("Atlantis", error="unknown city")
        if "Paris" in question:
            return _weather_call("Paris", result={"temp": 22})
        return "I can only tell the weather."

    result = run_evals(
        [
            {"input": "Weather in Paris?", "expected_trajectory": TRAJECTORY},
            {"input": "Weather in Atlantis?", "expected_trajectory": TRAJECTORY},
            {"input": "Tell me a joke", "expected_trajectory": TRAJECTORY},
        ],
        target=agent,
        scorers={
            "agent": [checks.called_tool("get_weather")],
            "trajectory": [scorers.trajectory()],
        },
        gates=[checks.no_tool_errors()],
        concurrency=concurrency,
    )
    items = result.items
    assert items["agent.check-called-tool.score"].tolist() == [1.0, 1.0, 0.0]
    assert items["check-no-tool-errors.score"].tolist() == [1.0, 0.0, 1.0]
    assert result.verdict == "failed"
    assert items["output"][0][0]["tool_calls"][0]["id"] == "call_1"  # kept as the target gave it
    # A tool result holding {"error": ...} is a failed step of the trajectory, which costs the
    # tool-failures dimension: (0.4 * accuracy 1 + 0.2 * 0) / 0.6; the missing call accuracy.
    trajectory = items["trajectory.code-trajectory-scorer.score"].tolist()
    assert trajectory[:2] == [1.0, 0.67] and trajectory[2] < 1.0


def test_llm_trajectory_judge_in_the_trajectory_group(judge_server):
    judge_server.reply = {
        "stepEvaluations": [
            {"stepName": "get_weather", "wasNecessary": True, "wasInOrder": True, "reasoning": "r"}
        ],
        "missingSteps": [],
        "extraSteps": [],
        "overallAssessment": "fine",
    }
    judge = judge_server.judge()
    result = run_evals(
        RECORDED[:1],
        scorers={"trajectory": [scorers.trajectory_accuracy_llm(judge)]},
        concurrency=1,
    )
    assert result.scores == {"trajectory.llm-trajectory-accuracy-scorer": 1.0}
    (request,) = [r for r in judge_server.requests if "actual_steps" in r.prompt]
    assert "get_weather" in request.prompt.split("<actual_steps>")[1]


def test_the_same_scorer_may_score_the_output_and_the_trajectory():
    accuracy = scorers.trajectory_accuracy(expected_trajectory=TRAJECTORY)
    result = run_evals(RECORDED, scorers={"agent": [accuracy], "trajectory": [accuracy]})
    assert set(result.scores) == {
        "agent.code-trajectory-accuracy-scorer",
        "trajectory.code-trajectory-accuracy-scorer",
    }


# --- validation (spec §6.2, §6.3) --------------------------------------------------------------


def _refused(scorers_config, error_id, text, **options):
    with pytest.raises(EvalDagError) as raised:
        run_evals(RECORDED, scorers=scorers_config, **options)
    assert raised.value.id == error_id
    assert text in raised.value.message
    return raised.value


def test_an_agent_config_needs_a_scorer():
    _refused(
        {"agent": [], "trajectory": []},
        "NO_SCORERS_PROVIDED",
        "At least one agent or trajectory scorer must be provided",
    )
    # As in Mastra, gates do not make up for an empty agent config.
    _refused(
        {"agent": []},
        "NO_SCORERS_PROVIDED",
        "agent or trajectory",
        gates=[checks.no_tool_errors()],
    )


def test_workflow_configs_need_a_workflow_target():
    _refused({"workflow": [checks.includes("x")]}, "INVALID_AGENT_SCORERS", "workflow target")
    _refused({"steps": {"answer": [checks.includes("x")]}}, "INVALID_AGENT_SCORERS", "workflow")


def test_unknown_and_mixed_keys_are_refused():
    error = _refused({"agents": [checks.includes("x")]}, "INVALID_SCORER_CONFIG", "'agents'")
    assert error.details == {"keys": ["agents"]}
    _refused(
        {"agent": [checks.includes("x")], "steps": {}}, "INVALID_SCORER_CONFIG", "mixes an agent"
    )


def test_entries_of_a_group_are_checked_and_named():
    _refused({"agent": [checks.includes("x"), "oops"]}, "INVALID_SCORER_ENTRY", "['agent'][1]")
    _refused({"trajectory": checks.includes("x")}, "INVALID_SCORER_ENTRY", "must be a list")
    _refused(
        {"agent": [{"scorer": checks.includes("x"), "threshold": 1.5}]},
        "INVALID_SCORER_THRESHOLD",
        "between 0 and 1",
    )
    _refused(
        {"agent": [checks.includes("x"), checks.includes("y")]},
        "DUPLICATE_SCORER_ID",
        "scorers['agent'][0] and scorers['agent'][1]",
    )


# --- Mastra's answer for the same agent runs ---------------------------------------------------

ORACLE = json.loads((FIXTURES / "mastra/run_evals_agent_config.json").read_text())


def test_an_agent_config_averages_and_gates_as_mastras():
    """Mastra's runEvals on a real Agent (the oracle's mock model scripting tool calls, one
    failing); evaldag scores the messages that agent produced with the same config (the unified
    trajectory scorer with Mastra's rules: its failed call would otherwise count)."""
    (entry,) = ORACLE
    case, expected = entry["case"], entry["expected"]
    data = [
        {
            "input": item["scoringData"]["input"],
            "output": item["scoringData"]["output"],
            "expected_trajectory": given["expectedTrajectory"],
        }
        for item, given in zip(expected["perItem"], case["data"], strict=True)
    ]
    result = run_evals(
        data,
        scorers={
            "agent": [checks.called_tool("get_weather"), checks.used_no_tools()],
            "trajectory": [
                scorers.trajectory_accuracy(),
                scorers.trajectory(count_unrecovered_errors=False, count_redundant_calls=False),
            ],
        },
        gates=[checks.no_tool_errors()],
    )
    assert result.to_dict() == expected["result"]
    for index, item in enumerate(expected["perItem"]):
        for group, results in item["scorerResults"].items():
            for sid, found in results.items():
                assert result.items[f"{group}.{sid}.score"][index] == found["score"], (group, sid)
