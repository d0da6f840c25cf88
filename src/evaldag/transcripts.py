"""What scorers read from a run: user and assistant text, system prompts, history and tool calls.

These are Mastra's scorer helpers (``@mastra/evals/scorers/utils``, spec §8.0) with snake_case
names: ``getUserMessageFromRunInput`` is :func:`get_user_message`,
``getTextContentFromMastraDBMessage`` is :func:`get_text_content`, and so on.

Every helper takes ``run.input`` / ``run.output`` as users pass them: plain strings, Mastra's JSON
(dicts and lists) or the models of ``evaldag.messages``. They walk plain dicts and never validate,
so they stay cheap over large datasets. Beyond Mastra, which ignores them, strings stand for
messages: a string input is one user message, a string output one assistant message, and a string
inside a list of messages is a message of that list's role (user for input and history, assistant
for output). On Mastra-shaped data the results are Mastra's.

Other transcript shapes (the AI SDK's, OpenAI's, Anthropic's, Gemini's, LangChain's, pydantic-ai's,
LlamaIndex's, compact ``toolInvocations`` messages, values read back from Parquet) are read into
Mastra's shape once, when a ``ScorerRun`` is made (``docs/transcripts.md``): scorers get them
that way, and ``ScorerRun(output=...).output`` gives them so for a direct call of these helpers.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from evaldag._compat.js import JS_WHITESPACE, is_bmp, js_truthy, utf16_units, without_whitespace

# Mastra's scorer utils export roundToTwoDecimals beside the transcript helpers.
from evaldag._compat.js import round_to_two_decimals as round_to_two_decimals

CALL_STATES = frozenset({"result", "call", "output-error"})  # the states of a call made
_DEFAULT_HISTORY_MESSAGES = 10


@dataclass(frozen=True, slots=True)
class ToolCallInfo:
    """Where one tool call sits in the output."""

    tool_name: str
    tool_call_id: str
    message_index: int
    invocation_index: int = 0

    def to_dict(self) -> dict[str, Any]:
        """Mastra's camelCase shape."""
        return {
            "toolName": self.tool_name,
            "toolCallId": self.tool_call_id,
            "messageIndex": self.message_index,
            "invocationIndex": self.invocation_index,
        }


@dataclass(frozen=True, slots=True)
class ToolCalls:
    """The tools an output called, in call order, and where each call sits."""

    tools: list[str]
    tool_call_infos: list[ToolCallInfo]

    def to_dict(self) -> dict[str, Any]:
        """Mastra's camelCase shape: ``{tools, toolCallInfos}``."""
        return {
            "tools": list(self.tools),
            "toolCallInfos": [info.to_dict() for info in self.tool_call_infos],
        }


@dataclass(frozen=True, slots=True)
class ToolResult:
    """A tool call that returned, with its arguments and result."""

    tool_name: str
    tool_call_id: str
    args: Any
    result: Any

    def to_dict(self) -> dict[str, Any]:
        """Mastra's camelCase shape."""
        return {
            "toolName": self.tool_name,
            "toolCallId": self.tool_call_id,
            "args": self.args,
            "result": self.result,
        }


_PLAIN = frozenset([dict, list, str, tuple, type(None), int, float, bool])


def _plain(value: Any) -> Any:
    """Models as Mastra's dicts (evaldag's quickly, others through pydantic); the rest unchanged."""
    if value.__class__ in _PLAIN:  # the common case, without pydantic's slower class checks
        return value
    if isinstance(value, BaseModel):  # the message models load for a model, not for plain data
        from evaldag.messages import MastraModel, mastra_data

        if isinstance(value, MastraModel):
            return mastra_data(value)
        return value.model_dump(by_alias=True)
    return value


def _message(value: Any, role: str) -> Any:
    if isinstance(value, str):
        return {"role": role, "content": value}
    return _plain(value)


