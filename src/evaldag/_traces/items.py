"""One item per trace (or per chosen root span): its conversation as ``input`` and ``output``
transcripts, its tool spans as a trajectory, its ids, timing and usage.

The conversation is the messages the model calls recorded: the first call's input, then each
call's new input (the tool results) and its output; or, when the agent's span holds them all
(pydantic-ai), those. It is read by the transcript reader (closed-world), and the tool spans then
say what the messages cannot: a tool span that failed makes its call an error (most message
shapes have no error flag), and a call the messages lack is added from its span, so no executed
tool goes unseen.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any

from evaldag._reader import read_conversation, read_transcript
from evaldag._traces.conventions import reading
from evaldag._traces.otlp import unreadable
from evaldag._traces.runs import NOTHING, AgentRun, ModelCall, Reading, ToolRun
from evaldag._traces.spans import LogEvent, Span
from evaldag._traces.trajectory import as_record, span_tree
from evaldag.errors import EvalDagError


def otel_items(
    spans: list[Span],
    logs: list[LogEvent],
    chosen: Callable[[Span], bool] | None,
    content_required: bool = True,
    columns: Collection[str] | None = None,
) -> list[dict[str, Any]]:
    """The items of OpenTelemetry spans: one per root span (``chosen`` ones when given).

    :param content_required: whether an item whose model calls recorded no message content is
        an error (else its output holds its tool runs alone, and no text).
    :param columns: the columns wanted, when not every one: an item then lacks ``trajectory``
        and ``started_at`` unless they are among them (a receiver's scorers read few columns).
    """
    by_trace: dict[str, list[Span]] = {}
    for span in spans:
        by_trace.setdefault(span.trace_id, []).append(span)
    events: dict[tuple[str, str], list[LogEvent]] = {}
    for event in sorted(logs, key=lambda e: e.time_ns):
        events.setdefault((event.trace_id, event.span_id), []).append(event)
    items = []
    for trace_spans in by_trace.values():
        nodes, roots = span_tree(
            trace_spans, lambda s: s.span_id, lambda s: s.parent_span_id, lambda s: s.start_ns
        )
        tops = [n for n in nodes.values() if chosen(n.span)] if chosen else roots
        for top in sorted(tops, key=lambda n: n.start):
            subtree = [node.span for node in _walk(top)]
            items.append(_otel_item(top.span, subtree, events, top, content_required, columns))
    return items


def _walk(node: Any) -> Iterable[Any]:
    yield node
    for child in node.children:
        yield from _walk(child)


def _otel_item(
    root: Span,
    spans: list[Span],
    events: Mapping[tuple[str, str], list[LogEvent]],
    tree: Any,
    content_required: bool,
    columns: Collection[str] | None,
) -> dict[str, Any]:
    read = reading(spans, events)
    read.calls.sort(key=lambda call: call.span.start_ns)
    read.tools.sort(key=lambda tool: tool.span.start_ns)
    if not read.calls and not read.tools and not any(_holds_messages(a) for a in read.agents):
        raise unreadable(
            root.where(),
            f"is an item's root, and none of its {len(spans)} span(s) is a model call, a tool "
            "run or an agent run with messages that evaldag reads (docs/traces.md#conventions): "
            "the item would hold no conversation and no tool call, and 'did_not_call' would pass "
            "whatever the app did. Choose roots that hold an agent's spans (root=, --root), or "
            "record them with an instrumentation evaldag reads",
        )
    messages, where, earlier = _conversation(read, root)
    if not messages and read.calls and content_required:
        raise unreadable(
            read.calls[0].span.where(),
            "is a model call that recorded no message content, so the item has no text to "
            "score (a text scorer would judge an empty answer); turn content capture on "
            "(OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true for OpenTelemetry's "
            "instrumentations, TRACELOOP_TRACE_CONTENT=true for OpenLLMetry's), or "
            "read_traces(..., content='optional') to score its tool runs alone",
        )
    canonical, given_count = _read(messages, where, earlier)
    split = next(
        (
            k
            for k in range(given_count, len(canonical))
            if isinstance(canonical[k], dict) and canonical[k].get("role") == "assistant"
        ),
        len(canonical),
    )
    given, answered = canonical[:split], canonical[split:]
    _with_tool_runs(answered, read.tools)
    item = {
        **_identity(root, spans, columns is None or "started_at" in columns),
        "input": given,
        "output": answered,
        "input_tokens": _total(call.input_tokens for call in read.calls),
        "output_tokens": _total(call.output_tokens for call in read.calls),
        "cost_usd": _total(call.cost for call in read.calls),
        "model": next((call.model for call in reversed(read.calls) if call.model), None),
    }
    if columns is None or "trajectory" in columns:
        item["trajectory"] = _otel_trajectory(tree, read)
    return item


def _conversation(read: Reading, root: Span) -> tuple[list[Any], str, int]:
    """The conversation's messages, in the shapes the spans recorded them, where, and how many
    of them the run was given (the earlier turns of a conversation: the item's input, whatever
    tool calls they hold): the first model call's input, or pydantic-ai's message history."""
    agent = next(
        (a for a in read.agents if a.span is root), read.agents[0] if read.agents else None
    )
    if agent is not None and agent.all_messages:
        where = f"{agent.where} attribute pydantic_ai.all_messages"
        return agent.all_messages, where, _history_end(agent.all_messages, agent.history)
    if read.calls:
        first = read.calls[0]
        messages = [*first.input, *first.output]
        previous = first
        for call in read.calls[1:]:
            messages.extend(_new_input(previous, call))
            messages.extend(call.output)
            previous = call
        return messages, read.calls[-1].where, len(first.input)
    if agent is not None and (agent.input or agent.output):
        given = agent.input or []
        return [*given, *(agent.output or ())], agent.where, len(given)
    return [], root.where(), 0


def _holds_messages(agent: AgentRun) -> bool:
    return bool(agent.all_messages or agent.input or agent.output)


def _history_end(messages: list[Any], history: int) -> int:
    """Where pydantic-ai's ``history`` messages (``pydantic_ai.new_message_index``: requests and
    responses) end among its OpenTelemetry messages, in which a response is one assistant
    message and a request the messages up to the next one."""
    made = 0
    for index, message in enumerate(messages):
        assistant = isinstance(message, Mapping) and message.get("role") == "assistant"
        previous = messages[index - 1] if index else None
        if (
            index == 0
            or assistant
            or (isinstance(previous, Mapping) and previous.get("role") == "assistant")
        ):
            if made == history:
                return index
            made += 1
    return len(messages)


def _new_input(previous: ModelCall, call: ModelCall) -> list[Any]:
    """What ``call`` was given that ``previous`` had not given or returned: the tool results.
    Its input usually repeats the conversation so far; when it does not (a trimmed history),
    its tool messages are what is new."""
    known = len(previous.input) + len(previous.output)
    if len(call.input) >= known and _roles(call.input[: len(previous.input)]) == _roles(
        previous.input
    ):
        return call.input[known:]
    return [m for m in call.input if isinstance(m, Mapping) and m.get("role") == "tool"]


def _roles(messages: list[Any]) -> list[Any]:
    return [m.get("role") if isinstance(m, Mapping) else None for m in messages]


def _read(messages: list[Any], where: str, earlier: int) -> tuple[list[Any], int]:
    """The messages read by the transcript reader, and how many its first ``earlier`` made; an
    error names the span and attribute."""
    try:
        read, made = read_conversation(messages, "messages", earlier)
    except EvalDagError as error:
        raise unreadable(where, error.message) from None
    return list(read), made


def _with_tool_runs(messages: list[Any], tools: list[ToolRun]) -> None:
    """The tool spans' outcomes on their calls: a failed span makes its call an error, a result
    fills a call still waiting, a run no message records becomes a call of its own. A span
    without a call id (OpenLLMetry's @tool) answers the first call left of its tool with its
    arguments, else of its tool: runs of one tool need not start in the order of their calls."""
    invocations = [
        part["toolInvocation"]
        for message in messages
        if isinstance(message, dict)
        for part in message.get("content", {}).get("parts", ())
        if isinstance(part, dict) and part.get("type") == "tool-invocation"
    ]
    by_id = {inv.get("toolCallId"): inv for inv in invocations}
    matched: set[int] = set()
    missing = []
    for tool in tools:
        invocation = by_id.get(tool.call_id) if tool.call_id else None
        if invocation is None:
            left = [
                inv
                for inv in invocations
                if id(inv) not in matched and inv.get("toolName") == tool.name
            ]
            invocation = next((inv for inv in left if inv.get("args") == tool.args), None)
            invocation = invocation or next(iter(left), None)
        if invocation is None:
            missing.append(tool)
            continue
        matched.add(id(invocation))
        _apply(invocation, tool)
    if missing:
        parts = []
        for tool in missing:
            invocation = {
                "state": "call",
                "toolCallId": tool.call_id or f"span-{tool.span.span_id}",
                "toolName": tool.name,
                "args": tool.args,
            }
            _apply(invocation, tool)
            parts.append({"type": "tool-invocation", "toolInvocation": invocation})
        messages.append(
            {"id": "tool-spans", "role": "assistant", "content": {"format": 2, "parts": parts}}
        )


def _apply(invocation: dict[str, Any], tool: ToolRun) -> None:
    if tool.failed:
        invocation["state"] = "output-error"
        invocation["errorText"] = tool.error or "the tool failed"
        invocation.pop("result", None)
    elif invocation.get("state") in ("call", "partial-call") and tool.result is not NOTHING:
        invocation["state"] = "result"
        invocation["result"] = tool.result


def _otel_trajectory(tree: Any, read: Reading) -> dict[str, Any]:
    """The trace's tool runs (and the agents that ran them) as trajectory steps, nested by
    parent, in start order."""
    tools = {tool.span.span_id: tool for tool in read.tools}
    agents = {agent.span.span_id: agent for agent in read.agents}
    top = [step for child in tree.children for step in _steps(child, tools, agents)]
    return {"steps": top, "totalDurationMs": tree.span.duration_ms}


def _steps(
    node: Any, tools: Mapping[str, ToolRun], agents: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """The steps of a node under the item's root: its own (a tool run or an agent run, with
    its steps as children), or its children's steps. (A function of its own: a closure that
    calls itself is a reference cycle, which would keep each item's spans until the collector
    passes.)"""
    children = [step for child in node.children for step in _steps(child, tools, agents)]
    span = node.span
    step: dict[str, Any] = {"name": span.name, "durationMs": span.duration_ms}
    if children:
        step["children"] = children
    if span.span_id in tools:
        tool = tools[span.span_id]
        step.update(stepType="tool_call", name=tool.name)
        if tool.args is not None:
            step["toolArgs"] = as_record(tool.args)
        if tool.result is not NOTHING and not tool.failed and tool.result is not None:
            step["toolResult"] = as_record(tool.result)
        step["success"] = not tool.failed
        return [step]
    if span.span_id in agents:
        step.update(stepType="agent_run")
        return [step]
    return children


def _identity(root: Span, spans: list[Span], started_at: bool) -> dict[str, Any]:
    import pandas as pd

    failed = root.failed
    return {
        "trace_id": root.trace_id,
        "span_id": root.span_id,
        "name": root.name,
        "service": root.resource.get("service.name"),
        **({"started_at": pd.Timestamp(root.start_ns, unit="ns", tz="UTC")} if started_at else {}),
        "duration_ms": root.duration_ms,
        "status": "ERROR" if failed else root.status,
        "error": (root.status_message or "the span failed") if failed else None,
        "spans": [_span_record(span) for span in spans],
    }


def _span_record(span: Span) -> dict[str, Any]:
    """A span as the item's ``spans`` list holds it (what the span checks read)."""
    return {
        "span_id": span.span_id,
        "parent_span_id": span.parent_span_id,
        "name": span.name,
        "kind": span.kind,
        "status": "ERROR" if span.failed else span.status,
        "status_message": span.status_message,
        "start_ns": span.start_ns,
        "duration_ms": span.duration_ms,
        "attributes": span.attributes,
    }


