"""The OTLP receiver under load: ``--rate`` traces a second of 10 spans each, sent as
OpenTelemetry's OTLP/HTTP exporters send them, scored into a SQLite store.

Each trace is the openai-v2 instrumentation's ``multi_step`` fixture (an ``invoke_agent`` span,
three ``chat`` spans holding their messages, two ``execute_tool`` spans) with the spans an app's
other instrumentations add around it (an HTTP client span under each chat, a database query
under a tool): 10 spans, about 6 KB of protobuf. A sender process (standing for many app
processes: encoding spans is the apps' cost, not the receiver's) posts them in batches of
``--batch`` traces (a ``BatchSpanProcessor``'s export), each trace under fresh ids, on a fixed
schedule; a 429 is retried after its ``Retry-After``, as exporters do.

Two runs: a store that keeps up (SQLite), and a store that sleeps ``--slow-ms`` per write (a
batch of rows), which the receiver cannot keep up with: it must refuse (429) rather than grow,
and lose nothing it took (what it did not score by its stop is in the spool file).

Reported: traces taken and scored per second, the latency from a trace's export being answered
to its rows being stored (its grace included), peak RSS of the receiver and of its scoring
processes, and CPU seconds per trace (the machine is shared: CPU time is the steady figure).
Writes ``benchmarks/results/otlp_receiver.json`` and the section of ``benchmarks/RESULTS.md``.

    python benchmarks/otlp_receiver.py [--rate 1000] [--seconds 20] [--processes 1]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import platform
import random
import statistics
import subprocess
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psutil
from results_md import markers, write_section

from evaldag import OtlpReceiver, ScoreStore, checks
from evaldag._store.sql import SqlScoreStore

BENCHMARKS = Path(__file__).resolve().parent
FIXTURE = BENCHMARKS.parent / "tests" / "fixtures" / "traces" / "openai_v2_latest" / "multi_step.pb"
SECTION = markers("otlp_receiver")
GATES = [
    checks.no_error_spans(),
    checks.did_not_call("delete_db"),
    checks.span_count("chat *", max=5),
]


# --- the traces ------------------------------------------------------------------------------


def template() -> tuple[list[bytes], list[bytes], bytes, bytes]:
    """The 10 spans of one trace, serialized, with the trace id and the span ids they hold
    (to be replaced per copy), and the resource's bytes."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )
    from opentelemetry.proto.trace.v1.trace_pb2 import Span

    from evaldag._traces.otlp import _fixed_frames

    request = ExportTraceServiceRequest()
    data = FIXTURE.read_bytes()
    request.ParseFromString((_fixed_frames(data) or [data])[0])
    resource_spans = request.resource_spans[0]
    spans = [span for scope in resource_spans.scope_spans for span in scope.spans]
    trace_id = spans[0].trace_id
    made = []
    for n, span in enumerate(s for s in spans if s.name.startswith(("chat", "execute_tool"))):
        child = Span(trace_id=trace_id, span_id=bytes([0xE0 + n]) * 8, parent_span_id=span.span_id)
        child.start_time_unix_nano = span.start_time_unix_nano + 1_000
        child.end_time_unix_nano = span.end_time_unix_nano - 1_000
        if span.name.startswith("chat"):
            child.name, child.kind = "POST", Span.SPAN_KIND_CLIENT
            for key, value in (
                ("http.request.method", "POST"),
                ("url.full", "https://api.openai.com/v1/chat/completions"),
                ("server.address", "api.openai.com"),
            ):
                _attribute(child, key, value)
            _attribute(child, "http.response.status_code", 200)
        elif "lookup" in span.name:
            child.name, child.kind = "SELECT flights", Span.SPAN_KIND_CLIENT
            _attribute(child, "db.system.name", "postgresql")
            _attribute(child, "db.query.text", "SELECT * FROM flights WHERE origin = $1")
        else:
            continue
        made.append(child)
    every = spans + made
    assert len(every) == 10, len(every)
    return (
        [span.SerializeToString() for span in every],
        [span.span_id for span in every],
        trace_id,
        resource_spans.resource.SerializeToString(),
    )


