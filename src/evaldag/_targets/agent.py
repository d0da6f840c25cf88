"""``evaldag.agent``: a minimal tool-calling agent to evaluate as a target.

One turn: the model gets the instructions, the earlier turns and the input; while it asks for
tools (at most ``max_steps`` model calls), each call runs and its result, or its error, goes back
to it. The turn's output is one assistant message in Mastra's format 2 (as Mastra's
``agent.generate`` returns it): text parts, a ``tool-invocation`` part per call (state
``result``, or ``output-error`` with ``errorText``) and a ``step-start`` part between steps.

Each model call goes through the judge's transport (:func:`evaldag._judge.transport.chat_reply`:
``http`` or ``litellm``, as ``Judge(transport=...)`` picks), with a judge call's retries, shared
limit, prices and redacted errors; its record (tokens, cost, duration, the reply) is kept in the
message's ``content.metadata.modelCalls``, and the agent (name, model, tools) in
``content.metadata.agent``.

A model that cannot call tools fails every item the same way. An endpoint that refuses the tools
(a 4xx naming them) stops the run with a ``ConfigurationError`` naming the model; one that
ignores them answers in prose, which no single item can tell from a model choosing not to call
a tool, so the run's summary warns when the model called no tool on any item
(:func:`unused_tools_warnings`).
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evaldag._judge.errors import JudgeCallError, JudgeError
from evaldag._judge.records import JudgeExecution
from evaldag._judge.settings import Judge, as_judge
from evaldag._judge.transport import chat_reply
from evaldag._reader import checked_input, is_messages, read_transcript
from evaldag._targets.tools import Tool, ToolOutcome, tool, tool_message_text
from evaldag.errors import ConfigurationError, EvalDagError
from evaldag.transcripts import get_text_content, run_messages

#: What a refusal of the tools says: tools, a tool choice, function calling.
_ABOUT_TOOLS = re.compile(r"\btool|function.?call", re.IGNORECASE)


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
        messages += _chat_messages(list(history), "history")
        messages += _chat_messages(input, "input")
        by_name = {t.name: t for t in self.tools}
        schemas = [t.schema for t in self.tools]
        parts: list[dict[str, Any]] = []
        calls: list[dict[str, Any]] = []
        text = ""
        for step in range(self.max_steps):
            if step:
                parts.append({"type": "step-start"})
            reply, record = await self._reply(messages, schemas)
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
                        "content": tool_message_text(
                            outcome.result if outcome.error is None else {"error": outcome.error}
                        ),
                    }
                )
        described = {"name": self.name, "model": self.model.model, "tools": list(by_name)}
        content: dict[str, Any] = {
            "format": 2,
            "parts": parts,
            "metadata": {"modelCalls": calls, "agent": described},
        }
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

    async def _reply(
        self, messages: list[dict[str, Any]], schemas: list[dict[str, Any]]
    ) -> tuple[dict[str, Any], JudgeExecution]:
        """The model's reply and its record; a refusal of the tools stops the run."""
        try:
            return await chat_reply(self.model, messages, schemas)
        except JudgeError as error:
            refusal = _tools_refusal(error) if schemas else None
            if refusal is not None:
                where = error.details.get("apiBase")
                raise ConfigurationError(
                    "EVALDAG_AGENT_TOOLS_REFUSED",
                    f"{self.name}'s model {self.model.model!r}"
                    + (f" at {where}" if where else "")
                    + f" refused the tools it was given ({refusal.status} {refusal.name}): "
                    f"{refusal.detail}. Every item would fail: give evaldag.agent a model that "
                    "calls tools (the local judge's does not), or change the tool whose schema "
                    "the message names",
                    details={**error.details, "agent": self.name},
                    cause=error,
                ) from error
            raise


def _tools_refusal(error: JudgeError) -> JudgeCallError | None:
    """The endpoint's refusal of the tools, if that is the failure: a 400, 404 or 422 whose
    message is about tools or function calling."""
    cause = error.cause
    if (
        error.id == "EVALDAG_JUDGE_REFUSED"
        and isinstance(cause, JudgeCallError)
        and cause.status in (400, 404, 422)
        and _ABOUT_TOOLS.search(cause.detail) is not None
    ):
        return cause
    return None


