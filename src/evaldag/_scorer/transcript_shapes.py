"""Every transcript shape, read once: what ``ScorerRun`` makes of a run's ``input`` and ``output``.

Scorers read Mastra's message shapes (``evaldag.transcripts``). Agents record others, so
``ScorerRun`` passes ``input`` and ``output`` through :func:`canonical_transcript` and every
reader sees the same messages whatever shape was given (``docs/transcripts.md``):

- Mastra's ``MastraDBMessage`` (content ``{format: 2, parts}``) is kept as given, except that
  tool calls found only in the legacy ``content.toolInvocations`` array join ``parts``;
- compact and AI SDK UI messages (``{role?, content: str, toolInvocations?, parts?}``) and OpenAI
  chat-completions messages (``tool_calls``; ``role: 'tool'`` results joined to their call by
  ``tool_call_id``; ``refusal``; content as a list of parts) become format-2 messages with
  ``tool-invocation`` parts;
- numpy arrays and Arrow values, as a Parquet file gives them back, become lists and dicts.

Strings (except JSON text of messages, see ``json_text``), ``None`` and values that hold no
message pass through untouched. A message that cannot be
read (a tool result without its call, an unknown role or part type) is an ``EvalDagError`` naming
where it sits, e.g. ``output[3].tool_call_id``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from evaldag._compat.js import camel, js_truthy
from evaldag._scorer.json_text import transcript_json
from evaldag.errors import EvalDagError
from evaldag.messages import AgentRunInput, MastraModel, Message, mastra_data
from evaldag.transcripts import merge_tool_invocations

#: Keys that make a dict a message (of any accepted shape).
_MESSAGE_KEYS = ("role", "content", "toolInvocations", "tool_invocations", "tool_calls", "parts")
#: The keys a role-less (compact or UI) message may have.
_ROLELESS_KEYS = frozenset(
    {
        *_MESSAGE_KEYS,
        "id",
        "text",
        "reasoning",
        "createdAt",
        "threadId",
        "resourceId",
        "metadata",
        "annotations",
        "experimental_attachments",
    }
)
#: Keys a message has only in a shape other than Mastra's ``{id, role, content: str}``.
_FOREIGN_KEYS = (
    "toolInvocations",
    "tool_invocations",
    "tool_calls",
    "parts",
    "refusal",
    "function_call",
    "tool_call_id",
)
_ROLES = {"user": "user", "assistant": "assistant", "system": "system", "developer": "system"}
_MASTRA_ROLES = frozenset({"user", "assistant", "system", "signal"})
#: Content part types of OpenAI chat (and the AI SDK) that carry no text and no tool call.
_MEDIA_PARTS = frozenset({"image_url", "input_audio", "file", "image"})
#: Values that are never transcripts nor hold one.
_SCALARS = frozenset({str, int, float, bool, type(None)})
_NO_PARTS: list[Any] = []
#: The message lists of an agent run input.
_INPUT_LISTS = ("inputMessages", "rememberedMessages", "messages")


def canonical_transcript(value: Any, field: str) -> Any:
    """``value`` with every message in it in Mastra's format-2 shape, read once.

    :param field: ``'input'`` or ``'output'``: the default role of role-less messages and strings
        (user, assistant) and the start of the path named in errors.
    """
    kind = type(value)
    if kind is str:
        value = transcript_json(value, field)  # JSON text of messages is read as its messages
        kind = type(value)
    if kind in _SCALARS or (kind is list and _all_canonical(value)):
        return value
    if _foreign(value):
        value = plain_data(value)
    elif isinstance(value, BaseModel) and not isinstance(value, MastraModel):
        value = _dumped(value) or value
    role = "user" if field == "input" else "assistant"
    if isinstance(value, MastraModel):
        return _model_with_calls_in_parts(value)
    if isinstance(value, list | tuple):
        if any(_message_like(item) for item in value):
            return _canonical_messages(value, role, field)
        return python_data(value)
    if isinstance(value, Mapping):
        if field == "input" and not value.keys().isdisjoint(_INPUT_LISTS):
            return _canonical_agent_input(value)
        if _message_like(value):
            return _canonical_message(value, role, 0, field, {})
    return python_data(value)


def python_data(value: Any) -> Any:
    """``value``, or when numpy arrays or Arrow values sit in it, its :func:`plain_data`."""
    if type(value) in _SCALARS or not _arrow_derived(value):
        return value
    return plain_data(value)


def plain_data(value: Any) -> Any:
    """``value`` with numpy arrays and Arrow values as lists, dicts and Python scalars.

    Keys whose value is missing (None or NaN) are left out of dicts: Arrow gives every struct in
    a column the keys of all of them, so a Parquet file reads back ``{"city": None}`` for a tool
    call that had no ``city`` argument.
    """
    if isinstance(value, Mapping):
        return {key: plain_data(item) for key, item in value.items() if not _missing(item)}
    if isinstance(value, list | tuple):
        return [plain_data(item) for item in value]
    module = type(value).__module__
    if module.startswith("numpy"):
        if not getattr(value, "ndim", 0):
            return value.item()
        if value.dtype != object:
            return value.tolist()
        return [plain_data(item) for item in value]
    if module.startswith("pyarrow"):
        return plain_data(value.as_py() if hasattr(value, "as_py") else value.to_pylist())
    return value


def is_messages(value: Any) -> bool:
    """Whether ``value`` is a message, or a list holding a message and only messages, strings
    and ``None``."""
    if not isinstance(value, list | tuple):
        return _message_like(value)
    found = False
    for item in value:
        if item is None or type(item) is str:
            continue
        if not _message_like(item):
            return False
        found = True
    return found


def checked_transcript(value: Any, reader: str, field: str = "run.output") -> Any:
    """``value`` if messages can be read from it (a string, ``None``, a message, a list of
    messages and strings); otherwise an ``EvalDagError`` that names ``field`` and what it holds.

    :param reader: who reads it, for the message ("a check").
    """
    if value is None or isinstance(value, str) or is_messages(value):
        return value
    if isinstance(value, list | tuple) and all(
        item is None or isinstance(item, str) for item in value
    ):
        return value
    raise EvalDagError(
        "EVALDAG_INVALID_RUN_OUTPUT",
        f"{field} must be a string, a message or a list of messages for {reader}, got "
        f"{described(value)}; see docs/transcripts.md for the message shapes evaldag reads",
        details={"field": field},
    )


def described(value: Any) -> str:
    """What ``value`` is, for an error message: its type, and a dict's first keys."""
    if isinstance(value, Mapping):
        keys = list(value)[:5]
        return f"a dict with keys {keys}" if keys else "an empty dict"
    if isinstance(value, list | tuple):
        for index, item in enumerate(value):
            if not (item is None or isinstance(item, str) or _message_like(item)):
                return f"a list whose item {index} is {described(item)}"
        return f"a {type(value).__name__} of {len(value)} items"
    return type(value).__name__


