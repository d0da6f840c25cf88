"""Where the verdict is decided: averages, gate and threshold results, verdict (spec §6.5–§6.7).

::

    items → <id>.average → <gate>.gate_result → gate_results ─────┐
                         → <id>.threshold_result → threshold_results ─┴→ verdict → eval_result

The functions are the nodes, written once. ``@resolve`` maps them over the ``plan`` config
(one average per scorer and gate, one result per gate and threshold); whether gates,
thresholds or plain scorers exist is ``@config.when``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pandas as pd
from hamilton.function_modifiers import (
    ResolveAt,
    config,
    group,
    inject,
    parameterize,
    resolve,
    source,
    value,
)

from evaldag._compat.js import js_total
from evaldag._graph.plan import EvalPlan
from evaldag._results.eval_result import (
    EvalResult,
    GateResult,
    ScoreAverage,
    ScorerUsage,
    Summary,
    ThresholdResult,
    TurnResult,
    Verdict,
)
from evaldag._results.intervals import bootstrap_interval
from evaldag._results.item_columns import ScorerColumns, item_states, unjudged
from evaldag._results.trials import TrialSettings, trial_spread
from evaldag._scorer.thresholds import ThresholdSpec, threshold_passed
from evaldag._targets.agent import unused_tools_warnings


def _averages(plan: EvalPlan) -> parameterize:
    gates = set(plan.gate_ids)
    return parameterize(
        **{
            f"{s.id}.average": {"scorer_id": value(s.id), "errors_score_zero": value(s.id in gates)}
            for s in plan.all_scorers
        }
    )


@resolve(when=ResolveAt.CONFIG_AVAILABLE, decorate_with=_averages)
def average(items: pd.DataFrame, scorer_id: str, errors_score_zero: bool) -> ScoreAverage:
    """The scorer's mean score, leaving out not-scorable and failed items.

    For a gate (``errors_score_zero``) a failed item counts as 0, as in Mastra.
    """
    states = item_states(items, scorer_id)
    failed = int(states.failed.sum())
    values = states.valid_scores.tolist()
    if errors_score_zero:
        values += [0.0] * failed
    return ScoreAverage(
        scorer_id=scorer_id,
        # Left-to-right addition, as Mastra's reduce does: threshold edges such as an average
        # of 0.20000000000000004 against 0.2 must come out the same.
        mean=js_total(values) / len(values) if values else None,
        scored=len(values),
        not_scorable=int(states.not_scorable.sum()),
        unjudged=int(unjudged(items, scorer_id, states).sum()),
        errors=failed,
        interval=bootstrap_interval(values),
    )


def _listed(nodes: Sequence[str]) -> group | value:
    # @resolve runs even for a node that @config.when leaves out, and group() of nothing is an
    # error: there the decorator gets an empty list it never uses.
    return group(*[source(node) for node in nodes]) if nodes else value([])


def _unscored(score_average: ScoreAverage) -> str | None:
    # Mastra leaves out a gate or threshold whose items were all not scorable, which can turn a
    # failing run green; here it fails, and says why.
    if score_average.scored:
        return None
    counts = [
        f"{count} {what}"
        for count, what in (
            (score_average.not_scorable, "not scorable"),
            (score_average.errors, "failed"),
        )
        if count
    ]
    # Neither: the scorer ran on no item (a conversation's turn no item reached).
    return f"no item could be scored ({', '.join(counts) or 'it ran on none'})"


def _unjudged(score_average: ScoreAverage) -> str | None:
    # An item the budget left unjudged was not checked: a gate or threshold over the rest
    # passes on what was checked, not on the run.
    count = score_average.unjudged
    if not count:
        return None
    return (
        f"{count} {'item was' if count == 1 else 'items were'} not judged: the run's judge "
        "budget (budget_usd=) was spent before their judge was called; raise budget_usd= or "
        "leave it out to check every item (with a checkpoint, run afresh: resume=False)"
    )


def _gates(plan: EvalPlan) -> parameterize:
    return parameterize(
        **{
            f"{gid}.gate_result": {"score_average": source(f"{gid}.average"), "gate_id": value(gid)}
            for gid in plan.gate_ids
        }
    )


@config.when(has_gates=True)
@resolve(when=ResolveAt.CONFIG_AVAILABLE, decorate_with=_gates)
def gate_result(score_average: ScoreAverage, gate_id: str) -> GateResult:
    """The gate passes when its average is at least 1.0 (exact comparison, no tolerance); a
    gate that could score no item fails, and so does one the judge budget left items of
    unjudged."""
    unscored, mean = _unscored(score_average), score_average.mean
    if unscored or mean is None:  # a mean is there when an item was scored
        return GateResult(id=gate_id, passed=False, score=0.0, reason=unscored)
    unjudged = _unjudged(score_average)
    return GateResult(id=gate_id, passed=mean >= 1.0 and not unjudged, score=mean, reason=unjudged)


def _gate_results(plan: EvalPlan) -> inject:
    return inject(results=_listed([f"{gid}.gate_result" for gid in plan.gate_ids]))


@config.when(has_gates=True)
@resolve(when=ResolveAt.CONFIG_AVAILABLE, decorate_with=_gate_results)
def gate_results__gated(results: list[GateResult]) -> list[GateResult]:
    """Every gate's result, in configuration order."""
    return results


