"""OTLP trace data: ``ExportTraceServiceRequest`` as JSON (the Collector's file exporter writes
one a line) or as protobuf (what OTLP/HTTP exporters send), into :class:`Span` records.

JSON follows the OTLP/JSON rules (hex ids, integers as strings, enums as numbers or names) and
takes protobuf's own JSON mapping too (base64 ids), as tools write either.
"""

from __future__ import annotations

import base64
import binascii
import math
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import orjson

from evaldag._traces.spans import SPAN_KINDS, STATUS_CODES, LogEvent, Span, SpanEvent
from evaldag.errors import EvalDagError

_DOUBLES = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def unreadable(where: str, problem: str) -> EvalDagError:
    """The error of trace data that cannot be read at ``where``."""
    return EvalDagError(
        "EVALDAG_INVALID_TRACE",
        f"{where}: {problem}; see docs/traces.md for the trace data evaldag reads",
        details={"where": where},
    )


def json_requests(text: str, name: str) -> Iterator[tuple[Any, str]]:
    """Each ``ExportTraceServiceRequest`` of OTLP JSON text (one a line, or one document, or a
    list of them), with where it sits."""
    stripped = text.lstrip()
    if stripped.startswith("["):
        for k, request in enumerate(_loads(stripped, name)):
            yield request, f"{name} request {k}"
        return
    lines = text.splitlines()
    first = next((k for k, line in enumerate(lines) if line.strip()), None)
    if first is None:
        return
    try:
        request = orjson.loads(lines[first])
    except orjson.JSONDecodeError:
        yield _loads(text, name), name  # one pretty-printed document
        return
    yield request, f"{name} line {first + 1}"
    for number, line in enumerate(lines[first + 1 :], first + 2):
        if line.strip():
            yield _loads(line, f"{name} line {number}"), f"{name} line {number}"


def _loads(text: str, where: str) -> Any:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as error:
        raise unreadable(where, f"is not JSON ({error})") from None


def records_of_json(
    request: Any, where: str, problems: list[str] | None = None
) -> Iterator[Span | LogEvent]:
    """The spans (``resourceSpans``) and span-bound log events (``resourceLogs``: a Collector
    writes both kinds of lines into one file) of one OTLP JSON request.

    :param problems: when given, a span or log record that cannot be read is left out and its
        problem added here (an OTLP receiver refuses it alone); else it raises.
    """
    if not isinstance(request, Mapping) or not (
        isinstance(request.get("resourceSpans"), list)
        or isinstance(request.get("resourceLogs"), list)
    ):
        raise unreadable(
            where,
            "is no OTLP ExportTraceServiceRequest or ExportLogsServiceRequest (it has neither "
            "a 'resourceSpans' nor a 'resourceLogs' list)",
        )
    for resource_logs in request.get("resourceLogs") or ():
        for scope_logs in resource_logs.get("scopeLogs") or ():
            for record in scope_logs.get("logRecords") or ():
                event = _read(_json_log, problems, record, where)
                if event is not None:
                    yield event
    for r, resource_spans in enumerate(request.get("resourceSpans") or ()):
        resource = _attributes(
            (resource_spans.get("resource") or {}).get("attributes"), f"{where} resource {r}"
        )
        for scope_spans in resource_spans.get("scopeSpans") or ():
            scope = (scope_spans.get("scope") or {}).get("name") or ""
            for span in scope_spans.get("spans") or ():
                read = _read(_json_span, problems, span, resource, scope, where)
                if read is not None:
                    yield read


def _read(reader: Any, problems: list[str] | None, *args: Any) -> Any:
    """``reader(*args)``; None, its problem added to ``problems``, when it cannot be read."""
    if problems is None:
        return reader(*args)
    try:
        return reader(*args)
    except EvalDagError as error:
        problems.append(error.message)
        return None


def _json_log(record: Mapping[str, Any], where: str) -> LogEvent | None:
    """A log record tied to a span, or None (a plain log line, no event of a span)."""
    trace_id = _id(record.get("traceId"), 16, f"{where}, a log record's traceId")
    span_id = _id(record.get("spanId"), 8, f"{where}, a log record's spanId")
    attributes = _attributes(record.get("attributes"), f"{where} log record")
    name = record.get("eventName") or attributes.get("event.name")
    if not (trace_id and span_id and name):
        return None
    try:
        body = any_value(record.get("body"))
    except _UnknownValue as unknown:
        raise unreadable(
            f"{where} log record {name!r} body",
            f"holds a value of kind {unknown.args[0]!r}, which OTLP does not define",
        ) from None
    return LogEvent(
        name=name,
        time_ns=int(record.get("timeUnixNano") or record.get("observedTimeUnixNano") or 0),
        trace_id=trace_id,
        span_id=span_id,
        body=body,
        attributes=attributes,
    )


