"""``read_traces`` throughput: spans read per second from OTLP JSON lines and OTLP protobuf.

The mix: the nine conversations of ``tests/fixtures/traces`` as each Python instrumentation
recorded them (openai-v2 with content on spans, in a log record and as log events;
OpenInference; pydantic-ai 5 and 6), in equal shares: 222 spans (and 95 log records) a round,
about 4 spans a trace, 0.5 to 3 kB of OTLP JSON a span. Each copy gets its own trace and span
ids and its own texts (the user's question and the answers end in the copy's number), so no two
traces are alike. The spans are written as an SDK's ``BatchSpanProcessor`` exports them through
the Collector's file exporter: requests of up to 512 spans (its default batch), one a line in
JSON, each after its 4-byte length in protobuf; log records likewise. ``--one-span-a-line``
writes a request a span instead (a ``SimpleSpanProcessor``: the fixtures' own framing).

Prints the figures (spans per second of CPU time, which other work on the machine does not
inflate, and of wall time), and beside them how fast parsing alone goes (orjson on the JSON lines;
protobuf's native parser, and with the attributes read into Python values): what no reader that
builds Python objects can beat. Writes ``benchmarks/results/read_traces.json`` and its section of
``benchmarks/RESULTS.md`` (``--one-span-a-line``: ``read_traces_one_span_a_line.json`` alone).
The issue's target: 100,000 spans/s.

    python benchmarks/read_traces.py [--spans 100000] [--one-span-a-line]
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import platform
import re
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
from results_md import markers, write_section

from evaldag import read_traces
from evaldag._traces.items import otel_items
from evaldag._traces.sources import trace_data
from evaldag._util.gc_pause import gc_paused

TRACES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "traces"
CONVERSATIONS = json.loads((TRACES.parent / "transcripts" / "conversations.json").read_text())[
    "conversations"
]
MIX = (
    "openai_v2_latest",
    "openai_v2_latest_events",
    "openai_v2_events",
    "openinference",
    "pydantic_ai",
    "pydantic_ai_v6",
)
BATCH = 512
#: How OTLP nests records in a request.
_NESTING = {"resourceSpans": ("scopeSpans", "spans"), "resourceLogs": ("scopeLogs", "logRecords")}


def templates() -> list[tuple[list[str], list[str], list[str]]]:
    """Each fixture's span lines, log lines and the texts a copy makes its own."""
    found = []
    for shape in MIX:
        for conversation in CONVERSATIONS:
            spans = TRACES / shape / f"{conversation['id']}.jsonl"
            logs = TRACES / shape / f"{conversation['id']}.logs.jsonl"
            texts = [conversation["user"]] + [
                s["text"] for s in conversation["steps"] if "text" in s
            ]
            found.append(
                (
                    spans.read_text().splitlines(),
                    logs.read_text().splitlines() if logs.exists() else [],
                    texts,
                )
            )
    return found


def _ids(lines: list[str]) -> list[str]:
    """The trace and span ids of OTLP JSON lines."""
    ids: set[str] = set()
    for line in lines:
        request = json.loads(line)
        for resource in request.get("resourceSpans", ()):
            for scope in resource["scopeSpans"]:
                for span in scope["spans"]:
                    ids.update(span.get(k) for k in ("traceId", "spanId", "parentSpanId"))
    ids.discard(None)
    ids.discard("")
    return sorted(ids)


def copies(spans_wanted: int) -> tuple[list[tuple[str, Any]], list[tuple[str, Any]], int]:
    """Copies of the fixture traces until they hold ``spans_wanted`` spans: their spans and log
    records, each with the resource and scope it was recorded under."""
    spans: list[tuple[str, Any]] = []
    logs: list[tuple[str, Any]] = []
    shapes = []
    for span_lines, log_lines, texts in templates():
        ids = _ids(span_lines)
        longest_first = sorted([*ids, *texts], key=len, reverse=True)
        pattern = re.compile("|".join(re.escape(x) for x in longest_first))
        shapes.append(("\n".join([*span_lines, *log_lines]), pattern, ids, set(texts)))
    copy = 0
    while len(spans) < spans_wanted:
        for number, (text, pattern, ids, texts) in enumerate(shapes):
            renamed = {
                old: (
                    f"{copy:016x}{number:016x}"
                    if len(old) == 32
                    else f"{copy:06x}{number:04x}{k:06x}"
                )
                for k, old in enumerate(ids)
            }
            renamed |= {old: f"{old} ({copy})" for old in texts}
            for line in pattern.sub(
                lambda found, names=renamed: names[found.group()], text
            ).splitlines():
                request = json.loads(line)
                for kind, (scopes, records) in _NESTING.items():
                    for resource in request.get(kind, ()):
                        for scope in resource[scopes]:
                            key = json.dumps([resource["resource"], scope["scope"]])
                            for record in scope[records]:
                                (spans if kind == "resourceSpans" else logs).append((key, record))
        copy += 1
    return spans, logs, len(spans)


