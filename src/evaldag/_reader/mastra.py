"""Mastra's own shapes: ``MastraDBMessage`` (content ``{format: 2, parts}``), the message models of
``evaldag.messages`` and the agent run input (``inputMessages``, ``rememberedMessages`` ...).

They are what readers take, so they are kept as given when every part is one Mastra reads; parts
of other types (AI SDK 5 ``tool-<name>`` parts, as Mastra's own conversions may leave them) are
read into Mastra's, and tool calls found only in the legacy ``content.toolInvocations`` array join
``parts`` at the place Mastra's merge gives them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from evaldag._compat.js import camel, js_truthy
from evaldag._reader.parts import KEPT, checked_invocation, mastra_states, read_parts
from evaldag._reader.problems import brief, malformed, require_known_keys
from evaldag._reader.transcript import Place, Transcript
from evaldag.transcripts import merge_tool_invocations

if TYPE_CHECKING:
    from evaldag.messages import MastraModel

MASTRA_ROLES = frozenset({"user", "assistant", "system", "signal"})
_MESSAGE_KEYS = frozenset({"id", "role", "content", "createdAt", "threadId", "resourceId", "type"})
_CONTENT_KEYS = frozenset(
    {
        "format",
        "parts",
        "content",
        "toolInvocations",
        "reasoning",
        "annotations",
        "experimental_attachments",
        "metadata",
        "providerMetadata",
    }
)
#: Parts of these types are kept by Mastra's readers as they are.
_PLAIN_PARTS = KEPT | {"text", "reasoning"}
_NO_PARTS: list[Any] = []
#: The message lists of an agent run input.
INPUT_LISTS = ("inputMessages", "rememberedMessages", "messages")


def is_db_message(message: Mapping[str, Any]) -> bool:
    """A message whose content is an object (Mastra's ``{format: 2, parts}``)."""
    return isinstance(message.get("content"), Mapping)


def is_canonical(message: Any) -> bool:
    """Whether readers take ``message`` as it is: a string, None, or a plain-dict
    ``MastraDBMessage`` with a Mastra role, parts of types Mastra reads and no legacy-only call
    (the quick test that keeps Mastra's own runs cheap)."""
    if message is None or type(message) is str:
        return True
    if type(message) is not dict or message.get("role") not in MASTRA_ROLES:
        return False
    content = message.get("content")
    if type(content) is not dict or not (
        content.keys() <= _CONTENT_KEYS and message.keys() <= _MESSAGE_KEYS
    ):
        return False
    parts = content.get("parts", _NO_PARTS)
    if type(parts) is not list:
        return False
    for part in parts:
        if type(part) is not dict:
            return False
        kind = part.get("type")
        if kind == "text":
            if type(part.get("text")) is not str:
                return False
        elif kind == "tool-invocation":
            invocation = part.get("toolInvocation")
            if invocation is not None and (
                type(invocation) is not dict
                or invocation.get("state") not in mastra_states()
                or type(invocation.get("toolName")) is not str
            ):
                return False
        elif kind not in _PLAIN_PARTS and not (type(kind) is str and kind.startswith("data-")):
            return False
    return content.get("toolInvocations") is None or _legacy_calls_in_parts(content)


def read_db_message(message: Mapping[str, Any], at: Place) -> None:
    """A ``MastraDBMessage`` into ``at.transcript``: as given when canonical, else with its
    parts read and its legacy-only calls joined to them."""
    if is_canonical(message):
        at.transcript.keep(message)
        return
    role = message.get("role")
    if role not in MASTRA_ROLES:
        raise malformed(
            f"{at.path}.role",
            f"is {role!r}; a message with Mastra's content object {{format: 2, parts}} has role "
            "user, assistant, system or signal",
        )
    require_known_keys(message, _MESSAGE_KEYS, at.path, "a Mastra message")
    content = message["content"]
    require_known_keys(content, _CONTENT_KEYS, f"{at.path}.content", "a Mastra message's content")
    parts = read_parts(content.get("parts") or [], f"{at.path}.content.parts", at)
    legacy = content.get("toolInvocations")
    if legacy is not None:
        _check_legacy(legacy, f"{at.path}.content.toolInvocations")
    body = {key: item for key, item in content.items() if key != "parts"}
    read = {**message, "content": {**body, "parts": parts}}
    at.transcript.keep(_with_calls_in_parts(read), changed=True)


def _check_legacy(legacy: Any, path: str) -> None:
    """The legacy ``toolInvocations`` array holds invocations (``null`` entries, which Mastra
    skips, aside)."""
    if not isinstance(legacy, list):
        raise malformed(path, f"must be a list of tool invocations, got {brief(legacy)}")
    for k, invocation in enumerate(legacy):
        if js_truthy(invocation):  # Mastra skips null entries
            checked_invocation(invocation, f"{path}[{k}]")


def _with_calls_in_parts(message: dict[str, Any]) -> dict[str, Any]:
    """``message`` with the calls of its legacy ``toolInvocations`` missing from ``parts`` in
    ``parts``, in Mastra's merge order (``merge_tool_invocations``)."""
    content = message["content"]
    if _legacy_calls_in_parts(content):
        return message
    pending = iter(merge_tool_invocations(message))
    merged_parts = []
    for part in content["parts"]:
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


def read_model(model: MastraModel, path: str) -> Any:
    """A message model (or an agent input's messages) with its parts read; the same model when
    nothing changes."""
    # Loaded already: ``model`` is one of them (see values.is_message_model).
    from evaldag.messages import AgentRunInput, Message, OtherPart, mastra_data

    if isinstance(model, Message):
        content = model.content
        if not content.tool_invocations and not any(
            isinstance(part, OtherPart) for part in content.parts
        ):
            return model
        data = mastra_data(model)
        transcript = Transcript(path)
        read_db_message(data, Place(transcript, 0, path, model.role))
        (read,) = transcript.finished()
        return model if read is data else Message.model_validate(read)
    if isinstance(model, AgentRunInput):
        changes = {}
        for name in ("input_messages", "remembered_messages"):
            messages = getattr(model, name)
            key = f"input.{camel(name)}"
            read = [read_model(message, f"{key}[{k}]") for k, message in enumerate(messages)]
            if any(new is not old for new, old in zip(read, messages, strict=True)):
                changes[name] = read
        return model.model_copy(update=changes) if changes else model
    return model
