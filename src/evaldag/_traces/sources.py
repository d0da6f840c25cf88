"""Where traces come from: OTLP files (JSON lines, protobuf), a table of spans (a DataFrame or a
Parquet / CSV file, one row a span) and Mastra's span records; a folder or a glob of them."""

from __future__ import annotations

import glob as globbing
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from evaldag._traces.otlp import json_requests, protobuf_records, records_of_json, unreadable
from evaldag._traces.spans import LogEvent, Span, SpanEvent

_JSON = (".jsonl", ".json", ".ndjson")
_PROTOBUF = (".pb", ".otlp", ".bin", ".binpb", ".protobuf")
_TABLES = (".parquet", ".pq", ".csv")
#: The columns of a table of spans, and the other names tools give them.
_COLUMNS = {
    "trace_id": ("trace_id", "traceId", "TraceId", "context.trace_id"),
    "span_id": ("span_id", "spanId", "SpanId", "context.span_id"),
    "parent_span_id": ("parent_span_id", "parentSpanId", "ParentSpanId", "parent_id"),
    "name": ("name", "span_name", "SpanName"),
    "start": ("start_time", "startTimeUnixNano", "start_time_unix_nano", "Timestamp"),
    "end": ("end_time", "endTimeUnixNano", "end_time_unix_nano"),
    "kind": ("kind", "span_kind", "SpanKind"),
    "status": ("status_code", "status", "StatusCode"),
    "status_message": ("status_message", "StatusMessage"),
    "attributes": ("attributes", "SpanAttributes"),
    "events": ("events", "Events"),
    "resource": ("resource_attributes", "resource", "ResourceAttributes"),
    "service": ("service_name", "ServiceName"),
}


@dataclass(slots=True)
class TraceData:
    """Everything read: OpenTelemetry spans and their log events, and Mastra's span records."""

    spans: list[Span] = field(default_factory=list)
    logs: list[LogEvent] = field(default_factory=list)
    mastra: list[dict[str, Any]] = field(default_factory=list)


def trace_data(source: Any) -> TraceData:
    """All spans and records of ``source``."""
    data = TraceData()
    _add(source, data)
    return data


def _add(source: Any, data: TraceData) -> None:
    if isinstance(source, pd.DataFrame):
        data.spans.extend(_table_spans(source, "the DataFrame"))
    elif isinstance(source, str | os.PathLike):
        for path in _paths(source):
            _add_file(path, data)
    elif isinstance(source, Mapping):
        _add_records([source], data, "the given dict")
    elif isinstance(source, Iterable):
        items = list(source)
        if items and all(isinstance(item, Mapping) for item in items):
            _add_records(items, data, "the given list")
        else:
            for item in items:
                _add(item, data)
    else:
        raise unreadable(
            "source",
            f"is a {type(source).__name__}; give a path (OTLP .jsonl/.json or .pb, a spans "
            ".parquet/.csv, Mastra's span records .json), a folder or glob of them, a DataFrame "
            "of spans, or a list of those",
        )


def _paths(source: str | os.PathLike[str]) -> list[Path]:
    path = Path(source)
    if path.is_dir():
        found = sorted(p for p in path.rglob("*") if p.is_file() and _known(p))
        if not found:
            raise unreadable(str(path), "holds no trace file (.jsonl, .json, .pb, .parquet, .csv)")
        return found
    if path.exists():
        return [path]
    matches = sorted(Path(p) for p in globbing.glob(str(source), recursive=True))
    if not matches:
        raise unreadable(str(source), "does not exist and matches no file")
    return matches


def _known(path: Path) -> bool:
    return path.suffix.lower() in (*_JSON, *_PROTOBUF, *_TABLES)


def _add_file(path: Path, data: TraceData) -> None:
    suffix = path.suffix.lower()
    name = path.name
    if suffix in _PROTOBUF:
        for record in protobuf_records(path.read_bytes(), name):
            _keep(record, data)
    elif suffix in _TABLES:
        table = pd.read_parquet(path) if suffix != ".csv" else pd.read_csv(path)
        data.spans.extend(_table_spans(table, name))
    elif suffix in _JSON:
        text = path.read_text(encoding="utf-8-sig")
        if _mastra_json(text):
            document = json.loads(text)
            records = document.get("spans") if isinstance(document, Mapping) else document
            _add_records(records, data, name)
            return
        for request, where in json_requests(text, name):
            for record in records_of_json(request, where):
                _keep(record, data)
    else:
        raise unreadable(
            name,
            f"has the suffix {suffix!r}; trace files are OTLP JSON (.jsonl, .json), OTLP "
            "protobuf (.pb), a spans table (.parquet, .csv) or Mastra's span records (.json)",
        )


def _keep(record: Span | LogEvent, data: TraceData) -> None:
    if isinstance(record, Span):
        data.spans.append(record)
    else:
        data.logs.append(record)


def _mastra_json(text: str) -> bool:
    """Whether JSON text is Mastra's span records (``{traceId, spans}`` or a list of them)."""
    head = text.lstrip()[:4096]
    return '"spanType"' in head and '"resourceSpans"' not in head


