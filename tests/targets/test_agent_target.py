"""``evaldag.agent`` as a target: Mastra's weather agent in Python, its model the loopback server
scripting tool calls and answers; tools described from signatures and docstrings."""

from __future__ import annotations

import json

import pytest
from judge_server import API_KEY, MODEL, Reply

import evaldag
from evaldag import EvalDagError, EvalResult, checks, run_evals, scorers
from evaldag._targets.tools import tool
from evaldag._util.event_loop import run_sync
from evaldag.errors import ConfigurationError
from evaldag.transcripts import extract_trajectory

WEATHER = {
    "Paris": {"temperature": 22, "humidity": 40, "windSpeed": 11, "conditions": "Clear sky"},
    "London": {"temperature": 14, "humidity": 81, "windSpeed": 24, "conditions": "Drizzle"},
}

INSTRUCTIONS = """You are a helpful weather assistant that provides accurate weather information.

Your primary function is to help users get weather details for specific locations. When
responding:
- Always ask for a location if none is provided
- If the location name isn't in English, please translate it
- Include relevant details like humidity, wind conditions, and precipitation
- Keep responses concise but informative

Use the get_weather tool to fetch current weather data."""


def get_weather(location: str) -> dict:
    """Get current weather for a location.

    :param location: City name
    """
    if location not in WEATHER:
        raise ValueError(f"Location '{location}' not found")
    return {"location": location, **WEATHER[location]}


def _weather_agent(server, transport=None, **options):
    model = server.judge(**({} if transport is None else {"transport": transport}))
    return evaldag.agent(model, tools=[get_weather], instructions=INSTRUCTIONS, **options)


def _call(location, id="call_1"):
    return Reply(
        tool_calls=[{"id": id, "name": "get_weather", "arguments": {"location": location}}]
    )


def test_tools_are_described_from_signature_and_docstring():
    def search(query: str, limit: int = 3, exact: bool = False) -> list[str]:
        """Search the help center.

        :param query: what to look for,
            in the user's words
        :param limit: how many articles at most
        """
        return []

    schema = tool(search).schema
    assert schema["function"]["name"] == "search"
    assert schema["function"]["description"] == "Search the help center."
    parameters = schema["function"]["parameters"]
    assert parameters["required"] == ["query"]
    assert parameters["properties"]["query"]["description"] == (
        "what to look for, in the user's words"
    )
    assert parameters["properties"]["limit"] == {
        "default": 3,
        "description": "how many articles at most",
        "title": "Limit",
        "type": "integer",
    }
    assert "description" not in parameters["properties"]["exact"]