def _json_span(span: Mapping[str, Any], resource: dict[str, Any], scope: str, where: str) -> Span:
    span_id = _id(span.get("spanId"), 8, f"{where}, a span's spanId")
    place = f"{where}, span {span_id}"
    status = span.get("status") or {}
    events = span.get("events")
    return Span(
        _id(span.get("traceId"), 16, f"{place} traceId"),
        span_id,
        _id(span.get("parentSpanId"), 8, f"{place} parentSpanId") or None,
        span.get("name") or "",
        int(span.get("startTimeUnixNano") or 0),
        int(span.get("endTimeUnixNano") or 0),
        _enum(span.get("kind", 0), SPAN_KINDS, "SPAN_KIND_"),
        _attributes(span.get("attributes"), place),
        [
            SpanEvent(
                event.get("name") or "",
                int(event.get("timeUnixNano") or 0),
                _attributes(event.get("attributes"), f"{place} event {event.get('name')!r}"),
            )
            for event in events
        ]
        if events
        else [],
        _enum(status.get("code", 0), STATUS_CODES, "STATUS_CODE_"),
        status.get("message") or "",
        resource,
        scope,
        where,
    )


def _id(value: Any, size: int, where: str) -> str:
    """A trace or span id as lowercase hex: OTLP/JSON's hex, or protobuf JSON's base64."""
    if not value:
        return ""
    if isinstance(value, str):
        if len(value) == 2 * size:
            try:
                int(value, 16)
                return value.lower()
            except ValueError:
                pass
        try:
            raw = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raw = b""
        if len(raw) == size:
            return raw.hex()
    raise unreadable(where, f"is {value!r}, not a {size}-byte id in hex or base64")


def _enum(value: Any, names: tuple[str, ...], prefix: str) -> str:
    if isinstance(value, int) and 0 <= value < len(names):
        return names[value]
    if isinstance(value, str) and value.removeprefix(prefix) in names:
        return value.removeprefix(prefix)
    return str(value)


def _attributes(attributes: Any, where: str) -> dict[str, Any]:
    """OTLP ``KeyValue`` list as a dict of Python values (strings, the most of them, first)."""
    if not attributes:
        return {}
    read = {}
    for kv in attributes:
        value = kv.get("value")
        text = value.get("stringValue") if value else None
        if text is not None:
            read[kv["key"]] = text
            continue
        try:
            read[kv["key"]] = any_value(value)
        except _UnknownValue as unknown:
            raise unreadable(
                f"{where} attribute {kv['key']!r}",
                f"holds a value of kind {unknown.args[0]!r}, which OTLP does not define",
            ) from None
    return read


class _UnknownValue(Exception):
    """An ``AnyValue`` of a kind OTLP does not define (its key is the argument)."""


def any_value(value: Any) -> Any:
    """An OTLP/JSON ``AnyValue`` as its Python value."""
    if not value:
        return None
    kind, inner = next(iter(value.items()))
    if kind == "stringValue":
        return inner
    if kind == "intValue":
        return int(inner)
    if kind == "doubleValue":
        return _DOUBLES.get(inner, inner) if isinstance(inner, str) else float(inner)
    if kind == "boolValue":
        return bool(inner)
    if kind == "arrayValue":
        return [any_value(item) for item in (inner or {}).get("values") or ()]
    if kind == "kvlistValue":
        return {kv["key"]: any_value(kv.get("value")) for kv in (inner or {}).get("values") or ()}
    if kind == "bytesValue":
        return base64.b64decode(inner)
    raise _UnknownValue(kind)


# --- protobuf ----------------------------------------------------------------------------------


def protobuf_records(data: bytes, name: str) -> Iterator[Span | LogEvent]:
    """The spans and span-bound log events of OTLP protobuf bytes: one request (an OTLP/HTTP
    body), the Collector file exporter's requests each after a 4-byte big-endian length, or
    requests each after a varint length. A request is a trace or a logs request."""
    for message, where in _framed(data, name):
        if hasattr(message, "resource_logs"):
            yield from logs_of_protobuf(message)
        else:
            yield from spans_of_protobuf(message, where)


