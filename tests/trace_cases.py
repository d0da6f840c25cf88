"""The trace fixtures (``fixtures/traces/``) by instrumentation and conversation, and their spans
as a table, for the tests of ``read_traces``."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from evaldag._traces.sources import trace_data

TRACES = Path(__file__).parent / "fixtures" / "traces"
#: What ``read_traces`` gives for each fixture (``test_traces_items_unchanged.py``).
EXPECTED = TRACES / "expected_items"
SHAPES = sorted(
    p.name
    for p in TRACES.iterdir()
    if p.is_dir() and not p.name.startswith("generate") and p != EXPECTED
)


def sources(shape: str, conversation: str) -> dict[str, list[Path]]:
    """The fixture's files by format: OTLP JSON, OTLP protobuf (with their log files), or
    Mastra's span records."""
    if shape == "mastra":
        return {"mastra": [TRACES / shape / f"{conversation}.json"]}
    found = {}
    for suffix in (".jsonl", ".pb"):
        paths = [TRACES / shape / f"{conversation}{suffix}"]
        logs = TRACES / shape / f"{conversation}.logs{suffix}"
        found[suffix] = paths + ([logs] if logs.exists() else [])
    return found


def spans_table(paths: list[Path]) -> pd.DataFrame:
    """The fixture's spans as a table, one row a span, as a tracing backend exports them."""
    return pd.DataFrame(
        [
            {
                "trace_id": s.trace_id,
                "span_id": s.span_id,
                "parent_span_id": s.parent_span_id,
                "name": s.name,
                "start_time": pd.Timestamp(s.start_ns, unit="ns", tz="UTC"),
                "end_time": pd.Timestamp(s.end_ns, unit="ns", tz="UTC"),
                "kind": s.kind,
                "status_code": s.status,
                "status_message": s.status_message,
                "attributes": json.dumps(s.attributes),
                "events": json.dumps(
                    [
                        {"name": e.name, "time": e.time_ns, "attributes": e.attributes}
                        for e in s.events
                    ]
                ),
                "service_name": s.resource.get("service.name"),
            }
            for s in trace_data(paths).spans
        ]
    )
