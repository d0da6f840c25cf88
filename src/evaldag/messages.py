"""Agent runs as data: Mastra's ``MastraDBMessage`` JSON and the agent run input, in pydantic.

The models read and write Mastra's JSON exactly: camelCase keys (``toolInvocation``,
``inputMessages``) through aliases, snake_case attributes in Python, unknown keys and unknown part
types kept, and only the keys that were given written back, so
``Message.model_validate(data).to_dict() == data``.

Scorers never need the models: ``evaldag.transcripts`` reads plain strings, Mastra-shaped dicts and
these models alike. The models are for building and checking runs; :func:`as_run_input` and
:func:`as_run_output` turn the loose shapes users pass (a string, a list of strings, chat-style
``{"role", "content"}`` dicts) into them.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from functools import cache
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    ModelWrapValidatorHandler,
    PrivateAttr,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    Tag,
    ValidationError,
    model_serializer,
    model_validator,
)
from pydantic.alias_generators import to_camel

from evaldag.errors import EvalDagError

Role = Literal["user", "assistant", "system", "signal"]
ToolInvocationState = Literal[
    "partial-call",
    "call",
    "result",
    "approval-requested",
    "approval-responded",
    "output-error",
    "output-denied",
]


class MastraModel(BaseModel):
    """A model of Mastra JSON: writes back the keys it was given, in their order (plus its tags)."""

    model_config = ConfigDict(
        extra="allow", populate_by_name=True, alias_generator=to_camel, defer_build=True
    )

    #: Fields written even when left at their default: the tags that give the JSON its shape.
    _always_written: ClassVar[frozenset[str]] = frozenset()
    _key_order: tuple[str, ...] = PrivateAttr(default=())

    @model_validator(mode="wrap")
    @classmethod
    def _remember_key_order(cls, data: Any, handler: ModelWrapValidatorHandler[Any]) -> Any:
        model = handler(data)
        if isinstance(data, Mapping) and isinstance(model, MastraModel):
            model._key_order = tuple(data)
        return model

    @model_serializer(mode="wrap")
    def _given_keys(
        self, handler: SerializerFunctionWrapHandler, info: SerializationInfo
    ) -> dict[str, Any]:
        data = handler(self)
        optional, tags = _layout(type(self), info.by_alias)
        given = self.__pydantic_fields_set__
        for name, key in optional:
            if name not in given:
                data.pop(key, None)
        private = self.__pydantic_private__
        order = private.get("_key_order") if private else None
        if not order:
            return data
        # Tags the input left out lead, as Mastra writes them: {type, ...}, {format, ...}.
        ordered = {key: data.pop(key) for key in tags if key not in order and key in data}
        ordered.update((key, data.pop(key)) for key in order if key in data)
        ordered.update(data)
        return ordered

    def to_dict(self) -> dict[str, Any]:
        """Mastra's JSON shape (camelCase keys, JSON values), with the keys that were given."""
        return self.model_dump(mode="json", by_alias=True)


_CONTAINERS = (MastraModel, list, dict)


@cache
def _layout(
    model: type[MastraModel], by_alias: bool | None
) -> tuple[tuple[tuple[str, str], ...], tuple[str, ...]]:
    """(name, key) of the fields written only when given; the keys of those always written."""
    fields = model.model_fields
    keys = {
        name: field.alias if by_alias and field.alias else name for name, field in fields.items()
    }
    always = model._always_written
    optional = tuple((name, key) for name, key in keys.items() if name not in always)
    return optional, tuple(key for name, key in keys.items() if name in always)