def _total(values: Iterable[float | int | None]) -> float | int | None:
    given = [value for value in values if value is not None]
    return sum(given) if given else None


# --- Mastra's span records -------------------------------------------------------------------


def mastra_items(
    records: list[dict[str, Any]], chosen: Callable[[Mapping[str, Any]], bool] | None
) -> list[dict[str, Any]]:
    """The items of Mastra's span records: one per root (an ``agent_run`` or ``workflow_run``
    span), or per ``chosen`` span."""
    from evaldag._traces.trajectory import mastra_trajectory

    by_trace: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        by_trace.setdefault(record.get("traceId") or "", []).append(record)
    items = []
    for trace_id, spans in by_trace.items():
        nodes, roots = span_tree(
            spans,
            lambda s: s["spanId"],
            lambda s: s.get("parentSpanId"),
            lambda s: _epoch_ms(s.get("startedAt")),
        )
        tops = [n for n in nodes.values() if chosen(n.span)] if chosen else roots
        for top in sorted(tops, key=lambda n: n.start):
            subtree = [node.span for node in _walk(top)]
            root = top.span
            items.append(
                {
                    "trace_id": trace_id,
                    "span_id": root["spanId"],
                    "name": root.get("name"),
                    "service": root.get("serviceName"),
                    "started_at": _timestamp(root.get("startedAt")),
                    "duration_ms": _epoch_ms(root.get("endedAt")) - top.start
                    if root.get("endedAt")
                    else None,
                    "status": "ERROR" if root.get("error") else "OK",
                    "error": _mastra_error(root.get("error")),
                    "spans": [_mastra_record(span) for span in subtree],
                    **_mastra_conversation(top),
                    "trajectory": mastra_trajectory(subtree, root["spanId"]),
                    **_mastra_usage(subtree),
                }
            )
    return items


