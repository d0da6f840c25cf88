"""The transcript reader is closed-world (issue 22): what an agent stack writes is read, kept
because it holds no text and no tool (a written allow-list), or refused naming its place.

The AI SDK transcripts come from ``fixtures/transcripts/`` (written by the AI SDK's own
serializer, ``generate_node/``); the malformed ones are those fixtures with one thing changed.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
import repo_paths

import evaldag
from evaldag import ScorerRun, checks
from evaldag.errors import EvalDagError
from evaldag.transcripts import (
    extract_input_messages,
    extract_tool_calls,
    get_assistant_message,
    get_combined_system_prompt,
    tool_invocations,
)

FIXTURES = repo_paths.FIXTURES / "transcripts"


def transcript(shape: str, conversation: str) -> dict[str, Any]:
    return json.loads((FIXTURES / shape / f"{conversation}.json").read_text())


def refusal(output: Any) -> EvalDagError:
    with pytest.raises(EvalDagError) as raised:
        ScorerRun(input="q", output=output)
    assert raised.value.id == "EVALDAG_INVALID_TRANSCRIPT"
    return raised.value


@pytest.mark.parametrize("shape", ["ai5_ui", "ai5_dynamic_ui", "ai6_ui", "ai7_ui"])
def test_ai_sdk_tool_parts_are_tool_calls_not_silence(shape):
    """The repro: a UI message's ``tool-delete_db`` part in state ``output-error`` was read as "no
    tool calls", so did_not_call, no_tool_errors and max_tool_calls scored 1.0."""
    output = transcript(shape, "thrown_error")["output"]
    scores = {
        check.id: check.run(input="q", output=output).score
        for check in (
            checks.did_not_call("delete_db"),
            checks.no_tool_errors(),
            checks.max_tool_calls(0),
            checks.used_no_tools(),
        )
    }
    assert set(scores.values()) == {0.0}, scores
    gates = [checks.did_not_call("delete_db"), checks.no_tool_errors()]
    result = evaldag.run_evals([{"input": "q", "output": output}], gates=gates, progress=False)
    assert result.verdict == "failed"


def test_ai_sdk_parts_inside_mastras_content_are_read():
    """A format-2 message whose ``content.parts`` hold AI SDK 5 tool parts (Mastra's MessageList
    keeps such a stored message as it is) counts those calls."""
    ui = transcript("ai5_ui", "multi_step")["output"][0]
    stored = {
        "id": ui["id"],
        "role": "assistant",
        "content": {"format": 2, "parts": ui["parts"]},
        "createdAt": "2025-01-01T00:00:00.000Z",
    }
    run = ScorerRun(input="q", output=[stored])
    assert extract_tool_calls(run.output).tools == ["lookup_flights", "book_flight"]
    assert checks.called_tool("book_flight").run(input="q", output=[stored]).score == 1


def test_json_text_with_a_byte_order_mark_is_read():
    output = "\ufeff" + json.dumps(transcript("ai5_ui", "forbidden_tool")["output"])
    assert checks.did_not_call("delete_db").run(input="q", output=output).score == 0


def test_an_unknown_part_type_is_an_error_naming_its_path():
    output = copy.deepcopy(transcript("ai5_ui", "one_tool")["output"])
    output[0]["parts"][1]["type"] = "widget"
    error = refusal(output)
    assert error.details == {"field": "output[0].parts[1].type"}
    assert "'widget'" in error.message and "tool-<name>" in error.message


def test_an_unknown_ui_tool_state_is_an_error():
    output = copy.deepcopy(transcript("ai5_ui", "one_tool")["output"])
    output[0]["parts"][1]["state"] = "output-pending"
    assert refusal(output).details == {"field": "output[0].parts[1].state"}


@pytest.mark.parametrize(
    ("shape", "where", "path"),
    [
        ("ai5_ui", lambda output: output[0], "output[0].toolCalls"),
        ("ai5_model", lambda output: output[0], "output[0].toolCalls"),
        ("mastra_scorer_run", lambda output: output[0], "output[0].toolCalls"),
        ("mastra_scorer_run", lambda output: output[0]["content"], "output[0].content.toolCalls"),
    ],
)
def test_an_unknown_key_holding_something_is_an_error(shape, where, path):
    output = copy.deepcopy(transcript(shape, "one_tool")["output"])
    where(output)["toolCalls"] = [{"name": "get_weather"}]
    error = refusal(output)
    assert error.details == {"field": path}
    assert "could hold text, a tool call or a result" in error.message


def test_content_parts_beside_parts_are_an_error_not_dropped_calls():
    output = copy.deepcopy(transcript("ai5_model", "one_tool")["output"])
    output[0]["parts"] = [{"type": "text", "text": "Let me check."}]
    error = refusal(output)
    assert error.details == {"field": "output[0].parts"}


