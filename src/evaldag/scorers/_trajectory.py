"""Trajectory helpers: compare steps to an expectation, budgets, blacklists, tool failures.

Trajectories are Mastra's JSON: ``{"steps": [...], "totalDurationMs": ...}`` where each step has
``stepType``, ``name`` and its variant's fields (``toolArgs``, ``success``, ``children`` ...).
snake_case keys (``step_type``, ``tool_args``) are accepted too, and a bare list stands for
``{"steps": list}``. Results are Mastra's result objects, camelCase keys included.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from evaldag._compat.js import MISSING, camel, js_json, round_to_two_decimals
from evaldag._reader import described, is_messages
from evaldag.errors import EvalDagError
from evaldag.transcripts import CALL_STATES, extract_trajectory, tool_invocations

Ordering = Literal["strict", "relaxed", "unordered"]

#: Per step type, the fields an expected step may pin down (compared as JSON).
COMPARABLE_FIELDS = {
    "tool_call": ("toolArgs", "toolResult", "success"),
    "mcp_tool_call": ("toolArgs", "toolResult", "mcpServer", "success"),
    "model_generation": ("modelId", "promptTokens", "completionTokens", "finishReason"),
    "agent_run": ("agentId",),
    "workflow_step": ("stepId", "status", "output"),
    "workflow_run": ("workflowId", "status"),
    "workflow_conditional": ("conditionCount", "selectedSteps"),
    "workflow_parallel": ("branchCount", "parallelSteps"),
    "workflow_loop": ("loopType", "totalIterations"),
    "workflow_sleep": ("sleepDurationMs", "sleepType"),
    "workflow_wait_event": ("eventName", "eventReceived"),
    "processor_run": ("processorId",),
}
_TOOL_STEPS = ("tool_call", "mcp_tool_call")
_ORDERINGS = ("strict", "relaxed", "unordered")


#: The keys of a trajectory expectation (Mastra's ``TrajectoryExpectation``).
_EXPECTATION_KEYS = frozenset(
    {
        "steps",
        "ordering",
        "allowRepeatedSteps",
        "maxSteps",
        "maxTotalTokens",
        "maxTotalDurationMs",
        "noRedundantCalls",
        "blacklistedTools",
        "blacklistedSequences",
        "maxRetriesPerTool",
    }
)


def camel_dict(value: Any, what: str) -> dict[str, Any]:
    """``value`` (a dict or a model; ``None`` is ``{}``) with camelCase keys."""
    if value is None:
        return {}
    if hasattr(value, "model_dump"):
        value = value.model_dump(by_alias=True, exclude_unset=True)
    if not isinstance(value, Mapping):
        raise EvalDagError(
            "EVALDAG_INVALID_SCORER_OPTION",
            f"{what} must be a dict, got {type(value).__name__}",
        )
    return {camel(key): item for key, item in value.items()}


def known_expectation(value: Any, what: str) -> dict[str, Any]:
    """``value`` as a trajectory expectation (camelCase keys); a dict with none of its keys (an
    app's own data) is an error, not an expectation of nothing."""
    item = camel_dict(value, what)
    if item and item.keys().isdisjoint(_EXPECTATION_KEYS):
        raise EvalDagError(
            "EVALDAG_INVALID_TRAJECTORY",
            f"{what} must be a trajectory expectation with some of the keys "
            f"{', '.join(sorted(_EXPECTATION_KEYS))}, got {described(value)}; give the "
            "expected steps under 'steps' (or a budget, a blacklist)",
            details={"field": "expected_trajectory"},
        )
    return item


def _plain_step(value: Any) -> Any:
    """A step as a dict with camelCase keys; ``children`` (steps, or an expectation) too."""
    if hasattr(value, "model_dump"):
        value = value.model_dump(by_alias=True, exclude_unset=True)
    if not isinstance(value, Mapping):
        return value
    step = {camel(key) if isinstance(key, str) else key: item for key, item in value.items()}
    children = step.get("children")
    if isinstance(children, list | tuple):
        step["children"] = [_plain_step(child) for child in children]
    elif isinstance(children, Mapping) and isinstance(children.get("steps"), list | tuple):
        expectation = {camel(key): item for key, item in children.items()}
        expectation["steps"] = [_plain_step(child) for child in children["steps"]]
        step["children"] = expectation
    return step


def expected_step(step: Mapping[str, Any]) -> dict[str, Any]:
    """A recorded trajectory step as an expected step: no duration or metadata, children as
    a nested expectation."""
    expected = {
        key: item for key, item in step.items() if key not in ("durationMs", "metadata", "children")
    }
    children = step.get("children")
    if children:
        expected["children"] = {"steps": [expected_step(child) for child in children]}
    return expected


def trajectory_dict(value: Any, what: str = "trajectory") -> dict[str, Any]:
    """``value`` as ``{"steps": [...], ...}`` with camelCase keys; raises on other shapes.

    An agent's messages (a message, or a list of them, as ``ScorerRun`` reads them) become their
    trajectory (``transcripts.extract_trajectory``, Mastra's ``extractTrajectory``).
    """
    given = value
    if is_messages(value):
        value = extract_trajectory(value)
    if hasattr(value, "model_dump"):
        value = value.model_dump(by_alias=True, exclude_unset=True)
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        value = {"steps": list(value)}
    steps = value.get("steps") if isinstance(value, Mapping) else None
    if not isinstance(steps, Sequence) or isinstance(steps, str) or not all(map(_is_step, steps)):
        raise EvalDagError(
            "EVALDAG_INVALID_TRAJECTORY",
            f"{what} must be a trajectory {{'steps': [...]}}, a list of steps or an agent's "
            f"messages, got {described(given)}; each step is a dict such as "
            "{'stepType': 'tool_call', 'name': 'search'}",
            details={"field": what},
        )
    return {
        camel(key): [_plain_step(step) for step in item] if key == "steps" else item
        for key, item in value.items()
    }


def _is_step(value: Any) -> bool:
    """Whether ``value`` is a step: a dict (or model) with a name or a step type."""
    if hasattr(value, "model_dump"):
        return True
    return isinstance(value, Mapping) and any(
        key in value for key in ("name", "stepType", "step_type")
    )


def expected_step_matches(actual: Mapping[str, Any], expected: Mapping[str, Any]) -> bool:
    """Whether ``actual`` is the step ``expected`` describes: same name, same ``stepType`` when
    given, and equal JSON for every comparable field the expected step sets."""
    if actual.get("name") != expected.get("name"):
        return False
    step_type = expected.get("stepType")
    if not step_type:
        return True
    if actual.get("stepType") != step_type:
        return False
    for field in COMPARABLE_FIELDS.get(step_type, ()):
        wanted = expected.get(field, MISSING)
        if wanted is MISSING:
            continue
        found = actual.get(field, MISSING)
        if found is MISSING or js_json(found) != js_json(wanted):
            return False
    return True


def _repeated_names(names: list[str]) -> list[str]:
    counts: dict[str, int] = {}
    for name in names:
        counts[name] = counts.get(name, 0) + 1
    return [name for name, count in counts.items() if count > 1]


def compare_trajectories(
    actual: Any,
    expected: Any,
    *,
    ordering: Ordering = "relaxed",
    allow_repeated_steps: bool = True,
) -> dict[str, Any]:
    """How well the actual steps follow the expected ones (Mastra's ``compareTrajectories``).

    :param ordering: ``'strict'`` (same position, extra steps penalised), ``'relaxed'`` (in
        order, gaps allowed) or ``'unordered'`` (each expected step anywhere, used once).
    :param allow_repeated_steps: when False, each step name that occurs more than once costs 0.1.
    :return: ``{score, matchedSteps, totalExpectedSteps, totalActualSteps, missingSteps,
        extraSteps, outOfOrderSteps, repeatedSteps}``; the score is rounded to two decimals.
    """
    if ordering not in _ORDERINGS:
        raise EvalDagError(
            "EVALDAG_INVALID_TRAJECTORY_OPTION",
            f"ordering must be one of {', '.join(_ORDERINGS)}, got {ordering!r}",
        )
    actual_steps = trajectory_dict(actual, "actual")["steps"]
    expected_steps = trajectory_dict(expected, "expected")["steps"]
    actual_names = [step.get("name") for step in actual_steps]
    if not expected_steps:
        return {
            "score": 0 if actual_steps else 1,
            "matchedSteps": 0,
            "totalExpectedSteps": 0,
            "totalActualSteps": len(actual_steps),
            "missingSteps": [],
            "extraSteps": actual_names,
            "outOfOrderSteps": [],
            "repeatedSteps": [],
        }
    expected_names = [step.get("name") for step in expected_steps]
    matched: set[int] = set()
    out_of_order: list[str] = []
    if ordering == "strict":
        for index in range(max(len(actual_names), len(expected_names))):
            name = actual_names[index] if index < len(actual_names) else None
            wanted = expected_names[index] if index < len(expected_names) else None
            if index < len(actual_names) and index < len(expected_names) and name == wanted:
                if expected_step_matches(actual_steps[index], expected_steps[index]):
                    matched.add(index)
            elif name is not None and name in expected_names:
                out_of_order.append(name)
    elif ordering == "relaxed":
        last = -1
        for index, wanted in enumerate(expected_names):
            for position in range(last + 1, len(actual_names)):
                if actual_names[position] == wanted and expected_step_matches(
                    actual_steps[position], expected_steps[index]
                ):
                    matched.add(index)
                    last = position
                    break
            else:
                if wanted in actual_names:
                    out_of_order.append(wanted)
    else:
        used: set[int] = set()
        for index, step in enumerate(expected_steps):
            for position, candidate in enumerate(actual_steps):
                if position not in used and expected_step_matches(candidate, step):
                    matched.add(index)
                    used.add(position)
                    break
    repeated = _repeated_names(actual_names)
    score = len(matched) / len(expected_steps)
    if ordering == "strict" and len(actual_names) > len(expected_names):
        extra = (len(actual_names) - len(expected_names)) / len(expected_names)
        score = max(0, score - extra * 0.5)
    if not allow_repeated_steps and repeated:
        score = max(0, score - len(repeated) * 0.1)
    known = set(expected_names)
    return {
        "score": round_to_two_decimals(max(0, min(1, score))),
        "matchedSteps": len(matched),
        "totalExpectedSteps": len(expected_steps),
        "totalActualSteps": len(actual_steps),
        "missingSteps": [name for i, name in enumerate(expected_names) if i not in matched],
        "extraSteps": [name for name in actual_names if name not in known],
        "outOfOrderSteps": out_of_order,
        "repeatedSteps": repeated,
    }


def _measurement(value: Any) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value >= 0
    )