@config.when(has_gates=False)
def gate_results__ungated() -> list[GateResult]:
    """No gates configured."""
    return []


def _thresholds(plan: EvalPlan) -> parameterize:
    return parameterize(
        **{
            f"{sid}.threshold_result": {
                "score_average": source(f"{sid}.average"),
                "scorer_id": value(sid),
                "threshold": value(threshold),
            }
            for sid, threshold in plan.thresholds.items()
        }
    )


@config.when(has_thresholds=True)
@resolve(when=ResolveAt.CONFIG_AVAILABLE, decorate_with=_thresholds)
def threshold_result(
    score_average: ScoreAverage, scorer_id: str, threshold: ThresholdSpec
) -> ThresholdResult:
    """The scorer's average against its threshold; an item the scorer failed on fails it, and
    so does having no item it could score or items the judge budget left unjudged."""
    unscored, unjudged = _unscored(score_average), _unjudged(score_average)
    mean = score_average.mean
    average_score = 0.0 if unscored or mean is None else mean
    return ThresholdResult(
        id=scorer_id,
        passed=not (unscored or unjudged)
        and threshold_passed(average_score, threshold)
        and score_average.errors == 0,
        average_score=average_score,
        threshold=threshold,
        errors=score_average.errors,
        reason=unscored or unjudged,
    )


def _threshold_results(plan: EvalPlan) -> inject:
    return inject(results=_listed([f"{sid}.threshold_result" for sid in plan.thresholds]))


@config.when(has_thresholds=True)
@resolve(when=ResolveAt.CONFIG_AVAILABLE, decorate_with=_threshold_results)
def threshold_results__checked(results: list[ThresholdResult]) -> list[ThresholdResult]:
    """Every threshold's result, in configuration order."""
    return results


@config.when(has_thresholds=False)
def threshold_results__unchecked() -> list[ThresholdResult]:
    """No thresholds configured."""
    return []


def _scorer_averages(plan: EvalPlan) -> inject:
    return inject(averages=_listed([f"{sid}.average" for sid in plan.scorer_ids]))


@config.when(has_scorers=True)
@resolve(when=ResolveAt.CONFIG_AVAILABLE, decorate_with=_scorer_averages)
def scores__averaged(averages: list[ScoreAverage]) -> dict[str, float]:
    """Scorer id → average, for scorers (not gates) with at least one numeric score."""
    return {a.scorer_id: a.mean for a in averages if a.mean is not None}


@config.when(has_scorers=False)
def scores__gates_only() -> dict[str, float]:
    """No scorers besides gates: no averages."""
    return {}


def _all_averages(plan: EvalPlan) -> inject:
    averages = {s.id: source(f"{s.id}.average") for s in plan.all_scorers}
    return inject(
        averages=group(**averages) if averages else value({}), trial_settings=value(plan.trials)
    )


