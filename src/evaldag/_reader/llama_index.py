"""LlamaIndex ``ChatMessage`` (``model_dump``): ``{role, additional_kwargs, blocks}``.

Blocks have a ``block_type``: text, thinking, tool calls (``tool_call``), media and citations.
Calls may also sit in ``additional_kwargs["tool_calls"]`` as OpenAI's dicts (LlamaIndex's OpenAI
integration puts them there); a ``role: 'tool'`` message answers its
``additional_kwargs["tool_call_id"]`` with ``str(result)``, a dict's Python repr read back as the
dict. LlamaIndex's agents record no error flag in their messages: a tool that raised is its error
text, like any other result (``docs/transcripts.md``, "Tool errors").
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import Any

from evaldag._reader.problems import brief, malformed, require_known_keys, text_of
from evaldag._reader.transcript import Place, arguments, reasoning_part, result_value, text_part

_ROLES = {
    "system": "system",
    "developer": "system",
    "user": "user",
    "assistant": "assistant",
    "chatbot": "assistant",
    "model": "assistant",
    "tool": "tool",
    "function": "tool",
}
_MEDIA = frozenset({"image", "audio", "video", "document", "file", "citable", "citation"})
_DROPPED = frozenset({"cache", "cache_point"})
_KWARGS = frozenset({"tool_calls", "tool_call_id", "name"})


def is_message(message: Mapping[str, Any]) -> bool:
    """A ``ChatMessage`` dump: a role and ``additional_kwargs`` beside ``blocks`` or
    ``content`` (LangChain messages, which have ``additional_kwargs`` too, have a ``type``)."""
    return (
        "role" in message
        and "additional_kwargs" in message
        and "type" not in message
        and ("blocks" in message or "content" in message)
    )


def read_message(message: Mapping[str, Any], at: Place) -> None:
    """One LlamaIndex message into ``at.transcript``."""
    require_known_keys(
        message, ("role", "additional_kwargs", "blocks", "content"), at.path, "a LlamaIndex message"
    )
    given: Any = message.get("role")
    role = _ROLES.get(given)
    if role is None:
        raise malformed(f"{at.path}.role", f"is {given!r}, not a LlamaIndex message role")
    kwargs = message.get("additional_kwargs") or {}
    if not isinstance(kwargs, Mapping):
        raise malformed(f"{at.path}.additional_kwargs", f"must be an object, got {brief(kwargs)}")
    require_known_keys(kwargs, _KWARGS, f"{at.path}.additional_kwargs", "a LlamaIndex message")
    parts = _blocks(message, at)
    if role == "tool":
        texts = [part["text"] for part in parts if part.get("type") == "text"]
        at.transcript.answer(
            kwargs.get("tool_call_id"), kwargs.get("name"),
            f"{at.path}.additional_kwargs.tool_call_id", result=_result("".join(texts)),
        )  # fmt: skip
        return
    repeated = {
        part["toolInvocation"]["toolCallId"] for part in parts if part["type"] == "tool-invocation"
    }
    for k, call in enumerate(kwargs.get("tool_calls") or ()):
        path = f"{at.path}.additional_kwargs.tool_calls[{k}]"
        function = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(function, Mapping):
            raise malformed(path, f"is {brief(call)}, not an OpenAI tool call")
        if call.get("id") in repeated:
            continue
        parts.append(
            at.transcript.call(
                function.get("name"), arguments(function.get("arguments")), call.get("id"), path,
                default_id=at.default_id(),
            )
        )  # fmt: skip
    texts = [part["text"] for part in parts if part["type"] == "text"]
    at.transcript.add(role, parts, id=None, index=at.index, text="".join(texts) or None)


def _blocks(message: Mapping[str, Any], at: Place) -> list[dict[str, Any]]:
    """The Mastra parts of ``blocks`` (or of an older dump's ``content`` text)."""
    blocks = message.get("blocks")
    if blocks is None:
        content = message.get("content")
        return [text_part(text_of(content, f"{at.path}.content"))] if content else []
    if not isinstance(blocks, list | tuple):
        raise malformed(f"{at.path}.blocks", f"must be a list, got {brief(blocks)}")
    parts = []
    for k, block in enumerate(blocks):
        path = f"{at.path}.blocks[{k}]"
        kind = block.get("block_type") if isinstance(block, Mapping) else None
        if kind == "text":
            parts.append(text_part(text_of(block.get("text"), f"{path}.text")))
        elif kind == "thinking":
            content = block.get("content")
            if content:
                parts.append(reasoning_part(text_of(content, f"{path}.content")))
        elif kind == "tool_call":
            parts.append(
                at.transcript.call(
                    block.get("tool_name"), arguments(block.get("tool_kwargs")),
                    block.get("tool_call_id"), path, default_id=at.default_id(),
                )
            )  # fmt: skip
        elif kind in _MEDIA:
            parts.append({"type": "file", **dict(block)})
        elif kind not in _DROPPED:
            raise malformed(
                f"{path}.block_type",
                f"is {kind!r}; LlamaIndex blocks read are text, thinking, tool_call and media "
                f"({', '.join(sorted(_MEDIA))})",
            )
    return parts


def _result(text: str) -> Any:
    """A tool's result as LlamaIndex's agents write it: ``str(result)``, so a dict is its Python
    repr (``{'error': 'not found'}``), read back as the dict; JSON and other text as
    :func:`result_value` reads them."""
    value = result_value(text)
    if isinstance(value, str) and value.lstrip()[:1] in ("{", "["):
        try:
            return ast.literal_eval(value.strip())
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return value
    return value