def _framed(data: bytes, name: str) -> Iterator[tuple[Any, str]]:
    """The requests of ``data``, parsed, in whichever of the three framings it uses."""
    for reader in (_fixed_frames, _varint_frames):
        frames = reader(data)
        if frames is not None:
            yield from ((frame, f"{name} message {k}") for k, frame in enumerate(frames))
            return
    message = _message(data)
    if message is None:
        raise unreadable(name, "is no OTLP protobuf trace or logs request")
    yield message, name


def _fixed_frames(data: bytes) -> list[Any] | None:
    frames, position = [], 0
    while position + 4 <= len(data):
        size = int.from_bytes(data[position : position + 4], "big")
        if size == 0 or position + 4 + size > len(data):
            return None
        frames.append(data[position + 4 : position + 4 + size])
        position += 4 + size
    return _parsed(frames) if frames and position == len(data) else None


def _varint_frames(data: bytes) -> list[Any] | None:
    frames, position = [], 0
    while position < len(data):
        size, position = _varint(data, position)
        if size <= 0 or position + size > len(data):
            return None
        frames.append(data[position : position + size])
        position += size
    return _parsed(frames) if len(frames) > 1 else None


def _parsed(frames: list[bytes]) -> list[Any] | None:
    """Each frame as the request it is; None when one is none (the framing is another)."""
    messages = []
    for frame in frames:
        message = _message(frame)
        if message is None:
            return None
        messages.append(message)
    return messages


def _message(data: bytes) -> Any:
    """``data`` as the OTLP request it is (traces or logs), or None.

    The two requests are alike on the wire (field 1 a list of resources), so each parse is
    checked: spans have 16-byte trace ids, log records a body or an event name.
    """
    traces, logs = request_types()
    for kind, valid in ((traces, _real_spans), (logs, _real_logs)):
        message = kind()
        try:
            message.ParseFromString(data)
        except Exception:  # noqa: BLE001, S112 - protobuf's DecodeError: try the other kind
            continue
        if valid(message):
            return message
    return None


def _real_spans(message: Any) -> bool:
    spans = [s for r in message.resource_spans for ss in r.scope_spans for s in ss.spans]
    return bool(spans) and all(len(span.trace_id) == 16 for span in spans)


def _real_logs(message: Any) -> bool:
    records = [x for r in message.resource_logs for sl in r.scope_logs for x in sl.log_records]
    return bool(records) and all(x.HasField("body") or x.event_name for x in records)


def logs_of_protobuf(request: Any) -> Iterator[LogEvent]:
    """The span-bound log events of one OTLP protobuf logs request."""
    for resource_logs in request.resource_logs:
        for scope_logs in resource_logs.scope_logs:
            for record in scope_logs.log_records:
                event = _proto_log(record)
                if event is not None:
                    yield event


def _proto_log(record: Any) -> LogEvent | None:
    attributes = _proto_attributes(record.attributes)
    name = record.event_name or attributes.get("event.name")
    if not (record.trace_id and record.span_id and name):
        return None
    return LogEvent(
        name=name,
        time_ns=record.time_unix_nano or record.observed_time_unix_nano,
        trace_id=record.trace_id.hex(),
        span_id=record.span_id.hex(),
        body=_proto_value(record.body),
        attributes=attributes,
    )


def _varint(data: bytes, position: int) -> tuple[int, int]:
    value, shift = 0, 0
    while position < len(data) and shift < 64:
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, position
        shift += 7
    return -1, position


def request_types() -> tuple[Any, Any]:
    try:
        from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
            ExportLogsServiceRequest,
        )
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
        )
    except ImportError:
        raise EvalDagError(
            "EVALDAG_MISSING_DEPENDENCY",
            "reading OTLP protobuf needs the 'opentelemetry-proto' package: "
            "pip install 'evaldag[otel]' (OTLP JSON needs nothing more)",
        ) from None
    return ExportTraceServiceRequest, ExportLogsServiceRequest


def spans_of_protobuf(request: Any, where: str) -> Iterator[Span]:
    """The spans of one OTLP protobuf request."""
    for resource_spans in request.resource_spans:
        resource = _proto_attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            scope = scope_spans.scope.name
            for span in scope_spans.spans:
                status = span.status
                kind, code = span.kind, status.code
                yield Span(
                    span.trace_id.hex(),
                    span.span_id.hex(),
                    span.parent_span_id.hex() or None,
                    span.name,
                    span.start_time_unix_nano,
                    span.end_time_unix_nano,
                    SPAN_KINDS[kind] if 0 <= kind < len(SPAN_KINDS) else str(kind),
                    _proto_attributes(span.attributes),
                    [
                        SpanEvent(e.name, e.time_unix_nano, _proto_attributes(e.attributes))
                        for e in span.events
                    ],
                    STATUS_CODES[code] if 0 <= code < len(STATUS_CODES) else str(code),
                    status.message,
                    resource,
                    scope,
                    where,
                )