def run_messages(value: Any, role: str) -> list[Any]:
    """``value`` as a list of message dicts; a string or a single message is one message.

    :param role: the role of the strings in ``value`` ('user' for input, 'assistant' for output).
    """
    value = _plain(value)
    if value is None:
        return []
    if isinstance(value, list | tuple):
        return [_message(item, role) for item in value]
    return [_message(value, role)]


def _input_record(run_input: Any) -> Any:
    run_input = _plain(run_input)
    if isinstance(run_input, list | tuple):
        return {"inputMessages": run_input}
    return run_input


def _last_text(parts: list[Any]) -> str | None:
    """The text of the last ``{type: 'text'}`` part with string text, or None."""
    for part in reversed(parts):
        if isinstance(part, dict) and part.get("type") == "text":
            text = part.get("text")
            if isinstance(text, str):
                return text
    return None


def _last_text_part(parts: list[Any]) -> str:
    """The text of the last text part (whatever it holds), as ``getTextContent`` reads it."""
    for part in reversed(parts):
        if isinstance(part, dict) and part.get("type") == "text":
            text = part.get("text")
            return text if isinstance(text, str) else ""
    return ""


def get_text_content(message: Any) -> str:
    """A message's text: its legacy ``content.content`` string, else its last text part, or ''."""
    if isinstance(message, str):
        return message
    message = _plain(message)
    if not isinstance(message, dict):
        return ""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return _last_text_part(content)
    if not isinstance(content, dict):
        return ""
    for key in ("content", "text"):
        text = content.get(key)
        if isinstance(text, str) and text:
            return text
    parts = content.get("parts")
    return _last_text_part(parts) if isinstance(parts, list) else ""


def _text_from_value(value: Any) -> str | None:
    """Mastra's ``getTextFromValue``: the text of a string, a parts list or a message-like dict."""
    if isinstance(value, str):
        return value or None
    if isinstance(value, list):
        return _last_text(value)
    if not isinstance(value, dict):
        return None
    text = _text_from_value(value.get("content"))
    if text is not None:
        return text
    for key in ("text", "body"):
        text = value.get(key)
        if isinstance(text, str) and text:
            return text
    parts = value.get("parts")
    return _last_text(parts) if isinstance(parts, list) else None


def effective_role(message: Any) -> str | None:
    """A message's role; for ``role: 'signal'`` the role it stands for (its signal tag or type)."""
    message = _plain(message)
    if not isinstance(message, dict):
        return None
    role = message.get("role")
    if role != "signal":
        return role if isinstance(role, str) else None
    content = message.get("content")
    metadata = content.get("metadata") if isinstance(content, dict) else None
    signal = metadata.get("signal") if isinstance(metadata, dict) else None
    if isinstance(signal, dict):
        for key in ("tagName", "type"):
            if isinstance(signal.get(key), str):
                return signal[key]
    kind = message.get("type")
    return kind if isinstance(kind, str) else None


def _first_text_of_role(messages: Any, role: str, default_role: str) -> str | None:
    if messages is None:
        return None
    for message in run_messages(messages, default_role):
        if isinstance(message, dict) and effective_role(message) == role:
            return _text_from_value(message)
    return None


def get_user_message(run_input: Any) -> str | None:
    """The user's message: the text of the first user message of this turn, or None.

    Reads, in order: ``inputMessages``, ``messages``, a string ``prompt`` or ``text``, then the
    text of ``content``, ``input`` and ``user``.
    """
    if isinstance(run_input, str):
        return run_input
    record = _input_record(run_input)
    if not isinstance(record, dict):
        return None
    for key in ("inputMessages", "messages"):
        text = _first_text_of_role(record.get(key), "user", "user")
        if text is not None:
            return text
    for key in ("prompt", "text"):
        if isinstance(record.get(key), str):
            return record[key]
    for key in ("content", "input", "user"):
        text = _text_from_value(record.get(key))
        if text is not None:
            return text
    return None