def mastra_data(value: Any) -> Any:
    """``value`` with each evaldag model in it (also in lists) as Mastra's dict: the keys it was
    given, camelCase; values stay Python objects.

    The quick way to read models as Mastra's JSON (a few µs per model, where ``to_dict`` runs the
    full serializer); key order is not kept. ``value`` itself is returned when it holds no model.
    """
    if isinstance(value, MastraModel):
        keys, always = _reading_keys(type(value))
        fields = value.__dict__
        data = {}
        for name in value.__pydantic_fields_set__:
            key = keys.get(name)
            if key is not None:  # not an extra key: those are added below
                item = fields[name]
                data[key] = mastra_data(item) if isinstance(item, _CONTAINERS) else item
        for name, key in always:
            if key not in data:
                data[key] = fields[name]
        if value.__pydantic_extra__:
            data.update(value.__pydantic_extra__)
        return data
    if isinstance(value, list):
        if value and isinstance(value[0], MastraModel):
            return [mastra_data(item) for item in value]
        return value
    if isinstance(value, dict) and any(isinstance(item, _CONTAINERS) for item in value.values()):
        return {
            key: mastra_data(item) if isinstance(item, _CONTAINERS) else item
            for key, item in value.items()
        }
    return value


@cache
def _reading_keys(model: type[MastraModel]) -> tuple[dict[str, str], tuple[tuple[str, str], ...]]:
    """The camelCase key of each field, and (name, key) of the always-written ones."""
    keys = {name: field.alias or name for name, field in model.model_fields.items()}
    return keys, tuple((name, key) for name, key in keys.items() if name in model._always_written)


class _Part(MastraModel):
    """What every message part may carry besides its own fields."""

    _always_written = frozenset({"type"})

    provider_metadata: dict[str, Any] | None = None
    created_at: int | float | None = Field(default=None, description="Epoch milliseconds.")


class TextPart(_Part):
    """A piece of text."""

    type: Literal["text"] = "text"
    text: str


class ToolApproval(MastraModel):
    """The approval record of a tool call that needed one."""

    id: str
    approved: bool | None = None
    reason: str | None = None


class ToolInvocation(MastraModel):
    """One tool call and, once it finished, its result (``MastraToolInvocation``)."""

    state: ToolInvocationState = Field(
        description="'result' once the tool returned; 'output-error' when it threw."
    )
    tool_call_id: str | None = None
    tool_name: str | None = None
    args: Any = None
    result: Any = None
    is_error: bool | None = Field(
        default=None, description="Set with state 'result' when the executor reported a failure."
    )
    error_text: str | None = None
    raw_input: Any = None
    step: int | None = None
    approval: ToolApproval | None = None


class ToolInvocationPart(_Part):
    """A tool call recorded in the message's parts."""

    type: Literal["tool-invocation"] = "tool-invocation"
    tool_invocation: ToolInvocation
    provider_executed: bool | None = None
    title: str | None = None
    preliminary: bool | None = None


class ReasoningPart(_Part):
    """The model's reasoning; ``details`` holds ``{type: 'text', text}`` or redacted entries."""

    type: Literal["reasoning"] = "reasoning"
    reasoning: str
    details: list[dict[str, Any]] | None = None


class StepStartPart(_Part):
    """Marks the start of a model step."""

    type: Literal["step-start"] = "step-start"
    model: str | None = None


class SourcePart(_Part):
    """A source (usually a URL) the model cited."""

    type: Literal["source"] = "source"
    source: dict[str, Any]


class SourceDocumentPart(_Part):
    """A document the model cited."""

    type: Literal["source-document"] = "source-document"
    source_id: str
    media_type: str
    title: str
    filename: str | None = None


class FilePart(_Part):
    """A file, as a data URL or base64 text."""

    type: Literal["file"] = "file"
    mime_type: str
    data: str


class ErrorPart(_Part):
    """An error raised while producing the message."""

    type: Literal["error"] = "error"
    error: dict[str, Any] = Field(description="``{name, message}``.")


class DataPart(_Part):
    """A custom data part: its type starts with ``data-`` (``data-om-status``, ...)."""

    type: str = Field(pattern=r"^data-")
    id: str | None = None
    data: Any = None


class OtherPart(_Part):
    """A part of a type evaldag does not model (``image``, future types): kept as given."""

    type: str


