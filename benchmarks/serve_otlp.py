"""``evaldag serve`` under load: ``--rate`` traces a second of 10 spans each, sent for
``--seconds`` by OpenTelemetry's own OTLP/HTTP client, scored into a store.

The receiver is the command, ``evaldag serve EVAL --store URL``, in a process of its own with
its scoring process(es), as it is deployed; the eval file holds three span checks as gates.
Each trace is the openai-v2 instrumentation's ``multi_step`` fixture (an ``invoke_agent`` span,
three ``chat`` spans holding their messages, two ``execute_tool`` spans) with the spans an app's
other instrumentations add around it (an HTTP client span under each chat, a database query
under a tool): 10 spans, about 6 KB of protobuf, each copy under fresh ids.

The senders stand for the apps: ``--senders`` processes, each with ``--exporters`` threads, and
each thread is one app's exporter: OpenTelemetry's ``OTLPSpanExporter`` HTTP client
(``opentelemetry-exporter-otlp-proto-http``: its session, its retries of 429 and 503 honouring
``Retry-After``, at most 6 tries within its timeout), sending one export at a time, as a
``BatchSpanProcessor`` does, of ``--batch`` traces (500 spans: the processor's default batch is
512), on a fixed schedule. The exports' bytes are made by copying the fixture's encoded spans
under new ids: the SDK's own encoding costs the apps 30-500 us a span on this machine (it would
take the receiver's cores from it), and it is the apps' cost, not the receiver's.

Two runs: a store that keeps up (SQLite), and one that sleeps ``--slow-ms`` per write (a batch
of rows), which the receiver cannot keep up with: it must answer 429 rather than grow, and a
trace is then either taken and scored (or spooled at the stop), or refused: its exporter got
429s until it gave up, and knows it.

Reported: traces offered, taken (answered 200), refused (the exporter gave up), scored (rows in
the store) and lost (taken, yet neither scored nor spooled; must be 0); taken and scored per
second; export round trips; the latency from a trace's export being answered to its first row;
peak RSS of the receiver's process and of its scoring process(es); their CPU seconds per trace.
With ``--in-process``, first the receiver's two halves in one process, without HTTP
(``in_process``): CPU per trace that a loaded machine inflates less. Writes
``benchmarks/results/serve_otlp.json`` and, with ``--write``, the section of
``benchmarks/RESULTS.md``.

    python benchmarks/serve_otlp.py [--rate 1000] [--seconds 60] [--only fast|slow|none]
        [--in-process [--traces 5000] [--repeats 3]] [--write]
"""

from __future__ import annotations

import argparse
import functools
import json
import multiprocessing
import os
import platform
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import urllib.request
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psutil
from results_md import markers, write_section

from evaldag import ScoreStore
from evaldag._store.sql import SqlScoreStore

BENCHMARKS = Path(__file__).resolve().parent
FIXTURE = BENCHMARKS.parent / "tests" / "fixtures" / "traces" / "openai_v2_latest" / "multi_step.pb"
SECTION = markers("serve_otlp")
#: The eval file ``evaldag serve`` scores with (written to the run's folder).
EVAL_FILE = """\
import sys

sys.path.insert(0, {benchmarks!r})
from serve_otlp import SlowStore  # noqa: E402

from evaldag import checks, register_store  # noqa: E402

register_store("slow", SlowStore.opened)
gates = [
    checks.no_error_spans(),
    checks.did_not_call("delete_db"),
    checks.span_count("chat *", max=5),
]
"""
GATES = 3


# --- the traces ------------------------------------------------------------------------------