def get_assistant_message(run_output: Any) -> str | None:
    """The response: the text of the last assistant message that has text, or None."""
    if isinstance(run_output, str):
        return run_output
    run_output = _plain(run_output)
    if isinstance(run_output, list | tuple):
        for message in reversed(run_messages(run_output, "assistant")):
            if effective_role(message) == "assistant":
                text = _text_from_value(message)
                if text:
                    return text
        return None
    if not isinstance(run_output, dict):
        return None
    role = run_output.get("role")
    if role is None or role == "assistant":
        text, content = run_output.get("text"), run_output.get("content")
        if isinstance(text, str):
            return text
        if isinstance(content, str):
            return content
        if isinstance(content, dict | list):
            return get_text_content(run_output) or get_text_content(content) or None
    if role == "assistant":
        return get_text_content(run_output) or None
    return None


def get_reasoning(run_output: Any) -> str | None:
    """The first assistant message's reasoning (``content.reasoning`` or reasoning parts)."""
    message = next(
        (m for m in run_messages(run_output, "assistant") if _role(m) == "assistant"), None
    )
    content = message.get("content") if message is not None else None
    if not isinstance(content, dict):
        return None
    if content.get("reasoning"):
        return content["reasoning"]
    parts = content.get("parts")
    reasoning = [
        part for part in parts or () if isinstance(part, dict) and part.get("type") == "reasoning"
    ]
    if not reasoning:
        return None
    texts = [text for text in map(_reasoning_text, reasoning) if text]
    return "\n".join(texts) if texts else None


def _reasoning_text(part: dict[str, Any]) -> str:
    details = part.get("details")
    if isinstance(details, list):
        return "".join(
            detail["text"]
            for detail in details
            if isinstance(detail, dict)
            and detail.get("type") == "text"
            and isinstance(detail.get("text"), str)
        )
    reasoning = part.get("reasoning")
    return reasoning if isinstance(reasoning, str) else ""


def _role(message: Any) -> Any:
    return message.get("role") if isinstance(message, dict) else None


def get_system_messages(run_input: Any) -> list[str]:
    """Every system prompt of the run: ``systemMessages``, system-role messages, tagged ones."""
    record = _input_record(run_input)
    if not isinstance(record, dict):
        return []
    prompts: list[str] = []
    text: str | None
    system_messages = record.get("systemMessages")
    if isinstance(system_messages, list | tuple):
        for message in map(_plain, system_messages):
            text = message if isinstance(message, str) else _system_text(message)
            if text:
                prompts.append(text)
    for key in ("inputMessages", "messages"):
        messages = record.get(key)
        if messages is None:
            continue
        for message in run_messages(messages, "user"):
            if _role(message) == "system":
                text = _text_from_value(message)
                if text:
                    prompts.append(text)
    tagged = _plain(record.get("taggedSystemMessages"))
    if isinstance(tagged, dict):
        for messages in tagged.values():
            if isinstance(messages, list | tuple):
                for message in map(_plain, messages):
                    text = _text_from_value(message)
                    if text:
                        prompts.append(text)
    return prompts


def _system_text(message: Any) -> str:
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(
            part["text"] if isinstance(part.get("text"), str) else ""
            for part in content
            if isinstance(part, dict) and part.get("type") == "text"
        )
    return ""


def get_combined_system_prompt(run_input: Any) -> str:
    """All system prompts of the run, joined by a blank line."""
    return "\n\n".join(get_system_messages(run_input))


def is_agent_run_input(value: Any) -> bool:
    """Whether ``value`` is the full agent input shape (all four keys, Mastra's test)."""
    value = _plain(value)
    return (
        isinstance(value, dict)
        and isinstance(value.get("inputMessages"), list)
        and isinstance(value.get("rememberedMessages"), list)
        and isinstance(value.get("systemMessages"), list)
        and isinstance(value.get("taggedSystemMessages"), dict)
    )


def is_agent_run_output(value: Any) -> bool:
    """Whether ``value`` is a list of MastraDBMessage-like messages (Mastra's test)."""
    from evaldag.messages import Message  # not at the top: see _plain

    return isinstance(value, list) and all(
        isinstance(message, Message)
        or (
            isinstance(message, dict)
            and isinstance(message.get("id"), str)
            and isinstance(message.get("role"), str)
            and "content" in message
            and "createdAt" in message
        )
        for message in value
    )


