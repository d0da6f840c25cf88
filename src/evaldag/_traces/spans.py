"""Spans as evaldag reads them: one plain record per span, whatever file or table it came from.

Attribute values are Python values (OTLP's ``AnyValue`` unwrapped: strings, numbers, booleans,
lists, dicts; bytes as bytes); times are nanoseconds since the epoch; ids are lowercase hex.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: OTLP's span kinds and status codes by number, as their JSON names them.
SPAN_KINDS = ("UNSPECIFIED", "INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER")
STATUS_CODES = ("UNSET", "OK", "ERROR")


@dataclass(frozen=True, slots=True)
class SpanEvent:
    """An event recorded on a span (``gen_ai.choice``, ``exception`` ...)."""

    name: str
    time_ns: int
    attributes: dict[str, Any]


@dataclass(slots=True)
class Span:
    """One span of a trace."""

    trace_id: str
    span_id: str
    parent_span_id: str | None
    name: str
    start_ns: int
    end_ns: int
    kind: str = "INTERNAL"
    attributes: dict[str, Any] = field(default_factory=dict)
    events: list[SpanEvent] = field(default_factory=list)
    status: str = "UNSET"
    status_message: str = ""
    resource: dict[str, Any] = field(default_factory=dict)
    scope: str = ""
    #: Where the span came from, for errors: ``spans.jsonl line 3`` ...
    source: str = ""

    @property
    def duration_ms(self) -> float | None:
        """How long the span took, in milliseconds; None when it recorded no end (OTLP's
        ``endTimeUnixNano`` missing or 0), not a negative time."""
        return (self.end_ns - self.start_ns) / 1e6 if self.end_ns else None

    @property
    def failed(self) -> bool:
        """Whether the span ended in error (status ERROR, or an ``exception`` event)."""
        return self.status == "ERROR" or any(e.name == "exception" for e in self.events)

    def __reduce__(self) -> tuple[Any, ...]:
        # the receiver pickles every span to its scoring process: positional fields unpickle in
        # one call, not dataclasses' attribute-by-attribute state (2-3x faster both ways)
        return (
            Span,
            (
                self.trace_id,
                self.span_id,
                self.parent_span_id,
                self.name,
                self.start_ns,
                self.end_ns,
                self.kind,
                self.attributes,
                self.events,
                self.status,
                self.status_message,
                self.resource,
                self.scope,
                self.source,
            ),
        )

    def where(self) -> str:
        """The span, named for an error message."""
        place = f" ({self.source})" if self.source else ""
        return f"span {self.span_id} '{self.name}' of trace {self.trace_id}{place}"


@dataclass(frozen=True, slots=True)
class LogEvent:
    """A log record tied to a span: how OpenTelemetry's GenAI instrumentations record message
    content as events (``gen_ai.user.message``, ``gen_ai.choice`` ...)."""

    name: str
    time_ns: int
    trace_id: str
    span_id: str
    body: Any
    attributes: dict[str, Any]
