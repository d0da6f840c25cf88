"""The text helpers give Mastra's answers, and read strings and evaldag's models as messages.

``fixtures/mastra/transcripts.json`` holds Mastra's own answers: ``transcripts_oracle.mjs`` (next to
it) ran ``@mastra/evals/scorers/utils`` 1.10.2 and string-similarity 4.0.4 on each case.
``transcripts_string_similarity.json`` holds the inputs and scores of Mastra's content-similarity
scorer on the 300 prose pairs of ``../shared/fixtures/text-pairs.public.json``.
"""

import json

import pytest
from repo_paths import FIXTURES

from evaldag import transcripts
from evaldag.messages import AgentRunInput, Message, as_run_input, as_run_output, text_message
from evaldag.transcripts import (
    compare_two_strings,
    extract_tool_calls,
    extract_tool_results,
    get_assistant_message,
    get_combined_system_prompt,
    get_conversation_history,
    get_reasoning,
    get_system_messages,
    get_text_content,
    get_user_message,
    is_tool_error,
    merge_tool_invocations,
    round_to_two_decimals,
    run_messages,
    tool_invocations,
)

HERE = FIXTURES / "mastra"
CASES = json.loads((HERE / "transcripts.json").read_text())
SIMILARITY = json.loads((HERE / "transcripts_string_similarity.json").read_text())

HELPERS = {
    "getTextContentFromMastraDBMessage": get_text_content,
    "getUserMessageFromRunInput": get_user_message,
    "getAssistantMessageFromRunOutput": get_assistant_message,
    "getReasoningFromRunOutput": get_reasoning,
    "getSystemMessagesFromRunInput": get_system_messages,
    "getCombinedSystemPrompt": get_combined_system_prompt,
    "getConversationHistoryFromRunInput": lambda run_input, options=None: (
        get_conversation_history(run_input, **({"max_messages": options["maxMessages"]}))
        if options
        else get_conversation_history(run_input)
    ),
    "extractInputMessages": transcripts.extract_input_messages,
    "extractAgentResponseMessages": transcripts.extract_agent_response_messages,
    "mergeToolInvocations": merge_tool_invocations,
    "extractToolCalls": lambda output: extract_tool_calls(output).to_dict(),
    "extractToolResults": lambda output: [r.to_dict() for r in extract_tool_results(output)],
    "roundToTwoDecimals": round_to_two_decimals,
    "isCloserTo": transcripts.is_closer_to,
    "isScorerRunInputForAgent": transcripts.is_agent_run_input,
    "isScorerRunOutputForAgent": transcripts.is_agent_run_output,
    "compareTwoStrings": compare_two_strings,
}

#: Where evaldag answers differently on purpose (see docs/differences-from-mastra.md).
OUR_ANSWERS = {
    # A dict with a rememberedMessages list is enough for history; Mastra wants all four keys.
    ("getConversationHistoryFromRunInput", "not-agent-shape"): "user: hello",
}


def _mastra_answer(case):
    assert "error" not in case, case
    return None if case.get("undefined") else case["value"]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c['helper']}:{c['name']}")
def test_helper_gives_mastras_answer(case):
    expected = OUR_ANSWERS.get((case["helper"], case["name"]), _mastra_answer(case))
    assert HELPERS[case["helper"]](*case["args"]) == expected


def test_every_mastra_helper_of_the_fixture_has_a_counterpart():
    assert {case["helper"] for case in CASES} == set(HELPERS)


def test_compare_two_strings_matches_string_similarity_on_prose():
    for first, second, score in SIMILARITY:
        assert compare_two_strings(first, second) == score


def _message_models(value):
    """Each Mastra message in ``value`` (a message or list of them) replaced by its model."""
    if isinstance(value, list):
        return [_message_models(item) for item in value]
    if isinstance(value, dict) and isinstance(value.get("content"), dict) and "id" in value:
        try:
            return Message.model_validate(value)
        except ValueError:
            return value  # junk Mastra tolerates (an empty invocation) but no model holds
    return value


@pytest.mark.parametrize(
    "helper",
    [
        "getTextContentFromMastraDBMessage",
        "getAssistantMessageFromRunOutput",
        "getReasoningFromRunOutput",
        "mergeToolInvocations",
        "extractToolCalls",
        "extractToolResults",
        "extractAgentResponseMessages",
    ],
)
def test_models_read_like_their_json(helper):
    cases = [c for c in CASES if c["helper"] == helper]
    for case in cases:
        args = [_message_models(arg) for arg in case["args"]]
        assert HELPERS[helper](*args) == _mastra_answer(case), case["name"]


