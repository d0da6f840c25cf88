"""LangChain and LangGraph messages: ``messages_to_dict`` (``{type, data}``), ``dumpd`` (``{lc: 1,
type: 'constructor', id: [..., 'AIMessage'], kwargs}``) and a message's own ``model_dump``
(``{type: 'ai', content, tool_calls, ...}``).

An AI message's calls are its ``tool_calls`` (and ``invalid_tool_calls``: arguments that did not
parse, a failed call); content blocks that repeat them (Anthropic's ``tool_use``, standard
``tool_call`` blocks) are not counted twice. A ``ToolMessage`` answers its ``tool_call_id``;
``status: 'error'`` marks a failed call.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evaldag._reader.parts import read_part
from evaldag._reader.problems import brief, malformed, require_known_keys, text_of
from evaldag._reader.transcript import Place, arguments, reasoning_part, result_value, text_part

#: A ChatMessage's role, as a transcript's.
_CHAT_ROLES = {"user": "user", "assistant": "assistant", "system": "system"}
_ROLES = {
    "human": "user",
    "ai": "assistant",
    "system": "system",
    "developer": "system",
    "tool": "tool",
    "function": "function",
    "chat": "chat",
    "remove": "remove",
}
#: Class names (``dumpd``'s id, chunks' type) as message types.
_CLASSES = {
    "HumanMessage": "human",
    "AIMessage": "ai",
    "SystemMessage": "system",
    "ToolMessage": "tool",
    "FunctionMessage": "function",
    "ChatMessage": "chat",
    "RemoveMessage": "remove",
}
_CLASSES |= {f"{name}Chunk": kind for name, kind in _CLASSES.items()}
_READ = frozenset(
    {
        "content",
        "additional_kwargs",
        "tool_calls",
        "invalid_tool_calls",
        "tool_call_chunks",
        "tool_call_id",
        "status",
        "role",
    }
)
_METADATA = frozenset(
    {
        "type",
        "id",
        "name",
        "example",
        "response_metadata",
        "usage_metadata",
        "artifact",
        "chunk_position",
        "output_version",
    }
)
#: Content block types that repeat a call of ``tool_calls``.
_CALL_BLOCKS = frozenset({"tool_use", "tool_call", "function_call", "tool_call_chunk"})
_UNPARSED = "the call's arguments could not be parsed"
#: ``additional_kwargs`` keys read.
_KWARGS = frozenset({"tool_calls", "function_call", "refusal", "reasoning_content", "reasoning"})


def is_message(message: Mapping[str, Any]) -> bool:
    """A LangChain message in any of its three serializations."""
    if message.get("lc") == 1 and message.get("type") == "constructor":
        return isinstance(message.get("kwargs"), Mapping)
    kind = message.get("type")
    if kind not in _ROLES and kind not in _CLASSES:
        return False
    return isinstance(message.get("data"), Mapping) or "content" in message


def read_message(message: Mapping[str, Any], at: Place) -> None:
    """One LangChain message into ``at.transcript``."""
    path = at.path
    if message.get("lc") == 1:
        ids = message.get("id")
        name: Any = ids[-1] if isinstance(ids, list | tuple) and ids else None
        kind = _CLASSES.get(name)
        if kind is None:
            raise malformed(f"{path}.id", f"is {ids!r}, which names no LangChain message class")
        data, path = message["kwargs"], f"{path}.kwargs"
    elif isinstance(message.get("data"), Mapping):
        kind = _CLASSES.get(message["type"], message["type"])
        data, path = message["data"], f"{path}.data"
    else:
        kind, data = _CLASSES.get(message["type"], message["type"]), message
    require_known_keys(data, _READ | _METADATA, path, "a LangChain message")
    role = _ROLES[kind]
    if role == "chat":
        chat_role = _CHAT_ROLES.get(str(data.get("role")))
        if chat_role is None:
            raise malformed(
                f"{path}.role",
                f"is {data.get('role')!r}; a ChatMessage's role is user, assistant or system",
            )
        role = chat_role
    if role == "remove":
        raise malformed(path, "is a RemoveMessage, a LangGraph state update and no message")
    content = data.get("content")
    if role in ("tool", "function"):
        at.transcript.answer(
            data.get("tool_call_id") if role == "tool" else None,
            data.get("name"),
            f"{path}.tool_call_id",
            result=result_value(content),
            failed=data.get("status") == "error",
        )
        return
    calls = _calls(data, path, at)
    repeated = {part["toolInvocation"]["toolCallId"] for part in calls}
    parts = _content(content, repeated, f"{path}.content", at)
    kwargs = data.get("additional_kwargs") or {}
    if not isinstance(kwargs, Mapping):
        raise malformed(f"{path}.additional_kwargs", f"must be an object, got {brief(kwargs)}")
    require_known_keys(kwargs, _KWARGS, f"{path}.additional_kwargs", "a LangChain message")
    parts.extend(_kwargs(kwargs, repeated, f"{path}.additional_kwargs", at))
    at.transcript.add(
        role,
        parts + calls,
        id=data.get("id"),
        index=at.index,
        text=content if isinstance(content, str) else None,
    )


def _calls(data: Mapping[str, Any], path: str, at: Place) -> list[dict[str, Any]]:
    """The message's ``tool_calls`` and ``invalid_tool_calls`` (and, on a chunk without parsed
    calls, its ``tool_call_chunks``) as calls."""
    parts = []
    for key in ("tool_calls", "invalid_tool_calls"):
        invalid = key == "invalid_tool_calls"
        for k, call in enumerate(data.get(key) or ()):
            where = f"{path}.{key}[{k}]"
            if not isinstance(call, Mapping):
                raise malformed(where, f"is {brief(call)}, not a tool call")
            failed = {"state": "output-error", "errorText": call.get("error") or _UNPARSED}
            parts.append(
                at.transcript.call(
                    call.get("name") or ("unknown" if invalid else None),
                    arguments(call.get("args")), call.get("id"), where,
                    default_id=at.default_id(), **(failed if invalid else {}),
                )
            )  # fmt: skip
    if not parts:
        for k, chunk in enumerate(data.get("tool_call_chunks") or ()):
            where = f"{path}.tool_call_chunks[{k}]"
            if not isinstance(chunk, Mapping):
                raise malformed(where, f"is {brief(chunk)}, not a tool call chunk")
            parts.append(
                at.transcript.call(
                    chunk.get("name") or "unknown", arguments(chunk.get("args")), chunk.get("id"),
                    where, default_id=at.default_id(), state="partial-call",
                )
            )  # fmt: skip
    return parts


def _content(content: Any, repeated: set[str], path: str, at: Place) -> list[dict[str, Any]]:
    """The parts of ``content``: text, or blocks without those that repeat a call."""
    if content is None or isinstance(content, str):
        return [text_part(content)] if content else []
    if not isinstance(content, list | tuple):
        raise malformed(path, f"must be text or a list of content blocks, got {brief(content)}")
    parts = []
    for k, block in enumerate(content):
        if isinstance(block, Mapping) and block.get("type") in _CALL_BLOCKS:
            call_id = block.get("call_id") if block["type"] == "function_call" else block.get("id")
            if call_id in repeated:
                continue
        parts.extend(read_part(block, f"{path}[{k}]", at))
    return parts


def _kwargs(
    kwargs: Mapping[str, Any], repeated: set[str], path: str, at: Place
) -> list[dict[str, Any]]:
    """What ``additional_kwargs`` holds: OpenAI's raw ``tool_calls`` (read when no parsed call
    repeats them), a legacy ``function_call``, a ``refusal``, reasoning."""
    parts: list[dict[str, Any]] = []
    for k, call in enumerate(kwargs.get("tool_calls") or ()):
        if isinstance(call, Mapping) and call.get("id") in repeated:
            continue
        function = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(function, Mapping):
            raise malformed(f"{path}.tool_calls[{k}]", f"is {brief(call)}, not an OpenAI tool call")
        parts.append(
            at.transcript.call(
                function.get("name"), arguments(function.get("arguments")), call.get("id"),
                f"{path}.tool_calls[{k}]", default_id=at.default_id(),
            )
        )  # fmt: skip
    function_call = kwargs.get("function_call")
    if isinstance(function_call, Mapping) and not repeated:
        parts.append(
            at.transcript.call(
                function_call.get("name"), arguments(function_call.get("arguments")), None,
                f"{path}.function_call", default_id=at.default_id(),
            )
        )  # fmt: skip
    if kwargs.get("refusal"):
        parts.append(text_part(text_of(kwargs["refusal"], f"{path}.refusal")))
    reasoning = kwargs.get("reasoning_content")
    if isinstance(reasoning, str) and reasoning:
        parts.insert(0, reasoning_part(reasoning))
    summary = kwargs.get("reasoning")
    if isinstance(summary, Mapping):  # OpenAI Responses' reasoning item
        texts = [
            entry["text"]
            for entry in summary.get("summary") or ()
            if isinstance(entry, Mapping) and isinstance(entry.get("text"), str)
        ]
        if texts:
            parts.insert(0, reasoning_part("\n".join(texts)))
    return parts
