"""The OTLP/HTTP receiver (issue 24): a real aiohttp server on 127.0.0.1, sent real OTLP exports
(OpenTelemetry's own ``OTLPSpanExporter``, and the fixture files' bytes as the instrumentations
wrote them), scoring each finished trace into a real SQLite score store."""

from __future__ import annotations

import gzip
import json
import logging
import os
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from conversation_cases import CONVERSATIONS, expected
from conversation_cases import gates as conversation_gates
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace import Status, StatusCode
from repo_paths import FIXTURES

import evaldag
from evaldag import EvalDagError, OtlpReceiver, ScoreStore, checks, read_traces
from evaldag._live.sampling import unit_interval
from evaldag._traces.sources import trace_data

TRACES = FIXTURES / "traces"
SHAPES = sorted(
    p.name
    for p in TRACES.iterdir()
    if p.is_dir()
    and not p.name.startswith("generate")
    and p.name not in ("mastra", "expected_items")
)
#: Checks whose verdict a conversation implies whatever it is (tool_order names its own tools).
SAME_GATES = ("check-did-not-call", "check-no-tool-errors", "check-max-tool-calls",
              "check-used-no-tools", "check-called-tool")  # fmt: skip
ROOT = "0" * 15 + "1"


def gates() -> list[evaldag.Scorer]:
    """The differential checks, but tool_order (which names a conversation's own tools)."""
    every = conversation_gates(CONVERSATIONS["one_tool"])
    return [gate for gate in every if gate.id in SAME_GATES]


def post(url: str, body: bytes, kind: str = "application/x-protobuf", **headers: str) -> Any:
    """POST ``body``; the response (an HTTPError is a response too)."""
    request = urllib.request.Request(url, data=body, headers={"Content-Type": kind, **headers})
    try:
        return urllib.request.urlopen(request, timeout=30)
    except urllib.error.HTTPError as error:
        return error


def rows(receiver: OtlpReceiver, store: Path, count: int, timeout: float = 60.0) -> Any:
    """The store's rows once the receiver wrote ``count`` (scored or error rows)."""
    deadline = time.monotonic() + timeout
    while True:
        stats = receiver.stats()
        if stats.scored + stats.errors >= count:
            break
        assert time.monotonic() < deadline, f"{count} rows not written in {timeout} s: {stats}"
        time.sleep(0.05)
    return ScoreStore(store).scores()


def receiver(store: Path, scorers: Any = None, **options: Any) -> OtlpReceiver:
    """A receiver scoring in a thread, started on a free port."""
    options = {"worker": "thread", "grace": 0.2, "spool": store.parent / "spool.jsonl", **options}
    made = OtlpReceiver(gates() if scorers is None else scorers, store=store, **options)
    return made.start(port=0)


# --- SDK-made traces -----------------------------------------------------------------------


def _messages(*messages: tuple[str, list[dict[str, Any]]]) -> str:
    return json.dumps([{"role": role, "parts": parts} for role, parts in messages])


def agent_trace(provider: TracerProvider, tool: str, *, fails: bool = False, **root: Any) -> Any:
    """A GenAI agent trace, made by the SDK as an instrumented app makes it: an
    ``invoke_agent`` span over a chat asking for ``tool``, its ``execute_tool`` span, and a
    chat answering; the root's attributes are ``root``. Its root span's context."""
    tracer = provider.get_tracer("agent")
    user = ("user", [{"type": "text", "content": f"Please run {tool}."}])
    call = ("assistant", [{"type": "tool_call", "id": "c1", "name": tool, "arguments": {}}])
    result = ("tool", [{"type": "tool_call_response", "id": "c1", "response": "ok"}])
    answer = ("assistant", [{"type": "text", "content": "Done."}])
    with tracer.start_as_current_span(
        "invoke_agent helper", attributes={"gen_ai.operation.name": "invoke_agent", **root}
    ) as agent:
        with tracer.start_as_current_span(
            "chat gpt-4o-mini",
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.input.messages": _messages(user),
                "gen_ai.output.messages": _messages(call),
            },
        ):
            pass
        with tracer.start_as_current_span(
            f"execute_tool {tool}",
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": tool,
                "gen_ai.tool.call.id": "c1",
            },
        ) as run:
            if fails:
                run.set_status(Status(StatusCode.ERROR, "the tool failed"))
        with tracer.start_as_current_span(
            "chat gpt-4o-mini",
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.input.messages": _messages(user, call, result),
                "gen_ai.output.messages": _messages(answer),
            },
        ):
            pass
    return agent.get_span_context()