def _attribute(span: Any, key: str, value: Any) -> None:
    attribute = span.attributes.add()
    attribute.key = key
    if isinstance(value, int):
        attribute.value.int_value = value
    else:
        attribute.value.string_value = value


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field."""
    size, out = len(payload), bytearray([number << 3 | 2])
    while True:
        low, size = size & 0x7F, size >> 7
        out.append(low | (0x80 if size else 0))
        if not size:
            return bytes(out) + payload


def request_body(shape: tuple, traces: int) -> tuple[bytes, list[str]]:
    """One export of ``traces`` traces under fresh ids, as one resource's one scope of spans
    (what a BatchSpanProcessor sends), and their trace ids."""
    spans, span_ids, trace_id, resource = shape
    encoded, ids = [], []
    for _ in range(traces):
        fresh_trace = random.randbytes(16)
        swaps = [(trace_id, fresh_trace)] + [(old, random.randbytes(8)) for old in span_ids]
        for span in spans:
            for old, new in swaps:
                span = span.replace(old, new)
            encoded.append(_field(2, span))
        ids.append(fresh_trace.hex())
    scope = _field(1, b"") + b"".join(encoded)
    return _field(1, _field(1, resource) + _field(2, scope)), ids


# --- the sender ------------------------------------------------------------------------------


def send(url: str, rate: float, seconds: float, batch: int, out: str) -> None:
    """Post ``rate`` traces a second for ``seconds``, in requests of ``batch`` traces; write
    each trace's answer time (taken) and the counts to ``out``."""
    asyncio.run(_sending(url, rate, seconds, batch, Path(out)))


async def _sending(url: str, rate: float, seconds: float, batch: int, out: Path) -> None:
    import aiohttp

    shape = template()
    requests = int(rate * seconds / batch)
    interval = batch / rate
    taken: dict[str, float] = {}
    round_trips: list[float] = []
    counts = {"requests": 0, "retried": 0, "throttled": 0, "failed": 0, "late_starts": 0}

    async def post(session: aiohttp.ClientSession, body: bytes, ids: list[str]) -> None:
        sent = time.monotonic()
        deadline = sent + 120
        while time.monotonic() < deadline:
            async with session.post(
                url, data=body, headers={"Content-Type": "application/x-protobuf"}
            ) as answer:
                await answer.read()
                if answer.status == 200:
                    taken.update(dict.fromkeys(ids, time.time()))
                    round_trips.append(time.monotonic() - sent)
                    return
                if answer.status not in (429, 503):
                    counts["failed"] += 1
                    return
                counts["throttled"] += 1
                retry = float(answer.headers.get("Retry-After", "1"))
            counts["retried"] += 1
            await asyncio.sleep(retry)
        counts["failed"] += 1

    connector = aiohttp.TCPConnector(limit=64)
    async with aiohttp.ClientSession(connector=connector) as session:
        start = time.monotonic()
        tasks = []
        for k in range(requests):
            body, ids = request_body(shape, batch)
            wait = start + k * interval - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            else:
                counts["late_starts"] += 1
            counts["requests"] += 1
            tasks.append(asyncio.create_task(post(session, body, ids)))
        sent_in = time.monotonic() - start
        await asyncio.gather(*tasks)
        answered_in = time.monotonic() - start
    out.write_text(
        json.dumps(
            {
                "taken": taken,
                "sent_in_s": sent_in,
                "answered_in_s": answered_in,
                "traces_sent": requests * batch,
                "round_trips": sorted(round_trips),
                **counts,
            }
        )
    )


# --- a slow store ----------------------------------------------------------------------------


class SlowStore(ScoreStore):
    """A SQLite store that sleeps before each write (a batch of rows): one that cannot keep up.
    It pickles as its path and delay, so a scoring process opens its own."""

    def __init__(self, path: str, delay: float) -> None:
        self.path, self.delay = path, delay
        self.location = f"slow({path})"
        self._store: SqlScoreStore | None = None

    def _inner(self) -> SqlScoreStore:
        if self._store is None:
            self._store = SqlScoreStore(self.path)
        return self._store

    def save(self, rows: Any) -> int:
        time.sleep(self.delay)
        return self._inner().save(rows)

    def scores(self, **filters: Any) -> Any:
        return self._inner().scores(**filters)

    def close(self) -> None:
        if self._store is not None:
            self._store.close()

    def __reduce__(self) -> tuple[Any, ...]:
        return (SlowStore, (self.path, self.delay))