def template() -> tuple[list[bytes], list[bytes], bytes, bytes]:
    """The 10 spans of one trace, serialized, with the trace id and the span ids they hold
    (to be replaced per copy), and the resource's bytes."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )
    from opentelemetry.proto.trace.v1.trace_pb2 import Span

    request = ExportTraceServiceRequest()
    data = FIXTURE.read_bytes()  # the Collector's framing: each message after its 4-byte length
    request.ParseFromString(data[4 : 4 + int.from_bytes(data[:4], "big")])
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


# --- the senders -----------------------------------------------------------------------------


def send(url: str, plan: dict[str, Any], index: int, out: str, ready: Any, start: Any) -> None:
    """One sender process: its exporters' share of the schedule, each export by
    OpenTelemetry's OTLP/HTTP client (``plan["sender"] == "otel"``) or by the light sender;
    what became of each trace, and the process's CPU seconds, written to ``out``. The
    schedule starts at ``start`` (epoch seconds, set once every sender is ``ready``)."""
    shape = template()
    request_body(shape, 1)
    ready.release()
    while not start.value:
        time.sleep(0.01)
    cpu_started = time.process_time()  # every thread's: the exporters' and the bodies' making
    plan = {**plan, "start": start.value}
    sent = (_light_exports if plan["sender"] == "light" else _otel_exports)(url, plan, index, shape)
    Path(out).write_text(json.dumps({**sent, "cpu_s": time.process_time() - cpu_started}))


def _schedule(plan: dict[str, Any], index: int, exporter: int) -> list[int]:
    """The numbers of the exports (``k``: due at ``start + k * interval``) one exporter of
    sender ``index`` sends."""
    requests = int(plan["rate"] * plan["seconds"] / plan["batch"])
    senders, exporters = plan["senders"], plan["exporters"]
    return [
        k
        for k in range(requests)
        if k % senders == index and (k // senders) % exporters == exporter
    ]


class _Outcomes:
    """What became of one sender's exports."""

    def __init__(self) -> None:
        self.taken: dict[str, float] = {}
        self.refused: list[str] = []
        self.round_trips: list[float] = []
        self.late: list[float] = []
        self.making = 0.0

    def add(self, made: float, wait: float, ids: list[str], ok: bool, sent: float) -> None:
        self.making += made
        if wait < 0:
            self.late.append(-wait)
        if ok:
            self.taken.update(dict.fromkeys(ids, time.time()))
            self.round_trips.append(time.monotonic() - sent)
        else:
            self.refused.extend(ids)

    def fields(self) -> dict[str, Any]:
        return {
            "taken": self.taken,
            "refused": self.refused,
            "round_trips": self.round_trips,
            "late": self.late,
            "making_s": self.making,
        }


def _export_due(
    plan: dict[str, Any], shape: tuple, k: int, interval: float
) -> tuple[bytes, list[str], float, float]:
    """Export ``k``'s body and trace ids, the CPU seconds making them took (the app's encoding),
    and the seconds until it is due (negative: late)."""
    made = time.thread_time()
    body, ids = request_body(shape, plan["batch"])
    made = time.thread_time() - made
    return body, ids, made, plan["start"] + k * interval - time.time()