_PART_TAGS = {
    "text": "text",
    "tool-invocation": "tool-invocation",
    "reasoning": "reasoning",
    "step-start": "step-start",
    "source": "source",
    "source-document": "source-document",
    "file": "file",
    "error": "error",
}


def _part_tag(value: Any) -> str:
    part_type = value.get("type") if isinstance(value, Mapping) else getattr(value, "type", None)
    if not isinstance(part_type, str):
        return "other"
    if part_type in _PART_TAGS:
        return part_type
    return "data" if part_type.startswith("data-") else "other"


Part = Annotated[
    Annotated[TextPart, Tag("text")]
    | Annotated[ToolInvocationPart, Tag("tool-invocation")]
    | Annotated[ReasoningPart, Tag("reasoning")]
    | Annotated[StepStartPart, Tag("step-start")]
    | Annotated[SourcePart, Tag("source")]
    | Annotated[SourceDocumentPart, Tag("source-document")]
    | Annotated[FilePart, Tag("file")]
    | Annotated[ErrorPart, Tag("error")]
    | Annotated[DataPart, Tag("data")]
    | Annotated[OtherPart, Tag("other")],
    Discriminator(_part_tag),
]


class MessageContent(MastraModel):
    """A message's content in Mastra's format 2: ``parts`` plus the legacy AI SDK v4 fields."""

    _always_written = frozenset({"format", "parts"})

    format: Literal[2] = 2
    parts: list[Part] = Field(default_factory=list)
    content: str | None = Field(default=None, description="Legacy flat text.")
    tool_invocations: list[ToolInvocation] | None = Field(
        default=None, description="Legacy tool calls; a thrown call may be only in ``parts``."
    )
    reasoning: str | None = None
    annotations: list[Any] | None = None
    experimental_attachments: list[Any] | None = Field(
        default=None, alias="experimental_attachments"
    )
    metadata: dict[str, Any] | None = None
    provider_metadata: dict[str, Any] | None = None


class Message(MastraModel):
    """A ``MastraDBMessage``: what agents read from memory and return as their response."""

    id: str
    role: Role
    content: MessageContent
    created_at: str | datetime | None = Field(
        default=None, description="Kept as written: an ISO string stays a string."
    )
    thread_id: str | None = None
    resource_id: str | None = None
    type: str | None = None


class SystemMessage(MastraModel):
    """An AI SDK system message: ``content`` is a string or a list of ``{type: 'text'}`` parts."""

    _always_written = frozenset({"role"})

    role: Literal["system"] = "system"
    content: str | list[dict[str, Any]]


class AgentRunInput(MastraModel):
    """What an agent scorer's ``run.input`` holds: this turn's messages and their context."""

    _always_written = frozenset(
        {"input_messages", "remembered_messages", "system_messages", "tagged_system_messages"}
    )

    input_messages: list[Message] = Field(
        default_factory=list, description="This turn's new messages."
    )
    remembered_messages: list[Message] = Field(
        default_factory=list, description="Messages loaded from memory: the history."
    )
    system_messages: list[SystemMessage] = Field(default_factory=list)
    tagged_system_messages: dict[str, list[SystemMessage]] = Field(
        default_factory=dict, description="Tagged system prompts (e.g. memory instructions)."
    )


def text_message(
    text: str,
    role: Role = "assistant",
    *,
    id: str | None = None,
    tool_invocations: list[ToolInvocation | dict[str, Any]] | None = None,
) -> Message:
    """A message holding ``text`` (as one text part and as the legacy ``content`` string)."""
    content: dict[str, Any] = {"parts": [TextPart(text=text)], "content": text}
    if tool_invocations:
        content["tool_invocations"] = tool_invocations
    return Message(id=id or f"{role}-0", role=role, content=MessageContent(**content))