# litellm's import takes seconds: its case is slow.
@pytest.mark.parametrize("transport", ["http", pytest.param("litellm", marks=pytest.mark.slow)])
def test_the_weather_agent_calls_its_tool_and_answers(judge_server, transport):
    judge_server.script(_call("Paris"), "It is 22°C and clear in Paris, humidity 40%.")
    weather_agent = _weather_agent(judge_server, transport)
    result = run_evals(
        [
            {
                "input": "What's the weather in Paris?",
                "expected_trajectory": {"steps": [{"name": "get_weather"}]},
            }
        ],
        target=weather_agent,
        scorers={
            "agent": [checks.includes("22")],
            "trajectory": [scorers.trajectory_accuracy()],
        },
        gates=[checks.called_tool("get_weather"), checks.no_tool_errors()],
    )
    assert result.verdict == "passed"
    assert result.scores == {
        "agent.check-includes": 1.0,
        "trajectory.code-trajectory-accuracy-scorer": 1.0,
    }
    first, second = judge_server.requests
    # aiohttp's own user agent on http; the OpenAI SDK's under litellm
    assert ("aiohttp" in first.headers.get("User-Agent", "")) == (transport == "http")
    assert first.system == INSTRUCTIONS and first.prompt == "What's the weather in Paris?"
    (described,) = first.body["tools"]
    assert described["function"]["name"] == "get_weather"
    assert described["function"]["parameters"]["properties"]["location"]["description"] == (
        "City name"
    )
    tool_message = second.messages[-1]
    assert tool_message["role"] == "tool" and tool_message["tool_call_id"] == "call_1"
    (asked,) = second.messages[-2]["tool_calls"]  # the model's call, repeated to it
    assert asked["id"] == "call_1" and asked["function"]["name"] == "get_weather"
    assert json.loads(asked["function"]["arguments"]) == {"location": "Paris"}
    assert json.loads(tool_message["content"])["temperature"] == 22
    (message,) = result.items["output"][0]
    assert message["role"] == "assistant"
    assert message["content"]["content"] == "It is 22°C and clear in Paris, humidity 40%."
    assert [p["type"] for p in message["content"]["parts"]] == [
        "tool-invocation",
        "step-start",
        "text",
    ]
    (step,) = extract_trajectory(result.items["output"][0])["steps"]
    assert step == {
        "stepType": "tool_call",
        "name": "get_weather",
        "toolArgs": {"location": "Paris"},
        "toolResult": {"location": "Paris", **WEATHER["Paris"]},
        "success": True,
    }
    # Each model call's record, as a judge call's: the reply, tokens, duration.
    calls = message["content"]["metadata"]["modelCalls"]
    assert [c["status"] for c in calls] == ["success", "success"]
    assert calls[0]["output"]["toolCalls"] == [
        {"id": "call_1", "name": "get_weather", "arguments": '{"location": "Paris"}'}
    ]
    assert calls[1]["output"]["content"].startswith("It is 22°C")
    assert calls[0]["modelCallCount"] == 1 and calls[0]["usage"]["totalTokens"] > 0
    assert calls[0]["judgeModelId"]
    # The run sums them apart from the judges' usage (none here: the scorers are code).
    assert result.usage == {}
    assert result.target_usage.calls == 2
    assert result.target_usage.total_tokens == sum(c["usage"]["totalTokens"] for c in calls) > 0


def test_the_agents_model_calls_are_summed_in_the_summary_the_report_and_the_file(
    judge_server, tmp_path
):
    from evaldag._cli.summary import summary_table
    from evaldag._report.html import write_report

    judge_server.script(_call("Paris"), "22°C in Paris.", _call("Oslo"), "9°C in Oslo.")
    result = run_evals(
        [{"input": "Paris?"}, {"input": "Oslo?"}],
        target=_weather_agent(judge_server, "http"),
        scorers=[checks.includes("°C")],
        concurrency=1,
    )
    usage = result.target_usage
    assert usage.calls == 4 and usage.total_tokens > 0
    assert f"target model: 4 calls, {usage.total_tokens:,} tokens, $0.0000" in summary_table(
        result, "agent"
    )
    result.to_parquet(tmp_path / "r.parquet")
    again = EvalResult.read_parquet(tmp_path / "r.parquet")
    assert again.target_usage == usage
    page = write_report(again, tmp_path / "report.html").read_text()
    assert '<p id="target-usage">The target\'s own model: 4 calls' in page


def test_the_calls_of_the_turns_a_failed_conversation_completed_are_counted(judge_server):
    # The second turn's input is no text or messages: the agent refuses it, after the first
    # turn's two calls were made and paid for.
    judge_server.script(_call("Paris"), "22°C in Paris.", _call("Oslo"), "9°C in Oslo.")
    result = run_evals(
        [{"inputs": ["Paris?", 42]}, {"inputs": ["Oslo?"]}],
        target=_weather_agent(judge_server),
        scorers=[checks.includes("°C")],
        concurrency=1,
    )
    assert result.items["target_error"][0].startswith("EvalDagError: turn 2 of 2: input must be")
    assert result.turns["output"][0] is not None
    assert result.target_usage.calls == len(judge_server.requests) == 4