def provider(url: str, **exporter: Any) -> TracerProvider:
    made = TracerProvider(resource=Resource({"service.name": "shop", "deployment.env": "prod"}))
    made.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=url, **exporter)))
    return made


def test_an_sdk_exporters_traces_are_scored_into_the_store(tmp_path):
    store = tmp_path / "scores.db"
    with receiver(store) as served:
        sdk = provider(f"{served.url}/v1/traces", compression=Compression.Gzip)
        bad = agent_trace(sdk, "delete_db")
        good = agent_trace(sdk, "get_weather", fails=True)
        scores = rows(served, store, 2 * len(gates()))
        stats = served.stats()
    assert stats.traces == 2 and stats.spans == 8 and stats.refused_spans == 0
    by_trace = {
        trace_id: dict(zip(group["scorer_id"], group["score"], strict=True))
        for trace_id, group in scores.groupby("trace_id")
    }
    bad_id, good_id = f"{bad.trace_id:032x}", f"{good.trace_id:032x}"
    assert (
        by_trace[bad_id]["check-did-not-call"] == 0
        and by_trace[bad_id]["check-no-tool-errors"] == 1
    )
    assert (
        by_trace[good_id]["check-did-not-call"] == 1
        and by_trace[good_id]["check-no-tool-errors"] == 0
    )
    assert set(scores["source"]) == {"LIVE"} and set(scores["entity_id"]) == {"otlp-receiver"}
    root_spans = set(scores[scores["trace_id"] == bad_id]["span_id"])
    assert root_spans == {f"{bad.span_id:016x}"}
    snapshot = scores["request_context"].iloc[0]
    assert (
        snapshot["service.name"] == "shop" and snapshot["gen_ai.operation.name"] == "invoke_agent"
    )


def test_every_instrumentations_fixture_gets_the_transcripts_verdict(tmp_path):
    """The fixtures' own bytes, protobuf and JSON, posted as their instrumentation's exporter
    would: every check gives each conversation the verdict its definition implies."""
    store = tmp_path / "scores.db"
    sent: dict[str, tuple[str, str]] = {}
    with receiver(store) as served:
        for shape in SHAPES:
            for number, conversation in enumerate(CONVERSATIONS):
                media = (".pb", ".jsonl")[number % 2]
                spans = TRACES / shape / f"{conversation}{media}"
                logs = TRACES / shape / f"{conversation}.logs{media}"
                # log records after the spans for JSON, before for protobuf: each waits
                posts = [("traces", spans)] + ([("logs", logs)] if logs.exists() else [])
                for kind, path in posts if media == ".jsonl" else posts[::-1]:
                    for body, content_type in _bodies(path):
                        answer = post(f"{served.url}/v1/{kind}", body, content_type)
                        assert answer.status == 200, answer.read()
                sent[trace_data(spans).spans[0].trace_id] = (shape, conversation)
        scores = rows(served, store, len(sent) * len(SAME_GATES))
    assert scores["error"].isna().all(), scores["error"].dropna().tolist()[:3]
    assert set(scores["trace_id"]) == set(sent)
    for trace_id, group in scores.groupby("trace_id"):
        shape, conversation = sent[trace_id]
        want = expected(CONVERSATIONS[conversation], shape)
        got = dict(zip(group["scorer_id"], group["score"], strict=True))
        assert got == {check: want[check] for check in SAME_GATES}, (shape, conversation)


def length_framed(data: bytes) -> list[bytes]:
    """The messages of a Collector file exporter's protobuf file, each after its 4-byte
    big-endian length (the fixtures' framing)."""
    frames, position = [], 0
    while position < len(data):
        size = int.from_bytes(data[position : position + 4], "big")
        frames.append(data[position + 4 : position + 4 + size])
        position += 4 + size
    return frames


def _bodies(path: Path) -> list[tuple[bytes, str]]:
    """A fixture file as the request bodies an exporter sends: each protobuf message, or each
    JSON line."""
    data = path.read_bytes()
    if path.suffix == ".pb":
        return [(frame, "application/x-protobuf") for frame in length_framed(data)]
    return [(line, "application/json") for line in data.splitlines() if line.strip()]