def _add_records(records: Any, data: TraceData, where: str) -> None:
    for k, record in enumerate(records or ()):
        if isinstance(record, Mapping) and ("resourceSpans" in record or "resourceLogs" in record):
            for found in records_of_json(record, f"{where} request {k}"):
                _keep(found, data)
        elif isinstance(record, Mapping) and "spanType" in record and "spanId" in record:
            data.mastra.append(dict(record))
        else:
            raise unreadable(
                f"{where} entry {k}",
                "is neither an OTLP request ('resourceSpans') nor a Mastra span record "
                "('spanId', 'spanType')",
            )


# --- a table of spans ------------------------------------------------------------------------


def _table_spans(table: pd.DataFrame, where: str) -> list[Span]:
    """Spans from a table, one row a span (columns as ``docs/traces.md`` lists them; attribute
    columns may also be flattened as ``attributes.<key>``)."""
    columns = {name: _column(table, names) for name, names in _COLUMNS.items()}
    for required in ("trace_id", "span_id", "name", "start", "end"):
        if columns[required] is None:
            raise unreadable(
                where,
                f"has no {required} column (one of {list(_COLUMNS[required])}); a spans table "
                f"has one row a span; its columns: {[str(c) for c in table.columns]}",
            )
    flat = [c for c in table.columns if isinstance(c, str) and c.startswith("attributes.")]
    spans = []
    for number, row in enumerate(table.to_dict("records")):
        place = f"{where} row {number}"
        attributes = _mapping(
            row.get(columns["attributes"]) if columns["attributes"] else None, place
        )
        for column in flat:
            if not _missing(row[column]):
                attributes[column.removeprefix("attributes.")] = _plain(row[column])
        resource = _mapping(row.get(columns["resource"]) if columns["resource"] else None, place)
        if columns["service"] and not _missing(row[columns["service"]]):
            resource.setdefault("service.name", row[columns["service"]])
        parent = row.get(columns["parent_span_id"]) if columns["parent_span_id"] else None
        spans.append(
            Span(
                trace_id=str(row[columns["trace_id"]]).lower(),
                span_id=str(row[columns["span_id"]]).lower(),
                parent_span_id=None if _missing(parent) or parent == "" else str(parent).lower(),
                name=str(row[columns["name"]]),
                start_ns=_nanoseconds(row[columns["start"]], place),
                end_ns=_nanoseconds(row[columns["end"]], place),
                kind=_text_or(row, columns["kind"], "INTERNAL").removeprefix("SPAN_KIND_"),
                attributes=attributes,
                events=_events(row.get(columns["events"]) if columns["events"] else None, place),
                status=_text_or(row, columns["status"], "UNSET")
                .removeprefix("STATUS_CODE_")
                .upper(),
                status_message=_text_or(row, columns["status_message"], ""),
                resource=resource,
                source=place,
            )
        )
    return spans


def _column(table: pd.DataFrame, names: tuple[str, ...]) -> str | None:
    return next((name for name in names if name in table.columns), None)


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and value != value)


def _plain(value: Any) -> Any:
    from evaldag._reader import plain_data

    return plain_data(value)


def _mapping(value: Any, where: str) -> dict[str, Any]:
    if _missing(value):
        return {}
    value = _plain(value)
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else {}
        except ValueError:
            raise unreadable(where, "has attributes that are neither a map nor JSON text") from None
    if isinstance(value, list):  # Arrow's map type: a list of (key, value) pairs
        value = dict(value)
    if not isinstance(value, dict):
        raise unreadable(where, f"has attributes of type {type(value).__name__}, not a map")
    return value


def _events(value: Any, where: str) -> list[SpanEvent]:
    if _missing(value):
        return []
    value = _plain(value)
    if isinstance(value, str):
        value = json.loads(value) if value.strip() else []
    return [
        SpanEvent(
            str(event.get("name", "")),
            _nanoseconds(event.get("time", event.get("timeUnixNano", 0)), where),
            _mapping(event.get("attributes"), where),
        )
        for event in value or ()
    ]


def _text_or(row: Mapping[str, Any], column: str | None, default: str) -> str:
    if column is None or _missing(row.get(column)):
        return default
    value = row[column]
    if isinstance(value, int):  # OTLP's enums by number
        from evaldag._traces.spans import SPAN_KINDS, STATUS_CODES

        names = STATUS_CODES if column in _COLUMNS["status"] else SPAN_KINDS
        return names[value] if 0 <= value < len(names) else str(value)
    return str(value)


def _nanoseconds(value: Any, where: str) -> int:
    """A time as nanoseconds since the epoch: integers as nanoseconds, datetimes and ISO text."""
    if isinstance(value, bool) or _missing(value):
        raise unreadable(where, f"has no time ({value!r})")
    if isinstance(value, int) or (isinstance(value, str) and value.isdigit()):
        return int(value)
    try:
        stamp = pd.Timestamp(value)
    except (ValueError, TypeError):
        raise unreadable(where, f"has a time {value!r} that is no timestamp") from None
    return int((stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp).value)