def check_trajectory_efficiency(
    trajectory: Any,
    *,
    max_steps: float | None = None,
    max_total_tokens: float | None = None,
    max_total_duration_ms: float | None = None,
    no_redundant_calls: bool = True,
    redundant_retries: bool = True,
) -> dict[str, Any]:
    """Budgets and redundancy of a trajectory (Mastra's ``checkTrajectoryEfficiency``).

    Each budget that is set scores ``max(0, 1 - overrun / budget)``; redundant calls (the same
    tool called twice in a row with equal arguments) cost 0.2 each. The score is their mean,
    rounded to two decimals (1 when nothing is checked).

    :param redundant_retries: whether a call that repeats a failed one is redundant (Mastra);
        False leaves retries to ``analyze_tool_failures``.

    :raises EvalDagError: a budget is not a finite nonnegative number, or the measurements it
        needs (token counts of every model generation, step durations) are missing.
    """
    budgets = {
        "maxSteps": max_steps,
        "maxTotalTokens": max_total_tokens,
        "maxTotalDurationMs": max_total_duration_ms,
    }
    for name, limit in budgets.items():
        if limit is not None and not _measurement(limit):
            raise EvalDagError(
                "EVALDAG_INVALID_TRAJECTORY_BUDGET",
                f"Invalid {name} budget: expected a finite nonnegative number, got {limit!r}",
                details={"budget": name},
            )
    data = trajectory_dict(trajectory)
    steps = data["steps"]
    total_tokens: float = 0
    generations = 0
    remaining = list(steps)
    while remaining:
        step = remaining.pop()
        if step.get("stepType") == "model_generation":
            generations += 1
            prompt, completion = step.get("promptTokens"), step.get("completionTokens")
            if max_total_tokens is not None and not (
                _measurement(prompt) and _measurement(completion)
            ):
                raise EvalDagError(
                    "EVALDAG_TRAJECTORY_MEASUREMENTMISSING",
                    f'Cannot evaluate token budget: model generation "{step.get("name")}" has '
                    "missing or invalid token counts",
                )
            total_tokens += (prompt or 0) + (completion or 0)
        remaining.extend(step.get("children") or ())
    if max_total_tokens is not None and (generations == 0 or not _measurement(total_tokens)):
        raise EvalDagError(
            "EVALDAG_TRAJECTORY_MEASUREMENTMISSING",
            "Cannot evaluate token budget: missing model-generation measurements or invalid "
            "total tokens",
        )
    declared = data.get("totalDurationMs")
    total_duration: Any = declared
    if declared is None:
        total_duration = 0
        for step in steps:
            total_duration += step.get("durationMs") or 0
    if max_total_duration_ms is not None:
        measured = (
            _measurement(declared)
            if declared is not None
            else bool(steps) and all(_measurement(step.get("durationMs")) for step in steps)
        )
        if not measured or not _measurement(total_duration):
            raise EvalDagError(
                "EVALDAG_TRAJECTORY_MEASUREMENTMISSING",
                "Cannot evaluate duration budget: missing or invalid duration measurements",
            )
    redundant: list[dict[str, Any]] = []
    if no_redundant_calls:
        for index in range(1, len(steps)):
            previous, current = steps[index - 1], steps[index]
            if (
                previous.get("name") == current.get("name")
                and previous.get("stepType") == current.get("stepType")
                and previous.get("stepType") in _TOOL_STEPS
                and js_json(previous.get("toolArgs", MISSING))
                == js_json(current.get("toolArgs", MISSING))
                and (redundant_retries or previous.get("success") is not False)
            ):
                redundant.append({"name": current.get("name"), "index": index})
    over_steps = max_steps is not None and len(steps) > max_steps
    over_tokens = max_total_tokens is not None and total_tokens > max_total_tokens
    over_duration = max_total_duration_ms is not None and total_duration > max_total_duration_ms
    dimensions: list[float] = []
    for limit, value, over in (
        (max_steps, len(steps), over_steps),
        (max_total_tokens, total_tokens, over_tokens),
        (max_total_duration_ms, total_duration, over_duration),
    ):
        if limit is not None:
            dimensions.append(max(0, 1 - (value - limit) / limit) if over else 1)
    if no_redundant_calls:
        dimensions.append(1 if not redundant else max(0, 1 - len(redundant) * 0.2))
    score: float = 1
    if dimensions:
        total: float = 0
        for dimension in dimensions:
            total += dimension
        score = total / len(dimensions)
    return {
        "score": round_to_two_decimals(max(0, min(1, score))),
        "totalSteps": len(steps),
        "overStepBudget": over_steps,
        "totalTokens": total_tokens,
        "overTokenBudget": over_tokens,
        "totalDurationMs": total_duration,
        "overDurationBudget": over_duration,
        "redundantCalls": redundant,
    }


