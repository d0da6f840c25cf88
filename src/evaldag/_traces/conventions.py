"""What a span is, by the conventions instrumentations follow: a model call (its input and output
messages), a tool run (its name, call id, arguments, result or error), an agent run, or none of
these.

- OpenTelemetry's GenAI conventions: ``gen_ai.operation.name`` (``chat``, ``execute_tool``,
  ``invoke_agent`` ...), messages in ``gen_ai.input.messages`` / ``gen_ai.output.messages``
  (JSON text or structured), or as events (span events or log records tied to the span:
  ``gen_ai.user.message``, ``gen_ai.choice``, ``gen_ai.client.inference.operation.details``), or
  as the older ``gen_ai.prompt.N.*`` / ``gen_ai.completion.N.*`` attributes (OpenLLMetry's
  earlier releases); pydantic-ai's ``pydantic_ai.all_messages`` on its agent span.
- OpenLLMetry's traceloop-sdk decorators: a ``@tool`` span (``traceloop.span.kind`` ``tool``) is a
  tool run (:mod:`evaldag._traces.traceloop`).
- OpenInference: ``openinference.span.kind`` (``LLM``, ``TOOL``, ``AGENT`` ...), messages in
  ``llm.input_messages.N.message.*`` / ``llm.output_messages.N.message.*``.

Closed world: a span holding a message or tool attribute no convention here reads is an error
naming the span and the attribute, never a span without calls.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import orjson

from evaldag._traces import traceloop
from evaldag._traces.otlp import unreadable
from evaldag._traces.runs import (
    NOTHING,
    AgentRun,
    ModelCall,
    Reading,
    ToolRun,
    error_text,
    json_attribute,
)
from evaldag._traces.spans import LogEvent, Span

#: GenAI operation names of a model call, a tool run and an agent run; others (embeddings,
#: retrieval) hold no conversation.
_MODEL_OPERATIONS = frozenset({"chat", "text_completion", "generate_content"})
_AGENT_OPERATIONS = frozenset({"invoke_agent", "create_agent", "invoke_workflow"})
_QUIET_OPERATIONS = frozenset({"embeddings", "retrieval", "create_embedding"})
#: OpenInference span kinds that hold no conversation.
_QUIET_KINDS = frozenset({"RETRIEVER", "EMBEDDING", "RERANKER", "GUARDRAIL", "EVALUATOR", "PROMPT"})
#: Attribute prefixes that carry messages or tool calls: a span holding one must be read.
_CARRIERS = (
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.prompt.",
    "gen_ai.completion.",
    "gen_ai.tool.",
    "llm.input_messages.",
    "llm.output_messages.",
    "tool.name",
    # OpenInference's keys of a tool call and a message, outside a message list: on a span it
    # does not read (UNKNOWN, DECISION, no kind), a call that would go unscored.
    "tool.id",
    "tool_call.",
    "message.tool_calls",
    "message.tool_call_id",
    "message.function_call_",
    "message.content",
    "pydantic_ai.all_messages",
    # The AI SDK's own spans (ai.generateText.doGenerate, ai.toolCall), which evaldag does not
    # read: they must be refused, not read as spans without calls.
    "ai.prompt.messages",
    "ai.response.toolCalls",
    "ai.toolCall.",
)
#: GenAI message events, by the role of the message they record.
_EVENT_ROLES = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}


def carries_conversation(key: str) -> bool:
    """Whether an attribute holds messages or tool calls (their arguments, their results)."""
    return key.startswith(_CARRIERS)


def reading(spans: list[Span], events: Mapping[tuple[str, str], list[LogEvent]]) -> Reading:
    """Each span as what it is; ``events`` are the log events of each span, by trace and span
    id (a span id is unique within its trace only)."""
    read = Reading()
    for span in spans:
        found = _span(span, events.get((span.trace_id, span.span_id), ()))
        if isinstance(found, ModelCall):
            read.calls.append(found)
        elif isinstance(found, ToolRun):
            read.tools.append(found)
        elif isinstance(found, AgentRun):
            read.agents.append(found)
    return read


def _span(span: Span, logs: Any) -> ModelCall | ToolRun | AgentRun | None:
    attributes = span.attributes
    operation = attributes.get("gen_ai.operation.name")
    kind = attributes.get("openinference.span.kind")
    if attributes.get(traceloop.SPAN_KIND) == "tool":
        return traceloop.traceloop_tool(span)
    if operation in _MODEL_OPERATIONS:
        return _genai_call(span, logs)
    if operation == "execute_tool" or (operation is None and "gen_ai.tool.name" in attributes):
        return _genai_tool(span)
    if operation in _AGENT_OPERATIONS:
        return _genai_agent(span)
    if kind == "LLM":
        return _openinference_call(span)
    if kind == "TOOL":
        return _openinference_tool(span)
    if kind in ("AGENT", "CHAIN"):
        return _openinference_agent(span)
    if any(key.startswith("gen_ai.prompt.") for key in attributes):
        return _openllmetry_call(span)
    if operation is None and kind is None and span.name.split(" ", 1)[0] == "execute_tool":
        raise unreadable(
            span.where(),
            "is named as a GenAI tool run ('execute_tool <tool>') but has neither "
            "gen_ai.operation.name nor gen_ai.tool.name (were its attributes dropped on the "
            "way, by a collector's filter?): reading it as no tool call could pass a gate wrongly",
        )
    if operation not in _QUIET_OPERATIONS and kind not in _QUIET_KINDS:
        carrier = next((k for k in attributes if k.startswith(_CARRIERS)), None)
        if carrier is not None or _event_messages(span.events, logs):
            what = (
                f"operation {operation!r}"
                if operation
                else f"openinference.span.kind {kind!r}"
                if kind
                else "no gen_ai.operation.name nor openinference.span.kind"
            )
            raise unreadable(
                span.where(),
                f"holds {carrier or 'GenAI message events'} but is no span evaldag reads "
                f"({what}): a model call (chat, "
                "text_completion, generate_content; LLM), a tool run (execute_tool; TOOL) or "
                "an agent run (invoke_agent; AGENT, CHAIN)",
            )
    return None


# --- OpenTelemetry GenAI ---------------------------------------------------------------------


def _genai_call(span: Span, logs: Any) -> ModelCall:
    attributes = span.attributes
    given_input = json_attribute(attributes, "gen_ai.input.messages", span)
    given_output = json_attribute(attributes, "gen_ai.output.messages", span)
    where = f"{span.where()} attribute gen_ai.input.messages / gen_ai.output.messages"
    details = [e for e in logs if e.name == "gen_ai.client.inference.operation.details"]
    if given_input is NOTHING and given_output is NOTHING and details:
        detail = details[-1].attributes
        given_input = json_attribute(detail, "gen_ai.input.messages", span)
        given_output = json_attribute(detail, "gen_ai.output.messages", span)
        attributes = {**detail, **attributes}
        where = f"{span.where()} log event gen_ai.client.inference.operation.details"
    if given_input is NOTHING and given_output is NOTHING:
        events = _event_messages(span.events, logs)
        if events is not None:
            given_input, given_output = events
            where = f"{span.where()} GenAI message events"
        elif any(key.startswith(("gen_ai.prompt.", "gen_ai.completion.")) for key in attributes):
            return _openllmetry_call(span)
    messages = [] if given_input is NOTHING else _list(given_input, f"{where} (input)")
    instructions = json_attribute(attributes, "gen_ai.system_instructions", span)
    if isinstance(instructions, list) and instructions:
        messages.insert(0, {"role": "system", "parts": instructions})
    return ModelCall(
        span,
        messages,
        [] if given_output is NOTHING else _list(given_output, f"{where} (output)"),
        where,
        model=attributes.get("gen_ai.response.model") or attributes.get("gen_ai.request.model"),
        input_tokens=_int(attributes.get("gen_ai.usage.input_tokens")),
        output_tokens=_int(attributes.get("gen_ai.usage.output_tokens")),
        cost=_float(attributes.get("operation.cost", attributes.get("gen_ai.usage.cost"))),
    )


def _genai_tool(span: Span) -> ToolRun:
    attributes = span.attributes
    name = attributes.get("gen_ai.tool.name")
    if not isinstance(name, str) or not name:
        raise unreadable(span.where(), "is a tool run without gen_ai.tool.name")
    args = json_attribute(attributes, "gen_ai.tool.call.arguments", span)
    if args is NOTHING:
        # pydantic-ai before the conventions
        args = json_attribute(attributes, "tool_arguments", span)
    result = json_attribute(attributes, "gen_ai.tool.call.result", span)
    if result is NOTHING:
        result = json_attribute(attributes, "tool_response", span)
    return ToolRun(
        span,
        name,
        attributes.get("gen_ai.tool.call.id"),
        {} if args is NOTHING else args,
        result,
        failed=span.failed,
        error=error_text(span) if span.failed else None,
    )


def _genai_agent(span: Span) -> AgentRun:
    attributes = span.attributes
    given_input = json_attribute(attributes, "gen_ai.input.messages", span)
    given_output = json_attribute(attributes, "gen_ai.output.messages", span)
    everything = json_attribute(attributes, "pydantic_ai.all_messages", span)
    where = f"{span.where()} attribute"
    messages = (
        None if given_input is NOTHING else _list(given_input, f"{where} gen_ai.input.messages")
    )
    instructions = json_attribute(attributes, "gen_ai.system_instructions", span)
    if messages is not None and isinstance(instructions, list) and instructions:
        messages.insert(0, {"role": "system", "parts": instructions})
    return AgentRun(
        span,
        messages,
        None if given_output is NOTHING else _list(given_output, f"{where} gen_ai.output.messages"),
        None if everything is NOTHING else _list(everything, f"{where} pydantic_ai.all_messages"),
        where=span.where(),
        history=_int(attributes.get("pydantic_ai.new_message_index")) or 0,
    )


def _event_messages(span_events: Any, logs: Any) -> tuple[list[Any], list[Any]] | None:
    """The input and output messages GenAI message events record (span events or log records),
    as OpenAI chat messages; None when there are none."""
    events = [
        (e.name, e.attributes)
        for e in span_events
        if e.name in _EVENT_ROLES or e.name == "gen_ai.choice"
    ]
    events += [
        (e.name, e.body) for e in logs if e.name in _EVENT_ROLES or e.name == "gen_ai.choice"
    ]
    if not events:
        return None
    given, returned = [], []
    for name, body in events:
        body = body if isinstance(body, Mapping) else {"content": body}
        if name == "gen_ai.choice":
            message = body.get("message")
            returned.append(
                {"role": "assistant", **(message if isinstance(message, Mapping) else {})}
            )
            continue
        message = {"role": _EVENT_ROLES[name]}
        for key in ("content", "tool_calls"):
            if body.get(key) is not None:
                message[key] = body[key]
        if name == "gen_ai.tool.message":
            message["tool_call_id"] = body.get("id")
        given.append(message)
    return given, [_openai_arguments(m) for m in returned]


def _openai_arguments(message: Mapping[str, Any]) -> dict[str, Any]:
    """An event's assistant message: ``tool_calls`` in OpenAI's shape (``type`` may be left out)."""
    message = dict(message)
    message.pop("finish_reason", None)
    return message


# --- OpenInference and OpenLLMetry (flattened attributes) ------------------------------------


def _openinference_call(span: Span) -> ModelCall:
    attributes = span.attributes
    return ModelCall(
        span,
        _openinference_messages(attributes, "llm.input_messages.", span),
        _openinference_messages(attributes, "llm.output_messages.", span),
        f"{span.where()} attribute llm.input_messages / llm.output_messages",
        model=attributes.get("llm.model_name"),
        input_tokens=_int(attributes.get("llm.token_count.prompt")),
        output_tokens=_int(attributes.get("llm.token_count.completion")),
        cost=_float(attributes.get("llm.cost.total")),
    )


def _openinference_messages(attributes: Mapping[str, Any], prefix: str, span: Span) -> list[Any]:
    """``<prefix>N.message.*`` as OpenAI chat messages."""
    messages = []
    for index, flat in sorted(_indexed(attributes, prefix).items()):
        message = _unflattened(flat).get("message")
        if not isinstance(message, Mapping):
            raise unreadable(span.where(), f"attribute {prefix}{index} holds no 'message.*'")
        chat: dict[str, Any] = {"role": message.get("role")}
        if message.get("content") is not None:
            chat["content"] = message["content"]
        contents = message.get("contents")
        if isinstance(contents, Mapping):
            chat["content"] = [
                _openinference_part(contents[k], span) for k in sorted(contents, key=int)
            ]
        calls = message.get("tool_calls")
        if isinstance(calls, Mapping):
            chat["tool_calls"] = [
                _openinference_call_entry(calls[k].get("tool_call") or {})
                for k in sorted(calls, key=int)
            ]
        if message.get("tool_call_id") is not None:
            chat["tool_call_id"] = message["tool_call_id"]
        if message.get("name") is not None and message.get("role") != "tool":
            chat["name"] = message["name"]
        messages.append(chat)
    return messages


def _openinference_part(part: Any, span: Span) -> dict[str, Any]:
    content = part.get("message_content") if isinstance(part, Mapping) else None
    if not isinstance(content, Mapping):
        raise unreadable(span.where(), "holds a message content without 'message_content.*'")
    kind = content.get("type")
    if kind == "text":
        return {"type": "text", "text": content.get("text")}
    if kind == "image":
        return {"type": "image_url", "image_url": content.get("image") or {}}
    return {"type": kind}  # refused by the transcript reader, naming the type


def _openinference_call_entry(call: Mapping[str, Any]) -> dict[str, Any]:
    function = call.get("function") or {}
    return {
        "id": call.get("id"),
        "type": "function",
        "function": {"name": function.get("name"), "arguments": function.get("arguments")},
    }


def _openinference_tool(span: Span) -> ToolRun:
    attributes = span.attributes
    name = attributes.get("tool.name")
    if not isinstance(name, str) or not name:
        raise unreadable(span.where(), "is an OpenInference TOOL span without tool.name")
    call_id = attributes.get("tool.id", attributes.get("tool_call.id"))
    return ToolRun(
        span,
        name,
        call_id if isinstance(call_id, str) else None,
        _value(attributes, "input", span),
        _value(attributes, "output", span),
        failed=span.failed,
        error=error_text(span) if span.failed else None,
    )


def _openinference_agent(span: Span) -> AgentRun:
    attributes = span.attributes
    given_input = _value(attributes, "input", span)
    given_output = _value(attributes, "output", span)
    return AgentRun(
        span,
        None if given_input is NOTHING else [{"role": "user", "content": _text(given_input)}],
        None
        if given_output is NOTHING
        else [{"role": "assistant", "content": _text(given_output)}],
        where=span.where(),
    )


def _openllmetry_call(span: Span) -> ModelCall:
    """OpenLLMetry's ``gen_ai.prompt.N.*`` / ``gen_ai.completion.N.*`` attributes."""
    attributes = span.attributes
    return ModelCall(
        span,
        [
            _openllmetry_message(m)
            for _, m in sorted(_indexed(attributes, "gen_ai.prompt.").items())
        ],
        [
            {"role": "assistant", **_openllmetry_message(m)}
            for _, m in sorted(_indexed(attributes, "gen_ai.completion.").items())
        ],
        f"{span.where()} attribute gen_ai.prompt.* / gen_ai.completion.*",
        model=attributes.get("gen_ai.response.model") or attributes.get("gen_ai.request.model"),
        input_tokens=_int(
            attributes.get(
                "gen_ai.usage.prompt_tokens", attributes.get("gen_ai.usage.input_tokens")
            )
        ),
        output_tokens=_int(
            attributes.get(
                "gen_ai.usage.completion_tokens", attributes.get("gen_ai.usage.output_tokens")
            )
        ),
    )


