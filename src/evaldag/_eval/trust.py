"""Whether a finished run measured anything: a target or scorer that failed on every item is a
misconfiguration (a dead judge, a rejected key, an unknown model), not a verdict; so is a run in
which nothing could be scored. What no item can decide (an agent's model that called no tool on
any item) is warned."""

from __future__ import annotations

import math
import warnings
from typing import Any

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


def _failed_share(
    frame: pd.DataFrame, scorer_id: str, total: int, max_error_share: float, unit: str
) -> str | None:
    """How much the scorer failed on, when it is too much to trust; None when it is not.

    Too much is more than ``max_error_share`` of the ``total`` items (or turns), or everything
    it did not find not scorable, one failure its own: a dead judge beside items without their
    context scores nothing, as much as one failing on every item. Failures that are the target's
    alone say nothing of the scorer (the target's own check judges them).
    """
    states = item_states(frame, scorer_id)
    count = int(states.failed.sum())
    every = f"every {unit}" if count == total else f"{count} of {total} {unit}s"
    if count > max_error_share * total:
        return every
    own = states.failed & frame[ScorerColumns(scorer_id).failed_step].ne("target")
    if not own.any() or states.scored.any():
        return None
    unscorable = int(states.not_scorable.sum())
    return every if count == total else f"{every} and scored none ({unscorable} not scorable)"


#: Why a run's verdict cannot be trusted, and the details its error carries.
Problem = tuple[str, dict[str, Any]]


def untrustworthy(result: EvalResult, max_error_share: float) -> Problem | None:
    """Why ``result``'s verdict cannot be trusted, if it cannot: the target failed on every
    item, or a scorer or gate (a conversation turn's too) on more than ``max_error_share`` of
    them or on every one it could score, or nothing could be scored at all."""
    items, total, turns = result.items, result.summary.total_items, result.turns
    if total == 0:
        return None
    if result.summary.target_errors == total:
        label, message = _first(items["target_error"])
        return (
            f"The target failed on every item ({total}); first, on item {label}: {message}",
            {"item": label, "targetErrors": total},
        )
    too_many = []  # (whose, scorer id, how much it failed on, its errors by item)
    for sid in (d["id"] for d in result.scorers):
        share = _failed_share(items, sid, total, max_error_share, "item")
        if share:
            too_many.append((f"Scorer '{sid}'", sid, share, items[ScorerColumns(sid).error]))
    if turns is not None:
        too_many += _failing_turn_scorers(turns, max_error_share)
    if not too_many:
        return _nothing_scored(result)
    whose, sid, share, errors = too_many[0]
    label, message = _first(errors)
    others = [other for _, other, _, _ in too_many[1:]]
    also = f" (so did {', '.join(others)})" if others else ""
    why = (
        f"{whose} failed on {share}{also}: its scores measure nothing. First error, on item "
        f"{label}: {message}"
    )
    return (
        why,
        {
            "scorerId": sid,
            "errors": int(errors.notna().sum()),
            "items": total,
            "item": label,
            "also": others,
        },
    )


def trust_marked(result: EvalResult, max_error_share: float) -> EvalResult:
    """``result``, its summary saying why its verdict cannot be trusted when it cannot
    (``summary.untrustworthy``): the results files, the store and the report keep it, so that
    none of them shows the verdict of a run that measured nothing as if it stood."""
    problem = untrustworthy(result, max_error_share)
    why = None if problem is None else problem[0]
    summary = result.summary.model_copy(update={"untrustworthy": why})
    return result.model_copy(update={"summary": summary})


def require_trustworthy(result: EvalResult, max_error_share: float) -> EvalResult:
    """``result`` (marked by :func:`trust_marked`), or ``UntrustworthyRunError`` carrying it
    when its verdict cannot be trusted: the check is made again only then, for the error's
    details. The summary's target warnings are warned (run_evals' caller sees them where the
    summary is not shown)."""
    for warning in result.summary.target_warnings:
        warnings.warn(warning, stacklevel=3)
    why = result.summary.untrustworthy
    if why is None:
        return result
    message, details = untrustworthy(result, max_error_share) or (why, {})
    raise UntrustworthyRunError(message, result=result, details=details)


def _failing_turn_scorers(
    turns: pd.DataFrame, max_error_share: float
) -> list[tuple[str, str, str, pd.Series]]:
    """The conversations' turn scorers and gates that failed on too much of the turns they ran
    on, with their errors labelled by item and turn."""
    labels = [
        f"{item}, turn {turn}" for item, turn in zip(turns["item"], turns["turn"], strict=True)
    ]
    failing = []
    for sid in scorer_ids(turns.columns):
        ran = int((~item_states(turns, sid).skipped).sum())
        share = _failed_share(turns, sid, ran, max_error_share, "turn")
        if share:
            errors = turns[ScorerColumns(sid).error].set_axis(labels)
            failing.append((f"Turn scorer '{sid}'", sid, share, errors))
    return failing


def _nothing_scored(result: EvalResult) -> Problem | None:
    """Why nothing was measured, when no scorer or gate (a turn's neither) gave a score on any
    item: most often a setting the data does not meet (no ``context=``, no ``ground_truth``),
    so the run is an error, not a verdict."""
    items, turns = result.items, result.turns
    frames = [(items, [d["id"] for d in result.scorers], items.index)]
    if turns is not None:  # a turn row names its item in its "item" column
        frames.append((turns, scorer_ids(turns.columns), pd.Index(turns["item"])))
    unscored = []
    for frame, ids, item_labels in frames:
        for sid in ids:
            if item_states(frame, sid).scored.any():
                return None
            first = first_not_scorable(frame, sid)
            if first is not None:
                position, reason = first
                unscored.append(f"'{sid}' on item {item_labels[position]}: {reason}")
    if not unscored:  # errors only, below max_error_share: the error check's to judge
        return None
    why = (
        f"Nothing in this run could be scored: no scorer or gate gave a score on any of its "
        f"{result.summary.total_items} items. First reasons: {'; '.join(unscored[:3])}"
    )
    return why, {"unscored": unscored}
