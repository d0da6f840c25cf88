"""What the spans of a trace are, once read by their conventions: model calls, tool runs and agent
runs; and the readers of attribute values that every convention shares."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from evaldag._traces.otlp import unreadable
from evaldag._traces.spans import Span

#: What an attribute or event without a value stands for.
NOTHING = object()


@dataclass(slots=True)
class ModelCall:
    """A model call: the messages it was given and those it returned (in a shape the
    transcript reader reads), and where they were recorded."""

    span: Span
    input: list[Any]
    output: list[Any]
    where: str
    model: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost: float | None = None


@dataclass(slots=True)
class ToolRun:
    """A tool's execution."""

    span: Span
    name: str
    call_id: str | None
    args: Any
    result: Any = NOTHING
    failed: bool = False
    error: str | None = None


@dataclass(slots=True)
class AgentRun:
    """An agent's run: what it was given and answered, and (pydantic-ai) all its messages."""

    span: Span
    input: list[Any] | None = None
    output: list[Any] | None = None
    all_messages: list[Any] | None = None
    where: str = ""
    #: How many of pydantic-ai's messages were the run's message history.
    history: int = 0


@dataclass(slots=True)
class Reading:
    """What the spans of one trace are."""

    calls: list[ModelCall] = field(default_factory=list)
    tools: list[ToolRun] = field(default_factory=list)
    agents: list[AgentRun] = field(default_factory=list)


def json_attribute(attributes: Mapping[str, Any], key: str, span: Span) -> Any:
    """An attribute that holds JSON text (or a structured value already): its value, or
    :data:`NOTHING`."""
    if key not in attributes or attributes[key] is None:
        return NOTHING
    value = attributes[key]
    if isinstance(value, str) and value.lstrip()[:1] in ("[", "{", '"'):
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            raise unreadable(span.where(), f"attribute {key} is not JSON") from None
    return value


def error_text(span: Span) -> str:
    """Why a span failed: its exception event's message, its status message, or error.type."""
    for event in span.events:
        if event.name == "exception" and event.attributes.get("exception.message"):
            return str(event.attributes["exception.message"])
    return span.status_message or str(span.attributes.get("error.type") or "the span failed")
