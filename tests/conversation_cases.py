"""The nine conversations of ``fixtures/transcripts/conversations.json``: what every reader must
say of them, from their definition alone, for the differential tests of transcripts and traces."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import evaldag
from evaldag import ScorerRun, checks
from evaldag.transcripts import (
    extract_trajectory,
    get_assistant_message,
    get_user_message,
    is_tool_error,
    tool_invocations,
)

_FIXTURES = Path(__file__).parent / "fixtures" / "transcripts"
CONVERSATIONS = {
    conversation["id"]: conversation
    for conversation in json.loads((_FIXTURES / "conversations.json").read_text())["conversations"]
}
#: Conversations whose tool error the shape does not record (its manifest says so under
#: "lossy"): LlamaIndex's agents keep ``ToolOutput.is_error`` out of their messages, so a tool that
#: raised is its error text, like any result (docs/transcripts.md, "Tool errors").
UNRECORDED_ERRORS = {
    ("llama_index_blocks", "thrown_error"),
    ("llama_index_kwargs", "thrown_error"),
    ("llama_index_openai", "thrown_error"),
}


def calls(conversation: dict[str, Any]) -> list[dict[str, Any]]:
    return [call for step in conversation["steps"] for call in step.get("calls", ())]


def expected(conversation: dict[str, Any], shape: str) -> dict[str, Any]:
    """What every reader must say of ``conversation`` written in ``shape``, from its definition
    alone (and the errors ``shape`` cannot record)."""
    made = calls(conversation)
    tools = [call["tool"] for call in made]
    unrecorded = (shape, conversation["id"]) in UNRECORDED_ERRORS
    errors = [call["outcome"] != "ok" and not unrecorded for call in made]
    return {
        "tools": tools,
        "errors": errors,
        "final": [step["text"] for step in conversation["steps"] if "text" in step][-1],
        "user": conversation["user"],
        "check-did-not-call": float("delete_db" not in tools),
        "check-no-tool-errors": float(not any(errors)),
        "check-max-tool-calls": float(len(tools) <= 1),
        "check-used-no-tools": float(not tools),
        "check-called-tool": float("get_weather" in tools),
        "check-tool-order": 1.0,
    }


def gates(conversation: dict[str, Any]) -> list[evaldag.Scorer]:
    return [
        checks.did_not_call("delete_db"),
        checks.no_tool_errors(),
        checks.max_tool_calls(1),
        checks.used_no_tools(),
        checks.called_tool("get_weather"),
        checks.tool_order([call["tool"] for call in calls(conversation)]),
    ]


def read_answers(run_input: Any, run_output: Any) -> dict[str, Any]:
    """What the transcript helpers read from a run made of the fixture."""
    run = ScorerRun(input=run_input, output=run_output)
    invocations = [
        invocation
        for invocation in tool_invocations(run.output)
        if invocation.get("state") in ("result", "call", "output-error")
    ]
    steps = extract_trajectory(run.output)["steps"]
    assert [step["success"] for step in steps] == [not is_tool_error(i) for i in invocations]
    return {
        "tools": [step["name"] for step in steps],
        "errors": [is_tool_error(invocation) for invocation in invocations],
        "final": get_assistant_message(run.output),
        "user": get_user_message(run.input),
    }


#: An OpenAI Chat Completions transcript with one tool call (get_weather) and its result.
WEATHER = [
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": '{"temperature": 21}'},
    {"role": "assistant", "content": "It is 21 degrees in Paris."},
]
