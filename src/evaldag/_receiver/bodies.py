"""OTLP/HTTP bodies: the spans or log records of an export request (protobuf or JSON, gzip or
deflate compressed or not), and the bodies an exporter expects back: the export response (with
its partial success) and, for a refused request, a ``google.rpc.Status``."""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from evaldag._traces.otlp import (
    logs_of_protobuf,
    records_of_json,
    request_types,
    spans_of_protobuf,
)
from evaldag._traces.spans import LogEvent, Span
from evaldag.errors import EvalDagError

Signal = Literal["traces", "logs"]
PROTOBUF, JSON = "application/x-protobuf", "application/json"
#: Where the records of a request come from, in the errors that name a span.
SOURCE = "an OTLP/HTTP request"
_ZERO_TRACE, _ZERO_SPAN = "0" * 32, "0" * 16


class Refused(Exception):
    """A request the receiver does not take: its HTTP status and why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(slots=True)
class Received:
    """The records of one request, and the problems of those it refuses (partial success)."""

    spans: list[Span] = field(default_factory=list)
    logs: list[LogEvent] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def media_type(content_type: str) -> str:
    """The body's format, ``PROTOBUF`` or ``JSON``, from its ``Content-Type``; else refused."""
    kind = content_type.split(";", 1)[0].strip().lower()
    if kind in (PROTOBUF, "application/protobuf"):
        return PROTOBUF
    if kind == JSON:
        return JSON
    raise Refused(
        415,
        f"Content-Type {content_type or '(none)'!r} is not OTLP/HTTP's: send {PROTOBUF} or {JSON}",
    )


def decoded(body: bytes, encoding: str, limit: int) -> bytes:
    """``body`` uncompressed (``Content-Encoding`` gzip, deflate or identity), at most ``limit``
    bytes; a larger or broken one is refused."""
    kind = encoding.strip().lower()
    if kind in ("", "identity"):
        return body
    if kind not in ("gzip", "deflate"):
        raise Refused(415, f"Content-Encoding {encoding!r} is not supported: send gzip or none")
    inflater = zlib.decompressobj(zlib.MAX_WBITS | 16 if kind == "gzip" else zlib.MAX_WBITS)
    try:
        data = inflater.decompress(body, limit + 1)
    except zlib.error as error:
        raise Refused(400, f"the {kind} body cannot be decompressed ({error})") from None
    if len(data) > limit:
        raise Refused(413, f"the body is larger than {limit:,} bytes uncompressed")
    if not inflater.eof:
        raise Refused(400, f"the {kind} body ends before its compressed stream does")
    return data


def received(body: bytes, media: str, signal: Signal) -> Received:
    """The spans (``traces``) or log records (``logs``) of a request body; a span with an
    invalid id is refused alone, a body that is no request of its kind as a whole."""
    found = Received()
    if media == JSON:
        try:
            request = orjson.loads(body) if body.strip() else {}
        except orjson.JSONDecodeError as error:
            raise Refused(400, f"the body is not JSON ({error})") from None
        if not isinstance(request, dict):
            raise Refused(400, f"the body is a JSON {type(request).__name__}, not an object")
        key = "resourceSpans" if signal == "traces" else "resourceLogs"
        if not request.get(key):
            return found  # an empty request, or unknown fields alone: nothing to take
        try:
            records = list(records_of_json({key: request[key]}, SOURCE, found.problems))
        except (EvalDagError, AttributeError, TypeError, KeyError, ValueError) as error:
            problem = error.message if isinstance(error, EvalDagError) else repr(error)
            raise Refused(400, f"the body is no OTLP JSON {signal} request ({problem})") from None
    else:
        traces, logs = request_types()
        request = (traces if signal == "traces" else logs)()
        try:
            request.ParseFromString(body)
        except Exception as error:  # protobuf's DecodeError
            raise Refused(400, f"the body is no OTLP protobuf {signal} request ({error})") from None
        records = list(
            spans_of_protobuf(request, SOURCE) if signal == "traces" else logs_of_protobuf(request)
        )
    for record in records:
        if isinstance(record, Span):
            invalid = _invalid_ids(record)
            if invalid is None:
                found.spans.append(record)
            else:
                found.problems.append(invalid)
        else:
            found.logs.append(record)
    return found


def _invalid_ids(span: Span) -> str | None:
    """Why a span's ids are not valid (OTLP: 16- and 8-byte ids, not all zero), or None."""
    if len(span.trace_id) != 32 or span.trace_id == _ZERO_TRACE:
        return f"span {span.span_id or '(no id)'} {span.name!r} has trace id {span.trace_id!r}"
    if len(span.span_id) != 16 or span.span_id == _ZERO_SPAN:
        return f"a span {span.name!r} of trace {span.trace_id} has span id {span.span_id!r}"
    return None


def export_response(media: str, signal: Signal, refused: int, message: str) -> bytes:
    """The ``Export*ServiceResponse`` body: empty, or its partial success naming what was
    refused and why."""
    if media == JSON:
        if not refused:
            return b"{}"
        count = "rejectedSpans" if signal == "traces" else "rejectedLogRecords"
        return orjson.dumps({"partialSuccess": {count: str(refused), "errorMessage": message}})
    response = _response_type(signal)()
    if refused:
        partial = response.partial_success
        if signal == "traces":
            partial.rejected_spans = refused
        else:
            partial.rejected_log_records = refused
        partial.error_message = message
    return response.SerializeToString()


def status_body(media: str, status: int, message: str) -> bytes:
    """A ``google.rpc.Status`` body for a refused request, as OTLP/HTTP asks, in the request's
    format (written by hand: its message class is not in opentelemetry-proto)."""
    code = _RPC_CODES.get(status, 2)
    if media == JSON:
        return orjson.dumps({"code": code, "message": message})
    text = message.encode()
    return b"\x08" + _varint(code) + b"\x12" + _varint(len(text)) + text


#: gRPC's status codes of the HTTP statuses the receiver answers with.
_RPC_CODES = {400: 3, 401: 16, 404: 5, 408: 4, 413: 8, 415: 3, 429: 8, 503: 14}


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        out.append(low | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _response_type(signal: Signal) -> Any:
    if signal == "traces":
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceResponse,
        )

        return ExportTraceServiceResponse
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse

    return ExportLogsServiceResponse
