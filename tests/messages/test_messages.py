"""Message models read and write Mastra's JSON exactly; loose shapes convert as Mastra's do."""

import json
from datetime import UTC, datetime

import pytest
import repo_paths
from pydantic import ValidationError

from evaldag.errors import EvalDagError
from evaldag.messages import (
    AgentRunInput,
    DataPart,
    Message,
    MessageContent,
    OtherPart,
    ReasoningPart,
    StepStartPart,
    TextPart,
    ToolInvocation,
    ToolInvocationPart,
    as_message,
    as_run_input,
    as_run_output,
    mastra_data,
    text_message,
)

FIXTURES = json.loads((repo_paths.FIXTURES / "mastra/messages.json").read_text())


def _without_created_at(value):
    if isinstance(value, dict):
        return {k: _without_created_at(v) for k, v in value.items() if k != "createdAt"}
    if isinstance(value, list):
        return [_without_created_at(v) for v in value]
    return value


def test_every_fixture_message_round_trips_to_identical_json():
    messages = FIXTURES["messages"]
    assert len(messages) > 200
    for data in messages:
        written = Message.model_validate(data).to_dict()
        assert json.dumps(written, ensure_ascii=False) == json.dumps(data, ensure_ascii=False)


def test_every_fixture_agent_input_round_trips_to_identical_json():
    for data in FIXTURES["agentInputs"]:
        written = AgentRunInput.model_validate(data).to_dict()
        assert json.dumps(written, ensure_ascii=False) == json.dumps(data, ensure_ascii=False)


def test_mastra_data_reads_models_as_their_json():
    for data in FIXTURES["messages"]:
        assert mastra_data(Message.model_validate(data)) == data
    for data in FIXTURES["agentInputs"]:
        assert mastra_data(AgentRunInput.model_validate(data)) == data
    assert mastra_data(TextPart(text="hi")) == {"type": "text", "text": "hi"}
    mixed = {"messages": [text_message("a")], "n": 1}
    assert mastra_data(mixed) == {"messages": [text_message("a").to_dict()], "n": 1}
    plain = {"args": [1, 2]}
    assert mastra_data(plain) == plain


def test_loose_inputs_and_outputs_convert_as_the_oracle_converts_them():
    """Strings, string lists and compact ``{content: str, toolInvocations}`` specs become the same
    messages Mastra's ``createTestMessage`` builds (creation times aside)."""
    conversions = FIXTURES["conversions"]
    assert len(conversions) > 100
    for case in conversions:
        if case["input"] is not None:
            converted = as_run_input(case["input"]).to_dict()
            assert _without_created_at(converted) == _without_created_at(case["convertedInput"])
        if case["output"] is not None:
            converted = [m.to_dict() for m in as_run_output(case["output"])]
            assert _without_created_at(converted) == _without_created_at(case["convertedOutput"])


def test_parts_are_typed_by_their_type_and_unknown_types_are_kept():
    content = MessageContent.model_validate(
        {
            "format": 2,
            "parts": [
                {"type": "step-start"},
                {"type": "reasoning", "reasoning": "hm", "details": []},
                {"type": "text", "text": "hi", "providerMetadata": {"x": {"y": 1}}},
                {
                    "type": "tool-invocation",
                    "toolInvocation": {"state": "result", "toolName": "t", "args": {}},
                },
                {"type": "data-om-status", "data": {"ok": True}},
                {"type": "image", "image": "data:..."},
                {"type": "future-kind", "anything": [1, 2]},
            ],
        }
    )
    kinds = [type(part) for part in content.parts]
    assert kinds == [
        StepStartPart,
        ReasoningPart,
        TextPart,
        ToolInvocationPart,
        DataPart,
        OtherPart,
        OtherPart,
    ]
    assert content.parts[3].tool_invocation.tool_name == "t"
    assert content.parts[6].model_extra == {"anything": [1, 2]}
    assert content.to_dict()["parts"][6] == {"type": "future-kind", "anything": [1, 2]}


