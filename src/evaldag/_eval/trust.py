"""Whether a finished run measured anything: a target or scorer that failed on every item is a
misconfiguration (a dead judge, a rejected key, an unknown model), not a verdict; so is a run in
which nothing could be scored. What no item can decide (an agent's model that called no tool on
any item) is warned."""

from __future__ import annotations

import math
import warnings

import pandas as pd

from evaldag._results.eval_result import EvalResult
from evaldag._results.item_columns import (
    ScorerColumns,
    first_not_scorable,
    item_states,
    scorer_ids,
)
from evaldag.errors import EvalDagError, UntrustworthyRunError


def checked_share(max_error_share: float) -> float:
    """``max_error_share`` checked: a number from 0 to 1."""
    if (
        isinstance(max_error_share, bool)
        or not isinstance(max_error_share, int | float)
        or not 0 <= max_error_share <= 1
        or math.isnan(max_error_share)
    ):
        raise EvalDagError(
            "INVALID_MAX_ERROR_SHARE",
            f"max_error_share must be a number from 0 to 1 (the share of items a scorer may fail "
            f"on before the run is an error), got {max_error_share!r}",
        )
    return float(max_error_share)


def _first(errors: pd.Series) -> tuple[str, str]:
    failed = errors.dropna()
    return str(failed.index[0]), str(failed.iloc[0])


def require_trustworthy(result: EvalResult, max_error_share: float) -> EvalResult:
    """``result``, or an error when the target, or a scorer or gate, failed on every item or
    on more than ``max_error_share`` of them; the error carries the result. The summary's
    target warnings are warned (run_evals' caller sees them where the summary is not shown)."""
    for warning in result.summary.target_warnings:
        warnings.warn(warning, stacklevel=3)
    items, total = result.items, result.summary.total_items
    if total == 0:
        return result
    too_many = [
        (sid, count)
        for sid, count in result.summary.errors.items()
        if count == total or count > max_error_share * total
    ]
    if result.summary.target_errors == total:
        label, message = _first(items["target_error"])
        raise UntrustworthyRunError(
            f"The target failed on every item ({total}); first, on item {label}: {message}",
            result=result,
            details={"item": label, "targetErrors": total},
        )
    if not too_many:
        return _require_a_score(result)
    sid, count = too_many[0]
    label, message = _first(items[ScorerColumns(sid).error])
    share = "every item" if count == total else f"{count} of {total} items"
    others = [other for other, _ in too_many[1:]]
    also = f" (so did {', '.join(others)})" if others else ""
    raise UntrustworthyRunError(
        f"Scorer '{sid}' failed on {share}{also}: its scores measure nothing. First error, on "
        f"item {label}: {message}",
        result=result,
        details={"scorerId": sid, "errors": count, "items": total, "item": label, "also": others},
    )


def _require_a_score(result: EvalResult) -> EvalResult:
    """``result``, or an error when no scorer or gate (a turn's neither) gave a score on any
    item: nothing was measured, most often for a setting the data does not meet (no
    ``context=``, no ``ground_truth``), so the run is an error, not a verdict."""
    items, turns = result.items, result.turns
    frames = [(items, [d["id"] for d in result.scorers], items.index)]
    if turns is not None:  # a turn row names its item in its "item" column
        frames.append((turns, scorer_ids(turns.columns), pd.Index(turns["item"])))
    unscored = []
    for frame, ids, item_labels in frames:
        for sid in ids:
            if item_states(frame, sid).scored.any():
                return result
            first = first_not_scorable(frame, sid)
            if first is not None:
                position, reason = first
                unscored.append(f"'{sid}' on item {item_labels[position]}: {reason}")
    if not unscored:  # errors only, below max_error_share: the error check's to judge
        return result
    raise UntrustworthyRunError(
        f"Nothing in this run could be scored: no scorer or gate gave a score on any of its "
        f"{result.summary.total_items} items. First reasons: {'; '.join(unscored[:3])}",
        result=result,
        details={"unscored": unscored},
    )
