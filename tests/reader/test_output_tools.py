"""pydantic-ai's output tools: an Agent with a structured ``output_type`` answers through a tool
call that pydantic-ai answers with a status text. That call is the assistant's answer (the checks
and the LLM scorers read it), not a tool call. Every transcript is a real Agent run on a
FunctionModel, written by pydantic-ai's own serializer (or its OpenTelemetry instrumentation)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic import BaseModel

from evaldag import ScorerRun, checks, read_traces
from evaldag._reader.output_tools import (
    FINAL_RESULT,
    NOT_EXECUTED,
    RETRY_WINS,
    STATUSES,
    UNUSED,
)
from evaldag.transcripts import get_assistant_message, tool_invocations

SECRET = {"text": "the secret is 42", "confidence": 0.9}


class Answer(BaseModel):
    text: str
    confidence: float


class Refusal(BaseModel):
    reason: str


def _run(responses: list[Any], output_type: Any, **agent: Any) -> Any:
    """An Agent run whose model answers ``responses`` in turn (each a function of the tool
    definitions the model is given)."""
    from pydantic_ai import Agent
    from pydantic_ai.models.function import FunctionModel

    def model(messages: list[Any], info: Any) -> Any:
        from pydantic_ai.messages import ModelResponse

        done = sum(isinstance(message, ModelResponse) for message in messages)
        return responses[done](info)

    return Agent(FunctionModel(model), output_type=output_type, **agent)


def _calls(*calls: tuple[str | None, dict[str, Any]]) -> Any:
    """A response of tool calls; a ``None`` name is the first output tool's."""
    from pydantic_ai.messages import ModelResponse, ToolCallPart

    def response(info: Any) -> Any:
        return ModelResponse(
            parts=[
                ToolCallPart(name or info.output_tools[0].name, args, tool_call_id=f"c{k}")
                for k, (name, args) in enumerate(calls)
            ]
        )

    return response


def _dumped(messages: list[Any]) -> list[Any]:
    from pydantic_ai.messages import ModelMessagesTypeAdapter

    return ModelMessagesTypeAdapter.dump_python(messages, mode="json")


def _verdicts(output: Any, tool: str = "final_result") -> dict[str, float]:
    run = {"input": "q", "output": output}
    return {
        "excludes": checks.excludes("secret").run(**run).score,
        "includes": checks.includes("secret").run(**run).score,
        "used_no_tools": checks.used_no_tools().run(**run).score,
        "no_tool_errors": checks.no_tool_errors().run(**run).score,
        "did_not_call": checks.did_not_call(tool).run(**run).score,
    }


ANSWERED = {
    "excludes": 0.0, "includes": 1.0, "used_no_tools": 1.0, "no_tool_errors": 1.0,
    "did_not_call": 1.0,
}  # fmt: skip


def test_the_status_texts_are_pydantic_ais():
    """pinned: an upgrade of pydantic-ai that changes or adds an output status fails here."""
    from pydantic_ai import _tool_execution

    theirs = {
        name: value
        for name, value in vars(_tool_execution).items()
        if name.startswith(("_FINAL_RESULT", "_OUTPUT_", "_RETRY_WINS")) and isinstance(value, str)
    }
    assert set(theirs.values()) == STATUSES
    assert theirs["_FINAL_RESULT_PROCESSED"] == FINAL_RESULT
    assert theirs["_RETRY_WINS"] == RETRY_WINS
    assert FINAL_RESULT not in UNUSED
    assert _tool_execution._TOOL_SKIPPED_FINAL_ALREADY_PROCESSED == NOT_EXECUTED


@pytest.mark.parametrize(
    ("output_type", "tool"),
    [
        (Answer, "final_result"),
        ([Answer, Refusal], "final_result_Answer"),
        ("ToolOutput", "answer"),
    ],
)
def test_a_structured_answer_is_the_assistants_text(output_type, tool):
    from pydantic_ai import ToolOutput

    if output_type == "ToolOutput":
        output_type = ToolOutput(Answer, name="answer")
    agent = _run([_calls((None, SECRET))], output_type)
    result = agent.run_sync("What is the secret?")
    assert result.output == Answer(**SECRET)
    messages = result.all_messages()
    assert messages[1].parts[0].tool_name == tool
    for output in (_dumped(messages)[1:], messages[1:]):
        assert _verdicts(output, tool) == ANSWERED
        read = ScorerRun(input="q", output=output).output
        assert json.loads(get_assistant_message(read)) == SECRET
        assert tool_invocations(read) == []


