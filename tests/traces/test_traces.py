"""Traces as items (issue 24): the nine conversations, recorded by real instrumentations
(``fixtures/traces/``: OpenTelemetry's openai-v2 in three content modes, OpenInference,
pydantic-ai's own, Mastra's span records), read by ``read_traces`` from OTLP JSON and protobuf
and from a table of spans, give every check the verdict the conversation itself implies — the
same as the transcripts do (``test_transcript_differential.py``)."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
import pytest
from conversation_cases import CONVERSATIONS, expected, gates, read_answers
from trace_cases import SHAPES, TRACES, sources, spans_table

import evaldag
from evaldag import EvalDagError, SqlScoreStore, checks, read_traces
from evaldag._traces.trajectory import mastra_trajectory

CASES = [
    (shape, conversation, medium, paths)
    for shape in SHAPES
    for conversation in CONVERSATIONS
    for medium, paths in sources(shape, conversation).items()
]


def test_every_instrumentation_has_every_conversation():
    assert set(SHAPES) >= {
        "openai_v2_latest",
        "openai_v2_latest_events",
        "openai_v2_events",
        "openinference",
        "openllmetry",
        "pydantic_ai",
        "mastra",
    }
    for shape, conversation, _, paths in CASES:
        assert paths[0].exists(), f"{shape}/{conversation}"


@pytest.mark.parametrize(
    ("shape", "conversation", "medium", "paths"),
    CASES,
    ids=[f"{s}/{c}{m}" for s, c, m, _ in CASES],
)
def test_a_trace_reads_as_its_conversation(shape, conversation, medium, paths):
    items = read_traces(paths)
    assert len(items) == 1
    item = items.iloc[0]
    want = expected(CONVERSATIONS[conversation], shape)
    answers = read_answers(item["input"], item["output"])
    assert answers == {key: want[key] for key in answers}
    assert item["trace_id"] and item["span_id"] and len(item["spans"]) > 1


@pytest.mark.parametrize("shape", SHAPES)
def test_every_check_gives_traces_the_transcripts_verdict(shape):
    for conversation_id, conversation in CONVERSATIONS.items():
        paths = next(iter(sources(shape, conversation_id).values()))
        result = evaldag.run_evals(read_traces(paths), gates=gates(conversation), progress=False)
        item = result.items.iloc[0]
        want = expected(conversation, shape)
        got = {check: item[f"{check}.score"] for check in want if check.startswith("check-")}
        assert got == {k: v for k, v in want.items() if k in got}, conversation_id


@pytest.mark.parametrize("conversation", list(CONVERSATIONS))
def test_mastra_span_records_give_mastras_own_trajectory(conversation):
    answer = json.loads(
        (TRACES / "mastra" / f"{conversation}.expected-trajectory.json").read_text()
    )
    records = json.loads((TRACES / "mastra" / f"{conversation}.json").read_text())["spans"]
    assert mastra_trajectory(records, answer["rootSpanId"]) == answer["trajectory"]
    item = read_traces(TRACES / "mastra" / f"{conversation}.json").iloc[0]
    assert item["trajectory"] == answer["trajectory"]


@pytest.mark.parametrize("shape", ["openai_v2_latest", "openinference", "pydantic_ai"])
def test_a_table_of_spans_reads_as_its_otlp_file(shape, tmp_path):
    for conversation in CONVERSATIONS:
        paths = sources(shape, conversation)[".jsonl"]
        table = spans_table(paths)
        path = tmp_path / f"{conversation}.parquet"
        table.to_parquet(path)
        from_otlp = read_traces(paths).iloc[0]
        for given in (table, path):
            item = read_traces(given).iloc[0]
            for column in ("trace_id", "span_id", "input", "output", "trajectory", "error"):
                assert item[column] == from_otlp[column], (conversation, column)


def test_items_can_be_chosen_by_root_span_and_time(tmp_path):
    paths = [p for c in CONVERSATIONS for p in sources("pydantic_ai", c)[".jsonl"]]
    every = read_traces(paths)
    assert len(every) == len(CONVERSATIONS)
    chats = read_traces(paths, root="chat *")
    assert set(chats["name"]) == {"chat gpt-4o-mini"} and len(chats) > len(every)
    assert len(read_traces(paths, root=lambda span: span.name.startswith("invoke_agent"))) == 9
    start = every["started_at"].min()  # the generator's clock starts every run at one time
    assert len(read_traces(paths, since=start.isoformat())) == 9
    with pytest.raises(EvalDagError, match="in the time range"):
        read_traces(paths, until=start)
    with pytest.raises(EvalDagError, match="no item named 'nothing'"):
        read_traces(paths, root="nothing")
    with pytest.raises(EvalDagError, match="since: is 'last week', which is no time"):
        read_traces(paths, since="last week")  # was pandas' DateParseError: exit 4, a "bug"


def test_scores_keep_their_trace_and_span_ids(tmp_path):
    items = read_traces(sources("openinference", "forbidden_tool")[".jsonl"])
    store = tmp_path / "scores.db"
    result = evaldag.run_evals(items, gates=[checks.did_not_call("delete_db")], store=store)
    assert result.verdict == "failed"
    rows = SqlScoreStore(store).scores()
    assert rows["trace_id"].tolist() == [items["trace_id"][0]]
    assert rows["span_id"].tolist() == [items["span_id"][0]]


def _request(*spans: dict[str, Any]) -> dict[str, Any]:
    return {
        "resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {}, "spans": list(spans)}]}]
    }


def _span(span_id: str, name: str, parent: str = "", **attributes: Any) -> dict[str, Any]:
    return {
        "traceId": "0" * 31 + "1",
        "spanId": span_id,
        "parentSpanId": parent,
        "name": name,
        "startTimeUnixNano": "1",
        "endTimeUnixNano": "2",
        "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attributes.items()],
    }


def test_a_span_holding_messages_no_convention_reads_is_an_error(tmp_path):
    path = tmp_path / "spans.jsonl"
    unknown = _span(
        "00000000000000a2", "plan", "00000000000000a1",
        **{"gen_ai.operation.name": "plan_trip", "gen_ai.input.messages": "[]"},
    )  # fmt: skip
    path.write_text(json.dumps(_request(_span("00000000000000a1", "root"), unknown)) + "\n")
    with pytest.raises(EvalDagError) as raised:
        read_traces(path)
    assert "span 00000000000000a2 'plan'" in raised.value.message
    assert "gen_ai.input.messages" in raised.value.message and "'plan_trip'" in raised.value.message


def test_a_tool_span_stripped_of_its_attributes_is_an_error(tmp_path):
    """Named by the GenAI convention but without its attributes (a collector dropped gen_ai.*):
    read as no tool call, did_not_call('delete_db') passed."""
    path = tmp_path / "spans.jsonl"
    stripped = _span("00000000000000c2", "execute_tool delete_db", "00000000000000c1")
    path.write_text(json.dumps(_request(_span("00000000000000c1", "root"), stripped)) + "\n")
    with pytest.raises(EvalDagError) as raised:
        read_traces(path, content="optional")
    assert "span 00000000000000c2 'execute_tool delete_db'" in raised.value.message
    assert "neither gen_ai.operation.name nor gen_ai.tool.name" in raised.value.message


def test_an_unreadable_message_in_a_span_is_an_error_naming_span_and_attribute(tmp_path):
    path = tmp_path / "spans.jsonl"
    messages = json.dumps([{"role": "assistant", "parts": [{"type": "widget"}]}])
    chat = _span(
        "00000000000000b2", "chat m", "00000000000000b1",
        **{"gen_ai.operation.name": "chat", "gen_ai.output.messages": messages},
    )  # fmt: skip
    path.write_text(json.dumps(_request(_span("00000000000000b1", "root"), chat)) + "\n")
    with pytest.raises(EvalDagError) as raised:
        read_traces(path)
    assert "span 00000000000000b2 'chat m'" in raised.value.message
    assert "gen_ai.output.messages" in raised.value.message and "'widget'" in raised.value.message


def test_a_source_without_spans_is_an_error(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(EvalDagError, match="holds no spans"):
        read_traces(empty)
    with pytest.raises(EvalDagError, match="does not exist and matches no file"):
        read_traces(tmp_path / "nothing*.jsonl")
    (tmp_path / "folder").mkdir()
    with pytest.raises(EvalDagError, match="holds no trace file"):
        read_traces(tmp_path / "folder")


def test_span_checks_gate_on_what_the_trace_did():
    conversations = ("thrown_error", "one_tool")
    items = pd.concat(
        [read_traces(sources("pydantic_ai", c)[".jsonl"]) for c in conversations],
        ignore_index=True,
    )
    result = evaldag.run_evals(
        items,
        gates=[
            checks.no_error_spans(),
            checks.has_span("execute_tool get_weather", parent="invoke_agent *"),
            checks.no_span("execute_tool delete_*"),
            checks.span_count("chat *", min=2, max=2),
            checks.has_span(
                "chat *",
                attributes={"gen_ai.usage.input_tokens": lambda n: n > 10},
                id="used-tokens",
            ),
            checks.max_span_duration(60_000, "execute_tool *"),
        ],
        progress=False,
    )
    scores = result.items.set_index(pd.Index(conversations))
    failed, fine = scores.loc["thrown_error"], scores.loc["one_tool"]
    assert failed["check-no-error-spans.score"] == 0 and fine["check-no-error-spans.score"] == 1
    assert failed["check-has-span.score"] == 0 and fine["check-has-span.score"] == 1
    assert failed["check-no-span.score"] == 0 and fine["check-no-span.score"] == 1
    assert failed["check-span-count.score"] == 1 == fine["check-span-count.score"]
    assert failed["used-tokens.score"] == 1 == fine["used-tokens.score"]
    assert failed["check-max-span-duration.score"] == 1 == fine["check-max-span-duration.score"]
    assert "execute_tool delete_db" in str(failed["check-no-error-spans.steps"])


def test_a_span_that_recorded_no_end_has_no_duration_to_pass_a_bound(tmp_path):
    """A tool still running when the trace was read (OTLP without endTimeUnixNano, Mastra's
    endedAt null) took an unknown time: max_span_duration errs on it, never counts it as 0 ms
    (a negative time for OTLP before)."""
    tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "slow"}
    running = _span("00000000000000d2", "execute_tool slow", "00000000000000d1", **tool)
    del running["endTimeUnixNano"]
    path = tmp_path / "spans.jsonl"
    path.write_text(json.dumps(_request(_span("00000000000000d1", "root"), running)) + "\n")
    otlp = read_traces(path)
    assert [span["duration_ms"] for span in otlp["spans"][0]] == [0.000001, None]
    mastra = read_traces(
        [
            {"traceId": "t", "spanId": "a", "name": "agent run", "spanType": "agent_run",
             "startedAt": "2025-01-01T00:00:00Z", "endedAt": "2025-01-01T00:00:09Z"},
            {"traceId": "t", "spanId": "b", "parentSpanId": "a", "name": "execute_tool slow",
             "spanType": "tool_call", "startedAt": "2025-01-01T00:00:00Z", "endedAt": None},
            {"traceId": "u", "spanId": "c", "name": "agent run", "spanType": "agent_run",
             "startedAt": "2025-01-01T00:00:00Z", "endedAt": "2025-01-01T00:00:09Z"},
            {"traceId": "u", "spanId": "d", "parentSpanId": "c", "name": "execute_tool fast",
             "spanType": "tool_call", "startedAt": "2025-01-01T00:00:00Z",
             "endedAt": "2025-01-01T00:00:00.5Z"},
        ]
    )  # fmt: skip
    result = evaldag.run_evals(
        pd.concat([otlp, mastra], ignore_index=True),
        gates=[checks.max_span_duration(1_000, "execute_tool *")],
        progress=False,
    )
    errors = result.items["check-max-span-duration.error"].tolist()
    assert all("'execute_tool slow'" in e and "has no duration" in e for e in errors[:2]), errors
    assert result.items["check-max-span-duration.score"].tolist()[2] == 1
    assert result.verdict == "failed"


def test_a_span_check_needs_the_spans_column():
    with pytest.raises(EvalDagError, match="spans"):
        evaldag.run_evals([{"input": "q", "output": "a"}], gates=[checks.no_error_spans()])
    with pytest.raises(EvalDagError, match="glob of span names"):
        checks.has_span(3)


def test_a_model_call_without_content_is_an_error_unless_content_is_optional(tmp_path):
    path = tmp_path / "spans.jsonl"
    chat = _span(
        "00000000000000c2", "chat m", "00000000000000c1", **{"gen_ai.operation.name": "chat"}
    )
    tool = _span(
        "00000000000000c3", "execute_tool delete_db", "00000000000000c1",
        **{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "delete_db"},
    )  # fmt: skip
    path.write_text(json.dumps(_request(_span("00000000000000c1", "root"), chat, tool)) + "\n")
    with pytest.raises(EvalDagError, match="recorded no message content"):
        read_traces(path)
    item = read_traces(path, content="optional").iloc[0]
    assert (
        checks.did_not_call("delete_db").run(input=item["input"], output=item["output"]).score == 0
    )


def test_log_events_belong_to_their_trace_when_span_ids_repeat(tmp_path):
    """A span id is unique within its trace only: two traces whose spans share ids (another
    generator, a replayed test run) each read their own log events."""
    shape = TRACES / "openai_v2_latest_events"
    text = "\n".join(
        (shape / f"one_tool{suffix}").read_text() for suffix in (".jsonl", ".logs.jsonl")
    )
    trace_id = json.loads(text.splitlines()[0])["resourceSpans"][0]["scopeSpans"][0]["spans"][0][
        "traceId"
    ]
    other = text.replace(trace_id, "f" * 32).replace("Paris", "Rome")
    path = tmp_path / "both.jsonl"
    path.write_text(text + "\n" + other + "\n")
    items = read_traces(path).set_index("trace_id")
    for trace, city in ((trace_id, "Paris"), ("f" * 32, "Rome")):
        conversation = json.dumps([items.loc[trace, "input"], items.loc[trace, "output"]])
        assert city in conversation
        assert ({"Paris", "Rome"} - {city}).pop() not in conversation