def _mastra_conversation(top: Any) -> dict[str, Any]:
    """Input: the root span's input; output: each model step's text and tool calls, the tool
    spans' results and errors joined to their calls by id (an unanswered client tool by name)."""
    root = top.span
    given = root.get("input")
    steps = [n for n in _walk(top) if n.span.get("spanType") == "model_step"]
    tool_spans = [
        n.span
        for n in _walk(top)
        if n.span.get("spanType")
        in ("tool_call", "mcp_tool_call", "client_tool_call", "provider_tool_call")
    ]
    by_id = {
        (s.get("attributes") or {}).get("toolCallId"): s
        for s in tool_spans
        if (s.get("attributes") or {}).get("toolCallId")
    }
    unnamed = [s for s in tool_spans if not (s.get("attributes") or {}).get("toolCallId")]
    output = []
    for step in steps or [top]:
        produced = step.span.get("output") or {}
        invocations = []
        for call in produced.get("toolCalls") or ():
            invocation = {
                "state": "call",
                "toolCallId": call.get("toolCallId"),
                "toolName": call.get("toolName"),
                "args": call.get("args") or {},
            }
            span = by_id.get(call.get("toolCallId"))
            if span is None:
                span = next(
                    (
                        s
                        for s in unnamed
                        if s.get("entityId", s.get("name"))
                        in (call.get("toolName"), f"tool: '{call.get('toolName')}'")
                    ),
                    None,
                )
            if span is not None and span.get("spanType") != "client_tool_call":
                if span.get("error"):
                    invocation["state"] = "output-error"
                    invocation["errorText"] = _mastra_error(span["error"])
                else:
                    invocation["state"] = "result"
                    invocation["result"] = span.get("output")
            invocations.append(invocation)
        text = produced.get("text") if isinstance(produced, Mapping) else None
        output.append({"role": "assistant", "content": text or "", "toolInvocations": invocations})
    return {
        "input": read_transcript(copy.deepcopy(given), "input"),
        "output": read_transcript(output, "output"),
    }