def unmade_calls(output: Any) -> list[str]:
    """The tools an agent's messages asked for in calls that were not made (not in its
    trajectory): waiting for approval, denied, cut off mid-stream."""
    if not is_messages(output):
        return []
    return [
        invocation["toolName"]
        for invocation in tool_invocations(output)
        if isinstance(invocation, dict)
        and invocation.get("toolName")
        and invocation.get("state") not in CALL_STATES
    ]


def check_trajectory_blacklist(
    trajectory: Any,
    *,
    blacklisted_tools: Sequence[str] = (),
    blacklisted_sequences: Sequence[Sequence[str]] = (),
    unmade_calls: Sequence[str] = (),
) -> dict[str, Any]:
    """Forbidden tools and forbidden contiguous runs of step names among the top-level steps.

    :param unmade_calls: tools the model asked for whose calls were not made (waiting for
        approval, denied, cut off mid-stream): a forbidden one among them is a violation too.
    :return: ``{score, violatedTools, violatedSequences}``; the score is 0 on any violation.
    """
    names = [step.get("name") for step in trajectory_dict(trajectory)["steps"]]
    tools = [tool for tool in blacklisted_tools if tool in names or tool in unmade_calls]
    sequences = []
    for sequence in blacklisted_sequences:
        sequence = list(sequence)
        if sequence and any(
            names[start : start + len(sequence)] == sequence
            for start in range(len(names) - len(sequence) + 1)
        ):
            sequences.append(sequence)
    return {
        "score": 0 if tools or sequences else 1,
        "violatedTools": tools,
        "violatedSequences": sequences,
    }