@pytest.mark.parametrize("transport", ["http", "litellm"])
def test_the_agents_calls_are_retried_and_take_the_judges_settings(judge_server, transport):
    judge_server.script(Reply(status=503), _call("London"), "14°C in London.")
    model = judge_server.judge(transport=transport, tool_choice="auto", max_retries=1)
    weather_agent = evaldag.agent(model, tools=[get_weather])
    output = run_evals(
        [{"input": "Weather in London?"}], target=weather_agent, scorers=[checks.includes("14")]
    ).items["output"][0]
    refused, first, second = judge_server.requests
    assert first.body["tool_choice"] == "auto" and first.body["tools"]
    assert second.messages[-1]["role"] == "tool"
    calls = output[0]["content"]["metadata"]["modelCalls"]
    assert [c["modelCallCount"] for c in calls] == [1, 1]  # the 503 was retried, not recorded


def test_a_tool_error_is_in_the_transcript_and_fails_the_gate(judge_server):
    judge_server.script(_call("Atlantis"), "Sorry, I could not find Atlantis.")
    result = run_evals(
        [{"input": "Weather in Atlantis?"}],
        target=_weather_agent(judge_server),
        gates=[checks.called_tool("get_weather"), checks.no_tool_errors()],
    )
    assert [(g.id, g.passed) for g in result.gate_results] == [
        ("check-called-tool", True),
        ("check-no-tool-errors", False),
    ]
    assert result.verdict == "failed"
    invocation = result.items["output"][0][0]["content"]["parts"][0]["toolInvocation"]
    assert invocation["state"] == "output-error"
    assert invocation["errorText"] == "Location 'Atlantis' not found"
    told = judge_server.requests[1].messages[-1]
    assert json.loads(told["content"]) == {"error": "Location 'Atlantis' not found"}


def test_bad_arguments_and_unknown_tools_are_tool_errors(judge_server):
    judge_server.script(
        Reply(
            tool_calls=[
                {"id": "a", "name": "get_weather", "arguments": {"city": "Paris"}},
                {"id": "b", "name": "get_forecast", "arguments": {}},
            ]
        ),
        "Something went wrong.",
    )
    output = run_evals(
        [{"input": "Weather?"}],
        target=_weather_agent(judge_server),
        gates=[checks.no_tool_errors()],
    ).items["output"][0]
    errors = [p["toolInvocation"]["errorText"] for p in output[0]["content"]["parts"][:2]]
    assert errors[0].startswith("invalid arguments for get_weather") and "location" in errors[0]
    assert errors[1] == "unknown tool 'get_forecast'; the agent's tools are ['get_weather']"


def test_max_steps_bounds_the_model_calls(judge_server):
    judge_server.reply = _call("London")
    result = run_evals(
        [{"input": "Weather in London, again and again"}],
        target=_weather_agent(judge_server, max_steps=3),
        scorers=[checks.max_tool_calls(3)],
    )
    assert len(judge_server.requests) == 3
    assert result.items["check-max-tool-calls.score"].tolist() == [1.0]
    assert extract_trajectory(result.items["output"][0])["steps"][2]["name"] == "get_weather"


@pytest.mark.parametrize("transport", ["http", "litellm"])
def test_a_failing_model_is_a_recorded_target_error(judge_server, transport):
    judge_server.script(Reply(status=400), _call("Paris"), "22°C in Paris.")
    result = run_evals(
        [{"input": "Weather in London?"}, {"input": "Weather in Paris?"}],
        target=_weather_agent(judge_server, transport),
        scorers=[checks.includes("22")],
        concurrency=1,
    )
    error = result.items["target_error"][0]
    assert error.startswith("JudgeError: the agent's model call: model 'openai/mock-judge'")
    assert "refused the request (400 BadRequestError)" in error
    assert len(judge_server.requests) == 3  # a 400 is not retried
    assert result.items["check-includes.error"][0].startswith("target failed")
    assert result.items["check-includes.score"][1] == 1.0
    assert result.summary.target_errors == 1