def _proto_attributes(attributes: Iterable[Any]) -> dict[str, Any]:
    read = {}
    for kv in attributes:
        value = kv.value
        kind = value.WhichOneof("value")
        read[kv.key] = getattr(value, kind) if kind in _SCALARS else _proto_value(value)
    return read


#: ``AnyValue`` kinds whose field is their Python value.
_SCALARS = frozenset({"string_value", "int_value", "double_value", "bool_value", "bytes_value"})


def _proto_value(value: Any) -> Any:
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [_proto_value(item) for item in value.array_value.values]
    if kind == "kvlist_value":
        return _proto_attributes(value.kvlist_value.values)
    return getattr(value, kind)


# --- writing OTLP JSON -------------------------------------------------------------------------


def json_trace_request(spans: Iterable[Span]) -> dict[str, Any]:
    """Spans as one OTLP JSON ``ExportTraceServiceRequest`` (what ``records_of_json`` reads
    back), grouped by resource and scope."""
    groups: dict[tuple[bytes, str], list[Span]] = {}
    for span in spans:
        key = (orjson.dumps(span.resource, default=str, option=orjson.OPT_SORT_KEYS), span.scope)
        groups.setdefault(key, []).append(span)
    resources: dict[bytes, dict[str, Any]] = {}
    for (resource, scope), grouped in groups.items():
        entry = resources.setdefault(
            resource,
            {"resource": {"attributes": _json_attributes(grouped[0].resource)}, "scopeSpans": []},
        )
        entry["scopeSpans"].append(
            {"scope": {"name": scope}, "spans": [_span_json(span) for span in grouped]}
        )
    return {"resourceSpans": list(resources.values())}


def json_logs_request(logs: Iterable[LogEvent]) -> dict[str, Any]:
    """Span-bound log events as one OTLP JSON ``ExportLogsServiceRequest``."""
    records = [
        {
            "timeUnixNano": str(event.time_ns),
            "traceId": event.trace_id,
            "spanId": event.span_id,
            "eventName": event.name,
            "body": _any_json(event.body),
            "attributes": _json_attributes(event.attributes),
        }
        for event in logs
    ]
    return {"resourceLogs": [{"resource": {}, "scopeLogs": [{"logRecords": records}]}]}


def _span_json(span: Span) -> dict[str, Any]:
    written: dict[str, Any] = {
        "traceId": span.trace_id,
        "spanId": span.span_id,
        "name": span.name,
        "kind": SPAN_KINDS.index(span.kind) if span.kind in SPAN_KINDS else 0,
        "startTimeUnixNano": str(span.start_ns),
        "endTimeUnixNano": str(span.end_ns),
        "attributes": _json_attributes(span.attributes),
        "events": [
            {
                "name": event.name,
                "timeUnixNano": str(event.time_ns),
                "attributes": _json_attributes(event.attributes),
            }
            for event in span.events
        ],
        "status": {
            "code": STATUS_CODES.index(span.status) if span.status in STATUS_CODES else 0,
            "message": span.status_message,
        },
    }
    if span.parent_span_id:
        written["parentSpanId"] = span.parent_span_id
    return written


def _json_attributes(attributes: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [{"key": key, "value": _any_json(value)} for key, value in attributes.items()]


def _any_json(value: Any) -> dict[str, Any]:
    """A Python value as an OTLP/JSON ``AnyValue`` (``any_value`` reads it back)."""
    if value is None:
        return {}
    if isinstance(value, str):
        return {"stringValue": value}
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        if math.isfinite(value):
            return {"doubleValue": value}
        return {
            "doubleValue": "NaN" if value != value else "Infinity" if value > 0 else "-Infinity"
        }
    if isinstance(value, bytes | bytearray):
        return {"bytesValue": base64.b64encode(value).decode()}
    if isinstance(value, Mapping):
        return {"kvlistValue": {"values": _json_attributes(value)}}
    if isinstance(value, list | tuple):
        return {"arrayValue": {"values": [_any_json(item) for item in value]}}
    return {"stringValue": str(value)}
