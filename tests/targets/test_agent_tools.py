"""An agent's tools, however they end: a tool that hangs is abandoned at ``target_timeout``
without holding other items' tools (nor the run at its end), and a result JSON cannot carry as
it is (bytes that are not UTF-8, NaN, infinities) reaches the model as valid JSON."""

from __future__ import annotations

import asyncio
import base64
import json
import math
import threading

import pandas as pd
import pytest
from judge_server import Reply

import evaldag
from evaldag import checks, run_evals


def _asked(name, **arguments):
    return Reply(tool_calls=[{"id": "call_1", "name": name, "arguments": arguments}])


def _answered_after_tool(request):
    """A model that calls the tool its prompt names, then answers once it has the result."""
    if request.messages[-1]["role"] == "tool":
        return "done"
    return _asked(request.prompt.split()[0])


def _strict_json(text):
    def refused(constant):
        raise ValueError(f"{constant} is not JSON")

    return json.loads(text, parse_constant=refused)


def test_hung_tools_are_abandoned_and_do_not_starve_healthy_items(judge_server):
    released = threading.Event()
    finished = []

    def stall() -> str:
        """Wait for a service that never answers."""
        released.wait(120)
        finished.append(1)
        return "late"

    def fine() -> str:
        """Answer at once."""
        return "ok"

    judge_server.on(lambda request: True, _answered_after_tool)
    agent = evaldag.agent(judge_server.judge(), tools=[stall, fine])
    # more hung tools than the run has threads (concurrency=2): healthy items come after them
    items = [{"input": "stall please"}] * 3 + [{"input": "fine please"}] * 3
    try:
        result = run_evals(
            items,
            target=agent,
            scorers=[checks.called_tool("fine")],
            concurrency=2,
            target_timeout=5,
            progress=False,
        )
        assert finished == []  # the run did not wait for the hung tools
    finally:
        released.set()
    errors = result.items["target_error"].tolist()
    assert all("target_timeout=5 s" in str(error) for error in errors[:3]), errors
    assert pd.isna(errors[3:]).all(), errors
    assert result.items["check-called-tool.score"].tolist()[3:] == [1.0] * 3


def test_a_tool_returning_bytes_that_are_not_utf8_is_given_as_base64(judge_server):
    image = b"\x89PNG\r\n\x1a\n\xff\xfe"

    def thumbnail() -> bytes:
        """The thumbnail's bytes."""
        return image

    judge_server.on(lambda request: True, _answered_after_tool)
    agent = evaldag.agent(judge_server.judge(), tools=[thumbnail])
    result = run_evals(
        [{"input": "thumbnail please"}], target=agent, gates=[checks.no_tool_errors()]
    )
    assert result.verdict == "passed"
    told = _strict_json(judge_server.requests[1].messages[-1]["content"])
    assert base64.urlsafe_b64decode(told["result"]) == image
    assert "not UTF-8" in told["note"]
    part = result.items["output"][0][0]["content"]["parts"][0]["toolInvocation"]
    assert part["state"] == "result" and part["result"] == told


def test_utf8_bytes_are_text_and_nan_reaches_the_model_as_valid_json(judge_server):
    def reading() -> dict:
        """The sensor's reading."""
        return {"label": "caf\xe9".encode(), "value": math.nan, "peak": math.inf, "low": -math.inf}

    judge_server.on(lambda request: True, _answered_after_tool)
    agent = evaldag.agent(judge_server.judge(), tools=[reading])
    run_evals([{"input": "reading please"}], target=agent, gates=[checks.no_tool_errors()])
    told = _strict_json(judge_server.requests[1].messages[-1]["content"])
    assert told == {"label": "caf\xe9", "value": "NaN", "peak": "Infinity", "low": "-Infinity"}


@pytest.mark.parametrize("value", [math.nan, math.inf])
def test_an_earlier_turns_non_finite_result_is_valid_json_too(judge_server, value):
    history = [
        {
            "role": "assistant",
            "content": {
                "format": 2,
                "parts": [
                    {
                        "type": "tool-invocation",
                        "toolInvocation": {
                            "state": "result",
                            "toolCallId": "t1",
                            "toolName": "reading",
                            "args": {},
                            "result": {"value": value},
                        },
                    }
                ],
            },
        }
    ]
    judge_server.reply = "fine"
    agent = evaldag.agent(judge_server.judge())
    asyncio.run(agent("again?", history=history))
    (request,) = judge_server.requests
    tool_message = next(m for m in request.messages if m["role"] == "tool")
    assert _strict_json(tool_message["content"])["value"] in ("NaN", "Infinity")
