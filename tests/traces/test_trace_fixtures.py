"""The trace fixtures are what their generators write today, every conversation has a fixture in
every shape or a reason in the manifest why not, a fixture's OTLP JSON and protobuf hold the same
spans, the conversation's texts and tool calls among them, and Mastra's span records come with
Mastra's own trajectory of them."""

import base64
import json
import struct
from pathlib import Path

import pytest
import repo_paths
from fixture_generators import assert_writes_committed, generator, missing

TRACES = repo_paths.FIXTURES / "traces"
MANIFEST = json.loads((TRACES / "manifest-python.json").read_text())
NODE_MANIFEST = json.loads((TRACES / "manifest-node.json").read_text())
CONVERSATIONS = json.loads((TRACES.parent / "transcripts" / "conversations.json").read_text())[
    "conversations"
]
# The modules the generator imports, by the package that installs them.
LIBRARIES = {
    "openai": "openai",
    "pydantic-ai-slim": "pydantic_ai",
    "opentelemetry-sdk": "opentelemetry.sdk",
    "opentelemetry-exporter-otlp-proto-common": "opentelemetry.exporter.otlp.proto.common",
    "opentelemetry-instrumentation-openai-v2": "opentelemetry.instrumentation.openai_v2",
    "opentelemetry-util-genai": "opentelemetry.util.genai.handler",
    "openinference-instrumentation-openai": "openinference.instrumentation.openai",
    "opentelemetry-instrumentation-openai": "opentelemetry.instrumentation.openai",
    "traceloop-sdk": "traceloop.sdk.decorators",
}
REGENERATE = "python tests/fixtures/traces/generate_python.py"


def _fixture_files(folder: Path) -> dict[str, bytes]:
    files = {"manifest-python.json": (folder / "manifest-python.json").read_bytes()}
    for shape in MANIFEST["shapes"]:
        for path in sorted((folder / shape).iterdir()):
            files[f"{shape}/{path.name}"] = path.read_bytes()
    return files


@pytest.mark.slow
@pytest.mark.skipif(
    bool(missing(LIBRARIES)),
    reason=f"the trace fixture generator needs {', '.join(missing(LIBRARIES))}: "
    "pip install -e '.[dev]'",
)
def test_the_generator_writes_the_committed_fixtures_byte_for_byte(tmp_path):
    generator(TRACES / "generate_python.py").write_fixtures(tmp_path)
    assert_writes_committed(_fixture_files(tmp_path), _fixture_files(TRACES), MANIFEST, REGENERATE)


SHAPES = {**MANIFEST["shapes"], **NODE_MANIFEST["shapes"]}
NODE_FILES = list(NODE_MANIFEST["formats"])


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_every_conversation_has_a_fixture_or_a_reason(shape):
    entry = {"files": NODE_FILES, **SHAPES[shape]}
    suffixes = [name.removeprefix("<conversation>") for name in entry["files"]]
    ids = {conversation["id"] for conversation in CONVERSATIONS}
    for conversation_id in sorted(ids):
        present = [(TRACES / shape / f"{conversation_id}{s}").is_file() for s in suffixes]
        reason = entry["missing"].get(conversation_id)
        assert all(present) != bool(reason), f"{shape}/{conversation_id}: " + (
            "has a fixture and a reason for having none"
            if reason
            else f"no fixture ({dict(zip(suffixes, present, strict=True))}), no reason"
        )
        assert (conversation_id in entry["conversations"]) == (not reason)
    strays = {path.name.split(".")[0] for path in (TRACES / shape).iterdir()} - ids
    assert not strays, f"{shape} has fixtures of no conversation: {sorted(strays)}"


def _requests(pb: bytes, message_type):
    """The messages of a file in the Collector's proto format (each after its 4-byte length)."""
    messages, at = [], 0
    while at < len(pb):
        (length,) = struct.unpack(">I", pb[at : at + 4])
        messages.append(message_type.FromString(pb[at + 4 : at + 4 + length]))
        at += 4 + length
    return messages


def _from_collector_json(line: str, message_type):
    """A line of OTLP JSON read back with protobuf's own JSON parser: the Collector writes trace
    and span ids as hex where protobuf's JSON mapping has base64."""
    from google.protobuf import json_format

    def ids_as_base64(value):
        if isinstance(value, list):
            return [ids_as_base64(item) for item in value]
        if not isinstance(value, dict):
            return value
        return {
            key: base64.b64encode(bytes.fromhex(item)).decode()
            if key in ("traceId", "spanId", "parentSpanId")
            else ids_as_base64(item)
            for key, item in value.items()
        }

    return json_format.ParseDict(ids_as_base64(json.loads(line)), message_type())


def _items(requests, *path: str) -> list:
    """What lies at path in every request: _items(requests, "resource_spans", "scope_spans",
    "spans") are the spans."""
    items = list(requests)
    for name in path:
        items = [item for parent in items for item in getattr(parent, name)]
    return items