def test_an_unknown_key_holding_nothing_is_no_error():
    output = copy.deepcopy(transcript("ai5_model", "one_tool")["output"])
    output[0]["toolCalls"] = None
    output[0]["extra"] = []
    assert extract_tool_calls(ScorerRun(input="q", output=output).output).tools == ["get_weather"]


def test_the_allow_listed_parts_are_kept_and_hold_no_calls():
    parts = [
        {"type": "step-start"},
        {"type": "reasoning", "text": "thinking", "state": "done"},
        {"type": "source-url", "sourceId": "s", "url": "https://example.com"},
        {"type": "file", "mediaType": "image/png", "url": "data:image/png;base64,AA=="},
        {"type": "data-weather", "data": {"city": "Paris"}},
        {"type": "text", "text": "Sunny."},
    ]
    output = [{"id": "a", "role": "assistant", "parts": parts}]
    run = ScorerRun(input="q", output=output)
    assert tool_invocations(run.output) == []
    assert get_assistant_message(run.output) == "Sunny."
    kept = [part["type"] for part in run.output[0]["content"]["parts"]]
    assert kept == ["step-start", "reasoning", "source-url", "file", "data-weather", "text"]


def test_a_ui_tool_named_like_a_model_part_is_read_as_the_tool():
    part = {"type": "tool-call", "toolCallId": "c", "state": "output-available", "input": {}}
    output = [{"id": "a", "role": "assistant", "parts": [{**part, "output": 1}]}]
    assert extract_tool_calls(ScorerRun(input="q", output=output).output).tools == ["call"]


def test_a_result_answering_no_call_is_an_error():
    output = copy.deepcopy(transcript("ai5_model", "one_tool")["output"])
    output[1]["content"][0]["toolCallId"] = "call_nobody"
    error = refusal(output)
    assert error.details == {"field": "output[1].content[0]"}
    assert "'call_nobody'" in error.message


def test_an_unreadable_row_is_refused_before_scoring_naming_row_and_path():
    output = copy.deepcopy(transcript("ai5_ui", "one_tool")["output"])
    output[0]["parts"][1]["type"] = "widget"
    good = transcript("ai5_ui", "one_tool")["output"]
    data = [{"input": "q", "output": good}, {"input": "q", "output": output}]
    with pytest.raises(EvalDagError) as raised:
        evaldag.run_evals(data, gates=[checks.no_tool_errors()], progress=False)
    assert raised.value.details["row"] == "1"
    assert raised.value.details["field"] == "output[0].parts[1].type"


@pytest.mark.parametrize(
    ("run_input", "path", "held"),
    [
        ({"inputMessages": {"question": "Capital?"}}, "input.inputMessages", "a dict with keys"),
        ({"inputMessages": 5}, "input.inputMessages", "int"),
        ({"inputMessages": ["Hi"], "systemMessages": "Be terse."}, "input.systemMessages", "str"),
        (
            {"inputMessages": ["Hi"], "systemMessages": [{"rule": "Be terse."}]},
            "input.systemMessages[0] is no system message",
            "a dict with keys ['rule']",
        ),
        (
            {"inputMessages": ["Hi"], "taggedSystemMessages": {"a": [3]}},
            "input.taggedSystemMessages['a'][0] is no system message",
            "int",
        ),
        (
            {"inputMessages": ["Hi"], "taggedSystemMessages": ["Be terse."]},
            "input.taggedSystemMessages must be a dict",
            "a list of 1",
        ),
    ],
)
def test_an_agent_input_list_that_holds_no_messages_is_an_error(run_input, path, held):
    """Such a value was read as no user message (completeness 0) or no system prompt (prompt
    alignment judged an empty one)."""
    with pytest.raises(EvalDagError) as raised:
        ScorerRun(input=run_input, output="o")
    assert raised.value.id == "EVALDAG_INVALID_TRANSCRIPT"
    assert raised.value.message.startswith(path)
    assert f"got {held}" in raised.value.message


def test_an_agent_inputs_single_message_and_system_prompts_are_read():
    run = ScorerRun(
        input={
            "inputMessages": {"role": "user", "content": "Capital?"},
            "systemMessages": ["Be terse.", {"role": "system", "content": "Answer in French."}],
            "taggedSystemMessages": {"style": [{"role": "system", "content": "No emoji."}]},
        },
        output="o",
    )
    assert extract_input_messages(run.input) == ["Capital?"]
    assert get_combined_system_prompt(run.input) == "Be terse.\n\nAnswer in French.\n\nNo emoji."