def test_unknown_keys_and_explicit_nulls_are_kept():
    data = {
        "id": "m",
        "role": "assistant",
        "content": {
            "format": 2,
            "parts": [],
            "toolInvocations": [
                {
                    "state": "result",
                    "toolCallId": "c",
                    "toolName": "t",
                    "args": None,
                    "result": None,
                }
            ],
            "somethingNew": {"a": 1},
        },
        "createdAt": "2025-01-01T00:00:00.000Z",
        "extraTopLevel": True,
    }
    assert Message.model_validate(data).to_dict() == data


def test_models_built_in_python_write_mastra_json():
    message = Message(
        id="a1",
        role="assistant",
        content=MessageContent(
            parts=[
                TextPart(text="done"),
                ToolInvocationPart(
                    tool_invocation=ToolInvocation(
                        state="result", tool_call_id="c1", tool_name="search", args={"q": 1}
                    )
                ),
            ]
        ),
        created_at=datetime(2025, 1, 1, tzinfo=UTC),
    )
    assert message.to_dict() == {
        "id": "a1",
        "role": "assistant",
        "content": {
            "format": 2,
            "parts": [
                {"type": "text", "text": "done"},
                {
                    "type": "tool-invocation",
                    "toolInvocation": {
                        "state": "result",
                        "toolCallId": "c1",
                        "toolName": "search",
                        "args": {"q": 1},
                    },
                },
            ],
        },
        "createdAt": "2025-01-01T00:00:00Z",
    }
    assert list(message.to_dict()["content"]["parts"][0]) == ["type", "text"]


def test_text_message_holds_the_text_twice_as_mastra_test_messages_do():
    assert text_message("hi", "user", id="u").to_dict() == {
        "id": "u",
        "role": "user",
        "content": {"format": 2, "parts": [{"type": "text", "text": "hi"}], "content": "hi"},
    }


def test_a_string_input_is_one_user_message_and_a_string_output_one_assistant_message():
    run_input = as_run_input("question")
    assert [(m.id, m.role, m.content.content) for m in run_input.input_messages] == [
        ("user-0", "user", "question")
    ]
    assert run_input.remembered_messages == [] and run_input.tagged_system_messages == {}
    assert [(m.id, m.role) for m in as_run_output(["a", "b"])] == [
        ("assistant-0", "assistant"),
        ("assistant-1", "assistant"),
    ]
    assert as_run_output(None) == []
    assert as_run_input(None).to_dict()["inputMessages"] == []


def test_agent_input_dicts_fill_missing_keys_and_convert_their_messages():
    run_input = as_run_input(
        {
            "inputMessages": ["now"],
            "remembered_messages": [{"role": "assistant", "content": "before"}],
            "systemMessages": [{"role": "system", "content": "be brief"}],
        }
    )
    assert run_input.input_messages[0].role == "user"
    assert run_input.remembered_messages[0].role == "assistant"
    assert run_input.system_messages[0].content == "be brief"
    assert as_run_input(run_input) is run_input


def test_chat_style_dicts_become_messages_with_their_role():
    message = as_message({"role": "system", "content": "rules"}, "user", 3)
    assert (message.id, message.role, message.content.parts[0].text) == (
        "system-3",
        "system",
        "rules",
    )
    assert as_message(message, "user") is message


def test_bad_shapes_fail_with_a_message_naming_what_is_wrong():
    with pytest.raises(EvalDagError, match="message 0: expected a string"):
        as_message(42, "user")
    with pytest.raises(EvalDagError, match="'content' must be a string"):
        as_message({"role": "user", "content": 5}, "user")
    with pytest.raises(EvalDagError, match="run input: expected a string"):
        as_run_input(3.5)
    with pytest.raises(ValidationError, match="role"):
        Message.model_validate({"id": "x", "role": "robot", "content": {"format": 2, "parts": []}})
    with pytest.raises(ValidationError, match="toolInvocation.state"):
        ToolInvocationPart.model_validate({"type": "tool-invocation", "toolInvocation": {}})


def test_snake_case_attributes_read_camel_case_json():
    invocation = ToolInvocation.model_validate(
        {"state": "output-error", "toolCallId": "c", "toolName": "t", "errorText": "boom"}
    )
    assert (invocation.tool_call_id, invocation.error_text) == ("c", "boom")
    assert ToolInvocation(state="call", tool_name="t").to_dict() == {
        "state": "call",
        "toolName": "t",
    }
