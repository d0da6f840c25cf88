"""Closed world: a trace whose spans may carry a tool call that evaldag does not read is an error
naming the span, never an item without tool calls that every "must not call" gate passes.
The spans are recorded by the real OpenTelemetry SDK, with the attributes each instrumentation
sets, and read as the OTLP protobuf its exporter sends."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from evaldag import EvalDagError, checks, read_traces


def _trace(tmp_path: Path, root: str, children: dict[str, dict[str, Any]]) -> Path:
    """One trace: a ``root`` span and its children (span name → attributes), as OTLP protobuf."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("app")
    with tracer.start_as_current_span(root):
        for name, attributes in children.items():
            with tracer.start_as_current_span(name, attributes=attributes):
                pass
    path = tmp_path / "spans.pb"
    path.write_bytes(encode_spans(exporter.get_finished_spans()).SerializeToString())
    return path


def _refused(path: Path, *named: str) -> None:
    for content in ("required", "optional"):
        with pytest.raises(EvalDagError) as raised:
            read_traces(path, content=content)
        assert raised.value.id == "EVALDAG_INVALID_TRACE"
        assert all(text in raised.value.message for text in named), raised.value.message


def test_a_trace_with_no_span_evaldag_reads_is_an_error(tmp_path):
    """Spans of a convention evaldag does not know, with no attribute it recognises (a custom
    instrumentation): read as an item with no messages and no calls, did_not_call passed."""
    path = _trace(
        tmp_path,
        "handle_request",
        {"agent.step": {"step.tool": "delete_db"}, "db.query": {"db.statement": "DROP TABLE x"}},
    )
    _refused(path, "'handle_request'", "none of its 3 span(s) is a model call, a tool run")


def test_the_ai_sdks_tool_and_model_spans_are_refused(tmp_path):
    """The AI SDK records tool runs as ai.toolCall spans and model calls as
    ai.generateText.doGenerate spans: neither was read, and a trace of an agent that deleted
    the database passed did_not_call('delete_db')."""
    tool = {
        "operation.name": "ai.toolCall",
        "ai.operationId": "ai.toolCall",
        "ai.toolCall.name": "delete_db",
        "ai.toolCall.id": "call-1",
        "ai.toolCall.args": "{}",
    }
    _refused(_trace(tmp_path, "ai.generateText", {"ai.toolCall": tool}), "ai.toolCall.name")
    model = {
        "operation.name": "ai.generateText.doGenerate",
        "gen_ai.system": "openai.chat",
        "gen_ai.request.model": "gpt-4o-mini",
        "ai.prompt.messages": '[{"role":"user","content":[{"type":"text","text":"Clean up"}]}]',
        "ai.response.toolCalls": '[{"toolCallId":"call-1","toolName":"delete_db","args":"{}"}]',
    }
    path = _trace(tmp_path, "ai.generateText", {"ai.generateText.doGenerate": model})
    _refused(path, "'ai.generateText.doGenerate'", "ai.prompt.messages")


def test_an_openllmetry_tool_span_without_genai_attributes_is_a_tool_run(tmp_path):
    """OpenLLMetry's @tool span as its earlier releases recorded it (no gen_ai.tool.name) beside
    a model call without content (content='optional' scores the tool runs alone): it was refused
    as a convention evaldag does not read; it is the tool run it records."""
    chat = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o-mini"}
    tool = {
        "traceloop.span.kind": "tool",
        "traceloop.entity.name": "delete_db",
        "traceloop.entity.input": '{"args": [], "kwargs": {"table": "users"}}',
    }
    path = _trace(tmp_path, "agent", {"chat gpt-4o-mini": chat, "delete_db.tool": tool})
    item = read_traces(path, content="optional").iloc[0]
    assert (
        checks.did_not_call("delete_db").run(input=item["input"], output=item["output"]).score == 0
    )
    assert item["trajectory"]["steps"][0]["toolArgs"] == {"table": "users"}


def test_tool_spans_without_model_calls_are_the_items_calls(tmp_path):
    """No model-call span, tool spans evaldag reads: the calls are the item's output."""
    tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "delete_db"}
    item = read_traces(_trace(tmp_path, "agent", {"execute_tool delete_db": tool})).iloc[0]
    run = {"input": item["input"], "output": item["output"]}
    assert checks.did_not_call("delete_db").run(**run).score == 0


@pytest.mark.parametrize(
    ("kind", "attributes"),
    [
        ("UNKNOWN", {"tool_call.function.name": "delete_db", "tool_call.id": "c1"}),
        ("UNKNOWN", {"message.role": "assistant", "message.tool_calls.0.tool_call.id": "c1"}),
        ("UNKNOWN", {"message.content": "Deleted the database.", "message.role": "assistant"}),
        ("UNKNOWN", {"tool.id": "c1", "output.value": "deleted"}),
        ("DECISION", {"tool_call.function.name": "delete_db"}),
        (None, {"tool_call.function.name": "delete_db", "tool_call.function.arguments": "{}"}),
    ],
)
def test_openinference_tool_calls_on_a_span_evaldag_does_not_read_are_refused(
    tmp_path, kind, attributes
):
    """OpenInference's keys of a tool call (tool_call.*, tool.id) and of a message (message.*)
    on an UNKNOWN span beside an LLM span evaldag reads: the span was read as nothing, and the
    item passed did_not_call('delete_db')."""
    from openinference.semconv.trace import SpanAttributes

    llm = {
        SpanAttributes.OPENINFERENCE_SPAN_KIND: "LLM",
        "llm.input_messages.0.message.role": "user",
        "llm.input_messages.0.message.content": "Clean up",
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.content": "Done.",
    }
    if kind is not None:
        attributes = {SpanAttributes.OPENINFERENCE_SPAN_KIND: kind, **attributes}
    path = _trace(tmp_path, "agent", {"llm": llm, "step": attributes})
    carrier = next(key for key in attributes if key != "message.role" and "kind" not in key)
    shown = f"openinference.span.kind {kind!r}" if kind else "no gen_ai.operation.name"
    _refused(path, "'step'", f"holds {carrier}", shown)