def test_tools_before_the_answer_stay_calls():
    agent = _run([_calls(("lookup", {"q": "x"})), _calls((None, SECRET))], Answer)

    @agent.tool_plain
    def lookup(q: str) -> str:
        """Looks a thing up."""
        return "found"

    output = _dumped(agent.run_sync("q").all_messages())[1:]
    assert _verdicts(output) == {**ANSWERED, "used_no_tools": 0.0}
    assert [
        i["toolName"] for i in tool_invocations(ScorerRun(input="q", output=output).output)
    ] == ["lookup"]


def test_an_output_call_pydantic_ai_did_not_use_is_text_before_the_answer():
    """A second output call of the answering response is skipped ('Output tool not used - a
    final result was already processed.'): the model wrote it, so ``excludes`` reads it; the
    answer stays the first."""
    agent = _run([_calls((None, {"text": "fine", "confidence": 1}), (None, SECRET))], Answer)
    messages = agent.run_sync("q").all_messages()
    assert messages[-1].parts[1].content in UNUSED
    output = _dumped(messages)[1:]
    assert _verdicts(output) == {**ANSWERED, "includes": 0.0}  # the answer does not say it
    read = ScorerRun(input="q", output=output).output
    assert json.loads(get_assistant_message(read)) == {"text": "fine", "confidence": 1}


def test_an_output_set_aside_for_a_retry_is_text_and_the_retry_an_error():
    from pydantic_ai import ModelRetry

    agent = _run(
        [_calls(("flaky", {}), (None, SECRET)), _calls((None, {"text": "ok", "confidence": 1}))],
        Answer,
    )
    tries = []

    @agent.tool_plain
    def flaky() -> str:
        """Fails once."""
        tries.append(1)
        if len(tries) == 1:
            raise ModelRetry("again")
        return "ok"

    messages = agent.run_sync("q").all_messages()
    assert RETRY_WINS in [getattr(part, "content", None) for part in messages[2].parts]
    output = _dumped(messages)[1:]
    read = ScorerRun(input="q", output=output).output
    assert json.loads(get_assistant_message(read)) == {"text": "ok", "confidence": 1}
    assert [i["toolName"] for i in tool_invocations(read)] == ["flaky"]
    assert _verdicts(output) == {**ANSWERED, "used_no_tools": 0.0, "no_tool_errors": 0.0}


def test_a_function_tool_returning_the_status_text_stays_a_call():
    """A run that went on after the call is no final result, whatever its tool returned."""
    from pydantic_ai.messages import ModelResponse, TextPart

    agent = _run(
        [_calls(("delete_db", {})), lambda info: ModelResponse(parts=[TextPart("Done.")])], str
    )

    @agent.tool_plain
    def delete_db() -> str:
        """Deletes the database."""
        return FINAL_RESULT

    output = _dumped(agent.run_sync("q").all_messages())[1:]
    assert _verdicts(output, "delete_db")["did_not_call"] == 0.0
    assert get_assistant_message(ScorerRun(input="q", output=output).output) == "Done."


def test_every_run_of_a_history_answers():
    agent = _run([_calls((None, SECRET)), _calls((None, {"text": "ok", "confidence": 1}))], Answer)
    first = agent.run_sync("q")
    messages = agent.run_sync("q2", message_history=first.all_messages()).all_messages()
    read = ScorerRun(input="q", output=_dumped(messages)).output
    assert tool_invocations(read) == []
    answers = [m["content"]["parts"][-1]["text"] for m in read if m["role"] == "assistant"]
    assert list(map(json.loads, answers)) == [SECRET, {"text": "ok", "confidence": 1}]


def test_a_traced_structured_answer_is_the_assistants_text(tmp_path: Path):
    """pydantic-ai's agent span records the run's GenAI messages, the status text with them."""
    from pydantic_ai.capabilities import Instrumentation
    from pydantic_ai.models.instrumented import InstrumentationSettings

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    settings = InstrumentationSettings(tracer_provider=provider)
    agent = _run(
        [_calls((None, SECRET))], Answer, capabilities=[Instrumentation(settings=settings)]
    )
    agent.run_sync("What is the secret?")
    path = tmp_path / "spans.pb"
    path.write_bytes(encode_spans(exporter.get_finished_spans()).SerializeToString())
    (item,) = read_traces(path).to_dict("records")
    assert _verdicts(item["output"]) == ANSWERED
    assert json.loads(get_assistant_message(item["output"])) == SECRET


def test_a_structured_answer_in_pydantic_ais_ui_messages_is_the_assistants_text():
    """pydantic-ai's Vercel AI adapter writes the call and its status in one AI SDK UI part."""
    from pydantic_ai.ui.vercel_ai import VercelAIAdapter

    messages = _run([_calls((None, SECRET))], Answer).run_sync("q").all_messages()
    ui = [
        message.model_dump(mode="json", by_alias=True, exclude_none=True)
        for message in VercelAIAdapter.dump_messages(messages)
    ]
    assert ui[1]["parts"][0]["output"] == FINAL_RESULT
    assert _verdicts(ui[1:]) == ANSWERED
    assert json.loads(get_assistant_message(ScorerRun(input="q", output=ui[1:]).output)) == SECRET