@pytest.mark.parametrize(
    ("run_input", "said"),
    [
        (
            {"question": "Weather in Paris?"},
            "input must be a string, a message, a list of messages",
        ),
        (42, "got int"),
        ([{"q": "Weather in Paris?"}], "a list whose item 0 is a dict with keys ['q']"),
        ({"inputMessages": ["Weather in Paris?"]}, "got Mastra's agent run input"),
        (
            [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x.png"}}]}],
            "input[0].content.parts[0] is a 'image_url' part",
        ),
        (
            [
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"id": "c1", "function": {"name": "get_weather", "arguments": "{}"}}
                    ],
                },
                {"role": "user", "content": "Weather in Paris?"},
            ],
            "is a call of 'get_weather' in state 'call', without its result",
        ),
    ],
)
def test_an_input_the_model_cannot_be_sent_is_the_items_error_not_an_empty_message(
    judge_server, run_input, said
):
    # It was sent as an empty user message (or without the image, or with the call answered
    # by {"error": null}), and the model's answer scored.
    judge_server.reply = "22°C in Paris."
    with pytest.raises(EvalDagError) as raised:
        run_sync(_weather_agent(judge_server)(run_input))
    assert said in raised.value.message
    assert judge_server.requests == []


def test_history_and_input_in_every_shape_are_sent_as_text_and_tool_turns(judge_server):
    judge_server.reply = "Still 22°C."
    earlier = [
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "function": {"name": "get_weather", "arguments": '{"location": "x"}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "22"},
        {"role": "assistant", "content": "22°C."},
    ]
    weather_agent = _weather_agent(judge_server)
    run_sync(weather_agent({"role": "user", "content": "And now?"}, earlier))
    sent = judge_server.requests[0].body["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert sent[2]["tool_calls"][0]["function"]["name"] == "get_weather"
    assert (sent[4]["content"], sent[5]["content"]) == ("22°C.", "And now?")


def test_agent_arguments_are_checked():
    with pytest.raises(EvalDagError, match="max_steps"):
        evaldag.agent("openai/gpt-4o-mini", max_steps=0)
    with pytest.raises(EvalDagError, match="named Python function"):
        evaldag.agent("openai/gpt-4o-mini", tools=[lambda x: x])

    def lookup(*keys: str) -> None:
        """Look keys up."""

    with pytest.raises(EvalDagError, match=r"\*keys"):
        evaldag.agent("openai/gpt-4o-mini", tools=[lookup])
    with pytest.raises(EvalDagError, match="several tools named"):
        evaldag.agent("openai/gpt-4o-mini", tools=[get_weather, get_weather])


@pytest.mark.parametrize("transport", ["http", "litellm"])
def test_a_key_the_server_echoes_stays_out_of_the_agents_error(judge_server, transport):
    key = "sk-agent-secret-0123456789"
    echoed = json.dumps({"error": {"message": f"Incorrect API key provided: {key}"}})
    judge_server.script(Reply(status=401, body=echoed))
    model = evaldag.Judge(
        f"openai/{MODEL}", api_base=judge_server.url, api_key=key, transport=transport
    )
    with pytest.raises(evaldag.UntrustworthyRunError) as raised:
        run_evals(
            [{"input": "Weather?"}],
            target=evaldag.agent(model, tools=[get_weather]),
            scorers=[checks.includes("x")],
        )
    error = raised.value.result.items["target_error"][0]
    assert "refused the request (401" in error and "Incorrect API key" in error
    assert key not in error and key[:12] not in error


# --- a model that cannot call tools ---------------------------------------------------------------


def _refusal(message: str) -> Reply:
    """A 400 with an OpenAI-style error body saying ``message``."""
    error = {"message": message, "type": "invalid_request_error", "code": None}
    return Reply(status=400, body=json.dumps({"error": error}))


@pytest.mark.parametrize("transport", ["http", "litellm"])
@pytest.mark.parametrize(
    "message",
    [
        "registry.ollama.ai/library/gemma:2b does not support tools",
        '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set',
        "deepseek-reasoner does not support Function Calling",
    ],
)
def test_an_endpoint_refusing_the_tools_stops_the_run_naming_the_model(
    judge_server, transport, message
):
    judge_server.reply = _refusal(message)
    with pytest.raises(ConfigurationError) as raised:
        run_evals(
            [{"input": "Weather in Paris?"}, {"input": "Weather in Oslo?"}],
            target=_weather_agent(judge_server, transport),
            scorers=[checks.called_tool("get_weather")],
            concurrency=1,
        )
    error = raised.value
    assert error.id == "EVALDAG_AGENT_TOOLS_REFUSED" and error.details["agent"] == "agent"
    assert error.message.startswith(
        f"agent's model 'openai/{MODEL}' at {judge_server.url} refused the tools it was given "
        "(400 BadRequestError): "  # the server's words, which litellm prefixes with its own
    )
    assert error.message.endswith(
        f"{message}. Every item would fail: give evaldag.agent a model that calls tools (the "
        "local judge's does not), or change the tool whose schema the message names"
    )
    assert len(judge_server.requests) == 1  # the first call decided it: the run stopped


def test_a_refusal_that_is_not_about_tools_stays_the_items_error(judge_server):
    judge_server.script(
        _refusal("The model `gpt-5-ultra` does not exist"), _call("Paris"), "22°C in Paris."
    )
    result = run_evals(
        [{"input": "Weather in Oslo?"}, {"input": "Weather in Paris?"}],
        target=_weather_agent(judge_server),
        scorers=[checks.includes("22")],
        concurrency=1,
    )
    assert "does not exist" in result.items["target_error"][0]
    assert result.items["check-includes.score"][1] == 1.0


def test_a_model_that_ignores_the_tools_is_warned_in_the_summary(judge_server):
    """An endpoint that drops the tools answers in prose (as the local judge's llama.cpp did):
    no single item can tell that from a model choosing not to call them, the run can."""
    from evaldag._cli.summary import summary_table
    from evaldag._report.html import report_html

    judge_server.reply = "It is probably sunny in Paris."
    data = [{"input": "Weather in Paris?"}, {"input": "Weather in Oslo?"}]
    with pytest.warns(UserWarning, match="called no tool on any of its 2 items") as warned:
        result = run_evals(
            data, target=_weather_agent(judge_server), gates=[checks.called_tool("get_weather")]
        )
    (warning,) = result.summary.target_warnings
    assert warning == str(warned[0].message)
    assert warning.startswith(
        f"agent's model 'openai/{MODEL}' called no tool on any of its 2 items, though it was "
        "given tools (get_weather): it may not call tools at all"
    )
    assert all(r.body["tools"] for r in judge_server.requests)  # offered every time
    assert f"warning: {warning}" in summary_table(result, "agent")
    assert "<b>Warning:</b> agent&#x27;s model" in report_html(result)
    agent_record = result.items["output"][0][0]["content"]["metadata"]["agent"]
    assert agent_record == {"name": "agent", "model": f"openai/{MODEL}", "tools": ["get_weather"]}


def test_no_warning_once_the_model_called_a_tool(judge_server):
    judge_server.script(_call("Paris"), "22°C in Paris.", "I only know Paris.")
    result = run_evals(
        [{"input": "Weather in Paris?"}, {"input": "Weather in Oslo?"}],
        target=_weather_agent(judge_server),
        scorers=[checks.called_tool("get_weather")],
        concurrency=1,
    )
    assert result.summary.target_warnings == []
    judge_server.reply = "Hello."
    no_tools = run_evals(
        [{"input": "Hi"}],
        target=evaldag.agent(judge_server.judge(), instructions="Chat."),
        scorers=[checks.used_no_tools()],
    )
    assert no_tools.summary.target_warnings == []


def test_the_models_key_echoed_in_its_tool_calls_and_answer_is_masked(judge_server):
    """A proxy echoing the model's key into a tool call's arguments or the answer: the reply
    is redacted on arrival, so the tool, the transcript and the call records hold a mask."""
    judge_server.script(
        _call(f"Paris {API_KEY}"), f"Weather fetched with key {API_KEY}: 22°C in Paris."
    )
    result = run_evals(
        [{"input": "What's the weather in Paris?"}],
        target=_weather_agent(judge_server),
        scorers=[checks.includes("22")],
    )
    (step,) = extract_trajectory(result.items["output"][0])["steps"]
    assert step["toolArgs"] == {"location": "Paris **********"}  # what the tool was given
    (message,) = result.items["output"][0]
    assert message["content"]["content"] == "Weather fetched with key **********: 22°C in Paris."
    assert API_KEY not in result.items.to_json(default_handler=str)
