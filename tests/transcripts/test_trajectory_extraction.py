"""An agent's messages become a trajectory (Mastra's extractTrajectory, spec §1.3)."""

import json

from repo_paths import FIXTURES

from evaldag import scorers
from evaldag.transcripts import extract_trajectory

CASES = json.loads((FIXTURES / "mastra/run_evals.json").read_text())
AGENT_ITEMS = next(c for c in CASES if c["case"]["name"] == "runEvals-agent-target-tools")
OUTPUTS = [item["scoringData"]["output"] for item in AGENT_ITEMS["expected"]["perItem"]]


def test_tool_calls_become_steps():
    weather, failed_note, chat = (extract_trajectory(output)["steps"] for output in OUTPUTS)
    assert weather == [
        {
            "stepType": "tool_call",
            "name": "get_weather",
            "toolArgs": {"city": "Paris"},
            "toolResult": {"temp": 22, "cond": "sunny"},
            "success": True,
        }
    ]
    assert failed_note == [
        {"stepType": "tool_call", "name": "save_note", "toolArgs": {"text": "x"}, "success": False}
    ]
    assert chat == []
    assert extract_trajectory(OUTPUTS[0])["rawOutput"] == OUTPUTS[0]


def test_non_object_args_and_results_are_wrapped():
    message = {
        "id": "m",
        "role": "assistant",
        "createdAt": "2025-01-01T00:00:00.000Z",
        "content": {
            "format": 2,
            "parts": [
                {
                    "type": "tool-invocation",
                    "toolInvocation": {
                        "toolCallId": "c1",
                        "toolName": "add",
                        "args": [1, 2],
                        "state": "result",
                        "result": 3,
                    },
                },
                {
                    "type": "tool-invocation",
                    "toolInvocation": {
                        "toolCallId": "c2",
                        "toolName": "x",
                        "state": "partial-call",
                    },
                },
            ],
        },
    }
    (step,) = extract_trajectory([message])["steps"]
    assert step["toolArgs"] == {"value": [1, 2]} and step["toolResult"] == {"value": 3}


def test_trajectory_scorers_read_agent_messages():
    expected = {"steps": [{"name": "get_weather"}]}
    scorer = scorers.trajectory_accuracy(expected_trajectory=expected)
    assert scorer.run(input="Weather in Paris?", output=OUTPUTS[0]).score == 1
    assert scorer.run(input="Save my note", output=OUTPUTS[1]).score == 0