def test_agent_input_models_read_like_their_json():
    for case in CASES:
        run_input = case["args"][0] if case["args"] else None
        if not transcripts.is_agent_run_input(run_input):
            continue
        try:
            model = AgentRunInput.model_validate(run_input)
        except ValueError:
            continue  # the case holds shapes Mastra tolerates but a MastraDBMessage is not
        expected = OUR_ANSWERS.get((case["helper"], case["name"]), _mastra_answer(case))
        assert HELPERS[case["helper"]](model, *case["args"][1:]) == expected, case["name"]


def test_plain_strings_are_messages_of_their_side():
    assert get_user_message(["first", "second"]) == "first"
    assert get_assistant_message(["draft", "final", ""]) == "final"
    assert transcripts.extract_agent_response_messages("only") == ["only"]
    assert transcripts.extract_agent_response_messages(["a", {"role": "user", "content": "u"}]) == [
        "a"
    ]
    assert transcripts.extract_input_messages("q") == ["q"]
    assert get_text_content("plain") == "plain"
    history = {"rememberedMessages": ["earlier question", {"role": "assistant", "content": "x"}]}
    assert get_conversation_history(history) == "user: earlier question\nassistant: x"
    assert get_system_messages({"systemMessages": ["be kind"]}) == ["be kind"]


def test_string_outputs_have_no_tool_calls():
    assert extract_tool_calls("text").tools == []
    assert extract_tool_results("text") == []
    assert tool_invocations(None) == []


def test_converted_runs_read_like_the_strings_they_came_from():
    assert get_user_message(as_run_input("hello")) == "hello"
    assert get_assistant_message(as_run_output(["a", "b"])) == "b"
    assert transcripts.extract_agent_response_messages(as_run_output(["a", "b"])) == ["a", "b"]


def test_run_messages_normalises_every_shape():
    model = text_message("m")
    assert run_messages(None, "user") == []
    assert run_messages("s", "user") == [{"role": "user", "content": "s"}]
    assert run_messages(("s",), "assistant") == [{"role": "assistant", "content": "s"}]
    assert run_messages(model, "user") == [model.to_dict()]
    assert run_messages({"role": "user", "content": "x"}, "assistant") == [
        {"role": "user", "content": "x"}
    ]


def test_tool_calls_list_names_and_positions():
    output = [
        {"role": "user", "content": "q"},
        {
            "role": "assistant",
            "content": {
                "format": 2,
                "parts": [
                    {"type": "tool-invocation", "toolInvocation": {"state": "partial-call"}},
                    {
                        "type": "tool-invocation",
                        "toolInvocation": {"state": "call", "toolName": "t"},
                    },
                ],
            },
        },
    ]
    calls = extract_tool_calls(output)
    assert calls.tools == ["t"]
    assert calls.tool_call_infos[0].to_dict() == {
        "toolName": "t",
        "toolCallId": "1-1",
        "messageIndex": 1,
        "invocationIndex": 1,
    }


@pytest.mark.parametrize(
    ("invocation", "failed"),
    [
        ({"state": "call"}, True),
        ({"state": "output-error", "errorText": "x"}, True),
        ({"state": "result", "isError": True}, True),
        ({"state": "result", "result": {"error": "bad"}}, True),
        ({"state": "result", "result": {"error": {}}}, True),
        ({"state": "result", "result": {"error": ""}}, False),
        ({"state": "result", "result": "error"}, False),
        ({"state": "partial-call"}, False),
        ({"state": "result", "result": {"ok": True}}, False),
        ("junk", False),
    ],
)
def test_is_tool_error(invocation, failed):
    assert is_tool_error(invocation) is failed


def test_js_truthiness():
    truthy = [{}, [], "x", 1, -0.5, True]
    falsy = [None, False, "", 0, 0.0, float("nan")]
    assert all(transcripts.js_truthy(v) for v in truthy)
    assert not any(transcripts.js_truthy(v) for v in falsy)


def test_round_to_two_decimals_rounds_halves_up_not_to_even():
    assert round_to_two_decimals(0.125) == 0.13  # Python's round gives 0.12
    assert round_to_two_decimals(-0.125) == -0.12
    assert round_to_two_decimals(float("inf")) == float("inf")