def _otel_exports(url: str, plan: dict[str, Any], index: int, shape: tuple) -> dict[str, Any]:
    """The exports by OpenTelemetry's OTLP/HTTP client: one thread a exporter, as apps run it."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    interval = plan["batch"] / plan["rate"]
    lock = threading.Lock()
    outcomes = _Outcomes()

    def exporter(thread: int) -> None:
        client = OTLPSpanExporter(endpoint=url, timeout=plan["export_timeout"])._client
        for k in _schedule(plan, index, thread):
            body, ids, made, wait = _export_due(plan, shape, k, interval)
            if wait > 0:
                time.sleep(wait)
            sent = time.monotonic()
            result = client.export(body)
            with lock:
                outcomes.add(made, wait, ids, result.success, sent)
        client.shutdown()

    threads = [threading.Thread(target=exporter, args=(t,)) for t in range(plan["exporters"])]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return outcomes.fields()


def _light_exports(url: str, plan: dict[str, Any], index: int, shape: tuple) -> dict[str, Any]:
    """The same bodies posted by a light sender, not what apps run: one aiohttp session (a pool
    of keep-alive connections) on one event loop, an exporter a task; as the OTLP exporter, a
    429 or 503 is retried after its ``Retry-After`` (6 tries at most, within the export
    timeout), and an export that gets no 200 gives up. It shows what the receiver takes when
    the load costs little CPU."""
    import asyncio

    import aiohttp

    interval = plan["batch"] / plan["rate"]
    outcomes = _Outcomes()
    headers = {"Content-Type": "application/x-protobuf"}

    async def export(session: aiohttp.ClientSession, body: bytes) -> bool:
        deadline = time.monotonic() + plan["export_timeout"]
        for _ in range(6):
            try:
                async with session.post(url, data=body, headers=headers) as answer:
                    await answer.read()
                    if answer.status == 200:
                        return True
                    if answer.status not in (429, 502, 503, 504):
                        return False
                    delay = float(answer.headers.get("Retry-After", "1"))
            except aiohttp.ClientError:
                delay = 1.0
            if time.monotonic() + delay > deadline:
                return False
            await asyncio.sleep(delay)
        return False

    async def exporter(session: aiohttp.ClientSession, task: int) -> None:
        for k in _schedule(plan, index, task):
            body, ids, made, wait = _export_due(plan, shape, k, interval)
            if wait > 0:
                await asyncio.sleep(wait)
            sent = time.monotonic()
            outcomes.add(made, wait, ids, await export(session, body), sent)

    async def exports() -> None:
        pool = aiohttp.TCPConnector(limit=plan["exporters"])
        timeout = aiohttp.ClientTimeout(total=plan["export_timeout"])
        async with aiohttp.ClientSession(connector=pool, timeout=timeout) as session:
            await asyncio.gather(*(exporter(session, t) for t in range(plan["exporters"])))

    asyncio.run(exports())
    return outcomes.fields()


# --- a slow store ----------------------------------------------------------------------------


class SlowStore(ScoreStore):
    """A SQLite store that sleeps before each write (a batch of rows): one that cannot keep up.
    Its location is ``slow:///PATH?ms=N``; it pickles as that, so a scoring process opens its
    own."""

    def __init__(self, location: str) -> None:
        path, _, delay = location.removeprefix("slow://").partition("?ms=")
        self.location, self.path, self.delay = location, path, float(delay) / 1000
        self._store: SqlScoreStore | None = None

    @classmethod
    def opened(cls, location: str) -> SlowStore:
        return cls(location)

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
        return (SlowStore, (self.location,))


# --- one run ---------------------------------------------------------------------------------


class Watch:
    """Samples the receiver's process tree every 50 ms: peak RSS of the receiver's process, of
    its scoring processes, and of both at once; and their CPU seconds."""

    def __init__(self, pid: int) -> None:
        self.process = psutil.Process(pid)
        self.peak_main = self.peak_children = self.peak_total = 0
        self.cpu_children: dict[int, float] = {}
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
                main = self.process.memory_info().rss
                children = 0
                for child in self.process.children(recursive=True):
                    children += child.memory_info().rss
                    times = child.cpu_times()
                    self.cpu_children[child.pid] = times.user + times.system
            except psutil.Error:
                continue
            self.peak_main = max(self.peak_main, main)
            self.peak_children = max(self.peak_children, children)
            self.peak_total = max(self.peak_total, main + children)

    def cpu(self) -> tuple[float, float]:
        """CPU seconds so far of the receiver's process and of its scoring processes."""
        own = self.process.cpu_times()
        return own.user + own.system, sum(self.cpu_children.values())


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _warmed(url: str, folder: Path) -> None:
    """Send one export of 10 traces and wait until they are scored: the scoring process has
    imported evaldag and the eval file, and the figures leave its start out."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    body, _ = request_body(template(), 10)
    client = OTLPSpanExporter(endpoint=f"{url}/v1/traces", timeout=60)._client
    assert client.export(body).success
    client.shutdown()
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        stats = _health(url)
        if stats["scored"] + stats["errors"] >= 10 * GATES:
            return
        time.sleep(0.2)
    raise RuntimeError(f"the warm-up traces were not scored in 300 s: {stats}")


def _health(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(f"{url}/health", timeout=10) as answer:
        return json.loads(answer.read())


def run(
    args: argparse.Namespace, slow: bool, folder: Path, kind: str, processes: int
) -> dict[str, Any]:
    name = f"{'slow' if slow else 'fast'}-{kind}-{processes}"
    seconds = args.slow_seconds if slow else args.seconds
    path = folder / f"{name}.db"
    store = f"slow://{path}?ms={args.slow_ms:g}" if slow else str(path)
    eval_file = folder / "eval_serve.py"
    eval_file.write_text(EVAL_FILE.format(benchmarks=str(BENCHMARKS)))
    spool = folder / f"{name}-spool.jsonl"
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    command = [
        sys.executable, "-m", "evaldag", "serve", str(eval_file), "--store", store,
        "--port", str(port), "--grace", str(args.grace), "--processes", str(processes),
        "--shutdown-timeout", str(args.shutdown_timeout), "--spool", str(spool),
    ]  # fmt: skip
    load = f"{os.getloadavg()[0]:.1f}"
    server = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    listening = server.stdout.readline()
    assert "on http://" in listening, listening
    deadline = time.monotonic() + 120
    while _health(url)["status"] != "serving" and time.monotonic() < deadline:
        time.sleep(0.1)
    _warmed(url, folder)
    context = multiprocessing.get_context("spawn")
    ready, start = context.Semaphore(0), context.Value("d", 0.0)
    plan = {
        "rate": args.rate,
        "seconds": seconds,
        "batch": args.batch,
        "senders": args.senders,
        "exporters": args.exporters,
        "export_timeout": args.export_timeout,
        "sender": kind,
    }
    outs = [folder / f"{name}-sent-{i}.json" for i in range(args.senders)]
    senders = [
        context.Process(target=send, args=(f"{url}/v1/traces", plan, i, str(out), ready, start))
        for i, out in enumerate(outs)
    ]
    with Watch(server.pid) as watch:
        for sender in senders:
            sender.start()
        for _ in senders:
            ready.acquire()
        plan["start"] = start.value = time.time() + 0.5
        time.sleep(0.5)
        cpu_before = watch.cpu()
        before = _health(url)
        for sender in senders:
            sender.join()
        sent_in = time.time() - plan["start"]
        parts = [json.loads(out.read_text()) for out in outs]
        taken = {k: v for part in parts for k, v in part["taken"].items()}
        refused = [trace for part in parts for trace in part["refused"]]
        round_trips = sorted(t for part in parts for t in part["round_trips"])
        late = sorted(t for part in parts for t in part["late"])
        wanted = before["scored"] + before["errors"] + len(taken) * GATES
        deadline = time.monotonic() + (args.drain if not slow else 5.0)
        while time.monotonic() < deadline:
            stats = _health(url)
            if stats["scored"] + stats["errors"] >= wanted:
                break
            time.sleep(0.2)
        cpu_after = watch.cpu()
        stats = _health(url)
        server.send_signal(signal.SIGTERM)
        summary = server.communicate(timeout=args.shutdown_timeout + 60)[0]
    rows = _rows(str(path))
    spooled = _spooled(spool)
    scored = set(rows) & set(taken)
    latencies = sorted(max(0.0, rows[t] - taken[t]) for t in scored)
    last_row = max(rows.values()) if rows else time.time()
    main_cpu = cpu_after[0] - cpu_before[0]
    scoring_cpu = cpu_after[1] - cpu_before[1]
    sender_cpu = sum(part["cpu_s"] for part in parts)
    making_cpu = sum(part["making_s"] for part in parts)
    exports = len(round_trips) + len(refused) // args.batch
    offered = int(args.rate * seconds / args.batch) * args.batch
    return {
        "store": f"sleeps {args.slow_ms:g} ms a write" if slow else "SQLite",
        "sender": kind,
        "processes": processes,
        "load": load,
        "seconds": seconds,
        "traces_offered": offered,
        "traces_taken": len(taken),
        "traces_refused": len(refused),
        "traces_scored": len(scored),
        "traces_spooled": len(spooled & set(taken)),
        "lost": len(set(taken) - scored - spooled),
        "unaccounted": offered - len(taken) - len(refused),
        "rows_with_errors": stats["errors"],
        "send_seconds": sent_in,
        "taken_per_s": len(taken) / sent_in,
        "scored_per_s": len(scored) / max(1e-9, last_row - plan["start"]),
        "throttled_answers": stats["throttled"],
        "late_exports": len(late),
        "late_p99_s": late[int(0.99 * (len(late) - 1))] if late else 0.0,
        "export_p50_s": statistics.median(round_trips) if round_trips else None,
        "export_p99_s": round_trips[int(0.99 * (len(round_trips) - 1))] if round_trips else None,
        "latency_p50_s": statistics.median(latencies) if latencies else None,
        "latency_p99_s": latencies[int(0.99 * (len(latencies) - 1))] if latencies else None,
        "peak_rss_receiver_mb": watch.peak_main / 2**20,
        "peak_rss_scoring_mb": watch.peak_children / 2**20,
        "peak_rss_total_mb": watch.peak_total / 2**20,
        "cpu_receiver_s": main_cpu,
        "cpu_scoring_s": scoring_cpu,
        "cpu_ms_per_trace": 1000 * (main_cpu + scoring_cpu) / max(1, len(scored)),
        "cpu_receiving_ms_per_trace": 1000 * main_cpu / max(1, len(scored)),
        "cpu_scoring_ms_per_trace": 1000 * scoring_cpu / max(1, len(scored)),
        "cpu_senders_s": sender_cpu,
        "cpu_senders_ms_per_trace": 1000 * sender_cpu / max(1, len(taken)),
        "cpu_making_ms_per_trace": 1000 * making_cpu / max(1, len(taken)),
        "exports": exports,
        "stats": stats,
        "summary": summary.strip().splitlines()[-1] if summary.strip() else "",
    }


def _rows(path: str) -> dict[str, float]:
    """Each trace's first row time (epoch seconds), read from the store."""
    scores = SqlScoreStore(path).scores(source="LIVE")
    if scores.empty:
        return {}
    first = scores.groupby("trace_id")["created_at"].min()
    return {trace_id: stamp.timestamp() for trace_id, stamp in first.items()}