def get_conversation_history(run_input: Any, max_messages: int = 10) -> str | None:
    """The last ``max_messages`` remembered messages as ``"<role>: <text>"`` lines, or None.

    Needs a ``rememberedMessages`` list (Mastra also needs the other three agent-input keys);
    messages without a role or text are skipped; ``max_messages <= 0`` gives None.
    """
    record = _input_record(run_input)
    if not isinstance(record, dict) or not isinstance(record.get("rememberedMessages"), list):
        return None
    if max_messages <= 0:
        return None
    lines = []
    for message in run_messages(record["rememberedMessages"][-max_messages:], "user"):
        if not isinstance(message, dict):
            continue
        role = effective_role(message)
        text = get_text_content(message).strip(JS_WHITESPACE)
        if role and text:
            lines.append(f"{role}: {text}")
    return "\n".join(lines) if lines else None


def extract_input_messages(run_input: Any) -> list[str]:
    """The text of each message of this turn's input."""
    if isinstance(run_input, str):
        return [run_input]
    record = _input_record(run_input)
    if isinstance(record, dict) and "role" in record and "inputMessages" not in record:
        record = {"inputMessages": [record]}  # one message
    messages = record.get("inputMessages") if isinstance(record, dict) else None
    return [get_text_content(message) for message in run_messages(messages, "user")]


def extract_agent_response_messages(run_output: Any) -> list[str]:
    """The text of each assistant message of the output, in order."""
    return [
        get_text_content(message)
        for message in run_messages(run_output, "assistant")
        if _role(message) == "assistant"
    ]


def merge_tool_invocations(message: Any) -> list[dict[str, Any]]:
    """A message's tool invocations from ``content.parts`` and legacy ``content.toolInvocations``.

    Parts win when both hold a ``toolCallId``; a legacy-only call keeps its place before the next
    call both lists share, and the rest follow at the end.
    """
    message = _plain(message)
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, dict):
        return []
    parts = content.get("parts")
    from_parts = [
        part["toolInvocation"]
        for part in (parts if isinstance(parts, list) else ())
        if isinstance(part, dict)
        and part.get("type") == "tool-invocation"
        and js_truthy(part.get("toolInvocation"))
    ]
    legacy = content.get("toolInvocations")
    if not isinstance(legacy, list) or not legacy:
        return from_parts
    part_ids = {_call_id(invocation) for invocation in from_parts} - {None, ""}
    positions = {_call_id(invocation): index for index, invocation in enumerate(legacy)}
    merged: list[dict[str, Any]] = []
    next_legacy = 0
    for invocation in from_parts:
        call_id = _call_id(invocation)
        shared = positions.get(call_id) if call_id else None
        if shared is not None and shared >= next_legacy:
            merged.extend(
                previous
                for previous in legacy[next_legacy:shared]
                if js_truthy(previous) and _call_id(previous) not in part_ids
            )
            next_legacy = shared + 1
        merged.append(invocation)
    merged.extend(
        invocation
        for invocation in legacy[next_legacy:]
        if js_truthy(invocation) and _call_id(invocation) not in part_ids
    )
    return merged


def _call_id(invocation: Any) -> Any:
    return invocation.get("toolCallId") if isinstance(invocation, dict) else None


def is_tool_error(invocation: Any) -> bool:
    """Whether a tool invocation failed or never finished.

    True for state 'call' (no result came back) or 'output-error', for ``isError: true`` and for a
    result with a truthy ``error`` field.
    """
    if not isinstance(invocation, dict):
        return False
    result = invocation.get("result")
    return (
        invocation.get("state") in ("call", "output-error")
        or invocation.get("isError") is True
        or (isinstance(result, dict) and js_truthy(result.get("error")))
    )


