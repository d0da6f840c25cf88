"""Trajectory scorers (code): accuracy against expected steps, and the unified trajectory score
over accuracy, efficiency, blacklist and tool failures (Mastra's ``create*ScorerCode``).

``run.output`` is the trajectory (``{"steps": [...]}`` or a list of steps) or the agent's
messages, whose tool calls become ``tool_call`` steps (Mastra's ``extractTrajectory``); a dataset
item's ``run.expected_trajectory`` (a trajectory expectation: ``steps``, ``ordering``, budgets ...)
overrides the scorer's own settings.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evaldag._compat.js import camel, js_number, js_truthy, math_round_2
from evaldag._scorer.builder import Scorer, create_scorer
from evaldag._scorer.needs import DataNeed
from evaldag.errors import EvalDagError
from evaldag.scorers._trajectory import (
    _ORDERINGS,
    analyze_tool_failures,
    camel_dict,
    check_trajectory_blacklist,
    check_trajectory_efficiency,
    compare_trajectories,
    expected_step,
    known_expectation,
    trajectory_dict,
    unmade_calls,
)

_DEFAULT_WEIGHTS = {"accuracy": 0.4, "efficiency": 0.3, "toolFailures": 0.2, "blacklist": 0.1}
_BUDGETS = ("maxSteps", "maxTotalTokens", "maxTotalDurationMs", "noRedundantCalls")


@dataclass(frozen=True)
class _Counted:
    """What the unified score counts beyond Mastra's rules (both False: Mastra's answers)."""

    unrecovered_errors: bool
    redundant_calls: bool


def _expectation(value: Any) -> dict[str, Any]:
    """An item's expected trajectory as the scorers read it: a dict (a trajectory expectation)
    whose ``steps``, when given, are a trajectory; raises naming the fix otherwise."""
    if isinstance(value, list | tuple):
        raise EvalDagError(
            "EVALDAG_INVALID_TRAJECTORY",
            f"the item's expected_trajectory must be a trajectory expectation, a dict such as "
            f"{{'steps': [...], 'ordering': 'strict'}}, got a list of {len(value)}; put the "
            "steps under 'steps'",
            details={"field": "expected_trajectory"},
        )
    item = known_expectation(value, "the item's expected_trajectory")
    if item.get("steps") is not None:
        trajectory_dict(item["steps"], "the item's expected_trajectory['steps']")
    return item


def _expectation_need(required: bool) -> DataNeed:
    """What a trajectory scorer needs of the data's expected trajectories (``required`` when it
    has no expectation of its own)."""
    return DataNeed(
        "expected_trajectory", "the trajectory expected of each item", _expectation, required
    )


def trajectory_accuracy(
    expected_trajectory: Any = None,
    comparison_options: Mapping[str, Any] | None = None,
    *,
    id: str = "code-trajectory-accuracy-scorer",
) -> Scorer:
    """How well the trajectory follows the expected steps (``compare_trajectories``' score).

    :param expected_trajectory: expected steps (a list of ``{'name', 'stepType', ...}``) or a
        recorded trajectory to match; without it each run's ``expected_trajectory.steps`` is used
        (a run with neither scores 0 and says why).
    :param comparison_options: ``{'ordering': 'strict'|'relaxed'|'unordered',
        'allowRepeatedSteps': bool}``; a run's ``expected_trajectory`` overrides them.

    It scores the path only, as Mastra does: a tool call that failed is still the step it was.
    An expected ``tool_call`` step with ``'success': True`` matches only a call that worked;
    ``trajectory()`` and ``checks.no_tool_errors()`` score the failures themselves.
    """
    options = camel_dict(comparison_options, "comparison_options")
    ordering = options.get("ordering", "relaxed")
    if ordering not in _ORDERINGS:
        raise EvalDagError(
            "EVALDAG_INVALID_SCORER_OPTION",
            f"comparison_options['ordering'] must be one of {', '.join(_ORDERINGS)}, "
            f"got {ordering!r}",
        )
    allow_repeated = options.get("allowRepeatedSteps", True)
    static_steps: list[dict[str, Any]] | None = None
    if isinstance(expected_trajectory, list | tuple):
        static_steps = trajectory_dict(expected_trajectory, "expected_trajectory")["steps"]
    elif expected_trajectory is not None:
        recorded = trajectory_dict(expected_trajectory, "expected_trajectory")["steps"]
        static_steps = [expected_step(step) for step in recorded]
    if static_steps is not None:
        path = " → ".join(str(step.get("name")) for step in static_steps)
        description = (
            f"Evaluates whether the trajectory matches the expected path: [{path}] "
            f"({ordering} ordering)"
        )
    else:
        description = (
            "Evaluates trajectory accuracy against expected trajectory from dataset items "
            f"({ordering} ordering)"
        )

    def comparison(run: Any) -> dict[str, Any]:
        actual = trajectory_dict(run.output, "run.output")
        names = [step.get("name") for step in actual["steps"]]
        item = known_expectation(run.expected_trajectory, "run.expected_trajectory")
        steps = static_steps
        if steps is None and item.get("steps") is not None:
            steps = trajectory_dict(item["steps"], "run.expected_trajectory['steps']")["steps"]
        if steps is None:
            return {
                "actualTrajectory": actual,
                "actualStepNames": names,
                "expectedStepNames": [],
                "error": (
                    "No expected trajectory provided (pass via options or dataset item "
                    "expectedTrajectory)"
                ),
            }
        item_ordering = item.get("ordering")
        item_repeated = item.get("allowRepeatedSteps")
        return {
            "actualTrajectory": actual,
            "expectedTrajectory": {"steps": steps},
            "comparison": compare_trajectories(
                actual,
                steps,
                ordering=ordering if item_ordering is None else item_ordering,
                allow_repeated_steps=allow_repeated if item_repeated is None else item_repeated,
            ),
            "actualStepNames": names,
            "expectedStepNames": [step.get("name") for step in steps],
        }

    def accuracy(preprocess_step_result: dict[str, Any]) -> float:
        found = preprocess_step_result.get("comparison")
        return found["score"] if found else 0

    return (
        create_scorer(
            id,
            name="Trajectory Accuracy Scorer",
            description=description,
            type="trajectory",
        )
        .needing(_expectation_need(required=static_steps is None))
        .preprocess(comparison)
        .generate_score(accuracy)
    )


def _weighted(scores: list[tuple[float, float]]) -> float:
    total_weight: float = 0
    for weight, _ in scores:
        total_weight += weight
    if total_weight <= 0:
        return 1
    level: float = 0
    for weight, value in scores:
        level += weight / total_weight * value
    return level


def _blacklist_violated(results: list[dict[str, Any]]) -> bool:
    return any(
        (result.get("blacklist") or {}).get("score") == 0
        or _blacklist_violated(result.get("nested") or [])
        for result in results
    )


def _dimensions(
    trajectory: dict[str, Any],
    config: dict[str, Any],
    weights: dict[str, float],
    counted: _Counted,
    unmade_calls: Sequence[str] = (),
) -> tuple[dict[str, Any], list[tuple[float, float]]]:
    """Each checked dimension's result, and the (weight, score) pairs that count.

    Efficiency is checked when a budget is set (Mastra) or, with ``counted.redundant_calls``,
    counts when a call repeats the one before it (not a retry of a failed call, which the tool
    failures count).
    """
    found: dict[str, Any] = {}
    if js_truthy(config.get("steps")):
        found["accuracy"] = compare_trajectories(
            trajectory,
            config["steps"],
            ordering=config.get("ordering") or "relaxed",
            allow_repeated_steps=config.get("allowRepeatedSteps", True) is not False,
        )
    if any(key in config for key in _BUDGETS):
        found["efficiency"] = check_trajectory_efficiency(
            trajectory,
            max_steps=config.get("maxSteps"),
            max_total_tokens=config.get("maxTotalTokens"),
            max_total_duration_ms=config.get("maxTotalDurationMs"),
            no_redundant_calls=config.get("noRedundantCalls", True) is not False,
            redundant_retries=not counted.redundant_calls,
        )
    elif counted.redundant_calls:
        efficiency = check_trajectory_efficiency(trajectory, redundant_retries=False)
        if efficiency["redundantCalls"]:
            found["efficiency"] = efficiency
    tools, sequences = config.get("blacklistedTools") or [], config.get("blacklistedSequences")
    if tools or sequences:
        found["blacklist"] = check_trajectory_blacklist(
            trajectory,
            blacklisted_tools=tools,
            blacklisted_sequences=sequences or [],
            unmade_calls=unmade_calls,
        )
    retries = config.get("maxRetriesPerTool")
    found["toolFailures"] = analyze_tool_failures(
        trajectory,
        max_retries_per_tool=2 if retries is None else retries,
        count_unrecovered_errors=counted.unrecovered_errors,
    )
    return found, _weighted_scores(found, weights)


def _tool_failures_count(failures: dict[str, Any]) -> bool:
    """Whether the tool-failures dimension counts: retries (Mastra) or unrecovered tools."""
    return bool(failures["patterns"] or failures.get("unrecoveredTools"))


def _weighted_scores(found: dict[str, Any], weights: dict[str, float]) -> list[tuple[float, float]]:
    """The (weight, score) pairs of the dimensions that count."""
    scores = [
        (weights[name], found[name]["score"])
        for name in ("accuracy", "efficiency")
        if name in found
    ]
    if _tool_failures_count(found["toolFailures"]):
        scores.append((weights["toolFailures"], found["toolFailures"]["score"]))
    if "blacklist" in found:
        scores.append((weights["blacklist"], found["blacklist"]["score"]))
    return scores


def _nested_results(
    expected_steps: list[dict[str, Any]],
    actual_steps: list[dict[str, Any]],
    weights: dict[str, float],
    counted: _Counted,
) -> list[dict[str, Any]]:
    """Scores of the children of each expected step that has ``children``, level by level."""
    results: list[dict[str, Any]] = []
    used: set[int] = set()
    for expected in expected_steps:
        children = expected.get("children")
        if not children:
            continue
        index = next(
            (
                i
                for i, step in enumerate(actual_steps)
                if i not in used
                and step.get("name") == expected.get("name")
                and (not expected.get("stepType") or step.get("stepType") == expected["stepType"])
            ),
            None,
        )
        config = {camel(key): item for key, item in children.items()}
        if index is None:
            missing: dict[str, Any] = {"stepName": expected.get("name"), "score": 0}
            child_steps = config.get("steps") or []
            if child_steps:
                missing["accuracy"] = {
                    "score": 0,
                    "matchedSteps": 0,
                    "totalExpectedSteps": len(child_steps),
                    "totalActualSteps": 0,
                    "missingSteps": [step.get("name") for step in child_steps],
                    "extraSteps": [],
                    "outOfOrderSteps": [],
                    "repeatedSteps": [],
                }
            results.append(missing)
            continue
        used.add(index)
        actual = actual_steps[index]
        child: dict[str, Any] = {"steps": actual.get("children") or []}
        if actual.get("durationMs") is not None:
            child["totalDurationMs"] = actual["durationMs"]
        found, scores = _dimensions(child, config, weights, counted)
        nested = (
            _nested_results(config["steps"], child["steps"], weights, counted)
            if js_truthy(config.get("steps"))
            else []
        )
        result = {"stepName": expected.get("name"), "score": 0, **found}
        if (found.get("blacklist") or {}).get("score") == 0 or _blacklist_violated(nested):
            results.append({**result, "nested": nested})
            continue
        if nested:
            result["nested"] = nested
        level = _weighted(scores) if scores else 1
        if nested:
            total: float = 0
            for item in nested:
                total += item["score"]
            level = 0.7 * level + 0.3 * (total / len(nested))
        result["score"] = math_round_2(level)
        results.append(result)
    return results


def trajectory(
    defaults: Mapping[str, Any] | None = None,
    weights: Mapping[str, float] | None = None,
    *,
    count_unrecovered_errors: bool = True,
    count_redundant_calls: bool = True,
    id: str = "code-trajectory-scorer",
) -> Scorer:
    """One trajectory score from accuracy, efficiency, tool failures and blacklist (0-1).

    :param defaults: a trajectory expectation for every run: ``steps``, ``ordering``,
        ``allowRepeatedSteps``, ``maxSteps``, ``maxTotalTokens``, ``maxTotalDurationMs``,
        ``noRedundantCalls``, ``blacklistedTools``, ``blacklistedSequences``,
        ``maxRetriesPerTool`` (snake_case keys work too); a run's ``expected_trajectory``
        overrides it key by key.
    :param weights: ``{'accuracy': 0.4, 'efficiency': 0.3, 'toolFailures': 0.2,
        'blacklist': 0.1}`` by default. A blacklist violation scores 0 whatever the weights;
        expected steps with ``children`` add nested scores (70% this level, 30% nested).
    :param count_unrecovered_errors: a tool whose last call failed counts in the tool-failures
        dimension (which then scores the share of tools that did not fail, times Mastra's
        retry score), so a trajectory whose tools all failed scores 0, not 1.
    :param count_redundant_calls: a tool called again at once with the same arguments counts
        in the efficiency dimension (0.2 each) even when no budget is set, unless
        ``noRedundantCalls`` is False; a retry of a failed call is not redundant (the tool
        failures count it).

    ``count_unrecovered_errors=False, count_redundant_calls=False`` gives Mastra's answers
    (``createTrajectoryScorerCode``): only retries beyond ``maxRetriesPerTool`` cost, and
    redundant calls only when a budget key is set.
    """
    base = camel_dict(defaults, "defaults")
    given = camel_dict(weights, "weights")
    unknown = set(given) - set(_DEFAULT_WEIGHTS)
    if unknown:
        raise EvalDagError(
            "EVALDAG_INVALID_SCORER_OPTION",
            f"weights has unknown keys {sorted(unknown)}; use {sorted(_DEFAULT_WEIGHTS)}",
        )
    chosen = {name: max(0, given.get(name, value)) for name, value in _DEFAULT_WEIGHTS.items()}
    counted = _Counted(count_unrecovered_errors, count_redundant_calls)

    def dimensions(run: Any) -> dict[str, Any]:
        actual = trajectory_dict(run.output, "run.output")
        config = {**base, **known_expectation(run.expected_trajectory, "run.expected_trajectory")}
        found, _ = _dimensions(actual, config, chosen, counted, unmade_calls(run.output))
        steps: Any = config.get("steps")
        nested = (
            _nested_results(trajectory_dict(steps)["steps"], actual["steps"], chosen, counted)
            if js_truthy(steps) and len(steps) > 0
            else []
        )
        result: dict[str, Any] = {
            name: found[name]
            for name in ("accuracy", "efficiency", "blacklist", "toolFailures")
            if name in found
        }
        if nested:
            result["nested"] = nested
        result["config"] = config
        return result

    def overall(preprocess_step_result: dict[str, Any]) -> float:
        blacklist = preprocess_step_result.get("blacklist")
        if blacklist and blacklist["score"] == 0:
            return 0
        nested = preprocess_step_result.get("nested") or []
        scores = _weighted_scores(preprocess_step_result, chosen)
        if not scores and not nested:
            return 1
        level = _weighted(scores) if scores else 1
        if nested:
            if _blacklist_violated(nested):
                return 0
            total: float = 0
            for item in nested:
                total += item["score"]
            level = 0.7 * level + 0.3 * (total / len(nested))
        return math_round_2(level)

    def reason(preprocess_step_result: dict[str, Any], score: float) -> str:
        return _trajectory_reason(preprocess_step_result, score)

    return (
        create_scorer(
            id,
            name="Trajectory Scorer",
            description=(
                "Multi-dimensional trajectory evaluation: accuracy, efficiency, blacklist, and "
                "tool failures"
            ),
            type="trajectory",
        )
        .needing(_expectation_need(required=False))
        .preprocess(dimensions)
        .generate_score(overall)
        .generate_reason(reason)
    )


def _trajectory_reason(found: dict[str, Any], score: float) -> str:
    """Mastra's reason lines: the score, then one line per dimension that counted."""
    lines = [f"Score: {js_number(score)}"]
    blacklist = found.get("blacklist")
    if blacklist and blacklist["score"] == 0:
        violations = []
        if blacklist["violatedTools"]:
            violations.append(f"forbidden tools used: {', '.join(blacklist['violatedTools'])}")
        if blacklist["violatedSequences"]:
            shown = "; ".join(" → ".join(seq) for seq in blacklist["violatedSequences"])
            violations.append(f"forbidden sequences: {shown}")
        lines.append(f"Blacklist violation: {'. '.join(violations)}.")
        return "\n".join(lines)
    nested = found.get("nested") or []
    if nested and _blacklist_violated(nested):
        violating = [item["stepName"] for item in nested if _blacklist_violated([item])]
        lines.append(f"Nested blacklist violation in: {', '.join(violating)}.")
        return "\n".join(lines)
    accuracy = found.get("accuracy")
    if accuracy:
        details = [
            f"{accuracy['matchedSteps']}/{accuracy['totalExpectedSteps']} expected steps matched"
        ]
        for key, label in (
            ("missingSteps", "missing"),
            ("extraSteps", "extra"),
            ("outOfOrderSteps", "out of order"),
        ):
            if accuracy[key]:
                details.append(f"{label}: {', '.join(map(str, accuracy[key]))}")
        lines.append(f"Accuracy ({js_number(accuracy['score'])}): {'. '.join(details)}.")
    efficiency = found.get("efficiency")
    if efficiency:
        details = []
        if efficiency["overStepBudget"]:
            details.append(f"over step budget ({efficiency['totalSteps']} steps)")
        if efficiency["overTokenBudget"]:
            details.append(f"over token budget ({js_number(efficiency['totalTokens'])} tokens)")
        if efficiency["overDurationBudget"]:
            duration = js_number(efficiency["totalDurationMs"])
            details.append(f"over duration budget ({duration}ms)")
        if efficiency["redundantCalls"]:
            names = ", ".join(str(call["name"]) for call in efficiency["redundantCalls"])
            details.append(f"redundant calls: {names}")
        summary = ". ".join(details) if details else "all budgets met, no redundant calls"
        lines.append(f"Efficiency ({js_number(efficiency['score'])}): {summary}.")
    failures = found.get("toolFailures")
    if failures and _tool_failures_count(failures):
        details = []
        if failures["totalRetries"] > 0:
            details.append(f"{failures['totalRetries']} total retries")
        if failures["excessiveRetryTools"]:
            details.append(f"excessive retries: {', '.join(failures['excessiveRetryTools'])}")
        if failures.get("unrecoveredTools"):
            names = ", ".join(map(str, failures["unrecoveredTools"]))
            details.append(f"failed without recovering: {names}")
        lines.append(f"Tool failures ({js_number(failures['score'])}): {'. '.join(details)}.")
    if nested:
        shown = ", ".join(f"{item['stepName']}: {js_number(item['score'])}" for item in nested)
        lines.append(f"Nested scores: {shown}.")
    return "\n".join(lines)
