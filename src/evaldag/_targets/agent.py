"""``evaldag.agent``: a minimal tool-calling agent to evaluate as a target.

One turn: the model gets the instructions, the earlier turns and the input; while it asks for
tools (at most ``max_steps`` model calls), each call runs and its result, or its error, goes back
to it. The turn's output is one assistant message in Mastra's format 2 (as Mastra's
``agent.generate`` returns it): text parts, a ``tool-invocation`` part per call (state
``result``, or ``output-error`` with ``errorText``) and a ``step-start`` part between steps.

Each model call goes through the judge's transport (:func:`evaldag._judge.transport.chat_reply`:
``http`` or ``litellm``, as ``Judge(transport=...)`` picks), with a judge call's retries, shared
limit, prices and redacted errors; its record (tokens, cost, duration, the reply) is kept in the
message's ``content.metadata.modelCalls``.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evaldag._judge.settings import Judge, as_judge
from evaldag._judge.transport import chat_reply
from evaldag._targets.tools import Tool, ToolOutcome, tool
from evaldag.errors import EvalDagError
from evaldag.transcripts import get_text_content, run_messages


class Agent(BaseModel):
    """An LLM with tools, called once per turn; make one with :func:`agent`."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    model: Judge = Field(description="The model and its settings (api_base, api_key, ...).")
    tools: tuple[Tool, ...] = Field(default=(), description="The functions it may call.")
    instructions: str | None = Field(default=None, description="Its system prompt.")
    max_steps: int = Field(default=5, ge=1, description="Model calls per turn, at most.")
    name: str = Field(default="agent", description="Shown in errors and pictures.")

    async def __call__(self, input: Any, history: Sequence[Any] = ()) -> list[dict[str, Any]]:
        """This turn's output: one assistant message in Mastra's format.

        :param input: the user's message (a text, or chat messages).
        :param history: the earlier turns' messages (Mastra's, or any transcript ScorerRun reads).
        """
        messages = [{"role": "system", "content": self.instructions}] if self.instructions else []
        messages += _chat_messages(run_messages(list(history), "user"))
        messages += _chat_messages(run_messages(input, "user"))
        by_name = {t.name: t for t in self.tools}
        schemas = [t.schema for t in self.tools]
        parts: list[dict[str, Any]] = []
        calls: list[dict[str, Any]] = []
        text = ""
        for step in range(self.max_steps):
            if step:
                parts.append({"type": "step-start"})
            reply, record = await chat_reply(self.model, messages, schemas)
            calls.append(record.model_dump(mode="json", by_alias=True, exclude_none=True))
            text = reply.get("content") or ""
            if text:
                parts.append({"type": "text", "text": text})
            if not reply["tool_calls"]:
                break
            messages.append(_assistant_turn(reply))
            for call in reply["tool_calls"]:
                outcome = await _called(by_name, call)
                parts.append(_invocation_part(call, outcome, step))
                messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": call["id"],
                        "content": json.dumps(
                            outcome.result if outcome.error is None else {"error": outcome.error}
                        ),
                    }
                )
        content: dict[str, Any] = {"format": 2, "parts": parts, "metadata": {"modelCalls": calls}}
        if text:
            content["content"] = text
        return [
            {
                "id": str(uuid.uuid4()),
                "role": "assistant",
                "createdAt": datetime.now(UTC).isoformat(timespec="milliseconds"),
                "content": content,
            }
        ]


async def _called(tools: dict[str, Tool], call: dict[str, Any]) -> ToolOutcome:
    chosen = tools.get(call["name"])
    if chosen is None:
        return ToolOutcome(
            error=f"unknown tool {call['name']!r}; the agent's tools are {sorted(tools)}"
        )
    return await chosen.outcome(call["arguments"])


def _assistant_turn(reply: dict[str, Any]) -> dict[str, Any]:
    """The model's tool-calling reply, as the next request repeats it."""
    return {
        "role": "assistant",
        "content": reply.get("content") or None,
        "tool_calls": [
            {
                "id": call["id"],
                "type": "function",
                "function": {"name": call["name"], "arguments": call["arguments"] or "{}"},
            }
            for call in reply["tool_calls"]
        ],
    }


