"""pydantic-ai's output tools: an agent with a structured ``output_type`` answers by calling a
tool (``final_result``, ``final_result_<Type>`` or the name ``ToolOutput`` gives) whose args are
the answer, and pydantic-ai answers that call with a fixed status text. Such a call is the
assistant's answer, not a tool call: read as the call's args as JSON text, the message's last
text part, so the checks and the LLM scorers read the answer and ``used_no_tools`` counts no
call.

Its status texts (``pydantic_ai/_tool_execution.py``; a test compares them to pydantic-ai's) mark
the calls whatever shape recorded them: pydantic-ai's messages, the GenAI messages of its traces,
the AI SDK messages of its UI adapter. A function tool could return the same text; so a call
answered ``Final result processed.`` is the answer only where the run ended there (no assistant
message follows before the next user message), and only one per message. The output calls
pydantic-ai did not use (``Output tool not used - ...``: another output won, or failed; and an
output set aside for a function tool's retry) are text the model wrote, read as text parts in
place, before the answer: the checks that read every text (``excludes``) read them, the answer
stays the used one. Anywhere else these texts are a tool's result, as read. An output call
pydantic-ai asked the model to redo (its args failed validation: a failed call of the answer's
tool, in the answer's run) is such text too, not a tool error: pydantic-ai refuses a function
tool named as an output tool, so within a run the name tells them apart. A function tool's
call that pydantic-ai skipped beside a final result is a call not run, as a denied one: the checks
that forbid calls count it, ``called_tool`` does not.
"""

from __future__ import annotations

import json
from typing import Any

from evaldag._reader.problems import malformed

#: The return of the output call pydantic-ai used as the run's result.
FINAL_RESULT = "Final result processed."
#: The return of an output call set aside because a function tool of the same response asked the
#: model to retry; the model answers again.
RETRY_WINS = "Output not used as the final result - addressing tool retries from this round first."
#: The returns of output calls of the same response that pydantic-ai did not use.
UNUSED = frozenset(
    {
        "Output tool not used - a final result was already processed.",
        "Output tool processed, but its value will not be the final result of the agent run.",
        "Output tool not used - output function execution failed.",
        "Output tool not used - output failed validation.",
    }
)
#: Every status text pydantic-ai answers an output call with.
STATUSES = frozenset({FINAL_RESULT, RETRY_WINS, *UNUSED})
#: The return of a function tool's call that pydantic-ai did not run, since the same response
#: gave the final result (``end_strategy='early'``): a call not run (``output-denied``).
NOT_EXECUTED = "Tool not executed - a final result was already processed."


def read_output_calls(
    messages: list[Any],
    answered: list[tuple[dict[str, Any], str]],
    failed: list[dict[str, Any]],
) -> None:
    """The output calls among ``answered`` (invocations answered with a status text, and the
    answers' paths) read as text in ``messages``, where the rules above say they are outputs;
    and the calls of ``failed`` (invocations that failed) that are output calls pydantic-ai
    asked the model to redo: of the answer's tool, in its run (after the last user message)."""
    wanted = {id(invocation): path for invocation, path in answered}
    redone = {id(invocation) for invocation in failed}
    start = 0  # where the run of the message read starts
    for index, message in enumerate(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            start = index + 1
        found = [part for part in _parts(message) if id(_invocation(part)) in wanted]
        tool = _read_message(messages, index, found, wanted) if found else None
        if tool is not None:
            for earlier in messages[start : index + 1]:
                for part in _parts(earlier):
                    invocation = _invocation(part)
                    if id(invocation) in redone and invocation["toolName"] == tool:
                        _as_text(part)


def _read_message(
    messages: list[Any], index: int, found: list[dict[str, Any]], paths: dict[int, str]
) -> str | None:
    """The output calls of ``messages[index]`` read; the answer's tool, if the run ended
    there."""
    message = messages[index]
    finals = [part for part in found if _result(part) == FINAL_RESULT]
    if len(finals) > 1:
        raise malformed(
            paths[id(finals[1]["toolInvocation"])],
            "answers a second call of one message with pydantic-ai's 'Final result processed.' "
            "(a run has one final result): give the messages as pydantic-ai wrote them",
        )
    unused = [part for part in found if _result(part) != FINAL_RESULT]
    retried = any(
        isinstance(invocation := _invocation(part), dict)
        and invocation.get("state") == "output-error"
        for part in _parts(message)
    )
    ended = bool(finals) and _run_ended(messages, index)
    if ended:
        outputs = unused
    elif retried:  # a function tool's retry set the outputs aside
        outputs = [part for part in unused if _result(part) == RETRY_WINS]
    else:
        return None
    for part in outputs:
        _as_text(part)
    if not ended:
        return None
    answer = finals[0]
    tool: str = answer["toolInvocation"]["toolName"]
    parts = message["content"]["parts"]
    parts[:] = [part for part in parts if part is not answer]
    _as_text(answer)
    parts.append(answer)
    if isinstance(message["content"].get("content"), str):
        message["content"]["content"] = answer["text"]
    return tool


def _invocation(part: Any) -> Any:
    return part.get("toolInvocation") if isinstance(part, dict) else None


def _parts(message: Any) -> list[Any]:
    content = message.get("content") if isinstance(message, dict) else None
    parts = content.get("parts") if isinstance(content, dict) else None
    return parts if isinstance(parts, list) else []


def _result(part: dict[str, Any]) -> Any:
    return part["toolInvocation"].get("result")


def _run_ended(messages: list[Any], index: int) -> bool:
    """Whether no assistant message follows ``messages[index]`` before the next user message."""
    for message in messages[index + 1 :]:
        role = message.get("role") if isinstance(message, dict) else None
        if role in ("user", "assistant"):
            return role == "user"
    return True


def _as_text(part: dict[str, Any]) -> None:
    """The call part, in place, as a text part holding its args (JSON text unless text)."""
    args = part.pop("toolInvocation").get("args")
    text = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False, default=str)
    part.clear()
    part.update({"type": "text", "text": text})