def test_a_streamed_structured_answer_is_the_assistants_text():
    import asyncio

    from pydantic_ai import Agent
    from pydantic_ai.models.function import DeltaToolCall, FunctionModel

    async def stream(messages: list[Any], info: Any) -> Any:
        name = info.output_tools[0].name
        yield {0: DeltaToolCall(name=name, json_args=json.dumps(SECRET), tool_call_id="c1")}

    agent = Agent(FunctionModel(stream_function=stream), output_type=Answer)

    async def streamed() -> list[Any]:
        async with agent.run_stream("q") as result:
            await result.get_output()
        return result.all_messages()

    output = _dumped(asyncio.run(streamed()))[1:]
    assert _verdicts(output) == ANSWERED


def test_a_tool_pydantic_ai_skipped_beside_the_answer_is_a_call_not_run():
    """end_strategy='early': a function tool called beside the final result is not run
    ('Tool not executed - ...'), yet read as a call with that result, called_tool passed."""
    agent = _run([_calls((None, SECRET), ("send_email", {}))], Answer, end_strategy="early")
    sent = []

    @agent.tool_plain
    def send_email() -> str:
        """Sends the email."""
        sent.append(1)
        return "sent"

    output = _dumped(agent.run_sync("q").all_messages())[1:]
    assert sent == []
    run = {"input": "q", "output": output}
    assert checks.called_tool("send_email").run(**run).score == 0.0
    assert checks.did_not_call("send_email").run(**run).score == 0.0  # the model asked for it
    (skipped,) = tool_invocations(ScorerRun(**run).output)
    assert (skipped["state"], skipped["errorText"]) == ("output-denied", NOT_EXECUTED)


def _older(messages: list[Any]) -> list[Any]:
    """The messages as pydantic-ai wrote a retried return before ToolReturnPart.outcome: a
    RetryPromptPart, as the transcript fixtures' generator rewrites it."""
    import dataclasses

    from fixture_generators import generator
    from pydantic_ai.messages import ModelRequest
    from repo_paths import FIXTURES

    older = generator(FIXTURES / "transcripts" / "generate_python.py")._retry_prompt
    return [
        dataclasses.replace(m, parts=list(map(older, m.parts)))
        if isinstance(m, ModelRequest)
        else m
        for m in messages
    ]


@pytest.mark.parametrize("written", ["now", "older"])
def test_an_output_pydantic_ai_asked_to_redo_is_text_not_a_tool_error(written):
    """Structured output that failed validation: pydantic-ai asks the model to redo it (a
    retried return of the output tool), and the model answers again. That was a failed call
    of final_result: no_tool_errors and used_no_tools failed on a run that called no tool."""
    draft = {"text": "a secret draft", "confidence": "high"}  # no number: invalid
    agent = _run([_calls((None, draft)), _calls((None, {"text": "ok", "confidence": 1}))], Answer)
    messages = agent.run_sync("q").all_messages()
    assert [getattr(p, "outcome", None) for p in messages[2].parts] == ["retried"]
    output = _dumped(messages if written == "now" else _older(messages))[1:]
    assert _verdicts(output) == {**ANSWERED, "includes": 1.0}  # the draft was said
    read = ScorerRun(input="q", output=output).output
    assert json.loads(get_assistant_message(read)) == {"text": "ok", "confidence": 1}
    assert tool_invocations(read) == []


def test_a_failed_tool_of_an_earlier_run_named_as_a_later_runs_output_stays_an_error():
    """pydantic-ai refuses a function tool named as an output tool in one agent, not across
    the runs of a history: an earlier agent's failing 'final_result' tool is a tool error."""
    from pydantic_ai import ToolFailed
    from pydantic_ai.messages import ModelResponse, TextPart

    first = _run(
        [_calls(("final_result", {})), lambda info: ModelResponse(parts=[TextPart("Done.")])], str
    )

    @first.tool_plain
    def final_result() -> str:
        """Finishes the job."""
        raise ToolFailed("could not")

    history = first.run_sync("q").all_messages()
    later = _run([_calls((None, SECRET))] * 3, Answer)  # after the history's two responses
    messages = later.run_sync("q2", message_history=history).all_messages()
    read = ScorerRun(input="q", output=_dumped(messages)).output
    (failed,) = tool_invocations(read)
    assert (failed["toolName"], failed["state"]) == ("final_result", "output-error")
    assert json.loads(get_assistant_message(read)) == SECRET