def analyze_tool_failures(
    trajectory: Any, *, max_retries_per_tool: int = 2, count_unrecovered_errors: bool = True
) -> dict[str, Any]:
    """Retry patterns of tool calls (runs of one tool where a failed call is called again) and
    the tools that never succeeded.

    Each retry beyond ``max_retries_per_tool`` costs 0.2. A tool whose last call failed is
    unrecovered: the score is then multiplied by the share of the called tools that were not,
    so a trajectory whose only tool failed scores 0.

    :param count_unrecovered_errors: False scores as Mastra's ``analyzeToolFailures`` does:
        only excessive retries cost, and a tool that failed every time it was called scores 1
        as long as it was retried at most ``max_retries_per_tool`` times.
    :return: ``{score, patterns, totalRetries, excessiveRetryTools}`` and, when counted,
        ``unrecoveredTools``; each pattern has ``toolName, retryCount, fellBackToAlternative,
        eventuallySucceeded`` and, after a fallback, ``alternativeTool``.
    """
    calls = [
        step for step in trajectory_dict(trajectory)["steps"] if step.get("stepType") in _TOOL_STEPS
    ]
    patterns = []
    total_retries = 0
    start = 0
    while start < len(calls):
        name = calls[start].get("name")
        end = start + 1
        retries = 0
        while end < len(calls) and calls[end].get("name") == name:
            if calls[end - 1].get("success") is False:
                retries += 1
            end += 1
        if retries:
            succeeded = calls[end - 1].get("success") is not False
            fallback = end < len(calls) and not succeeded
            pattern: dict[str, Any] = {
                "toolName": name,
                "retryCount": retries,
                "fellBackToAlternative": fallback,
            }
            if fallback:
                pattern["alternativeTool"] = calls[end].get("name")
            pattern["eventuallySucceeded"] = succeeded
            patterns.append(pattern)
            total_retries += retries
        start = end
    excess = sum(max(0, pattern["retryCount"] - max_retries_per_tool) for pattern in patterns)
    score = max(0, 1 - excess * 0.2) if calls else 1
    last_calls = {call.get("name"): call for call in calls}
    unrecovered = [name for name, call in last_calls.items() if call.get("success") is False]
    if count_unrecovered_errors and unrecovered:
        score *= 1 - len(unrecovered) / len(last_calls)
    result = {
        "score": round_to_two_decimals(max(0, min(1, score))),
        "patterns": patterns,
        "totalRetries": total_retries,
        "excessiveRetryTools": [
            pattern["toolName"]
            for pattern in patterns
            if pattern["retryCount"] > max_retries_per_tool
        ],
    }
    if count_unrecovered_errors:
        result["unrecoveredTools"] = unrecovered
    return result
