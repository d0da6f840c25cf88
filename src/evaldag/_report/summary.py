"""Each scorer and gate of a run summed up: what the report and the CLI's summary table share."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from evaldag._report.failing import requirements, turn_rows
from evaldag._results.eval_result import EvalResult, ThresholdResult
from evaldag._results.intervals import ConfidenceInterval
from evaldag._results.item_columns import has_scorer, item_states, scorer_ids
from evaldag._scorer.thresholds import ThresholdSpec, threshold_text


@dataclass(frozen=True)
class ScorerSummary:
    """One scorer or gate of a run, summed up: its average and whether it met its requirement.

    ``requirement`` is the threshold of a scorer, 1.0 for a gate, None when nothing is required;
    ``passed`` is None when no requirement applies (or all its items were not scorable);
    ``interval`` is the 95 % bootstrap interval of the mean (None below two scores).
    """

    id: str
    name: str
    description: str
    role: str
    mean: float | None
    scored: int
    not_scorable: int
    errors: int
    requirement: ThresholdSpec | None
    passed: bool | None
    scores: tuple[float, ...]
    has_judge: bool
    interval: ConfidenceInterval | None = None
    better: str = "higher"  # which way its scores are better: 'higher', or 'lower'


def scorer_summaries(result: EvalResult) -> list[ScorerSummary]:
    """A summary per scorer, then per gate, in configuration order."""
    gates = {g.id: g for g in result.gate_results}
    thresholds = {t.id: t for t in result.threshold_results}
    items = result.items
    summaries = []
    for definition in scorer_definitions(result):
        sid = definition["id"]
        is_gate = definition["role"] == "gate"
        valid = _valid_scores(items, sid)
        if is_gate:
            gate = gates.get(sid)
            mean = gate.score if gate is not None else None
            requirement: ThresholdSpec | None = 1.0
            passed = gate.passed if gate is not None else None
        else:
            threshold = thresholds.get(sid)
            mean = result.scores.get(sid)
            # a stored result without scorer definitions still has its threshold results
            requirement = threshold.threshold if threshold else definition.get("threshold")
            passed = threshold.passed if threshold is not None else None
        summaries.append(
            ScorerSummary(
                id=sid,
                name=definition.get("name") or sid,
                description=definition.get("description") or "",
                role="gate" if is_gate else "scorer",
                mean=mean,
                scored=len(valid),
                not_scorable=result.summary.not_scorable.get(sid, 0),
                errors=result.summary.errors.get(sid, 0),
                requirement=requirement,
                passed=passed,
                scores=tuple(valid),
                has_judge=any(step.get("type") == "prompt" for step in definition["steps"]),
                interval=result.summary.intervals.get(sid),
                better=definition.get("better") or "higher",
            )
        )
    return summaries


def turn_summaries(result: EvalResult) -> list[ScorerSummary]:
    """A summary per gate and scorer of each turn of the run's conversations, turn by turn,
    named ``turn N: <id>``; their counts from that turn's rows."""
    summaries = []
    for turn in result.turn_results:
        rows = turn_rows(result, turn.index)
        thresholds = {t.id: t for t in turn.threshold_results}
        outcomes = [
            *((g.id, "gate", g.score, 1.0, g.passed) for g in turn.gate_results),
            *(  # every scorer with an average or a threshold (one that scored nothing has none)
                (sid, "scorer", mean, *_met(thresholds.get(sid)))
                for sid, mean in {**dict.fromkeys(thresholds), **turn.scores}.items()
            ),
        ]
        for sid, role, mean, requirement, passed in outcomes:
            states = item_states(rows, sid) if has_scorer(rows, sid) else None
            valid = [] if states is None else states.valid_scores.tolist()
            summaries.append(
                ScorerSummary(
                    id=f"turn {turn.index}: {sid}",
                    name=sid,
                    description="",
                    role=role,
                    mean=mean,
                    scored=len(valid),
                    not_scorable=0 if states is None else int(states.not_scorable.sum()),
                    errors=0 if states is None else int(states.failed.sum()),
                    requirement=requirement,
                    passed=passed,
                    scores=tuple(valid),
                    has_judge=False,
                )
            )
    return summaries


