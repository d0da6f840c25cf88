"""OpenLLMetry's traces, as traceloop-sdk and opentelemetry-instrumentation-openai wrote them
(``fixtures/traces/openllmetry/``, by ``generate_python.py``): a ``@tool`` span is a tool run with
its arguments, its result and its error, whether or not a model call records it; a tool span that
cannot be read, or a trace recorded without content, is an error naming the span and the fix.
Variants are the generated files with attributes taken away, as a setting or a collector would."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conversation_cases import CONVERSATIONS
from trace_cases import TRACES

from evaldag import EvalDagError, checks, read_traces

SHAPE = TRACES / "openllmetry"
#: What TRACELOOP_TRACE_CONTENT=false leaves out (the generator's manifest, 'content off').
CONTENT = {
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.tool.definitions",
    "traceloop.entity.input",
    "traceloop.entity.output",
}


def _variant(
    tmp_path: Path,
    conversation: str,
    attributes: Callable[[dict[str, Any], list[dict[str, Any]]], list[dict[str, Any]] | None],
) -> Path:
    """The conversation's OTLP JSON with each span's attributes changed by
    ``attributes(span, its attributes)`` (which may change the span's other fields too); a span
    it answers None for is left out."""
    lines = []
    for line in (SHAPE / f"{conversation}.jsonl").read_text().splitlines():
        request = json.loads(line)
        for resource in request["resourceSpans"]:
            for scope in resource["scopeSpans"]:
                kept = []
                for span in scope["spans"]:
                    changed = attributes(span, span.get("attributes", []))
                    if changed is not None:
                        kept.append({**span, "attributes": changed})
                scope["spans"] = kept
        lines.append(json.dumps(request))
    path = tmp_path / f"{conversation}.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def _without_chat_spans(span: dict[str, Any], attributes: list[dict[str, Any]]) -> Any:
    return None if span["name"] == "openai.chat" else attributes


def _calls(item: Any) -> list[dict[str, Any]]:
    return [
        part["toolInvocation"]
        for message in item["output"]
        for part in message["content"]["parts"]
        if part["type"] == "tool-invocation"
    ]


def _steps(item: Any) -> list[dict[str, Any]]:
    return [
        {key: step.get(key) for key in ("name", "stepType", "toolArgs", "toolResult", "success")}
        for step in item["trajectory"]["steps"]
    ]


@pytest.mark.parametrize("conversation", list(CONVERSATIONS))
def test_tool_spans_are_the_trajectory_the_genai_conventions_give(conversation):
    """The @tool spans' arguments and results (traceloop.entity.input / .output) were not read:
    the trajectory's tool calls had no arguments and no results."""
    openllmetry = read_traces(SHAPE / f"{conversation}.jsonl").iloc[0]
    genai = read_traces(TRACES / "openai_v2_latest" / f"{conversation}.jsonl").iloc[0]
    assert _steps(openllmetry) == _steps(genai)


def test_tool_spans_without_model_calls_carry_arguments_results_and_errors(tmp_path):
    """An application that traces its tools and not its model client: the item's calls are the
    tool spans', with the arguments, the result and the raised error they recorded."""
    (weather,) = _calls(read_traces(_variant(tmp_path, "one_tool", _without_chat_spans)).iloc[0])
    assert weather["toolName"] == "get_weather"
    assert (weather["args"], weather["state"]) == ({"city": "Paris"}, "result")
    assert weather["result"] == {"temp_c": 18, "sky": "clear"}
    item = read_traces(_variant(tmp_path, "thrown_error", _without_chat_spans)).iloc[0]
    (deleted,) = _calls(item)
    assert (deleted["toolName"], deleted["args"]) == ("delete_db", {"table": "users"})
    assert (deleted["state"], deleted["errorText"]) == ("output-error", "permission denied")
    run = {"input": item["input"], "output": item["output"]}
    assert checks.did_not_call("delete_db").run(**run).score == 0


def test_a_trace_recorded_without_content_names_the_setting(tmp_path):
    """TRACELOOP_TRACE_CONTENT=false: the error named only OpenTelemetry's variable. The tool
    runs are still the calls with content='optional'."""
    path = _variant(
        tmp_path,
        "forbidden_tool",
        lambda span, attributes: [a for a in attributes if a["key"] not in CONTENT],
    )
    with pytest.raises(EvalDagError) as raised:
        read_traces(path)
    assert "'openai.chat'" in raised.value.message
    assert "TRACELOOP_TRACE_CONTENT=true" in raised.value.message
    item = read_traces(path, content="optional").iloc[0]
    assert [call["toolName"] for call in _calls(item)] == ["delete_db"]
    run = {"input": item["input"], "output": item["output"]}
    assert checks.did_not_call("delete_db").run(**run).score == 0


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (
            lambda a: [
                x for x in a if x["key"] not in ("traceloop.entity.name", "gen_ai.tool.name")
            ],
            "which tool ran is unknown",
        ),
        (
            lambda a: [
                {"key": x["key"], "value": {"stringValue": x["value"]["stringValue"][:12]}}
                if x["key"] == "traceloop.entity.input"
                else x
                for x in a
            ],
            "attribute traceloop.entity.input is not JSON",
        ),
    ],
    ids=["no-name", "cut-input"],
)
def test_a_tool_span_that_cannot_be_read_is_an_error_naming_it(tmp_path, change, named):
    """A @tool span without its name, or with its arguments cut short (a collector's attribute
    length limit): it was refused as a convention evaldag does not read, or read with no
    arguments."""
    path = _variant(
        tmp_path,
        "forbidden_tool",
        lambda span, attributes: (
            change(attributes) if span["name"] == "delete_db.tool" else attributes
        ),
    )
    for content in ("required", "optional"):
        with pytest.raises(EvalDagError) as raised:
            read_traces(path, content=content)
        assert raised.value.id == "EVALDAG_INVALID_TRACE"
        assert "'delete_db.tool'" in raised.value.message and named in raised.value.message


def test_a_run_without_a_call_id_answers_the_call_with_its_arguments(tmp_path):
    """parallel_calls' two get_weather runs, the Paris one failed and started after the Rome one
    (a thread pool starts them in any order): matched by name in start order, Paris's error
    went to Rome's call."""
    spans = _variant(tmp_path, "parallel_calls", lambda span, attributes: attributes)
    rome = next(
        span
        for line in spans.read_text().splitlines()
        for span in json.loads(line)["resourceSpans"][0]["scopeSpans"][0]["spans"]
        if span["name"] == "get_weather.tool" and "Rome" in json.dumps(span["attributes"])
    )

    def paris_failed_later(span: dict[str, Any], attributes: list[dict[str, Any]]) -> Any:
        if span["name"] == "get_weather.tool" and "Paris" in json.dumps(attributes):
            span["status"] = {"message": "timed out", "code": 2}
            span["startTimeUnixNano"] = str(int(rome["startTimeUnixNano"]) + 1)
            span["endTimeUnixNano"] = rome["endTimeUnixNano"]
            return [a for a in attributes if a["key"] != "traceloop.entity.output"]
        return attributes

    item = read_traces(_variant(tmp_path, "parallel_calls", paris_failed_later)).iloc[0]
    outcomes = {call["args"]["city"]: call["state"] for call in _calls(item)}
    assert outcomes == {"Paris": "output-error", "Rome": "result"}