def requests(records: list[tuple[str, Any]], kind: str, size: int) -> list[dict[str, Any]]:
    """OTLP JSON requests of up to ``size`` records each, grouped by resource and scope."""
    scopes, records_key = _NESTING[kind]
    out = []
    for start in range(0, len(records), size):
        grouped: dict[str, list[Any]] = {}
        for key, record in records[start : start + size]:
            grouped.setdefault(key, []).append(record)
        request = []
        for key, batch in grouped.items():
            resource, scope = json.loads(key)
            request.append({"resource": resource, scopes: [{"scope": scope, records_key: batch}]})
        out.append({kind: request})
    return out


def protobuf_bytes(jsons: list[dict[str, Any]]) -> bytes:
    """The requests as the Collector's file exporter writes protobuf: each after its length."""
    from google.protobuf import json_format
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    def as_base64(value: Any, key: str = "") -> Any:
        if isinstance(value, dict):
            return {k: as_base64(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [as_base64(item) for item in value]
        if key in ("traceId", "spanId", "parentSpanId") and value:
            return base64.b64encode(bytes.fromhex(value)).decode()
        return value

    out = bytearray()
    for request in jsons:
        kind = ExportTraceServiceRequest if "resourceSpans" in request else ExportLogsServiceRequest
        body = json_format.ParseDict(as_base64(request), kind()).SerializeToString()
        out += len(body).to_bytes(4, "big") + body
    return bytes(out)


def _best_cpu(work: Any) -> tuple[float, float, Any]:
    """The least CPU time and wall time of three runs of ``work``, and what it returned."""
    cpu_times, wall_times = [], []
    for _ in range(3):
        wall, cpu = time.perf_counter(), time.process_time()
        done = work()
        cpu_times.append(time.process_time() - cpu)
        wall_times.append(time.perf_counter() - wall)
    return min(cpu_times), min(wall_times), done


def rate(path: Path, spans: int) -> dict[str, float]:
    """``read_traces``' spans per second of CPU time and of wall time, the best of three; and
    of its two stages alone: reading the file's spans (and log records), and building the items
    of spans read already (the conventions, the transcript reader, trajectories, span records).
    """
    cpu, wall, items = _best_cpu(lambda: read_traces(path))
    with gc_paused():
        reading, _, data = _best_cpu(lambda: trace_data(path))
        building, _, _ = _best_cpu(lambda: otel_items(data.spans, data.logs, None, True))
    return {
        "items": len(items),
        "spans_per_cpu_s": spans / cpu,
        "spans_per_wall_s": spans / wall,
        "reading_spans_per_cpu_s": spans / reading,
        "building_items_spans_per_cpu_s": spans / building,
    }


def json_floor(path: Path, spans: int) -> float:
    """Spans per second of CPU time of orjson parsing the lines, and nothing else: as fast as
    any reader of this file can be that builds Python objects of it."""
    text = path.read_text()
    with gc_paused():
        cpu, _, _ = _best_cpu(lambda: [orjson.loads(line) for line in text.splitlines()])
    return spans / cpu


def protobuf_floor(path: Path, spans: int, trace_requests: int) -> dict[str, float]:
    """Spans per second of CPU time of protobuf's native parsing alone, and of that plus each
    span's ids, name, times and attributes read into Python values (of the file's first
    ``trace_requests`` requests, its trace requests)."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    data, frames, at = path.read_bytes(), [], 0
    while len(frames) < trace_requests:
        size = int.from_bytes(data[at : at + 4], "big")
        frames.append(data[at + 4 : at + 4 + size])
        at += 4 + size

    def parsed() -> list[Any]:
        requests = [ExportTraceServiceRequest() for _ in frames]
        for request, frame in zip(requests, frames, strict=True):
            request.ParseFromString(frame)
        return requests

    def read(requests: list[Any]) -> list[Any]:
        return [
            (
                s.trace_id.hex(),
                s.span_id.hex(),
                s.name,
                s.start_time_unix_nano,
                {kv.key: getattr(kv.value, kv.value.WhichOneof("value")) for kv in s.attributes},
            )
            for request in requests
            for r in request.resource_spans
            for scopes in r.scope_spans
            for s in scopes.spans
        ]

    with gc_paused():
        parse, _, requests = _best_cpu(parsed)
        walk, _, _ = _best_cpu(lambda: read(requests))
    return {"parse": spans / parse, "parse_and_attributes": spans / (parse + walk)}


def results_section(result: dict[str, Any]) -> str:
    """The benchmark's section of ``benchmarks/RESULTS.md``."""
    json_figures, pb_figures = result["figures"]["json"], result["figures"]["protobuf"]
    floors = result["floors"]
    best = max(json_figures["spans_per_cpu_s"], pb_figures["spans_per_cpu_s"])
    start, end = markers("read_traces")
    return f"""{start}
## read_traces (`benchmarks/read_traces.py`)

Measured {result["date"]} on {result["machine"]}; load average {result["load_average"]:.1f} \
(a 2-core VM shared with other developers' test suites: wall time is what the machine left this
process, CPU time its own work). {result["spans"]:,} spans and {result["log_records"]:,} log
records, {result["framing"]}: the mix of the module docstring (every Python instrumentation's
fixtures in equal shares, about 4 spans a trace, each copy with its own ids and texts).

| source | bytes a span | items | read_traces, spans/s of CPU time | of wall time | \
reading the spans alone | building the items alone | parsing alone, spans/s of CPU time |
| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
| OTLP JSON | {result["bytes_a_span"]["json"]:,.0f} | {json_figures["items"]:,} | \
{json_figures["spans_per_cpu_s"]:,.0f} | {json_figures["spans_per_wall_s"]:,.0f} | \
{json_figures["reading_spans_per_cpu_s"]:,.0f} | \
{json_figures["building_items_spans_per_cpu_s"]:,.0f} | \
{floors["json"]:,.0f} (orjson, nothing else) |
| OTLP protobuf | {result["bytes_a_span"]["protobuf"]:,.0f} | {pb_figures["items"]:,} | \
{pb_figures["spans_per_cpu_s"]:,.0f} | {pb_figures["spans_per_wall_s"]:,.0f} | \
{pb_figures["reading_spans_per_cpu_s"]:,.0f} | \
{pb_figures["building_items_spans_per_cpu_s"]:,.0f} | \
{floors["protobuf"]["parse"]:,.0f} native; {floors["protobuf"]["parse_and_attributes"]:,.0f} \
with the attributes as Python values |

Target 100,000 spans/s: {"met" if best >= 100_000 else "not met"} (best {best:,.0f} spans/s of \
CPU time). Parsing alone, before a single span is read as one, goes at {floors["json"]:,.0f} \
(JSON) and {floors["protobuf"]["parse_and_attributes"]:,.0f} (protobuf, with the attributes) \
spans/s of CPU time here: {_floor_reading(floors)} `read_traces` has two stages, each measured \
alone above: reading the file into spans, and building the items of them (the same code for \
every source: the conventions that say what each span is, each conversation through the \
transcript reader, about half of it, the trajectory and the span records of the `spans` \
column). {_stages_reading(result["figures"])} Raw figures: \
`benchmarks/results/read_traces.json`.
{end}"""


def _stages_reading(figures: dict[str, Any]) -> str:
    below = [
        f"{stage} ({source})"
        for source, figure in figures.items()
        for stage, key in (
            ("reading", "reading_spans_per_cpu_s"),
            ("building the items", "building_items_spans_per_cpu_s"),
        )
        if figure[key] < 100_000
    ]
    if not below:
        return "Each stage alone is above the target."
    return f"Below the target alone: {', '.join(below)}; a stage below it keeps the whole below."


def _floor_reading(floors: dict[str, Any]) -> str:
    fastest = max(floors["json"], floors["protobuf"]["parse_and_attributes"])
    if fastest < 100_000:
        return (
            "below the target, so on this machine no reader that builds Python objects of these "
            "spans reaches it."
        )
    return "above the target."


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spans", type=int, default=100_000)
    parser.add_argument("--one-span-a-line", action="store_true")
    args = parser.parse_args()
    spans, logs, count = copies(args.spans)
    size = 1 if args.one_span_a_line else BATCH
    traces = requests(spans, "resourceSpans", size)
    jsons = traces + requests(logs, "resourceLogs", BATCH)
    with tempfile.TemporaryDirectory() as folder:
        jsonl = Path(folder) / "spans.jsonl"
        jsonl.write_text("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in jsons))
        pb = Path(folder) / "spans.pb"
        pb.write_bytes(protobuf_bytes(jsons))
        sizes = {"json": jsonl.stat().st_size, "protobuf": pb.stat().st_size}
        figures = {"json": rate(jsonl, count), "protobuf": rate(pb, count)}
        floors = {
            "json": json_floor(jsonl, count),
            "protobuf": protobuf_floor(pb, count, len(traces)),
        }
    framing = "one span a request" if args.one_span_a_line else f"requests of {BATCH} spans"
    load = os.getloadavg()[0]
    print(f"{count} spans, {len(logs)} log records, {framing}; load average {load:.1f}")
    for source, figure in figures.items():
        print(
            f"{source:9} {sizes[source] / count:,.0f} bytes a span, {figure['items']} items: "
            f"{figure['spans_per_cpu_s']:,.0f} spans/s of CPU time, "
            f"{figure['spans_per_wall_s']:,.0f} spans/s of wall time"
        )
    print(f"parsing alone: {json.dumps(floors)} spans/s of CPU time")
    name = "read_traces_one_span_a_line" if args.one_span_a_line else "read_traces"
    out = Path(__file__).parent / "results" / f"{name}.json"
    result = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "load_average": load,
        "spans": count,
        "log_records": len(logs),
        "framing": framing,
        "bytes_a_span": {k: v / count for k, v in sizes.items()},
        "figures": figures,
        "floors": floors,
    }
    out.write_text(json.dumps(result, indent=2) + "\n")
    if not args.one_span_a_line:
        write_section("read_traces", results_section(result))
    print(f"written to {out}")


if __name__ == "__main__":
    main()