def tool_invocations(run_output: Any) -> list[dict[str, Any]]:
    """Every merged tool invocation of the output, whatever its state, in order."""
    return [
        invocation
        for message in run_messages(run_output, "assistant")
        for invocation in merge_tool_invocations(message)
    ]


def extract_tool_calls(run_output: Any) -> ToolCalls:
    """The tools the output called: invocations in state 'result', 'call' or 'output-error'."""
    tools: list[str] = []
    infos: list[ToolCallInfo] = []
    for message_index, message in enumerate(run_messages(run_output, "assistant")):
        for invocation_index, invocation in enumerate(merge_tool_invocations(message)):
            if not isinstance(invocation, dict):
                continue
            name = invocation.get("toolName")
            if name and invocation.get("state") in CALL_STATES:
                tools.append(name)
                infos.append(
                    ToolCallInfo(
                        name,
                        invocation.get("toolCallId") or f"{message_index}-{invocation_index}",
                        message_index,
                        invocation_index,
                    )
                )
    return ToolCalls(tools, infos)


def extract_trajectory(run_output: Any) -> dict[str, Any]:
    """An agent's messages as a trajectory: one ``tool_call`` step per tool invocation.

    Mastra's ``extractTrajectory``: invocations in state 'result', 'call' or 'output-error',
    with ``toolArgs``, ``toolResult`` (for results) and ``success``; ``rawOutput`` keeps the
    messages. A call is a success when :func:`is_tool_error` says it is none: a result holding
    ``{"error": ...}`` is no success (Mastra counts it as one here, and as an error in
    ``noToolErrors``).
    """
    messages = run_messages(run_output, "assistant")
    steps = []
    for message in messages:
        for invocation in merge_tool_invocations(message):
            if not isinstance(invocation, dict):
                continue
            name, state = invocation.get("toolName"), invocation.get("state")
            if not name or state not in CALL_STATES:
                continue
            step: dict[str, Any] = {"stepType": "tool_call", "name": name}
            if invocation.get("args") is not None:
                step["toolArgs"] = _as_object(invocation["args"])
            if state == "result" and invocation.get("result") is not None:
                step["toolResult"] = _as_object(invocation["result"])
            step["success"] = not is_tool_error(invocation)
            steps.append(step)
    return {"steps": steps, "rawOutput": messages}


def _as_object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {"value": value}


def extract_tool_results(run_output: Any) -> list[ToolResult]:
    """The tool calls that returned (state 'result' with a ``result``), in order."""
    return [
        ToolResult(
            invocation.get("toolName") or "",
            invocation.get("toolCallId") or "",
            invocation["args"] if js_truthy(invocation.get("args")) else {},
            invocation["result"],
        )
        for invocation in tool_invocations(run_output)
        if isinstance(invocation, dict)
        and invocation.get("state") == "result"
        and "result" in invocation
    ]


def is_closer_to(value: float, first: float, second: float) -> bool:
    """Whether ``value`` is strictly closer to ``first`` than to ``second``."""
    return abs(value - first) < abs(value - second)


def compare_two_strings(first: str, second: str) -> float:
    """Dice coefficient of two strings' character bigrams, whitespace removed (string-similarity).

    1 for equal strings (also both empty), 0 when either has fewer than two characters.
    Lengths count UTF-16 code units, as in JavaScript.
    """
    a = without_whitespace(first)
    b = without_whitespace(second)
    if a == b:
        return 1.0
    units_a: str | tuple[int, ...] = a
    units_b: str | tuple[int, ...] = b
    if not (is_bmp(a) and is_bmp(b)):
        units_a, units_b = utf16_units(a), utf16_units(b)
    if len(units_a) < 2 or len(units_b) < 2:
        return 0.0
    pairs_a = Counter(zip(units_a, units_a[1:], strict=False))
    pairs_b = Counter(zip(units_b, units_b[1:], strict=False))
    return 2.0 * (pairs_a & pairs_b).total() / (len(units_a) + len(units_b) - 2)
