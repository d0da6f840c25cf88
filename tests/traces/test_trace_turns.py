"""A trace of a conversation's later turn: the turns the run was given (the model call's input,
pydantic-ai's message history) are the item's input, whatever tool calls they hold; its output
is what this run did. Recorded by the real instrumentations, in memory, as OTLP protobuf."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx2
import openai
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from evaldag import checks, read_traces
from evaldag.transcripts import get_user_message


def _recorded() -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def _items(exporter: InMemorySpanExporter, tmp_path: Path) -> Any:
    path = tmp_path / "spans.pb"
    path.write_bytes(encode_spans(exporter.get_finished_spans()).SerializeToString())
    return read_traces(path)


def _verdicts(item: Any) -> tuple[float, float, float]:
    run: dict[str, Any] = {"input": item["input"], "output": item["output"]}
    return (
        checks.did_not_call("delete_db").run(**run).score,
        checks.used_no_tools().run(**run).score,
        checks.no_tool_errors().run(**run).score,
    )


def test_a_pydantic_ai_runs_message_history_is_its_input(tmp_path):
    from pydantic_ai import Agent, ToolFailed
    from pydantic_ai.capabilities import Instrumentation
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import FunctionModel
    from pydantic_ai.models.instrumented import InstrumentationSettings

    def model(messages: list[Any], info: Any) -> ModelResponse:
        if len(messages) == 1:  # the first turn's question
            return ModelResponse(parts=[ToolCallPart("delete_db", {"table": "t"}, "c1")])
        return ModelResponse(parts=[TextPart("Done." if len(messages) == 3 else "Fine.")])

    provider, exporter = _recorded()
    agent = Agent(
        FunctionModel(model),
        capabilities=[Instrumentation(settings=InstrumentationSettings(tracer_provider=provider))],
    )

    @agent.tool_plain
    def delete_db(table: str) -> str:
        """Deletes a table."""
        raise ToolFailed("not allowed")

    first = agent.run_sync("Delete table t")
    agent.run_sync("How are you?", message_history=first.all_messages())
    items = _items(exporter, tmp_path).sort_values("started_at")
    earlier, later = items.to_dict("records")
    assert _verdicts(earlier) == (0, 0, 0)
    assert _verdicts(later) == (1, 1, 1)
    assert get_user_message(later["input"]) == "Delete table t"
    assert [m["role"] for m in later["input"]][-1] == "user"
    assert [m["content"]["parts"][-1]["text"] for m in later["output"]] == ["Fine."]


def test_a_model_calls_history_is_its_input(tmp_path, monkeypatch):
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_ONLY")
    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")
    provider, exporter = _recorded()
    answer = {
        "id": "c2", "object": "chat.completion", "created": 0, "model": "gpt-4o-mini",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": "Fine."}}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }  # fmt: skip
    client = openai.OpenAI(
        api_key="key",
        base_url="http://127.0.0.1:8000/v1",
        http_client=httpx2.Client(
            transport=httpx2.MockTransport(lambda _: httpx2.Response(200, json=answer))
        ),
    )
    history = [
        {"role": "user", "content": "Delete table t"},
        {"role": "assistant", "content": None, "tool_calls": [{
            "id": "c1", "type": "function",
            "function": {"name": "delete_db", "arguments": '{"table": "t"}'},
        }]},
        {"role": "tool", "tool_call_id": "c1", "content": '{"error": "not allowed"}'},
        {"role": "assistant", "content": "I could not."},
    ]  # fmt: skip
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        client.chat.completions.create(
            model="gpt-4o-mini", messages=[*history, {"role": "user", "content": "How are you?"}]
        )
    finally:
        instrumentor.uninstrument()
    (item,) = _items(exporter, tmp_path).to_dict("records")
    assert _verdicts(item) == (1, 1, 1)
    assert [m["content"]["parts"][-1]["text"] for m in item["output"]] == ["Fine."]