def _invocation_part(call: dict[str, Any], outcome: ToolOutcome, step: int) -> dict[str, Any]:
    try:
        args = json.loads(call["arguments"] or "{}")
    except ValueError:
        args = call["arguments"]
    invocation: dict[str, Any] = {
        "toolCallId": call["id"],
        "toolName": call["name"],
        "args": args,
        "step": step,
    }
    if outcome.error is None:
        invocation.update(state="result", result=outcome.result)
    else:
        invocation.update(state="output-error", errorText=outcome.error)
    return {"type": "tool-invocation", "toolInvocation": invocation}


def _chat_messages(messages: list[Any]) -> list[dict[str, Any]]:
    """Mastra's messages as chat-completions messages: tool calls as calls and their results."""
    chat: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, str):
            chat.append({"role": "user", "content": message})
            continue
        role = message.get("role")
        content = message.get("content")
        parts = content.get("parts") if isinstance(content, dict) else None
        if role != "assistant" or not isinstance(parts, list):
            chat.append({"role": role or "user", "content": get_text_content(message)})
            continue
        for part in parts:
            if part.get("type") == "text" and part.get("text"):
                chat.append({"role": "assistant", "content": part["text"]})
            elif part.get("type") == "tool-invocation":
                call = part["toolInvocation"]
                arguments = json.dumps(call.get("args", {}))
                chat.append(
                    _assistant_turn(
                        {
                            "tool_calls": [
                                {
                                    "id": call.get("toolCallId"),
                                    "name": call.get("toolName"),
                                    "arguments": arguments,
                                }
                            ],
                        }
                    )
                )
                result = (
                    call.get("result")
                    if call.get("state") == "result"
                    else {"error": call.get("errorText")}
                )
                chat.append(
                    {
                        "role": "tool",
                        "tool_call_id": call.get("toolCallId"),
                        "content": json.dumps(result),
                    }
                )
    return chat


def agent(
    model: str | Judge,
    *,
    tools: Sequence[Callable[..., Any]] = (),
    instructions: str | None = None,
    max_steps: int = 5,
    name: str = "agent",
) -> Agent:
    """An agent to evaluate: ``run_evals(data, target=evaldag.agent(...), ...)``.

    Mastra's weather agent, in Python::

        def get_weather(location: str) -> dict:
            \"\"\"Get current weather for a location.

            :param location: City name
            \"\"\"
            ...

        weather_agent = evaldag.agent(
            "openai/gpt-4o-mini",
            tools=[get_weather],
            instructions="You are a helpful weather assistant ...",
        )

    :param model: a litellm model string, or an ``evaldag.Judge`` carrying the model with its
        ``api_base``, ``api_key``, ``temperature``, ``timeout``, ``max_retries``, ``transport``
        and extra settings such as ``tool_choice`` (its ``instructions`` and ``cache`` are a
        judge's and are not used here). The calls go through the judge's transport: ``http``
        for an OpenAI-compatible ``api_base`` under ``transport="auto"``, else litellm; each
        call's record is in the output message's ``content.metadata.modelCalls``.
    :param tools: Python functions; each is described to the model by its name, docstring and
        signature (type hints, defaults, ``:param x:`` lines), and its arguments are validated
        with pydantic. A call that fails (bad arguments, the function raising, an unknown tool)
        is recorded in the transcript as a tool error and told to the model.
    :param instructions: the system prompt.
    :param max_steps: model calls per turn at most (each may call tools).
    """
    judge = as_judge(model, "model= of evaldag.agent")
    if judge is None or not judge.model:
        raise EvalDagError(
            "INVALID_AGENT",
            "evaldag.agent needs a model: a litellm model string such as 'openai/gpt-4o-mini' "
            "or an evaldag.Judge",
        )
    described = tuple(tool(function) for function in tools)
    names = [t.name for t in described]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise EvalDagError(
            "INVALID_AGENT_TOOL", f"evaldag.agent got several tools named {repeated}"
        )
    try:
        return Agent(
            model=judge,
            tools=described,
            instructions=instructions,
            max_steps=max_steps,
            name=name,
        )
    except ValidationError as error:
        problems = "; ".join(f"{e['loc'][0]}: {e['msg']}" for e in error.errors())
        raise EvalDagError("INVALID_AGENT", f"evaldag.agent: {problems}") from None