# --- messages ------------------------------------------------------------------------------------

#: What a tool result (role 'tool') becomes: nothing of its own, its call now holds it.
_JOINED = object()


def _all_canonical(messages: list[Any]) -> bool:
    """Whether every entry is a string, None or a message readers take as it is (the quick test
    that keeps Mastra's own runs cheap)."""
    for message in messages:
        if message is None or type(message) is str:
            continue
        if type(message) is dict:
            content = message.get("content")
            if type(content) is not dict or type(content.get("parts", _NO_PARTS)) is not list:
                return False
            if message.get("role") not in _MASTRA_ROLES:
                return False
            if content.get("toolInvocations") is not None and not _legacy_calls_in_parts(content):
                return False
        elif type(message) is not Message or message.content.tool_invocations:
            return False
    return True


def _canonical_messages(messages: Any, role: str, field: str) -> Any:
    """The messages in Mastra's shape; the same list when every one already was."""
    if type(messages) is list and _all_canonical(messages):
        return messages
    calls: dict[str, dict[str, Any]] = {}
    canonical = []
    changed = not isinstance(messages, list)
    for index, message in enumerate(messages):
        read = _canonical_message(message, role, index, f"{field}[{index}]", calls)
        if read is _JOINED:
            changed = True
            continue
        changed = changed or read is not message
        canonical.append(read)
    return canonical if changed else messages


