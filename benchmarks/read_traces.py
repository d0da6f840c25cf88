"""``read_traces`` throughput: spans read per second from OTLP JSON lines and from OTLP protobuf.

The spans are the pydantic-ai fixture traces of ``tests/fixtures/traces`` (10 conversations'
worth of chat, tool and agent spans), copied under fresh trace ids until the file holds
``--spans`` spans. Prints the figures and writes ``benchmarks/results/read_traces.json``. The
issue's target: 100,000 spans/s.

    python benchmarks/read_traces.py [--spans 100000]
"""

from __future__ import annotations

import argparse
import json
import platform
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from evaldag import read_traces
from evaldag._traces.sources import trace_data

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "traces" / "pydantic_ai"


def otlp_lines(spans_wanted: int) -> tuple[list[str], int]:
    """OTLP JSON lines holding about ``spans_wanted`` spans, each copy of a fixture trace under
    its own trace id."""
    templates = [p.read_text().splitlines() for p in sorted(FIXTURES.glob("*.jsonl"))]
    lines, spans, copy = [], 0, 0
    while spans < spans_wanted:
        for template in templates:
            trace_id = f"{copy:032x}"
            for line in template:
                request = json.loads(line)
                for resource in request["resourceSpans"]:
                    for scope in resource["scopeSpans"]:
                        for span in scope["spans"]:
                            span["traceId"] = trace_id
                            spans += 1
                lines.append(json.dumps(request))
            copy += 1
    return lines, spans


def protobuf_file(spans: list, path: Path) -> None:
    """The same spans as one OTLP protobuf request."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    request = ExportTraceServiceRequest()
    scope = request.resource_spans.add().scope_spans.add()
    for span in spans:
        out = scope.spans.add()
        out.trace_id = bytes.fromhex(span.trace_id)
        out.span_id = bytes.fromhex(span.span_id)
        if span.parent_span_id:
            out.parent_span_id = bytes.fromhex(span.parent_span_id)
        out.name = span.name
        out.start_time_unix_nano = span.start_ns
        out.end_time_unix_nano = span.end_ns
        for key, value in span.attributes.items():
            attribute = out.attributes.add()
            attribute.key = key
            if isinstance(value, bool):
                attribute.value.bool_value = value
            elif isinstance(value, int):
                attribute.value.int_value = value
            elif isinstance(value, float):
                attribute.value.double_value = value
            else:
                text = value if isinstance(value, str) else json.dumps(value)
                attribute.value.string_value = text
        if span.status == "ERROR":
            out.status.code = 2
            out.status.message = span.status_message
    path.write_bytes(request.SerializeToString())


def rate(path: Path, spans: int) -> dict[str, float]:
    started = time.perf_counter()
    parsed = trace_data(path)
    parsed_at = time.perf_counter()
    items = read_traces(path)
    done = time.perf_counter()
    assert len(parsed.spans) == spans, (len(parsed.spans), spans)
    return {
        "items": len(items),
        "parse_spans_per_s": spans / (parsed_at - started),
        "read_traces_spans_per_s": spans / (done - parsed_at),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spans", type=int, default=100_000)
    args = parser.parse_args()
    lines, spans = otlp_lines(args.spans)
    with tempfile.TemporaryDirectory() as folder:
        jsonl = Path(folder) / "spans.jsonl"
        jsonl.write_text("\n".join(lines) + "\n")
        pb = Path(folder) / "spans.pb"
        protobuf_file(trace_data(jsonl).spans, pb)
        figures = {"json": rate(jsonl, spans), "protobuf": rate(pb, spans)}
    for source, figure in figures.items():
        print(
            f"{source:9} {spans} spans, {figure['items']} items: parsed at "
            f"{figure['parse_spans_per_s']:,.0f} spans/s; read_traces (parse + items) at "
            f"{figure['read_traces_spans_per_s']:,.0f} spans/s"
        )
    out = Path(__file__).parent / "results" / "read_traces.json"
    out.write_text(
        json.dumps(
            {
                "machine": f"{platform.machine()}, Python {platform.python_version()}",
                "date": datetime.now(UTC).isoformat(timespec="seconds"),
                "spans": spans,
                "figures": figures,
            },
            indent=2,
        )
        + "\n"
    )
    print(f"written to {out}")


if __name__ == "__main__":
    main()