def _spooled(spool: Path) -> set[str]:
    """The trace ids in the spool file."""
    if not spool.exists():
        return set()
    from evaldag import read_traces

    return set(read_traces(spool, content="optional")["trace_id"])


# --- in one process ----------------------------------------------------------------------------


def in_process(args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    """The receiver's two halves in this process, without HTTP, on ``--traces`` traces of the
    same shape in exports of ``--batch``: each body read as the receiver reads it and each
    trace, once due, pickled as it goes to the scoring process; then read as items, scored
    and stored into SQLite in batches of 256, as the scoring process does. CPU seconds of each
    half, best of ``--repeats``: steadier than the served run's on a loaded machine."""
    import pickle

    from evaldag._live.process_worker import _COUNTS, _score
    from evaldag._live.worker import BatchScoring
    from evaldag._receiver.bodies import PROTOBUF, received
    from evaldag._receiver.calls import TraceCalls
    from evaldag._receiver.finishing import Finishing
    from evaldag._receiver.pending import PendingTraces
    from evaldag._receiver.scorers import eval_file_scorers, read_columns, run_fields

    eval_file = folder / "eval_serve.py"
    eval_file.write_text(EVAL_FILE.format(benchmarks=str(BENCHMARKS)))
    scorers = eval_file_scorers(str(eval_file))
    entity = {"id": "eval_serve", "name": "eval_serve"}
    calls = TraceCalls(True, run_fields(None), read_columns(scorers))
    shape = template()
    bodies = [request_body(shape, args.batch)[0] for _ in range(args.traces // args.batch)]

    def receiving() -> list[bytes]:
        finishing = Finishing(None, None, entity, 300.0)
        pending = PendingTraces(finishing.is_root, grace=0.0, max_wait=300.0)
        messages = []
        for body in bodies:
            pending.add_spans(received(body, PROTOBUF, "traces").spans, 1.0)
            for trace in pending.due(2.0):
                finished = finishing.finished(trace)
                messages.append(pickle.dumps(finished, protocol=pickle.HIGHEST_PROTOCOL))
        return messages

    def started(store: SqlScoreStore) -> BatchScoring:
        """The scoring process's setup (its collector's state too), where the code has it."""
        try:
            from evaldag._live.process_worker import started_scoring
        except ImportError:  # older code: the scoring process set up no more than this
            return BatchScoring(scorers, store, entity=entity, concurrency=4, calls=calls)
        load = pickle.dumps(functools.partial(eval_file_scorers, str(eval_file)))
        return started_scoring(load, pickle.dumps(store), entity, 4, calls)

    def scoring(messages: list[bytes], batches: BatchScoring) -> None:
        counts = [0] * len(_COUNTS)
        for start in range(0, len(messages), 256):
            _score(batches, messages[start : start + 256], counts, len(scorers), False)
        assert counts[0] == GATES * len(messages), counts  # every row scored

    receive_s, score_s = [], []
    for repeat in range(args.repeats):
        batches = started(SqlScoreStore(folder / f"in-process-{repeat}.db"))
        scoring(receiving()[:10], batches)  # warm
        began = time.process_time()
        messages = receiving()
        receive_s.append(time.process_time() - began)
        began = time.process_time()
        scoring(messages, batches)
        score_s.append(time.process_time() - began)
        (getattr(batches, "store", None) or batches._store).close()
    traces = len(bodies) * args.batch
    return {
        "traces": traces,
        "repeats": args.repeats,
        "receiving_ms_per_trace": 1000 * min(receive_s) / traces,
        "scoring_ms_per_trace": 1000 * min(score_s) / traces,
        "cpu_ms_per_trace": 1000 * (min(receive_s) + min(score_s)) / traces,
    }


# --- the report ------------------------------------------------------------------------------


def _load() -> str:
    return ", ".join(f"{value:.2f}" for value in os.getloadavg())


def section(figures: dict[str, Any]) -> str:
    start, end = SECTION
    lines = [
        start,
        "## `evaldag serve` under load (`benchmarks/serve_otlp.py`)",
        "",
        (
            f"Measured {figures['date']} on {figures['machine']}: a 2-core VM shared with other "
            f"developers' jobs; load average (1, 5, 15 min) {figures['load_before']} before, "
            f"{figures['load_after']} after. {figures['rate']:g} traces/s of 10 spans offered "
            f"(for the seconds each row says) by {figures['senders'] * figures['exporters']} "
            f"exporters in {figures['senders']} sender processes (protobuf, {figures['batch']} "
            "traces an export; `otel`: OpenTelemetry's OTLP/HTTP exporter over `requests`, a "
            "thread each, what apps run; `light`: the same bodies posted by one aiohttp session "
            "a sender process, a cheap load generator, not an app) to `evaldag serve` "
            f"with the scoring processes each row says, grace {figures['grace']:g} s, 3 span "
            "checks as gates. The senders ran on the same 2 cores: their CPU is the last column "
            "(per trace taken), the receiver's and its scoring processes' the one before it "
            "(per trace scored); the load average (1 min) each row's run started at beside."
        ),
        "",
        (
            "| sender | scoring processes | store | seconds | load | taken/s | scored/s | taken "
            "| refused | scored | spooled | lost | 429s | p50 / p99 latency "
            "| peak RSS receiver / scoring | CPU ms a trace: receiving + scoring = served "
            "| senders' CPU ms a trace |"
        ),
        "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in figures["runs"]:
        p50, p99 = r["latency_p50_s"], r["latency_p99_s"]
        latency = "-" if p50 is None else f"{p50:.2f} / {p99:.2f} s"
        lines.append(
            f"| {r.get('sender', 'otel')} | {r.get('processes', figures['processes'])} | "
            f"{r['store']} | {r['seconds']:g} | {r.get('load', '-')} | "
            f"{r['taken_per_s']:,.0f} | {r['scored_per_s']:,.0f} | "
            f"{r['traces_taken']:,} | {r['traces_refused']:,} | {r['traces_scored']:,} | "
            f"{r['traces_spooled']:,} | {r['lost']} | {r['throttled_answers']:,} | {latency} | "
            f"{r['peak_rss_receiver_mb']:.0f} / {r['peak_rss_scoring_mb']:.0f} MB | "
            f"{r['cpu_receiving_ms_per_trace']:.2f} + {r['cpu_scoring_ms_per_trace']:.2f} = "
            f"**{r['cpu_ms_per_trace']:.2f}** | {r['cpu_senders_ms_per_trace']:.2f} |"
        )
    own = figures.get("in_process")
    if own:
        lines += [
            "",
            (
                f"In one process, without HTTP ({own['traces']:,} traces, best of "
                f"{own['repeats']}): **{own['cpu_ms_per_trace']:.2f} ms of CPU a trace**, "
                f"{own['receiving_ms_per_trace']:.2f} receiving (a body read, each trace "
                f"pickled for the scoring process) and {own['scoring_ms_per_trace']:.2f} scoring "
                "(unpickled, read as items, scored, stored into SQLite)."
            ),
        ]
    lines += ["", figures.get("notes", "").strip(), "", end]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=1000.0)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--batch", type=int, default=50)
    parser.add_argument("--senders", type=int, default=2)
    parser.add_argument("--exporters", type=int, default=8, help="exporters per sender")
    parser.add_argument("--export-timeout", type=float, default=30.0)
    parser.add_argument(
        "--sender",
        choices=("otel", "light"),
        nargs="+",
        default=["otel"],
        help="otel: OpenTelemetry's OTLP/HTTP exporter (what apps run); light: the same bodies "
        "posted by one aiohttp session a sender process (a cheap load generator); a run each",
    )
    parser.add_argument(
        "--processes", type=int, nargs="+", default=[1], help="scoring processes (a run each)"
    )
    parser.add_argument("--grace", type=float, default=0.5)
    parser.add_argument("--slow-ms", type=float, default=1000.0)
    parser.add_argument("--slow-seconds", type=float, default=30.0)
    parser.add_argument("--drain", type=float, default=180.0)
    parser.add_argument("--shutdown-timeout", type=float, default=10.0)
    parser.add_argument("--only", choices=("fast", "slow", "none"))
    parser.add_argument(
        "--in-process",
        action="store_true",
        help="also measure the receiver's two halves in this process, without HTTP",
    )
    parser.add_argument("--traces", type=int, default=5000, help="traces of --in-process")
    parser.add_argument("--repeats", type=int, default=3, help="repeats of --in-process")
    parser.add_argument("--notes", default="", help="the section's closing paragraph")
    parser.add_argument("--write", action="store_true", help="write RESULTS.md's section")
    parser.add_argument(
        "--section-only", action="store_true", help="write the section of the last figures"
    )
    args = parser.parse_args()
    out = BENCHMARKS / "results" / "serve_otlp.json"
    if args.section_only:
        figures = json.loads(out.read_text())
        figures["notes"] = textwrap.dedent(args.notes) or figures.get("notes", "")
        out.write_text(json.dumps(figures, indent=2) + "\n")
        write_section("serve_otlp", section(figures))
        return
    keys = ("rate", "seconds", "batch", "senders", "exporters", "processes", "grace")
    figures: dict[str, Any] = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}",
        "load_before": _load(),
        **{key: getattr(args, key) for key in keys},
        "runs": [],
        "notes": textwrap.dedent(args.notes),
    }
    with tempfile.TemporaryDirectory() as folder:
        if args.in_process:
            figures["in_process"] = in_process(args, Path(folder))
            print(json.dumps(figures["in_process"], indent=1))
        for slow in (False, True):
            if args.only and args.only != ("slow" if slow else "fast"):
                continue
            # the slow store's run once: with the first sender and number of processes
            for sender in args.sender[:1] if slow else args.sender:
                for processes in args.processes[:1] if slow else args.processes:
                    result = run(args, slow, Path(folder), sender, processes)
                    figures["runs"].append(result)
                    print(json.dumps({k: v for k, v in result.items() if k != "stats"}, indent=1))
    figures["load_after"] = _load()
    out.write_text(json.dumps(figures, indent=2) + "\n")
    print(f"written to {out}")
    if args.write:
        write_section("serve_otlp", section(figures))


if __name__ == "__main__":
    main()