def unused_tools_warnings(outputs: Iterable[Any]) -> list[str]:
    """A warning per agent given tools whose model called none on any item of the run: it may
    ignore the tools (an endpoint that does answers in prose), and then every check of a tool
    call fails for the model's sake, not the agent's."""
    offered: dict[tuple[str, str], tuple[list[str], int]] = {}
    called: set[tuple[str, str]] = set()
    for output in outputs:
        seen = set()
        for message in output if isinstance(output, list) else ():
            content = message.get("content") if isinstance(message, dict) else None
            metadata: Any = content.get("metadata") if isinstance(content, dict) else None
            agent = metadata.get("agent") if isinstance(metadata, dict) else None
            if not isinstance(agent, dict) or not agent.get("tools"):
                continue
            key = (str(agent.get("name")), str(agent.get("model")))
            if key not in seen:
                seen.add(key)
                tools, items = offered.get(key, (agent["tools"], 0))
                offered[key] = (tools, items + 1)
            if any(
                isinstance(record, dict) and (record.get("output") or {}).get("toolCalls")
                for record in metadata.get("modelCalls") or ()
            ):
                called.add(key)
    return [
        f"{name}'s model {model!r} called no tool on any of its {items} items, though it was "
        f"given tools ({', '.join(map(str, tools))}): it may not call tools at all (an "
        "endpoint that ignores them answers in prose), and then every check of a tool call "
        "fails for that reason; try the agent with a model known to call tools"
        for (name, model), (tools, items) in offered.items()
        if (name, model) not in called
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


#: Parts the model is not sent: the agent's own reasoning and step boundaries.
_UNSENT_PARTS = frozenset({"reasoning", "step-start"})


def _chat_messages(value: Any, field: str) -> list[dict[str, Any]]:
    """``value`` (a text or messages, read as ``ScorerRun`` reads them) as chat-completions
    messages: text, tool calls and their results. Anything the model cannot be sent (an app's
    own dict, an image part, a call still waiting for its result) is an error naming ``field``,
    never an empty message."""
    checked = checked_input(value, "the agent target", field)
    if isinstance(checked, dict) and not is_messages(checked):
        raise EvalDagError(
            "EVALDAG_INVALID_RUN_INPUT",
            f"{field} of the agent target must be a text or messages, got Mastra's agent run "
            f"input (keys {sorted(checked)}); give its messages (inputMessages) instead",
            details={"field": field},
        )
    chat: list[dict[str, Any]] = []
    for index, message in enumerate(run_messages(read_transcript(checked, "input"), "user")):
        if isinstance(message, str):
            chat.append({"role": "user", "content": message})
            continue
        role = message.get("role") or "user"
        content = message.get("content")
        parts = content.get("parts") if isinstance(content, dict) else None
        if not isinstance(parts, list):
            chat.append({"role": role, "content": get_text_content(message)})
            continue
        texts: list[str] = []
        for number, part in enumerate(parts):
            kind = part.get("type")
            where = f"{field}[{index}].content.parts[{number}]"
            if kind == "text":
                texts.append(part.get("text") or "")
            elif kind == "tool-invocation" and role == "assistant":
                if texts:
                    chat.append({"role": role, "content": "".join(texts)})
                    texts = []
                chat += _tool_turns(part["toolInvocation"], where)
            elif kind not in _UNSENT_PARTS:
                raise EvalDagError(
                    "EVALDAG_INVALID_RUN_INPUT",
                    f"{where} is a {kind!r} part (of a message with role {role!r}), which the "
                    "agent target cannot send to its model (it sends text, tool calls and their "
                    "results); give the text instead",
                    details={"field": where},
                )
        if texts or role != "assistant":
            chat.append({"role": role, "content": "".join(texts)})
    return chat


def _tool_turns(call: dict[str, Any], where: str) -> list[dict[str, Any]]:
    """A tool call and its result (or error) as chat messages."""
    state = call.get("state")
    if state == "result":
        result = call.get("result")
    elif state in ("output-error", "output-denied"):
        result = {"error": call.get("errorText") or state}
    else:
        raise EvalDagError(
            "EVALDAG_INVALID_RUN_INPUT",
            f"{where} is a call of {call.get('toolName')!r} in state {state!r}, without its "
            "result: the agent target sends each call with its result or error",
            details={"field": where},
        )
    turn = {"id": call.get("toolCallId"), "name": call.get("toolName")}
    turn["arguments"] = json.dumps(call.get("args", {}))
    return [
        _assistant_turn({"tool_calls": [turn]}),
        {
            "role": "tool",
            "tool_call_id": call.get("toolCallId"),
            "content": tool_message_text(result),
        },
    ]


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
