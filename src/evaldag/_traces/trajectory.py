"""A trace as a trajectory: tool, agent, model and workflow spans as Mastra's trajectory steps,
nested by parent, in start order.

Mastra's ``extractTrajectoryFromTrace`` (spec §1.3) for Mastra's span records, where each span
says its ``spanType``; the same tree for OpenTelemetry spans, whose kind of step the conventions
(``conventions.py``) tell.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

#: Mastra span types that are no step: their children are promoted to their parent.
SKIPPED_SPAN_TYPES = frozenset(
    {
        "scorer_run",
        "scorer_step",
        "generic",
        "skill_resolution",
        "model_step",
        "model_inference",
        "model_chunk",
        "workflow_conditional_eval",
    }
)
#: A root of these types stands for the whole run: its children are the top-level steps.
_RUN_TYPES = frozenset({"workflow_run", "agent_run"})


@dataclass(slots=True)
class Node:
    """A span in its tree."""

    span: Any
    start: float
    children: list[Node] = field(default_factory=list)


def span_tree(
    spans: Iterable[Any],
    span_id: Callable[[Any], str],
    parent_id: Callable[[Any], str | None],
    start: Callable[[Any], float],
) -> tuple[dict[str, Node], list[Node]]:
    """Every span's node by id, and the roots (spans whose parent is not among them), children
    in start order."""
    nodes: dict[str, Node] = {}
    for span in spans:
        nodes[span_id(span)] = Node(span, start(span))
    roots = []
    for node in nodes.values():
        parent = parent_id(node.span)
        if parent and parent in nodes:
            nodes[parent].children.append(node)
        else:
            roots.append(node)
    for node in nodes.values():
        node.children.sort(key=lambda child: child.start)
    roots.sort(key=lambda root: root.start)
    return nodes, roots


def mastra_trajectory(spans: list[Mapping[str, Any]], root_span_id: str | None = None) -> dict:
    """Mastra's ``extractTrajectoryFromTrace(spans, rootSpanId)`` over its span records
    (``{spanId, parentSpanId, spanType, name, entityId, entityName, input, output, attributes,
    metadata, startedAt, endedAt}``, times as epoch milliseconds or ISO text)."""
    if not spans:
        return {"steps": []}
    nodes, roots = span_tree(
        spans,
        lambda span: span["spanId"],
        lambda span: span.get("parentSpanId"),
        lambda span: epoch_ms(span.get("startedAt")) or 0.0,
    )
    targets = [nodes[root_span_id]] if root_span_id in nodes else roots
    convert = targets
    if len(targets) == 1 and targets[0].span.get("spanType") in _RUN_TYPES:
        convert = targets[0].children
    trajectory: dict[str, Any] = {"steps": [step for n in convert for step in _mastra_steps(n)]}
    if len(targets) == 1:
        duration = _duration(targets[0].span)
        if duration is not None:
            trajectory["totalDurationMs"] = duration
    return trajectory


def _mastra_steps(node: Node) -> list[dict[str, Any]]:
    span = node.span
    kind = span.get("spanType")
    children = [step for child in node.children for step in _mastra_steps(child)]
    if kind in SKIPPED_SPAN_TYPES:
        return children
    step: dict[str, Any] = {"name": span.get("name")}
    duration = _duration(span)
    if duration is not None:
        step["durationMs"] = duration
    if span.get("metadata") is not None:
        step["metadata"] = span["metadata"]
    if children:
        step["children"] = children
    attributes = span.get("attributes") or {}
    tool_name = span.get("entityId") or span.get("entityName") or span.get("name")
    if kind in ("tool_call", "mcp_tool_call", "provider_tool_call"):
        step.update(stepType=kind, name=tool_name)
        _put(step, "toolArgs", as_record(span.get("input")))
        _put(step, "toolResult", as_record(span.get("output")))
        if kind == "mcp_tool_call" and isinstance(attributes.get("mcpServer"), str):
            step["mcpServer"] = attributes["mcpServer"]
        if isinstance(attributes.get("success"), bool):
            step["success"] = attributes["success"]
        return [step]
    if kind == "model_generation":
        usage = attributes.get("usage") or {}
        step["stepType"] = kind
        model = attributes.get("model")
        _put(step, "modelId", model if isinstance(model, str) else None)
        _put(step, "promptTokens", usage.get("inputTokens"))
        _put(step, "completionTokens", usage.get("outputTokens"))
        finish = attributes.get("finishReason")
        _put(step, "finishReason", finish if isinstance(finish, str) else None)
        return [step]
    if kind == "agent_run":
        step.update(stepType=kind)
        _put(step, "agentId", span.get("entityId"))
        return [step]
    if kind == "workflow_run":
        step.update(stepType=kind)
        _put(step, "workflowId", span.get("entityId"))
        return [step]
    if kind == "workflow_step":
        step.update(stepType=kind, stepId=span.get("name"))
        _put(step, "output", as_record(span.get("output")))
        return [step]
    if kind in (
        "workflow_conditional",
        "workflow_parallel",
        "workflow_loop",
        "workflow_sleep",
        "workflow_wait_event",
        "processor_run",
    ):
        step["stepType"] = kind
        return [step]
    return children


def as_record(value: Any) -> dict[str, Any] | None:
    """Mastra's ``toRecordOrUndefined``: an object as it is, another value as ``{value}``."""
    if value is None:
        return None
    return value if isinstance(value, dict) else {"value": value}


def _put(step: dict[str, Any], key: str, value: Any) -> None:
    if value is not None:
        step[key] = value


def _duration(span: Mapping[str, Any]) -> float | None:
    started, ended = epoch_ms(span.get("startedAt")), epoch_ms(span.get("endedAt"))
    return None if started is None or ended is None else ended - started


def epoch_ms(value: Any) -> float | None:
    """A time as epoch milliseconds (numbers as they are, ISO text parsed)."""
    if value is None:
        return None
    if isinstance(value, int | float):
        return float(value)
    from datetime import datetime

    return datetime.fromisoformat(str(value)).timestamp() * 1000