def test_a_bearer_token_is_required_when_set_and_never_shown(tmp_path, caplog):
    store = tmp_path / "scores.db"
    secret = "s3cret-t0ken-value"
    caplog.set_level(logging.DEBUG)
    with receiver(store, token=secret) as served:
        url = f"{served.url}/v1/traces"
        body = _bodies(TRACES / "openai_v2_latest" / "one_tool.pb")[0][0]
        missing = post(url, body)
        wrong = post(url, body, Authorization="Bearer nope")
        assert missing.status == wrong.status == 401
        assert missing.headers["WWW-Authenticate"].startswith("Bearer")
        assert secret not in missing.read().decode(errors="replace")
        assert post(url, body, Authorization=f"Bearer {secret}").status == 200
        sdk = provider(url, headers={"Authorization": f"Bearer {secret}"})
        agent_trace(sdk, "get_weather")
        rows(served, store, 2 * len(gates()))
        stats = served.stats()
        shown = repr(served) + str(stats) + served.url
    assert stats.unauthorized == 2
    assert secret not in shown + caplog.text


def test_a_full_receiver_answers_429_with_retry_after_and_loses_nothing(tmp_path):
    """A store that does not take rows (another writer holds its lock) fills the workers'
    queue; then the receiver holds spans up to its bound and answers 429 with Retry-After.
    Once the store takes rows again, every trace taken is scored."""
    store = tmp_path / "scores.db"
    frames = [_bodies(TRACES / "openai_v2_latest" / f"{c}.pb")[0][0] for c in CONVERSATIONS]
    with receiver(store, queue_size=1, batch_size=1, max_pending_spans=12) as served:
        blocker = sqlite3.connect(store, timeout=1)
        blocker.execute("BEGIN EXCLUSIVE")
        url = f"{served.url}/v1/traces"
        answers = []
        for frame in frames:
            answers.append(post(url, frame))
            time.sleep(0.3)  # each trace due and handed on before the next arrives
        statuses = [answer.status for answer in answers]
        assert 429 in statuses, statuses
        refused = answers[statuses.index(429)]
        assert refused.headers["Retry-After"] == "1"
        assert served.stats().throttled == statuses.count(429)
        blocker.rollback()
        blocker.close()
        taken = statuses.count(200)
        scores = rows(served, store, taken * len(gates()), timeout=120)
    assert scores["trace_id"].nunique() == taken and scores["error"].isna().all()


def test_a_trace_that_cannot_be_read_is_an_error_row_naming_it(tmp_path):
    store = tmp_path / "scores.db"
    attributes = {"gen_ai.operation.name": "plan_trip", "gen_ai.input.messages": "[]"}
    unknown = _span("00000000000000a2", "plan", "00000000000000a1", trace=ROOT, **attributes)
    with receiver(store) as served:
        url = f"{served.url}/v1/traces"
        request = _json(_span("00000000000000a1", "root", trace=ROOT), unknown)
        assert post(url, request, "application/json").status == 200
        agent_trace(provider(url), "get_weather")  # served on, scored
        scores = rows(served, store, 2 * len(gates()))
    broken = scores[scores["trace_id"] == "0" * 31 + "1"]
    assert broken["score"].isna().all() and len(broken) == len(gates())
    error = broken["error"].iloc[0]
    assert "trace " + "0" * 31 + "1" in error and "span 00000000000000a2 'plan'" in error
    assert "plan_trip" in error
    assert scores[scores["trace_id"] != "0" * 31 + "1"]["error"].isna().all()


def _span(span_id: str, name: str, parent: str = "", *, trace: str, **attributes: Any) -> dict:
    return {
        "traceId": "0" * 16 + trace,
        "spanId": span_id,
        "parentSpanId": parent,
        "name": name,
        "startTimeUnixNano": "1000",
        "endTimeUnixNano": "2000",
        "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attributes.items()],
    }


def _json(*spans: dict[str, Any]) -> bytes:
    request = {"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": list(spans)}]}]}
    return json.dumps(request).encode()