def _spans(requests) -> list:
    return _items(requests, "resource_spans", "scope_spans", "spans")


def _log_records(requests) -> list:
    return _items(requests, "resource_logs", "scope_logs", "log_records")


FIXTURES = sorted(
    (shape, conversation)
    for shape, entry in MANIFEST["shapes"].items()
    for conversation in entry["conversations"]
)
FIXTURE_IDS = [f"{shape}/{conversation}" for shape, conversation in FIXTURES]


@pytest.mark.parametrize(("shape", "conversation_id"), FIXTURES, ids=FIXTURE_IDS)
def test_the_json_and_the_protobuf_hold_the_same_trace(shape, conversation_id):
    pytest.importorskip("opentelemetry.proto", reason="reading OTLP needs opentelemetry-proto")
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    folder = TRACES / shape
    lines = (folder / f"{conversation_id}.jsonl").read_text().splitlines()
    from_json = [_from_collector_json(line, ExportTraceServiceRequest) for line in lines]
    from_pb = _requests((folder / f"{conversation_id}.pb").read_bytes(), ExportTraceServiceRequest)
    assert len(from_pb) == 1 and len(lines) == len(_spans(from_pb))
    # The .jsonl has a line a span in the order they ended, the .pb groups them by scope.
    spans = sorted(_spans(from_pb), key=lambda span: span.end_time_unix_nano)
    assert _spans(from_json) == spans
    assert len({span.trace_id for span in spans}) == 1, "one trace a conversation"
    roots = [span for span in spans if not span.parent_span_id]
    assert len(roots) == 1 and spans[-1] == roots[0], "one root, which ends last"
    if (folder / f"{conversation_id}.logs.jsonl").exists():
        lines = (folder / f"{conversation_id}.logs.jsonl").read_text().splitlines()
        logs_pb = (folder / f"{conversation_id}.logs.pb").read_bytes()
        records = _log_records(_requests(logs_pb, ExportLogsServiceRequest))
        assert records == _log_records(
            [_from_collector_json(line, ExportLogsServiceRequest) for line in lines]
        )
        ids = {span.span_id for span in spans}
        assert records and all(record.span_id in ids for record in records)


@pytest.mark.parametrize(("shape", "conversation_id"), FIXTURES, ids=FIXTURE_IDS)
def test_a_fixture_holds_its_conversations_texts_and_tool_calls(shape, conversation_id):
    conversation = next(c for c in CONVERSATIONS if c["id"] == conversation_id)
    folder = TRACES / shape
    text = (folder / f"{conversation_id}.jsonl").read_text()
    if (folder / f"{conversation_id}.logs.jsonl").exists():
        text += (folder / f"{conversation_id}.logs.jsonl").read_text()
    # Texts sit in attribute values that are themselves JSON text, escaped once or twice.
    unescaped = text.replace('\\\\\\"', '"').replace('\\"', '"')
    assert conversation["user"] in unescaped
    for step in conversation["steps"]:
        if "text" in step:
            assert step["text"] in unescaped, f"{step['text']!r} is not in the trace"
        for call in step.get("calls", []):
            assert call["id"] in text and call["tool"] in text


MASTRA = [
    (shape, conversation)
    for shape, entry in NODE_MANIFEST["shapes"].items()
    for conversation in entry["conversations"]
]


@pytest.mark.parametrize(("shape", "conversation_id"), MASTRA, ids=[f"{s}/{c}" for s, c in MASTRA])
def test_mastra_span_records_hold_the_conversation_and_mastras_trajectory_of_them(
    shape, conversation_id
):
    conversation = next(c for c in CONVERSATIONS if c["id"] == conversation_id)
    trace = json.loads((TRACES / shape / f"{conversation_id}.json").read_text())
    expected = json.loads(
        (TRACES / shape / f"{conversation_id}.expected-trajectory.json").read_text()
    )
    (root,) = [span for span in trace["spans"] if not span["parentSpanId"]]
    assert (root["spanType"], root["input"]) == ("agent_run", conversation["user"])
    assert expected["rootSpanId"] == root["spanId"]
    tool_spans = {
        span["attributes"]["toolCallId"]: span
        for span in trace["spans"]
        if span["spanType"] == "tool_call"
    }
    ran = [call for step in conversation["steps"] for call in step.get("calls", [])]
    ran = [call for call in ran if call["outcome"] != "unanswered"]
    assert sorted(tool_spans) == sorted(call["id"] for call in ran)
    for call in ran:
        span = tool_spans[call["id"]]
        assert span["input"] == call["args"]
        if call["outcome"] == "thrown":
            assert span["error"]["message"] == call["error"] and "output" not in span
        else:
            assert span["output"] == call["result"]
    trajectory_tools = [
        (child["name"], child["toolArgs"], child["success"])
        for step in expected["trajectory"]["steps"]
        for child in step.get("children", [])
    ]
    assert trajectory_tools == [
        (call["tool"], call["args"], call["outcome"] != "thrown") for call in ran
    ]