def _canonical_message(
    message: Any, role: str, index: int, path: str, calls: dict[str, dict[str, Any]]
) -> Any:
    """One message in Mastra's shape (or ``_JOINED`` for a tool result, now in its call).

    :param calls: the open tool calls made by converted OpenAI messages so far, by id.
    """
    if message is None or isinstance(message, str):
        return message
    if isinstance(message, MastraModel):
        return _model_with_calls_in_parts(message)
    if isinstance(message, BaseModel):
        message = _dumped(message) or message
    if _foreign(message):
        message = plain_data(message)
    if not isinstance(message, Mapping) or not _message_like(message):
        raise _malformed(path, f"is not a message: got {described(message)}")
    content = message.get("content")
    if isinstance(content, Mapping):
        if message.get("role") not in _MASTRA_ROLES:
            raise _malformed(
                f"{path}.role",
                f"is {message.get('role')!r}; a message with Mastra's content object "
                "{format: 2, parts} has role user, assistant, system or signal",
            )
        # From Parquet, parts arrive as a numpy array: then the whole message is Arrow's.
        if type(content.get("parts", [])) is not list or _foreign(content.get("toolInvocations")):
            message = plain_data(message)
        return _db_with_calls_in_parts(message)
    if _arrow_derived(message):
        message = plain_data(message)
        content = message.get("content")
    given_role = message.get("role")
    if given_role == "tool":
        _join_tool_result(message, path, calls)
        return _JOINED
    if (
        given_role in _MASTRA_ROLES
        and isinstance(content, str)
        and "id" in message
        and all(message.get(key) is None for key in _FOREIGN_KEYS)
    ):
        return message  # Mastra's own {id, role, content: str}: read as Mastra reads it
    if given_role is not None and given_role not in _ROLES:
        raise _malformed(
            f"{path}.role",
            f"is {given_role!r}; a message's role is user, assistant, system, developer or "
            "tool (a tool result), or Mastra's signal in a message with an id",
        )
    return _format_2(message, _ROLES[given_role or role], index, path, calls)