@resolve(when=ResolveAt.CONFIG_AVAILABLE, decorate_with=_all_averages)
def summary(
    items: pd.DataFrame,
    averages: dict[str, ScoreAverage],
    trial_settings: TrialSettings | None,
    judge_cache_rows_dropped: int = 0,
    judge_cache_problems: list[str] | None = None,
) -> Summary:
    """Item count, not-scorable and failed items per scorer, judge-cache rows dropped and
    problems, what may be wrong with the target's outputs, each average's interval and, with
    trials, how each scorer's scores moved."""
    target_errors = int(items["target_error"].notna().sum()) if "target_error" in items else 0
    return Summary(
        total_items=len(items),
        judge_cache_rows_dropped=judge_cache_rows_dropped,
        judge_cache_problems=judge_cache_problems or [],
        target_warnings=unused_tools_warnings(items["output"]) if "output" in items else [],
        not_scorable={sid: a.not_scorable for sid, a in averages.items() if a.not_scorable},
        errors={sid: a.errors for sid, a in averages.items() if a.errors},
        target_errors=target_errors,
        intervals={sid: a.interval for sid, a in averages.items() if a.interval is not None},
        trials={sid: trial_spread(items, sid, trial_settings) for sid in averages}
        if trial_settings
        else {},
    )


def verdict(
    gate_results: list[GateResult],
    threshold_results: list[ThresholdResult],
    summary: Summary,
    turn_results: list[TurnResult] | None = None,
) -> Verdict | None:
    """``failed`` if a gate failed or the target failed on an item, else ``scored`` if a
    threshold failed, else ``passed``; conversations' turn gates and thresholds count as the
    others do. A target that failed is the system under test failing: its items have nothing
    to score, so no threshold (which leaves them out) nor a gate of a turn before the failure
    can vouch for them (Mastra's runEvals rejects at the first such item).

    None when no gate or threshold produced a result and the target failed on no item.
    """
    if summary.target_errors:
        return "failed"
    for turn in turn_results or ():
        gate_results = [*gate_results, *turn.gate_results]
        threshold_results = [*threshold_results, *turn.threshold_results]
    if not gate_results and not threshold_results:
        return None
    if not all(g.passed for g in gate_results):
        return "failed"
    if not all(t.passed for t in threshold_results):
        return "scored"
    return "passed"


def _scorer_ids(plan: EvalPlan) -> inject:
    return inject(scorer_ids=value(tuple(s.id for s in plan.all_scorers)))


@resolve(when=ResolveAt.CONFIG_AVAILABLE, decorate_with=_scorer_ids)
def usage(
    items: pd.DataFrame,
    scorer_ids: tuple[str, ...],
    judge_limits: dict[str, list[dict]],
) -> dict[str, ScorerUsage]:
    """Judge calls, tokens and cost per scorer, and in total, with the limits on calls in flight
    of the endpoints called and how they adapted over the run.

    :param judge_limits: per scorer id, the limits of its judges' endpoints over the run, as the
        batches' run measured them (``evaldag._judge.limiter.judge_limits``).
    """
    totals = _judge_usage(items, scorer_ids)
    endpoints: dict[str, Any] = {}
    for sid in scorer_ids:
        if sid in totals:
            limits = judge_limits.get(sid, [])
            endpoints.update((limit["endpoint"], limit) for limit in limits)
            totals[sid] = _with_limits(totals[sid], limits)
    if "total" in totals:
        totals["total"] = _with_limits(totals["total"], list(endpoints.values()))
    return totals


def _with_limits(usage: ScorerUsage, limits: list[dict]) -> ScorerUsage:
    return ScorerUsage(**{**usage.model_dump(), "judge_limits": limits})


@config.when(has_target=False)
def target_usage__none() -> ScorerUsage | None:
    """No target, no model calls of its own."""
    return None