# --- one run ---------------------------------------------------------------------------------


class Watch:
    """Samples the receiver's process tree: peak RSS of the receiver and of its scoring
    processes (its children but the sender), every 50 ms."""

    def __init__(self) -> None:
        self.process = psutil.Process()
        self.peak_main = self.peak_children = 0
        self.sender: int | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Watch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            try:
                self.peak_main = max(self.peak_main, self.process.memory_info().rss)
                children = sum(c.memory_info().rss for c in self._scoring())
            except psutil.Error:
                continue
            self.peak_children = max(self.peak_children, children)

    def _scoring(self) -> list[psutil.Process]:
        return [c for c in self.process.children(recursive=True) if c.pid != self.sender]

    def cpu(self) -> tuple[float, float]:
        """CPU seconds so far (user + system) of the receiver's process and of its scoring
        processes."""
        own = self.process.cpu_times()
        children = 0.0
        for child in self._scoring():
            try:
                times = child.cpu_times()
                children += times.user + times.system
            except psutil.Error:
                pass
        return own.user + own.system, children


def run(args: argparse.Namespace, slow: bool, folder: Path) -> dict[str, Any]:
    path = folder / ("slow.db" if slow else "scores.db")
    store: Any = SlowStore(str(path), args.slow_ms / 1000) if slow else str(path)
    receiver = OtlpReceiver(
        GATES,
        store=store,
        grace=args.grace,
        processes=args.processes,
        shutdown_timeout=10.0,
        spool=folder / ("slow-spool.jsonl" if slow else "spool.jsonl"),
    ).start(port=0)
    time.sleep(3)  # the scoring processes import evaldag and the scorers
    out = folder / ("slow-sent.json" if slow else "sent.json")
    context = multiprocessing.get_context("spawn")
    sender = context.Process(
        target=send,
        args=(f"{receiver.url}/v1/traces", args.rate, args.seconds, args.batch, str(out)),
    )
    with Watch() as watch:
        cpu_before = watch.cpu()
        started = time.time()
        sender.start()
        watch.sender = sender.pid
        sender.join()
        sent = json.loads(out.read_text())
        taken = len(sent["taken"])
        wanted = taken * len(GATES)
        deadline = time.monotonic() + (args.drain if not slow else 5.0)
        while time.monotonic() < deadline:
            stats = receiver.stats()
            if stats.scored + stats.errors >= wanted:
                break
            time.sleep(0.1)
        scored_at = time.time()
        cpu_after = watch.cpu()
        stats = receiver.stop()
    rows = _rows(path)
    latencies = sorted(
        max(0.0, created - sent["taken"][trace_id])
        for trace_id, created in rows.items()
        if trace_id in sent["taken"]
    )
    scored_traces = sum(1 for trace_id in sent["taken"] if trace_id in rows)
    last_row = max(rows.values()) if rows else scored_at
    main_cpu = cpu_after[0] - cpu_before[0]
    workers_cpu = cpu_after[1] - cpu_before[1]
    return {
        "store": f"sleeps {args.slow_ms:g} ms a write" if slow else "SQLite",
        "traces_sent": sent["traces_sent"],
        "traces_taken": taken,
        "send_seconds": sent["sent_in_s"],
        "taken_per_s": taken / sent["answered_in_s"],
        "traces_scored": scored_traces,
        "scored_per_s": scored_traces / max(1e-9, last_row - started),
        "lost": taken - scored_traces - stats.spooled,
        "spooled": stats.spooled,
        "throttled_answers": sent["throttled"],
        "failed_requests": sent["failed"],
        "late_starts": sent["late_starts"],
        "export_p50_s": statistics.median(sent["round_trips"]) if sent["round_trips"] else None,
        "export_p99_s": sent["round_trips"][int(0.99 * (len(sent["round_trips"]) - 1))]
        if sent["round_trips"]
        else None,
        "latency_p50_s": statistics.median(latencies) if latencies else None,
        "latency_p99_s": latencies[int(0.99 * (len(latencies) - 1))] if latencies else None,
        "peak_rss_receiver_mb": watch.peak_main / 2**20,
        "peak_rss_scoring_mb": watch.peak_children / 2**20,
        "cpu_receiver_s": main_cpu,
        "cpu_scoring_s": workers_cpu,
        "cpu_ms_per_trace": 1000 * (main_cpu + workers_cpu) / max(1, scored_traces),
        "stats": stats.model_dump(),
    }