def test_refused_spans_are_a_partial_success_naming_them(tmp_path):
    store = tmp_path / "scores.db"
    with receiver(store, grace=0.1) as served:
        url = f"{served.url}/v1/traces"
        bad_id = {**_span("00000000000000b1", "root", trace=ROOT), "spanId": "xyz"}
        answer = post(url, _json(bad_id, _span("00000000000000c1", "other", trace="2" * 16)),
                      "application/json")  # fmt: skip
        partial = json.loads(answer.read())["partialSuccess"]
        assert answer.status == 200 and partial["rejectedSpans"] == "1"
        assert "'xyz'" in partial["errorMessage"]
        rows(served, store, len(gates()))  # the other trace, scored
        late_span = _json(_span("00000000000000c2", "late", "00000000000000c1", trace="2" * 16))
        assert post(url, late_span, "text/plain").status == 415
        late = post(url, late_span, "application/json")
        partial = json.loads(late.read())["partialSuccess"]
        assert partial["rejectedSpans"] == "1" and "released for scoring" in partial["errorMessage"]
        protobuf = post(url, _bodies(TRACES / "openai_v2_latest" / "no_tools.pb")[0][0])
        response = ExportTraceServiceResponse()
        response.ParseFromString(protobuf.read())
        assert not response.HasField("partial_success")
        stats = served.stats()
    assert stats.refused_spans == 2 and stats.bad_requests == 1


def test_bodies_it_does_not_take_are_refused_with_their_reason(tmp_path):
    store = tmp_path / "scores.db"
    with receiver(store, max_request_bytes=2_000) as served:
        url = f"{served.url}/v1/traces"
        assert post(url, b"{}", "text/plain").status == 415
        garbage = post(url, b"\xff\x00garbage")
        assert garbage.status == 400 and b"no OTLP protobuf traces request" in garbage.read()
        assert post(url, b"[1, 2]", "application/json").status == 400
        big = post(url, b"x" * 5_000)
        assert big.status == 413
        bomb = gzip.compress(b"\x00" * 100_000)
        assert post(url, bomb, **{"Content-Encoding": "gzip"}).status == 413
        assert post(url, bomb[:20], **{"Content-Encoding": "gzip"}).status == 400
        assert post(url, b"", "application/json").status == 200  # an empty export
        assert post(f"{served.url}/v1/metrics", b"").status == 404
    assert served.stats().bad_requests == 6


def test_a_trace_whose_root_never_arrives_is_an_error_row_after_max_wait(tmp_path):
    store = tmp_path / "scores.db"
    with receiver(store, max_wait=0.5) as served:
        child = _span("00000000000000d2", "execute_tool x", "00000000000000d1", trace=ROOT)
        assert post(f"{served.url}/v1/traces", _json(child), "application/json").status == 200
        scores = rows(served, store, len(gates()))
        assert served.stats().incomplete == 1
    assert scores["score"].isna().all()
    assert (
        "no root span" in scores["error"].iloc[0] and "'execute_tool x'" in scores["error"].iloc[0]
    )


def test_an_item_missing_a_span_inside_it_is_not_scored(tmp_path):
    """A span that started within the root names a parent that never came: the item may lack
    what that parent did (a forbidden tool call), so it is an error row, not a score."""
    store = tmp_path / "scores.db"
    root = {**_span("00000000000000e1", "root", trace=ROOT), "endTimeUnixNano": "9000"}
    orphan = _span("00000000000000e3", "chat", "00000000000000e2", trace=ROOT)
    with receiver(store) as served:
        assert (
            post(f"{served.url}/v1/traces", _json(root, orphan), "application/json").status == 200
        )
        scores = rows(served, store, len(gates()))
    assert scores["score"].isna().all()
    assert "incomplete" in scores["error"].iloc[0] and "00000000000000e2" in scores["error"].iloc[0]


def test_sampling_and_the_filter_choose_traces_as_live_scoring_does(tmp_path):
    store = tmp_path / "scores.db"
    rate = 0.5
    with receiver(
        store,
        sampling=rate,
        filter={
            "op": "eq",
            "left": {"path": "requestContext.app.tier"},
            "right": {"literal": "pro"},
        },
    ) as served:
        sdk = provider(f"{served.url}/v1/traces")
        made = [
            agent_trace(sdk, "get_weather", **{"app.tier": tier}) for tier in ["pro", "free"] * 6
        ]
        ids = [f"{context.trace_id:032x}" for context in made]
        sampled = [unit_interval(trace_id) < rate for trace_id in ids]
        chosen = {i for i, tier, kept in zip(ids, ["pro", "free"] * 6, sampled, strict=True)
                  if kept and tier == "pro"}  # fmt: skip
        deadline = time.monotonic() + 30
        while served.stats().traces + served.stats().filtered < sum(sampled):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        scores = rows(served, store, len(chosen) * len(gates()))
        stats = served.stats()
    assert set(scores["trace_id"]) == chosen
    assert stats.not_sampled == 4 * (len(ids) - sum(sampled))
    assert stats.filtered == sum(sampled) - len(chosen)