@config.when(has_target=True)
def target_usage__target(
    items: pd.DataFrame, turns: pd.DataFrame | None = None
) -> ScorerUsage | None:
    """The target's model calls (``evaldag.agent``'s, whose replies carry their records in
    ``content.metadata.modelCalls``), tokens and cost; None when it made none. A conversation
    the target failed in has no output: the turns it completed count (their rows in ``turns``)."""
    outputs = items["output"].tolist()
    if turns is not None and "target_error" in items:
        failed = set(items.index[items["target_error"].notna()])
        outputs += [o for i, o in zip(turns["item"], turns["output"], strict=True) if i in failed]
    records = [record for output in outputs for record in _model_calls(output)]
    totals = _summed(records)
    return ScorerUsage(**totals) if totals["calls"] else None


def _model_calls(output: object) -> list[dict]:
    if not isinstance(output, list):
        return []
    return [
        record
        for message in output
        if isinstance(message, dict) and isinstance(message.get("content"), dict)
        for record in (message["content"].get("metadata") or {}).get("modelCalls") or ()
        if isinstance(record, dict)
    ]


def _summed(executions: list[dict]) -> dict[str, Any]:
    """Calls, tokens and dollars of judge or model-call records (Mastra's camelCase)."""
    calls = input_tokens = output_tokens = total_tokens = 0
    cost = 0.0
    for execution in executions:
        calls += execution.get("modelCallCount", 0)
        tokens = execution.get("usage") or {}
        input_tokens += tokens.get("inputTokens") or 0
        output_tokens += tokens.get("outputTokens") or 0
        total_tokens += tokens.get("totalTokens") or (
            (tokens.get("inputTokens") or 0) + (tokens.get("outputTokens") or 0)
        )
        cost += (execution.get("cost") or {}).get("totalUsd") or 0.0
    return {
        "calls": calls,
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "total_tokens": total_tokens,
        "cost_usd": cost,
    }


def _judge_usage(items: pd.DataFrame, scorer_ids: Sequence[str]) -> dict[str, ScorerUsage]:
    """Sum the judge records in ``items`` per scorer; ``total`` sums them all."""
    totals: dict[str, dict[str, Any]] = {}
    for sid in scorer_ids:
        records = [
            execution
            for text in items[ScorerColumns(sid).judge].dropna()
            for executions in json.loads(text).values()
            for execution in executions
        ]
        summed = _summed(records)
        if summed["calls"]:
            totals[sid] = summed
    if totals:
        totals["total"] = {
            key: sum(t[key] for t in totals.values()) for key in next(iter(totals.values()))
        }
    return {key: ScorerUsage(**value) for key, value in totals.items()}


def _definitions(plan: EvalPlan) -> inject:
    return inject(scorer_definitions=value(plan.definitions()))


@resolve(when=ResolveAt.CONFIG_AVAILABLE, decorate_with=_definitions)
def eval_result(
    scores: dict[str, float],
    summary: Summary,
    gate_results: list[GateResult],
    threshold_results: list[ThresholdResult],
    verdict: Verdict | None,
    items: pd.DataFrame,
    usage: dict[str, ScorerUsage],
    target_usage: ScorerUsage | None,
    scorer_definitions: list[dict],
    experiment_id: str,
    data_columns: dict[str, str],
    experiment_name: str | None = None,
    turns: pd.DataFrame | None = None,
    turn_results: list[TurnResult] | None = None,
) -> EvalResult:
    """Everything the run produced, with the scorers' definitions and the run's experiment id
    and name; for conversations, their turns and the results per turn. The items keep the
    data's names for the run fields it names otherwise (``data_columns``). The picture of the
    graph is the driver's, not a value of the graph: ``run_evals`` adds it (``dag_dot``)."""
    return EvalResult(
        scores=scores,
        summary=summary,
        gate_results=gate_results,
        threshold_results=threshold_results,
        verdict=verdict,
        items=items.rename(columns=data_columns),
        columns=data_columns,
        usage=usage,
        target_usage=target_usage,
        scorers=scorer_definitions,
        experiment_id=experiment_id,
        name=experiment_name,
        turns=turns,
        turn_results=turn_results or [],
    )
