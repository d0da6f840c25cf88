"""Chat messages: a ``role`` and a ``content`` (or ``parts``), as OpenAI Chat Completions,
Anthropic Messages, the AI SDK (model and UI messages, 4 to 7), LiteLLM and OpenAI Responses
``message`` items write them, and evaldag's compact ``{role?, content, toolInvocations?}``.

Content is text or a list of typed parts (``parts.py`` reads each); tool calls sit in parts,
``tool_calls`` (OpenAI), ``function_call`` (OpenAI's legacy function calling) or
``toolInvocations`` (compact, AI SDK 4); results in ``role: 'tool'`` (or ``'function'``)
messages, in ``tool_result`` / ``tool-result`` parts, or beside their call (UI parts).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evaldag._compat.js import camel
from evaldag._reader.mastra import MASTRA_ROLES
from evaldag._reader.parts import checked_invocation, read_parts
from evaldag._reader.problems import brief, malformed, require_known_keys, text_of
from evaldag._reader.transcript import (
    Place,
    arguments,
    invocation_part,
    result_value,
    text_part,
)

ROLES = {"user": "user", "assistant": "assistant", "system": "system", "developer": "system"}
#: The keys of a message's body: one of them beside a role makes JSON text a message.
BODY_KEYS = frozenset(
    {"content", "parts", "tool_calls", "toolInvocations", "tool_invocations", "function_call"}
)
#: The keys read from a chat message.
_READ = BODY_KEYS | {
    "role",
    "text",
    "refusal",
    "audio",
    "reasoning",
    "reasoning_content",
    "thinking_blocks",
    "tool_call_id",
}
#: Keys that hold no text and no tool: ids, times, providers' metadata, usage, citations.
METADATA = frozenset(
    {
        "id",
        "name",
        "type",
        "createdAt",
        "created_at",
        "timestamp",
        "threadId",
        "resourceId",
        "metadata",
        "providerOptions",
        "providerMetadata",
        "provider_options",
        "provider_metadata",
        "experimental_providerMetadata",
        "provider_specific_fields",
        "annotations",
        "experimental_attachments",
        "status",
        "model",
        "stop_reason",
        "stop_sequence",
        "usage",
        "container",
        "context_management",
        "phase",
        "images",
        "finish_reason",
    }
)
_KNOWN = _READ | METADATA
#: Keys a message has only in a shape other than Mastra's ``{id, role, content: 'text'}``.
_FOREIGN = (
    "toolInvocations",
    "tool_invocations",
    "tool_calls",
    "parts",
    "refusal",
    "function_call",
    "tool_call_id",
)


def is_chat_message(message: Mapping[str, Any]) -> bool:
    """A dict with a role (in any shape this module reads)."""
    return "role" in message


def read_chat(message: Mapping[str, Any], at: Place) -> None:
    """One chat message into ``at.transcript``: a format-2 message, or (a tool's result) the
    call it answers."""
    role = message.get("role", at.role)
    content = message.get("content")
    if role == "tool":
        _tool_message(message, at)
        return
    if role == "function":
        at.transcript.answer(
            None, message.get("name"), f"{at.path}.name", result=result_value(content)
        )
        return
    if (
        role in MASTRA_ROLES
        and isinstance(content, str)
        and "id" in message
        and all(message.get(key) is None for key in _FOREIGN)
    ):
        at.transcript.keep(message)  # Mastra's own {id, role, content: str}, read as Mastra does
        return
    if role not in ROLES:
        raise malformed(
            f"{at.path}.role",
            f"is {role!r}; a message's role is user, assistant, system, developer or tool "
            "(a tool result), or Mastra's signal in a message with an id",
        )
    require_known_keys(message, _KNOWN, at.path, "a chat message")
    parts, text, joined = _content(message, content, at)
    parts.extend(_calls(message, at))
    reasoning = _reasoning(message, at.path)
    if not parts and joined and not text:
        return  # only results, now in their calls (Anthropic's tool_result user messages)
    at.transcript.add(
        ROLES[role], parts, id=message.get("id"), index=at.index, text=text, reasoning=reasoning
    )


def _content(
    message: Mapping[str, Any], content: Any, at: Place
) -> tuple[list[dict[str, Any]], str | None, bool]:
    """The message's parts from ``content`` / ``parts`` / ``text`` / ``refusal`` / ``audio``,
    its flat text (when it was one string), and whether any part was a result."""
    text = None
    parts: list[dict[str, Any]] = []
    joined = False
    if isinstance(content, str):
        text = content
    elif isinstance(content, list | tuple):
        parts = read_parts(content, f"{at.path}.content", at)
        joined = len(parts) < len(content)
    elif content is None:
        given = message.get("text")
        text = given if isinstance(given, str) else None
    else:
        raise malformed(
            f"{at.path}.content",
            f"is {brief(content)}; give a string, a list of content parts or Mastra's "
            "content object {format: 2, parts}",
        )
    given_parts = message.get("parts")
    if given_parts is not None:
        if parts and given_parts:
            raise malformed(
                f"{at.path}.parts",
                "is a list of parts beside a content list of parts; give the message's parts in "
                "one of them (evaldag would read one and drop the other's tool calls)",
            )
        parts = read_parts(given_parts, f"{at.path}.parts", at)
        joined = joined or len(parts) < len(given_parts)
    elif text:
        parts.insert(0, text_part(text))
    refusal = message.get("refusal")
    if refusal is not None and refusal != "":
        parts.append(text_part(text_of(refusal, f"{at.path}.refusal")))
        text = text or refusal
    audio = message.get("audio")
    if isinstance(audio, Mapping) and isinstance(audio.get("transcript"), str) and not text:
        text = audio["transcript"]  # an audio answer: its transcript is what was said
        parts.append(text_part(text))
    return parts, text, joined


def _calls(message: Mapping[str, Any], at: Place) -> list[dict[str, Any]]:
    """The parts of the calls in ``toolInvocations`` (not already in parts), ``tool_calls`` and
    ``function_call``."""
    parts: list[dict[str, Any]] = []
    known = set()
    for part in message.get("parts") or ():
        invocation = part.get("toolInvocation") if isinstance(part, Mapping) else None
        if isinstance(invocation, Mapping):
            known.add(invocation.get("toolCallId"))
    legacy = message.get("toolInvocations") or message.get("tool_invocations") or ()
    for k, invocation in enumerate(legacy):
        path = f"{at.path}.toolInvocations[{k}]"
        if not isinstance(invocation, Mapping):
            raise malformed(path, f"is {brief(invocation)}")
        invocation = {
            "toolCallId": f"call-{at.index}-{k}",
            "state": "result",
            **{camel(key): item for key, item in invocation.items()},
        }
        checked_invocation(invocation, path)
        if invocation["toolCallId"] not in known:
            parts.append(invocation_part(invocation))
    for k, call in enumerate(message.get("tool_calls") or ()):
        parts.append(_openai_call(call, f"{at.path}.tool_calls[{k}]", at))
    function_call = message.get("function_call")
    if function_call is not None:
        path = f"{at.path}.function_call"
        if not isinstance(function_call, Mapping):
            raise malformed(path, f"must be {{'name', 'arguments'}}, got {brief(function_call)}")
        parts.append(
            at.transcript.call(
                function_call.get("name"),
                arguments(function_call.get("arguments")),
                None,
                path,
                default_id=at.default_id(),
            )
        )
    return parts


def _openai_call(call: Any, path: str, at: Place) -> dict[str, Any]:
    """An OpenAI ``tool_calls`` entry (``function`` or ``custom``) as a call."""
    function: Any = call.get("function") if isinstance(call, Mapping) else None
    if function is None and isinstance(call, Mapping):
        function = call.get("custom")
    name = function.get("name") if isinstance(function, Mapping) else None
    if not isinstance(name, str) or not name:
        raise malformed(
            path,
            "must be {'id': ..., 'type': 'function', 'function': {'name': ..., 'arguments': "
            f"'<JSON>'}}, got {brief(call)}",
        )
    given = function.get("arguments", function.get("input"))
    return at.transcript.call(
        name, arguments(given), call.get("id"), path, default_id=at.default_id()
    )


def _tool_message(message: Mapping[str, Any], at: Place) -> None:
    """A ``role: 'tool'`` message: OpenAI's (``tool_call_id`` and the result as its content), the
    AI SDK's (``tool-result`` parts) or OpenTelemetry GenAI's (``tool_call_response`` parts)."""
    content = message.get("content")
    call_id = message.get("tool_call_id")
    key = "parts" if message.get("parts") is not None else "content"
    if key == "parts":  # OpenTelemetry GenAI messages: tool_call_response parts
        content = message["parts"]
    if call_id is None and isinstance(content, list | tuple) and content:
        if read_parts(content, f"{at.path}.{key}", at):
            raise malformed(
                f"{at.path}.{key}",
                "holds text or calls; a tool message holds tool results only",
            )
        return
    at.transcript.answer(call_id, None, f"{at.path}.tool_call_id", result=result_value(content))


def _reasoning(message: Mapping[str, Any], path: str) -> str | None:
    """The message's reasoning text (``reasoning``, ``reasoning_content``, LiteLLM's
    ``thinking_blocks``)."""
    for key in ("reasoning", "reasoning_content"):
        value = message.get(key)
        if isinstance(value, str) and value:
            return value
        if value not in (None, "") and not isinstance(value, str):
            raise malformed(f"{path}.{key}", f"must be text, got {brief(value)}")
    blocks = message.get("thinking_blocks")
    if blocks:
        texts = [
            block["thinking"]
            for block in blocks
            if isinstance(block, Mapping) and isinstance(block.get("thinking"), str)
        ]
        return "\n".join(texts) or None
    return None