def test_the_items_are_chosen_by_root_name_when_the_root_is_elsewhere(tmp_path):
    """The trace's root span is another service's: with root= the agent span is the item."""
    store = tmp_path / "scores.db"
    with receiver(store, root="invoke_agent *", max_wait=1.0) as served:
        sdk = provider(f"{served.url}/v1/traces")
        with sdk.get_tracer("web").start_as_current_span("GET /health"):
            pass  # a trace with no agent: no item, no row
        from opentelemetry.trace import (
            NonRecordingSpan,
            SpanContext,
            TraceFlags,
            set_span_in_context,
        )

        remote = SpanContext(
            int("ab" * 16, 16), int("cd" * 8, 16), True, TraceFlags(TraceFlags.SAMPLED)
        )
        context = set_span_in_context(NonRecordingSpan(remote))
        tracer = sdk.get_tracer("agent")
        with tracer.start_as_current_span("POST /chat", context=context):
            agent = agent_trace(sdk, "delete_db")
        scores = rows(served, store, len(gates()))
        deadline = time.monotonic() + 60  # the health check's trace, released after max_wait
        while served.stats().without_items < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        stats = served.stats()
    assert set(scores["span_id"]) == {f"{agent.span_id:016x}"}
    assert stats.without_items == 1 and stats.traces == 1


def test_scorers_get_the_trajectory_and_start_they_ask_for(tmp_path):
    """An item's trajectory and start are read only when asked for: mapped as a run field, or
    read as a column, they are the trace's."""
    store = tmp_path / "scores.db"

    def steps(run):
        return float([step["name"] for step in run.output["steps"]] == ["delete_db"])

    def started(run):
        return float(run.started_at.year >= 2024 and str(run.started_at.tz) == "UTC")

    scorers = [
        evaldag.create_scorer("steps").generate_score(steps),
        evaldag.create_scorer("started", columns=("started_at",)).generate_score(started),
    ]
    with receiver(store, scorers, columns={"output": "trajectory"}) as served:
        agent_trace(provider(f"{served.url}/v1/traces"), "delete_db")
        scores = rows(served, store, 2)
    assert set(scores["error"]) == {None}, list(scores["error"])
    assert dict(zip(scores["scorer_id"], scores["score"], strict=True)) == {
        "steps": 1.0,
        "started": 1.0,
    }


def test_the_process_worker_scores_an_eval_files_scorers(tmp_path):
    store = tmp_path / "scores.db"
    eval_file = tmp_path / "eval_traces.py"
    eval_file.write_text(
        "from evaldag import checks\n"
        "gates = [checks.did_not_call('delete_db'), checks.no_error_spans()]\n"
    )
    made = OtlpReceiver(eval_file, store=store, grace=0.2, spool=tmp_path / "spool.jsonl")
    with made.start(port=0) as served:
        agent_trace(provider(f"{served.url}/v1/traces"), "delete_db")
        scores = rows(served, store, 2, timeout=120)
    assert dict(zip(scores["scorer_id"], scores["score"], strict=True)) == {
        "check-did-not-call": 0.0,
        "check-no-error-spans": 1.0,
    }
    assert set(scores["entity_id"]) == {"eval_traces.py"}