def _mastra_record(span: Mapping[str, Any]) -> dict[str, Any]:
    """A Mastra span record as the item's ``spans`` list holds it (its type as ``kind``)."""
    started, ended = _epoch_ms(span.get("startedAt")), _epoch_ms(span.get("endedAt"))
    return {
        "span_id": span.get("spanId"),
        "parent_span_id": span.get("parentSpanId"),
        "name": span.get("name"),
        "kind": span.get("spanType"),
        "status": "ERROR" if span.get("error") else "OK",
        "status_message": _mastra_error(span.get("error")) or "",
        "start_ns": int(started * 1e6),
        "duration_ms": ended - started if span.get("endedAt") else None,
        "attributes": span.get("attributes") or {},
    }


def _mastra_usage(spans: list[dict[str, Any]]) -> dict[str, Any]:
    generations = [s for s in spans if s.get("spanType") == "model_generation"]
    usage = [(s.get("attributes") or {}).get("usage") or {} for s in generations]
    model = next(((s.get("attributes") or {}).get("model") for s in reversed(generations)), None)
    return {
        "input_tokens": _total(u.get("inputTokens") for u in usage),
        "output_tokens": _total(u.get("outputTokens") for u in usage),
        "cost_usd": None,
        "model": model,
    }


def _mastra_error(error: Any) -> str | None:
    if not error:
        return None
    return str(error.get("message") if isinstance(error, Mapping) else error)


def _epoch_ms(value: Any) -> float:
    from evaldag._traces.trajectory import epoch_ms

    return epoch_ms(value) or 0.0


def _timestamp(value: Any) -> Any:
    import pandas as pd

    return (
        None
        if value is None
        else pd.Timestamp(value, tz="UTC")
        if isinstance(value, int | float)
        else pd.Timestamp(value)
    )
