"""Where the verdict is computed: averages, gate results, threshold results (spec §6.5–§6.7).

These are the eval DAG's aggregation nodes; ``eval_graph`` instantiates them per scorer, gate
and threshold with ``@parameterize``.
"""

from __future__ import annotations

import pandas as pd

from evaldag._compat.js import js_total
from evaldag._results.eval_result import GateResult, ScoreAverage, ThresholdResult, Verdict
from evaldag._scorer.thresholds import ThresholdSpec, threshold_passed


def average(scored: pd.DataFrame, errors_score_zero: bool) -> ScoreAverage:
    """The mean of a scorer's scores, leaving out not-scorable items and failed ones.

    For a gate (``errors_score_zero``) a failed item counts as 0, as in Mastra.
    """
    failed = scored["error"].notna()
    not_scorable = scored["not_scorable"].notna()
    valid = scored["score"][~failed & ~not_scorable].dropna()
    values = valid.tolist()
    if errors_score_zero:
        values += [0.0] * int(failed.sum())
    return ScoreAverage(
        mean=_mean(values),
        scored=len(values),
        not_scorable=int(not_scorable.sum()),
        errors=int(failed.sum()),
    )


def _mean(values: list[float]) -> float | None:
    # Left-to-right addition, as Mastra's reduce does: threshold edges such as an average of
    # 0.20000000000000004 against 0.2 must come out the same.
    return js_total(values) / len(values) if values else None


def _skipped(score_average: ScoreAverage) -> bool:
    # Mastra leaves out a gate or threshold whose items were all not scorable.
    return score_average.scored == 0 and score_average.not_scorable > 0


def gate_result(score_average: ScoreAverage, gate_id: str) -> GateResult | None:
    """The gate passes when its average is at least 1.0 (exact comparison, no tolerance)."""
    if _skipped(score_average):
        return None
    score = score_average.mean if score_average.mean is not None else 0.0
    return GateResult(id=gate_id, passed=score >= 1.0, score=score)


def threshold_result(
    score_average: ScoreAverage, scorer_id: str, threshold: ThresholdSpec
) -> ThresholdResult | None:
    """The scorer's average against its threshold; an item the scorer failed on fails it."""
    if _skipped(score_average):
        return None
    average_score = score_average.mean if score_average.mean is not None else 0.0
    return ThresholdResult(
        id=scorer_id,
        passed=threshold_passed(average_score, threshold) and score_average.errors == 0,
        average_score=average_score,
        threshold=threshold,
        errors=score_average.errors,
    )


def scores(averages: dict[str, ScoreAverage]) -> dict[str, float]:
    """Scorer id → average, for scorers with at least one numeric score."""
    return {sid: a.mean for sid, a in averages.items() if a.mean is not None}


def verdict(
    gate_results: list[GateResult | None], threshold_results: list[ThresholdResult | None]
) -> Verdict | None:
    """``failed`` if a gate failed, else ``scored`` if a threshold failed, else ``passed``.

    None when no gate or threshold produced a result.
    """
    gates = [g for g in gate_results if g is not None]
    thresholds = [t for t in threshold_results if t is not None]
    if not gates and not thresholds:
        return None
    if not all(g.passed for g in gates):
        return "failed"
    if not all(t.passed for t in thresholds):
        return "scored"
    return "passed"