def test_misconfigurations_are_errors_before_it_serves(tmp_path):
    store = tmp_path / "scores.db"
    with pytest.raises(EvalDagError, match="grace must be"):
        OtlpReceiver(gates(), store=store, grace=-1)
    with pytest.raises(EvalDagError, match="'nothing', which a trace's item does not have"):
        OtlpReceiver([checks.no_error_spans()], store=store, columns={"output": "nothing"})
    reads = evaldag.create_scorer("reads", columns=("nothing",)).generate_score(lambda run: 1)
    with pytest.raises(EvalDagError, match="scorer 'reads' reads a column"):
        OtlpReceiver([reads], store=store)
    with pytest.raises(EvalDagError, match="agent or workflow config"):
        OtlpReceiver({"agent": gates()}, store=store)
    with pytest.raises(EvalDagError, match="at least one"):
        OtlpReceiver([], store=store)
    with receiver(store) as taken, pytest.raises(EvalDagError, match="could not listen"):
        OtlpReceiver(gates(), store=store, worker="thread").start(port=taken.port)


# --- evaldag serve: the command, stopped by a signal --------------------------------------


def _serve(tmp_path: Path, *options: str) -> tuple[subprocess.Popen, str]:
    eval_file = tmp_path / "eval_served.py"
    eval_file.write_text("from evaldag import checks\ngates = [checks.did_not_call('delete_db')]\n")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "evaldag",
            "serve",
            str(eval_file),
            "--store",
            str(tmp_path / "scores.db"),
            "--port",
            "0",
            *options,
        ],  # fmt: skip
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "EVALDAG_RECEIVER_TOKEN": "tok"},
    )
    line = process.stdout.readline()
    assert " on http://" in line, line + process.stderr.read()
    return process, line.split(" on ", 1)[1].split(" ", 1)[0]


def test_sigterm_scores_what_it_holds_and_spools_what_has_no_root(tmp_path):
    process, url = _serve(tmp_path, "--grace", "60", "--worker", "thread")
    try:
        auth = {"Authorization": "Bearer tok"}
        complete = _bodies(TRACES / "openai_v2_latest" / "forbidden_tool.pb")[0][0]
        assert post(f"{url}/v1/traces", complete, **auth).status == 200
        tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "x"}
        rootless = _span("00000000000000f2", "execute_tool x", "00000000000000f1", trace=ROOT,
                         **tool)  # fmt: skip
        answer = post(f"{url}/v1/traces", _json(rootless), "application/json", **auth)
        assert answer.status == 200
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 0, err
    assert "stopped" in out and "1 traces saved unscored" in out
    scores = ScoreStore(tmp_path / "scores.db").scores()
    assert scores["score"].tolist() == [0.0]  # the complete trace, scored before its grace ended
    spooled = read_traces(tmp_path / "evaldag-unscored-traces.jsonl", root="execute_tool *",
                          content="optional")  # fmt: skip
    assert spooled["span_id"].tolist() == ["00000000000000f2"]


SERVED = """\
from evaldag import SqlScoreStore, checks, register_store

register_store("vault", lambda location: SqlScoreStore({url!r}))
gates = [checks.did_not_call("delete_db")]
"""


def test_serve_names_its_store_without_credentials(tmp_path):
    secret = "pw-receiver-store-secret"
    eval_file = tmp_path / "eval_vault.py"
    eval_file.write_text(SERVED.format(url=f"sqlite:///{tmp_path / 'scores.db'}"))
    store = f"vault://writer:{secret}@db.example/scores?token={secret}"
    command = [sys.executable, "-m", "evaldag", "serve", str(eval_file), "--store", store]
    process = subprocess.Popen(
        [*command, "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    try:
        first = process.stdout.readline()
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert "rows to vault://**********@db.example/scores?token=**********;" in first, first + err
    assert process.returncode == 0, err
    assert secret not in first + out + err


def test_a_stop_that_runs_out_of_time_spools_what_the_store_did_not_take(tmp_path):
    store = tmp_path / "scores.db"
    served = receiver(store, shutdown_timeout=1.0)
    blocker = sqlite3.connect(store, timeout=1)
    blocker.execute("BEGIN EXCLUSIVE")
    try:
        for conversation in ("one_tool", "no_tools"):
            body = _bodies(TRACES / "pydantic_ai" / f"{conversation}.pb")[0][0]
            assert post(f"{served.url}/v1/traces", body).status == 200
        time.sleep(0.5)
        started = time.monotonic()
        stats = served.stop()
        assert time.monotonic() - started < 40  # the store's own lock wait (30 s) bounds it
    finally:
        blocker.rollback()
        blocker.close()
    assert stats.spooled == 2 and stats.scored == 0
    spooled = read_traces(tmp_path / "spool.jsonl")
    assert len(spooled) == 2