def _format_2(
    message: Mapping[str, Any], role: str, index: int, path: str, calls: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    """A compact, UI or OpenAI chat message as a ``MastraDBMessage`` dict."""
    if message.get("function_call") is not None:
        raise _malformed(
            f"{path}.function_call",
            "is OpenAI's legacy function calling, which evaldag does not read; record the call "
            "in tool_calls",
        )
    content = message.get("content")
    text = None
    parts: list[Any] = []
    if isinstance(content, str):
        text = content
    elif isinstance(content, list | tuple):
        parts = [_content_part(part, f"{path}.content[{k}]") for k, part in enumerate(content)]
    elif content is None:
        text = message.get("text") if isinstance(message.get("text"), str) else None
    else:
        raise _malformed(
            f"{path}.content",
            f"is {described(content)}; give a string, a list of content parts or Mastra's "
            "content object {format: 2, parts}",
        )
    given_parts = message.get("parts")
    if given_parts is not None:
        if not isinstance(given_parts, list | tuple):
            raise _malformed(
                f"{path}.parts", f"must be a list of parts, got {described(given_parts)}"
            )
        parts = list(given_parts)
    elif text:
        parts.insert(0, {"type": "text", "text": text})
    refusal = message.get("refusal")
    if isinstance(refusal, str) and refusal:
        parts.append({"type": "text", "text": refusal})
        text = text or refusal
    known = {_invocation(part).get("toolCallId") for part in parts} - {None}
    legacy = message.get("toolInvocations") or message.get("tool_invocations") or ()
    for k, invocation in enumerate(legacy):
        if not isinstance(invocation, Mapping):
            raise _malformed(f"{path}.toolInvocations[{k}]", f"is {described(invocation)}")
        invocation = {
            "toolCallId": f"call-{index}-{k}",
            "state": "result",
            **{camel(key): item for key, item in invocation.items()},
        }
        if invocation["toolCallId"] not in known:
            parts.append({"type": "tool-invocation", "toolInvocation": invocation})
    for k, call in enumerate(message.get("tool_calls") or ()):
        invocation = _openai_call(call, f"call-{index}-{k}", f"{path}.tool_calls[{k}]")
        calls[invocation["toolCallId"]] = invocation
        parts.append({"type": "tool-invocation", "toolInvocation": invocation})
    body: dict[str, Any] = {"format": 2, "parts": parts}
    if text:
        body["content"] = text
    reasoning = message.get("reasoning") or message.get("reasoning_content")
    if isinstance(reasoning, str) and reasoning:
        body["reasoning"] = reasoning
    given_id = message.get("id")
    return {
        "id": given_id if isinstance(given_id, str) else f"{role}-{index}",
        "role": role,
        "content": body,
    }


def _content_part(part: Any, path: str) -> dict[str, Any]:
    """One part of an OpenAI (or AI SDK) content list as a Mastra part."""
    if isinstance(part, str):
        return {"type": "text", "text": part}
    kind = part.get("type") if isinstance(part, Mapping) else None
    if kind == "text" and isinstance(part.get("text"), str):
        return {"type": "text", "text": part["text"]}
    if kind == "refusal" and isinstance(part.get("refusal"), str):
        return {"type": "text", "text": part["refusal"]}
    if kind in _MEDIA_PARTS:
        return dict(part)
    raise _malformed(
        path,
        f"is {described(part) if kind is None else f'a part of type {kind!r}'}; content lists may "
        f"hold text, refusal and media parts ({', '.join(sorted(_MEDIA_PARTS))}); tool calls go "
        "in tool_calls, tool results in role 'tool' messages",
    )


def _openai_call(call: Any, default_id: str, path: str) -> dict[str, Any]:
    """An OpenAI ``tool_calls`` entry as a Mastra tool invocation in state 'call'."""
    function = call.get("function") if isinstance(call, Mapping) else None
    if function is None and isinstance(call, Mapping):
        function = call.get("custom")
    name = function.get("name") if isinstance(function, Mapping) else None
    if not isinstance(name, str) or not name:
        raise _malformed(
            path,
            "must be {'id': ..., 'type': 'function', 'function': {'name': ..., 'arguments': "
            f"'<JSON>'}}, got {described(call)}",
        )
    arguments = function.get("arguments", function.get("input"))
    call_id = call.get("id")
    return {
        "state": "call",
        "toolCallId": call_id if isinstance(call_id, str) and call_id else default_id,
        "toolName": name,
        "args": _arguments(arguments),
    }


def _arguments(arguments: Any) -> Any:
    """Tool call arguments: OpenAI's JSON text parsed (text that is no JSON stays text)."""
    if not isinstance(arguments, str):
        return {} if arguments is None else arguments
    if not arguments.strip():
        return {}
    try:
        return json.loads(arguments)
    except ValueError:
        return arguments


def _join_tool_result(
    message: Mapping[str, Any], path: str, calls: dict[str, dict[str, Any]]
) -> None:
    """An OpenAI tool message's result, put in the invocation of the call it answers."""
    call_id = message.get("tool_call_id")
    invocation = calls.pop(call_id, None) if isinstance(call_id, str) else None
    if invocation is None:
        raise _malformed(
            f"{path}.tool_call_id",
            f"is {call_id!r}, which answers no open tool call of an earlier assistant message "
            "(each tool_calls entry's id is answered by one role 'tool' message)",
        )
    invocation["state"] = "result"
    invocation["result"] = _tool_result(message.get("content"))


def _tool_result(content: Any) -> Any:
    """A tool message's content as the result: JSON objects and arrays parsed, text kept."""
    if isinstance(content, list | tuple):
        content = "".join(
            part.get("text", "") if isinstance(part, Mapping) else str(part) for part in content
        )
    if isinstance(content, str) and content.lstrip()[:1] in ("{", "["):
        try:
            return json.loads(content)
        except ValueError:
            return content
    return content


# --- Mastra's own shapes -------------------------------------------------------------------------


def _db_with_calls_in_parts(message: Mapping[str, Any]) -> Any:
    """A ``MastraDBMessage`` whose legacy ``toolInvocations`` hold calls missing from ``parts``,
    with them in ``parts`` in Mastra's merge order; any other message as it is."""
    content = message["content"]
    if _legacy_calls_in_parts(content):
        return message
    parts = content.get("parts")
    parts = parts if isinstance(parts, list) else []
    pending = iter(merge_tool_invocations(message))
    merged_parts = []
    for part in parts:
        # The parts merge_tool_invocations takes its calls from, in its own test.
        if (
            isinstance(part, dict)
            and part.get("type") == "tool-invocation"
            and js_truthy(part.get("toolInvocation"))
        ):
            for earlier in pending:
                if earlier is part["toolInvocation"]:
                    break
                merged_parts.append({"type": "tool-invocation", "toolInvocation": earlier})
        merged_parts.append(part)
    merged_parts.extend({"type": "tool-invocation", "toolInvocation": rest} for rest in pending)
    body = {key: item for key, item in content.items() if key != "toolInvocations"}
    body["parts"] = merged_parts
    return {**message, "content": body}


def _legacy_calls_in_parts(content: Mapping[str, Any]) -> bool:
    """Whether every call of the legacy ``toolInvocations`` (if any) is in ``parts`` too."""
    legacy = content.get("toolInvocations")
    if legacy is None:
        return True
    if type(legacy) is not list:
        return False
    if not legacy:
        return True
    part_ids = set()
    for part in content.get("parts") or ():
        if type(part) is dict:
            invocation = part.get("toolInvocation")
            if type(invocation) is dict and part.get("type") == "tool-invocation":
                part_ids.add(invocation.get("toolCallId"))
    for invocation in legacy:
        if type(invocation) is dict:
            call_id = invocation.get("toolCallId")
            if not call_id or call_id not in part_ids:
                return False
        elif js_truthy(invocation):
            return False
    return True


def _invocation(part: Any) -> Mapping[str, Any]:
    """The ``toolInvocation`` of a tool-invocation part; an empty dict for any other part."""
    if isinstance(part, Mapping) and part.get("type") == "tool-invocation":
        invocation = part.get("toolInvocation")
        if isinstance(invocation, Mapping):
            return invocation
    return {}


def _model_with_calls_in_parts(model: MastraModel) -> MastraModel:
    """A message model (or an agent input's) with its legacy-only tool calls in its parts."""
    if isinstance(model, Message):
        content = model.content
        if not content.tool_invocations:
            return model
        data = mastra_data(model)
        rewritten = _db_with_calls_in_parts(data)
        return model if rewritten is data else Message.model_validate(rewritten)
    if isinstance(model, AgentRunInput):
        changes = {}
        for name in ("input_messages", "remembered_messages"):
            messages = getattr(model, name)
            read = [_model_with_calls_in_parts(message) for message in messages]
            if any(new is not old for new, old in zip(read, messages, strict=True)):
                changes[name] = read
        return model.model_copy(update=changes) if changes else model
    return model


def _canonical_agent_input(value: Mapping[str, Any]) -> Any:
    """An agent run input (``inputMessages``, ``rememberedMessages`` ...) with its messages
    read; the system messages are kept as given (Mastra's ``CoreMessage`` shape)."""
    changed = {}
    for key, given in value.items():
        kind = type(given)
        if kind in _SCALARS or ((kind is list or kind is dict) and not given):
            continue
        if key not in _INPUT_LISTS:
            read = python_data(given)
        elif kind is list and _all_canonical(given):
            continue
        else:
            item = plain_data(given) if _foreign(given) else given
            if isinstance(item, list | tuple):
                read = _canonical_messages(item, "user", f"input.{key}")
            else:
                read = item
        if read is not given:
            changed[key] = read
    return {**value, **changed} if changed else value


# --- recognizing values --------------------------------------------------------------------------


def _message_like(value: Any) -> bool:
    """Whether ``value`` is a message: a dict with a role, or a role-less (compact) one holding
    message keys only; ``{"content": ..., "sources": [...]}`` is a scorer's own data."""
    if type(value) is dict or isinstance(value, Mapping):
        if "role" in value:
            return True
        return any(key in value for key in _MESSAGE_KEYS) and value.keys() <= _ROLELESS_KEYS
    if isinstance(value, Message):
        return True
    return (
        isinstance(value, BaseModel)
        and not isinstance(value, MastraModel)
        and "role" in type(value).model_fields
    )


def _dumped(model: BaseModel) -> dict[str, Any] | None:
    """A message model from another library (OpenAI's ``ChatCompletionMessage``) as its JSON."""
    if "role" not in type(model).model_fields:
        return None
    return model.model_dump(mode="json", by_alias=True)


def _foreign(value: Any) -> bool:
    """Whether ``value`` is a numpy or Arrow value."""
    return type(value).__module__.startswith(("numpy", "pyarrow"))


def _arrow_derived(value: Any) -> bool:
    """Whether a numpy or Arrow value sits anywhere in ``value``."""
    kind = type(value)
    if kind in _SCALARS:
        return False
    if kind is dict or isinstance(value, Mapping):
        value = value.values()
    elif not (kind is list or kind is tuple):
        return _foreign(value)
    for item in value:
        if type(item) not in _SCALARS and _arrow_derived(item):
            return True
    return False


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _malformed(path: str, problem: str) -> EvalDagError:
    return EvalDagError(
        "EVALDAG_INVALID_TRANSCRIPT",
        f"{path} {problem}; see docs/transcripts.md for the message shapes evaldag reads",
        details={"field": path},
    )