def as_message(value: Any, role: Role, index: int = 0) -> Message:
    """``value`` as a :class:`Message`; strings and chat-style dicts get ``role`` by default.

    Accepts a Message, a ``MastraDBMessage`` dict (its ``content`` is an object), a string, or a
    compact ``{role?, content: str, id?, toolInvocations?, parts?}`` dict (tool invocations
    default to ``state: 'result'``). Generated ids are ``<role>-<index>``.
    """
    if isinstance(value, Message):
        return value
    if isinstance(value, str):
        return text_message(value, role, id=f"{role}-{index}")
    if isinstance(value, Mapping):
        try:
            if isinstance(value.get("content"), Mapping):
                return Message.model_validate(value)
            return _compact_message(value, role, index)
        except ValidationError as error:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in problem['loc']) or 'message'}: {problem['msg']}"
                for problem in error.errors()[:3]
            )
            raise EvalDagError(
                "EVALDAG_INVALID_MESSAGE",
                f"message {index} is not a valid message ({problems}); see Mastra's "
                "MastraDBMessage shape or give a string",
                details={"index": index},
                cause=error,
            ) from error
    raise EvalDagError(
        "EVALDAG_INVALID_MESSAGE",
        f"message {index}: expected a string, a Message or a dict with 'content', got "
        f"{type(value).__name__}",
        details={"index": index},
    )


def _compact_message(spec: Mapping[str, Any], role: Role, index: int) -> Message:
    text = spec.get("content")
    if text is None:
        text = spec.get("text", "")
    if not isinstance(text, str):
        raise EvalDagError(
            "EVALDAG_INVALID_MESSAGE",
            f"message {index}: 'content' must be a string or Mastra's content object, got "
            f"{type(text).__name__}",
            details={"index": index},
        )
    message_role = spec.get("role", role)
    content: dict[str, Any] = {
        "parts": spec["parts"] if spec.get("parts") is not None else [TextPart(text=text)],
        "content": text,
    }
    invocations = spec.get("toolInvocations") or spec.get("tool_invocations")
    if invocations:
        content["tool_invocations"] = [
            {"toolCallId": f"call-{index}-{k}", "state": "result", **invocation}
            if isinstance(invocation, Mapping)
            else invocation
            for k, invocation in enumerate(invocations)
        ]
    return Message.model_validate(
        {
            "id": spec.get("id", f"{message_role}-{index}"),
            "role": message_role,
            "content": MessageContent.model_validate(content),
        }
    )


def as_messages(value: Any, role: Role) -> list[Message]:
    """``value`` as a list of messages: ``None`` is none, a string or a message is one."""
    if value is None:
        return []
    if isinstance(value, list | tuple):
        return [as_message(item, role, index) for index, item in enumerate(value)]
    return [as_message(value, role)]


def as_run_input(value: Any) -> AgentRunInput:
    """``run.input`` in the agent shape: a string is one user message, a list one per entry.

    A dict with any of ``inputMessages``, ``rememberedMessages``, ``systemMessages``,
    ``taggedSystemMessages`` fills those fields (missing ones are empty); its message entries
    may be strings or compact dicts as in :func:`as_message`.
    """
    if isinstance(value, AgentRunInput):
        return value
    if value is None or isinstance(value, str | list | tuple | Message):
        return AgentRunInput(input_messages=as_messages(value, "user"))
    if isinstance(value, Mapping):
        data = dict(value)
        for key in ("inputMessages", "input_messages", "rememberedMessages", "remembered_messages"):
            if key in data:
                data[key] = as_messages(data[key], "user")
        return AgentRunInput.model_validate(data)
    raise EvalDagError(
        "EVALDAG_INVALID_RUN_INPUT",
        f"run input: expected a string, a list of messages or a dict with 'inputMessages', got "
        f"{type(value).__name__}",
    )


def as_run_output(value: Any) -> list[Message]:
    """``run.output`` as an agent's response messages: a string is one assistant message."""
    return as_messages(value, "assistant")
