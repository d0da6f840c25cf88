"""A target's output that says nothing (a blank text, no messages, messages without a reply)
is the item's target error, as ``None`` is: every check for what an answer must not hold
(``excludes``, ``did_not_call``, ``no_tool_errors``) would pass on it."""

from __future__ import annotations

import pytest
from hamilton import ad_hoc_utils

import evaldag
from evaldag import UntrustworthyRunError, checks, run_evals

GATES = [checks.excludes("secret"), checks.did_not_call("delete"), checks.no_tool_errors()]
DATA = [{"input": "a"}, {"input": "b"}]


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        ("", "the target returned a blank text ('')"),
        ("  \n", "the target returned a blank text ('  \\n')"),
        ([], "the target returned no messages"),
        (
            [{"role": "user", "content": "b"}],
            "the target returned no reply with content (messages of roles: user)",
        ),
        (
            [{"role": "assistant", "content": ""}],
            "the target returned no reply with content (messages of roles: assistant)",
        ),
    ],
)
def test_an_empty_answer_is_the_items_target_error(answer, error):
    result = run_evals(DATA, gates=GATES, target=lambda input: "fine" if input == "a" else answer)
    assert result.items["target_error"].isna().tolist() == [True, False]
    assert result.items["target_error"][1].startswith(f"ValueError: {error}: no answer")
    assert result.verdict == "failed"
    with pytest.raises(UntrustworthyRunError, match="no answer to score"):
        run_evals(DATA, gates=GATES, target=lambda input: answer)


def test_a_reply_of_tool_calls_only_is_an_answer():
    calls_only = [
        {"role": "assistant", "content": "", "tool_calls": [_call("lookup")]},
        {"role": "tool", "tool_call_id": "c1", "content": "found"},
    ]
    result = run_evals(DATA, gates=GATES, target=lambda input: calls_only)
    assert result.items["target_error"].isna().all()
    assert result.verdict == "passed"


def test_a_mastra_message_whose_text_is_its_legacy_content_is_an_answer():
    """Mastra's format-2 message keeps its text in ``content.content`` beside its parts; one
    with no text part (an older stored message) says what that holds, as Mastra's text helpers
    read it: an answer, not an empty one."""
    legacy = [{"role": "assistant", "content": {"format": 2, "parts": [], "content": "fine"}}]
    result = run_evals(DATA, gates=GATES, target=lambda input: legacy)
    assert result.items["target_error"].isna().all()
    assert result.verdict == "passed"
    said_nothing = [{"role": "assistant", "content": {"format": 2, "parts": [], "content": " "}}]
    blank = run_evals(DATA, gates=GATES, target=lambda input: "x" if input == "a" else said_nothing)
    assert blank.items["target_error"].isna().tolist() == [True, False]


def test_an_empty_turn_fails_its_conversation():
    def replies(input, history=()):
        return "" if input == "t2" else f"reply to {input}"

    result = run_evals(
        [{"inputs": ["t1", "t2", "t3"]}, {"inputs": ["o1", "o2"]}], gates=GATES, target=replies
    )
    assert result.items["target_error"][0] == (
        "ValueError: turn 2 of 3: the target returned a blank text (''): no answer to score, "
        "which every check for what an answer must not hold would pass; return the reply (or "
        "raise when there is none)"
    )
    assert result.verdict == "failed"


def test_a_failed_conversation_keeps_the_turns_before_the_failure():
    from evaldag._engine.targets import TargetFailure, target_runs
    from evaldag.transcripts import get_text_content

    seen = []

    def replies(input, history=(), thread_id=None):
        seen.append(thread_id)
        return "" if input == "t3" else f"reply to {input}"

    (failure,) = target_runs(replies, ["t1"], [None], [["t1", "t2", "t3", "t4"]], 1)
    assert isinstance(failure, TargetFailure)
    assert failure.message.startswith("turn 3 of 4: the target returned a blank text")
    assert [(t.input, [get_text_content(m) for m in t.output]) for t in failure.turns] == [
        ("t1", ["reply to t1"]),
        ("t2", ["reply to t2"]),
    ]
    assert failure.thread_id == seen[0] == seen[2]


def test_a_workflow_whose_final_node_returns_a_blank_text_fails_the_item():
    def retrieved(input: str) -> list:
        return [f"a passage about {input}"]

    def answer(retrieved: list) -> str:
        return "an answer" if "cats" in retrieved[0] else ""

    flow = ad_hoc_utils.create_temporary_module(retrieved, answer, module_name="blank_flow")
    result = run_evals(
        [{"input": "cats"}, {"input": "dogs"}],
        target=evaldag.workflow(flow, ["answer"]),
        scorers={
            "workflow": [checks.excludes("refund").with_threshold(1.0)],
            "steps": {"retrieved": [checks.excludes("refund", id="passages")]},
        },
    )
    assert result.items["target_error"][1] == (
        "ValueError: the target returned a blank text (''): no answer to score, which every "
        "check for what an answer must not hold would pass; return the reply (or raise when "
        "there is none)"
    )
    assert result.items["workflow.check-excludes.failed_step"][1] == "target"
    assert result.items["steps.retrieved.passages.score"].tolist() == [1.0, 1.0]
    assert result.verdict == "failed"  # the workflow failed on an item


def _call(name):
    return {"id": "c1", "type": "function", "function": {"name": name, "arguments": "{}"}}


def test_an_agent_whose_model_replies_nothing_fails_the_item(judge_server):
    judge_server.on("yo", "")
    judge_server.reply = "hello"
    result = run_evals(
        DATA + [{"input": "yo"}], gates=GATES, target=evaldag.agent(judge_server.judge())
    )
    assert result.items["target_error"].isna().tolist() == [True, True, False]
    assert (
        "returned no reply with content (messages of roles: assistant)"
        in (result.items["target_error"][2])
    )
    assert result.verdict == "failed"