def _met(threshold: ThresholdResult | None) -> tuple[ThresholdSpec | None, bool | None]:
    return (None, None) if threshold is None else (threshold.threshold, threshold.passed)


def scorer_definitions(result: EvalResult) -> list[dict[str, Any]]:
    """The scorers' definitions, then the gates'; for a result stored without them, their ids
    from the item columns."""
    if result.scorers:
        scorers = [d for d in result.scorers if d.get("role") != "gate"]
        return [*scorers, *(d for d in result.scorers if d.get("role") == "gate")]
    ids = scorer_ids(result.items.columns)
    gate_ids = {g.id for g in result.gate_results}
    return [
        {"id": sid, "role": "gate" if sid in gate_ids else "scorer", "steps": []} for sid in ids
    ]


def _valid_scores(items: pd.DataFrame, sid: str) -> list[float]:
    """The scores that entered the average: no error, not 'not scorable', a number."""
    if not has_scorer(items, sid):
        return []
    return item_states(items, sid).valid_scores.tolist()


def requirement_text(requirement: ThresholdSpec | None, role: str) -> str:
    """``>= 0.70``, ``0.20 to 0.80``, ``= 1.00`` (a gate) or ``''``."""
    if requirement is None:
        return ""
    if role == "gate":
        return "= 1.00"
    return threshold_text(requirement)


def verdict_explanation(result: EvalResult) -> str:
    """One line saying why the verdict is what it is (turns' gates and thresholds included),
    or why it cannot be trusted."""
    if result.summary.untrustworthy:
        return f"{result.summary.untrustworthy} (the run is an error, not a verdict)"
    every = requirements(result)
    gates = [r for r in every if r.is_gate]
    thresholds = [r for r in every if not r.is_gate]
    failed_gates = [g.label for g in gates if not g.outcome.passed]
    missed = [t.label for t in thresholds if not t.outcome.passed]
    parts = []
    if result.summary.target_errors:
        parts.append(
            f"the target failed on {result.summary.target_errors} of "
            f"{result.summary.total_items} items"
        )
    if gates:
        parts.append(
            f"gate failed: {', '.join(failed_gates)}"
            if len(failed_gates) == 1
            else f"{len(failed_gates)} of {len(gates)} gates failed"
            if failed_gates
            else f"all {len(gates)} gates passed"
        )
    if thresholds:
        parts.append(
            f"{len(missed)} of {len(thresholds)} thresholds missed ({', '.join(missed)})"
            if missed
            else f"all {len(thresholds)} thresholds met"
        )
    return "; ".join(parts) if parts else "no gates or thresholds, so no verdict"


def outcome_word(summary: ScorerSummary) -> str:
    """``passed``/``failed`` for a gate, ``met``/``missed`` for a threshold, else ``''``."""
    if summary.passed is None:
        return ""
    if summary.role == "gate":
        return "passed" if summary.passed else "failed"
    return "met" if summary.passed else "missed"


def judge_limit_texts(result: EvalResult) -> list[str]:
    """A sentence per judge endpoint whose limit on calls in flight changed during the run
    (429s cut it, successful calls grew it back): where it began, its lowest, where it ended."""
    total = result.usage.get("total")
    texts = []
    for limit in total.judge_limits if total is not None else ():
        changes = len(limit.changes) - 1
        if changes < 1:
            continue
        began = limit.changes[0][1]
        text = f"judge limit for {limit.endpoint}: {began}"
        if began != limit.max_concurrency:
            text += f" (of {limit.max_concurrency})"
        if limit.lowest < began:
            text += f" → lowest {limit.lowest} after 429s"
        plural = "s" if changes > 1 else ""
        texts.append(f"{text}, ended {limit.final} ({changes} change{plural})")
    return texts
