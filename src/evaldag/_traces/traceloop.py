"""OpenLLMetry's spans of an application's own functions, as traceloop-sdk's decorators record
them (``traceloop.span.kind`` ``tool``, ``agent``, ``workflow``, ``task``).

A ``@tool`` span is a tool run: its name in ``traceloop.entity.name``, the function's arguments and
return value as JSON text in ``traceloop.entity.input`` (``{"args": [...], "kwargs": {...}}``) and
``traceloop.entity.output`` when content capture is on (``TRACELOOP_TRACE_CONTENT``, on by
default), an exception it raised as the span's ``ERROR`` status and ``exception`` event. The
decorator records no call id: the run is matched to the model's call by name and arguments. The
other kinds hold a function's arguments and return value, not messages: the model calls under
them (OpenLLMetry's instrumentations) hold the conversation.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from evaldag._traces.otlp import unreadable
from evaldag._traces.runs import NOTHING, ToolRun, error_text, json_attribute
from evaldag._traces.spans import Span

#: The attribute of the span kinds traceloop-sdk's decorators record.
SPAN_KIND = "traceloop.span.kind"


def traceloop_tool(span: Span) -> ToolRun:
    """A ``@tool`` span's run; the GenAI attributes (``gen_ai.tool.call.*``) where it has them."""
    attributes = span.attributes
    name = attributes.get("traceloop.entity.name") or attributes.get("gen_ai.tool.name")
    if not isinstance(name, str) or not name:
        raise unreadable(
            span.where(),
            "is an OpenLLMetry tool run (traceloop.span.kind 'tool') without "
            "traceloop.entity.name nor gen_ai.tool.name: which tool ran is unknown",
        )
    args = json_attribute(attributes, "gen_ai.tool.call.arguments", span)
    if args is NOTHING:
        args = _arguments(_json_text(attributes, "traceloop.entity.input", span), span)
    result = json_attribute(attributes, "gen_ai.tool.call.result", span)
    if result is NOTHING:
        result = _json_text(attributes, "traceloop.entity.output", span)
    call_id = attributes.get("gen_ai.tool.call.id")
    return ToolRun(
        span,
        name,
        call_id if isinstance(call_id, str) else None,
        {} if args is NOTHING else args,
        result,
        failed=span.failed,
        error=error_text(span) if span.failed else None,
    )


def _json_text(attributes: Mapping[str, Any], key: str, span: Span) -> Any:
    """An attribute traceloop-sdk writes with ``json.dumps``: its value, or :data:`NOTHING`."""
    value = attributes.get(key)
    if value is None:
        return NOTHING
    if not isinstance(value, str):
        return value
    try:
        return orjson.loads(value)
    except orjson.JSONDecodeError:
        raise unreadable(
            span.where(),
            f"attribute {key} is not JSON (cut by OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT?)",
        ) from None


def _arguments(given: Any, span: Span) -> Any:
    """The tool's arguments: its keyword arguments, or ``{"args", "kwargs"}`` as recorded when it
    was given positional ones (their names are not recorded)."""
    if given is NOTHING:
        return NOTHING
    if not isinstance(given, Mapping) or not isinstance(given.get("kwargs", {}), Mapping):
        raise unreadable(
            span.where(),
            'attribute traceloop.entity.input must be {"args": [...], "kwargs": {...}}, got '
            f"{type(given).__name__}",
        )
    return dict(given.get("kwargs") or {}) if not given.get("args") else dict(given)