def _rows(path: Path) -> dict[str, float]:
    """Each trace's first row time (epoch seconds), read from the store."""
    scores = SqlScoreStore(str(path)).scores(source="LIVE")
    first = scores.groupby("trace_id")["created_at"].min()
    return {trace_id: stamp.timestamp() for trace_id, stamp in first.items()}


# --- the report ------------------------------------------------------------------------------


def _load() -> str:
    return ", ".join(f"{value:.2f}" for value in os.getloadavg())


def section(figures: dict[str, Any]) -> str:
    start, end = SECTION
    runs = figures["runs"]
    lines = [
        start,
        "## The OTLP receiver under load (`benchmarks/otlp_receiver.py`)",
        "",
        f"Measured {figures['date']} on {figures['machine']}: a 2-core VM shared with other "
        f"developers' jobs; load average (1, 5, 15 min) {figures['load_before']} before, "
        f"{figures['load_after']} after. {figures['rate']:g} traces/s of 10 spans offered for "
        f"{figures['seconds']:g} s in exports of {figures['batch']} traces (protobuf), "
        f"{figures['processes']} scoring process(es), grace {figures['grace']:g} s, 3 span "
        "checks as gates. The sender ran on the same 2 cores (its CPU is not in the figures).",
        "",
        "| store | taken/s | scored/s | lost | spooled | 429s | p50 / p99 latency | peak RSS "
        "receiver / scoring | CPU ms per trace |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for run_figures in runs:
        p50, p99 = run_figures["latency_p50_s"], run_figures["latency_p99_s"]
        latency = "-" if p50 is None else f"{p50:.2f} / {p99:.2f} s"
        lines.append(
            f"| {run_figures['store']} | {run_figures['taken_per_s']:,.0f} | "
            f"{run_figures['scored_per_s']:,.0f} | {run_figures['lost']} | "
            f"{run_figures['spooled']} | {run_figures['throttled_answers']} | {latency} | "
            f"{run_figures['peak_rss_receiver_mb']:.0f} / {run_figures['peak_rss_scoring_mb']:.0f}"
            f" MB | {run_figures['cpu_ms_per_trace']:.2f} |"
        )
    lines += ["", figures.get("notes", "").strip(), "", end]
    return "\n".join(line for line in lines if line is not None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=1000.0)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--batch", type=int, default=50)
    parser.add_argument("--processes", type=int, default=1)
    parser.add_argument("--grace", type=float, default=0.5)
    parser.add_argument("--slow-ms", type=float, default=1000.0)
    parser.add_argument("--drain", type=float, default=120.0)
    parser.add_argument("--only", choices=("fast", "slow"))
    parser.add_argument("--write", action="store_true", help="write RESULTS.md's section")
    args = parser.parse_args()
    figures: dict[str, Any] = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}",
        "uptime": subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip(),
        "load_before": _load(),
        **{key: getattr(args, key) for key in ("rate", "seconds", "batch", "processes", "grace")},
        "runs": [],
    }
    with tempfile.TemporaryDirectory() as folder:
        for slow in (False, True):
            if args.only and (args.only == "slow") != slow:
                continue
            figures["runs"].append(result := run(args, slow, Path(folder)))
            print(json.dumps({k: v for k, v in result.items() if k != "stats"}, indent=1))
    figures["load_after"] = _load()
    out = BENCHMARKS / "results" / "otlp_receiver.json"
    out.write_text(json.dumps(figures, indent=2) + "\n")
    print(f"written to {out}")
    if args.write:
        write_section("otlp_receiver", section(figures))


if __name__ == "__main__":
    main()