def _openllmetry_message(flat: Mapping[str, Any]) -> dict[str, Any]:
    message = _unflattened(flat)
    chat: dict[str, Any] = {
        key: message[key] for key in ("role", "content", "tool_call_id") if key in message
    }
    calls = message.get("tool_calls")
    if isinstance(calls, Mapping):
        chat["tool_calls"] = [
            {
                "id": calls[k].get("id"),
                "type": "function",
                "function": {"name": calls[k].get("name"), "arguments": calls[k].get("arguments")},
            }
            for k in sorted(calls, key=int)
        ]
    return chat


def _indexed(attributes: Mapping[str, Any], prefix: str) -> dict[int, dict[str, Any]]:
    """``<prefix>N.rest`` attributes grouped by N: ``{N: {rest: value}}``."""
    grouped: dict[int, dict[str, Any]] = {}
    for key, value in attributes.items():
        if key.startswith(prefix):
            index, _, rest = key[len(prefix) :].partition(".")
            if index.isdigit():
                grouped.setdefault(int(index), {})[rest] = value
    return grouped


def _unflattened(flat: Mapping[str, Any]) -> dict[str, Any]:
    """``{"a.b.c": v}`` as ``{"a": {"b": {"c": v}}}``."""
    tree: dict[str, Any] = {}
    for key, value in flat.items():
        node = tree
        *path, last = key.split(".")
        for part in path:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                break
        else:
            node[last] = value
    return tree


# --- values ------------------------------------------------------------------------------------


def _value(attributes: Mapping[str, Any], prefix: str, span: Span) -> Any:
    """OpenInference's ``<prefix>.value``, read as JSON when ``<prefix>.mime_type`` says so."""
    if f"{prefix}.value" not in attributes:
        return NOTHING
    value = attributes[f"{prefix}.value"]
    if attributes.get(f"{prefix}.mime_type") == "application/json" and isinstance(value, str):
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            raise unreadable(span.where(), f"attribute {prefix}.value is not JSON") from None
    return value


def _list(value: Any, where: str) -> list[Any]:
    if isinstance(value, list):
        return list(value)
    raise unreadable(where, f"must be a list of messages, got {type(value).__name__}")


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _float(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
