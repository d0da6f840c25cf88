"""Two judges on the same labelled items: which agrees better with people, and what each costs.

Each judge's agreement is measured on its own run (``evaldag.agreement``). The difference is
measured on the items both judges scored that have a label, paired by the key that pairs
experiments (``evaldag compare``'s): every figure of B minus A's, with a paired bootstrap
interval (each resample draws the same items for both judges), and for binary labels McNemar's
exact test of the items one judge called right and the other wrong. Calls, tokens, dollars and
judge time stand side by side.
"""

from __future__ import annotations

import json
import math
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from evaldag._agreement.agreement import RESAMPLES, Agreement, agreement, require_column
from evaldag._agreement.labels import LabelKind, read_labels
from evaldag._agreement.statistics import (
    binary_replicates,
    binary_values,
    graded_replicates,
    graded_values,
    mcnemar_p_value,
)
from evaldag._experiments.compare import experiment_result, item_keys, pairing_key
from evaldag._results.eval_result import EvalResult
from evaldag._results.intervals import (
    LEVEL,
    SEED,
    ConfidenceInterval,
    percentile_interval,
    resampled_positions,
)
from evaldag._results.item_columns import ScorerColumns, item_states
from evaldag.errors import EvalDagError


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True)


class JudgeSpend(_Model):
    """What a judge's calls cost over its run."""

    calls: int = Field(description="Judge calls (cache hits are no calls).")
    tokens: int
    cost_usd: float = Field(description="From litellm's price table; 0 for unpriced models.")
    judge_seconds: float = Field(description="The judge calls' time, summed over the items.")
    median_item_seconds: float | None = Field(
        description="The median item's judge time (all its steps' calls); None without records."
    )


class JudgeSide(_Model):
    """One judge: where its run came from, its agreement over its run, and its spend."""

    source: str
    scorer_id: str
    agreement: Agreement
    spend: JudgeSpend


class FigureDifference(_Model):
    """A figure on the paired items for each judge, and B minus A with its paired interval."""

    a: float | None
    b: float | None
    difference: float | None = Field(description="B minus A; None where either is undefined.")
    interval: ConfidenceInterval | None = None


class McNemar(_Model):
    """The paired items by which judge called them right (its call matches the label), and
    McNemar's exact test of the items exactly one judge called right."""

    both_right: int
    a_only: int = Field(description="Items A called right and B wrong.")
    b_only: int = Field(description="Items B called right and A wrong.")
    both_wrong: int
    p_value: float = Field(description="Two-sided exact binomial test of a_only vs b_only.")


class JudgeComparison(_Model):
    """Judge B against judge A on the same labelled items."""

    labels: str
    kind: LabelKind
    item_key: str = Field(description="The column pairing the items ('position': their order).")
    paired: int = Field(description="Items both judges scored that have a label.")
    a: JudgeSide
    b: JudgeSide
    differences: dict[str, FigureDifference] = Field(description="On the paired items, B − A.")
    mcnemar: McNemar | None = Field(default=None, description="Binary labels only.")
    level: float = LEVEL
    resamples: int = RESAMPLES
    seed: int = SEED

    def to_frame(self) -> pd.DataFrame:
        """One row per figure: figure, a, b, difference, low, high (on the paired items)."""
        return pd.DataFrame(
            [
                {
                    "figure": name,
                    "a": d.a,
                    "b": d.b,
                    "difference": d.difference,
                    "low": None if d.interval is None else d.interval.low,
                    "high": None if d.interval is None else d.interval.high,
                }
                for name, d in self.differences.items()
            ]
        )


def _error(message: str, **details: Any) -> EvalDagError:
    return EvalDagError("INVALID_AGREEMENT_OPTION", message, domain="AGREEMENT", details=details)


def judge_spend(result: EvalResult, scorer_id: str) -> JudgeSpend:
    """The scorer's judge calls, tokens and dollars (the run's usage) and judge time (the
    items' judge records)."""
    usage = result.usage.get(scorer_id)
    column = ScorerColumns(scorer_id).judge
    seconds = (
        result.items[column].map(_record_seconds).dropna()
        if column in result.items.columns
        else pd.Series(dtype=float)
    )
    return JudgeSpend(
        calls=usage.calls if usage else 0,
        tokens=usage.total_tokens if usage else 0,
        cost_usd=usage.cost_usd if usage else 0.0,
        judge_seconds=float(seconds.sum()),
        median_item_seconds=float(seconds.median()) if len(seconds) else None,
    )


def _record_seconds(cell: Any) -> float | None:
    """The seconds of every judge execution in an item's judge records (JSON text)."""
    if cell is None or (isinstance(cell, float) and math.isnan(cell)):
        return None
    records = json.loads(cell) if isinstance(cell, str) else cell
    durations: list[float] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            if "durationMs" in value:
                durations.append(float(value["durationMs"]))
                return
            for inner in value.values():
                walk(inner)
        elif isinstance(value, list):
            for inner in value:
                walk(inner)

    walk(records)
    return sum(durations) / 1000 if durations else None


def _paired(
    result_a: EvalResult,
    result_b: EvalResult,
    scorers: tuple[str, str],
    labels: str,
    key: str | None,
    read_options: dict[str, Any],
) -> tuple[str, LabelKind, np.ndarray, np.ndarray, np.ndarray]:
    """The pairing key, the labels' kind, and the labels and both judges' scores on the items
    both scored that have a label (in A's order)."""
    same_run = result_a is result_b
    item_key = "position" if same_run else pairing_key(result_a.items, result_b.items, key)
    sides = []
    for result, sid in zip((result_a, result_b), scorers, strict=True):
        read = read_labels(result.items[labels], labels, **read_options)
        keys = item_keys(result.items, item_key)
        scores = item_states(result.items, sid).counted_scores
        sides.append(
            (
                read.kind,
                pd.Series(read.values.to_numpy(), index=keys.to_numpy()),
                pd.Series(scores.to_numpy(), index=keys.to_numpy()),
            )
        )
    (kind, labels_a, scores_a), (_, labels_b, scores_b) = sides
    common = labels_a.index.intersection(labels_b.index, sort=False)
    differ = common[
        (labels_a[common].fillna(-1).to_numpy() != labels_b[common].fillna(-1).to_numpy())
    ]
    if len(differ):
        raise _error(
            f"the two runs label item {differ[0]!r} differently in '{labels}' (by the "
            f"'{item_key}' column): compare judges on the same labelled items",
            labels=labels,
            item=str(differ[0]),
        )
    both = common[
        labels_a[common].notna().to_numpy()
        & scores_a[common].notna().to_numpy()
        & scores_b[common].notna().to_numpy()
    ]
    return (
        item_key,
        kind,
        labels_a[both].to_numpy(float),
        scores_a[both].to_numpy(float),
        scores_b[both].to_numpy(float),
    )


def compare_judges(
    a: EvalResult | str,
    b: EvalResult | str,
    *,
    labels: str,
    scorer: str | None = None,
    scorer_b: str | None = None,
    positive: Any = None,
    order: Sequence[Hashable] | None = None,
    threshold: float | None = None,
    key: str | None = None,
    level: float = LEVEL,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> JudgeComparison:
    """Judge B against judge A on the same items labelled in the data's column ``labels``.

    :param a: judge A's run: an ``EvalResult`` or a results ``.parquet`` file.
    :param b: judge B's run; the same run as ``a`` when the two judges are two scorers of it
        (then ``scorer_b`` names B's).
    :param scorer: A's scorer id (default: its run's only scorer).
    :param scorer_b: B's scorer id (default: ``scorer``, or its run's only scorer).
    :param key: the data column pairing the items of two runs (default: ``id``, then
        ``input``, then their order, as ``evaldag compare`` pairs them).

    ``positive``, ``order``, ``threshold``, ``level``, ``resamples`` and ``seed`` are
    ``evaldag.agreement``'s, the same for both judges.
    """
    result_a, source_a = experiment_result(a)
    result_b, source_b = (result_a, source_a) if b is a else experiment_result(b)
    if result_b is result_a and scorer_b is None:
        raise _error(
            "a and b are the same run: give scorer_b= the second judge's scorer id", labels=labels
        )
    options: dict[str, Any] = {"level": level, "resamples": resamples, "seed": seed}
    found_a = agreement(
        result_a,
        labels=labels,
        scorer=scorer,
        positive=positive,
        order=order,
        threshold=threshold,
        **options,
    )
    found_b = agreement(
        result_b,
        labels=labels,
        scorer=scorer_b or scorer,
        positive=positive,
        order=order,
        threshold=threshold,
        **options,
    )
    scorers = (found_a.scorer_id, found_b.scorer_id)
    if result_a is result_b and scorers[0] == scorers[1]:
        raise _error(
            f"both judges are '{scorers[0]}' of the same run: give scorer_b= the other judge's "
            "scorer id, or b= the other judge's run",
            scorer=scorers[0],
        )
    require_column(result_b.items, labels, "labels")
    read_options = {"positive": positive, "order": order}
    item_key, kind, y, s_a, s_b = _paired(result_a, result_b, scorers, labels, key, read_options)
    if not len(y):
        raise _error(
            "no item was scored by both judges and labelled: nothing to compare", labels=labels
        )
    differences, mcnemar = _differences(kind, y, s_a, s_b, found_a.threshold, options)
    return JudgeComparison(
        labels=labels,
        kind=kind,
        item_key=item_key,
        paired=len(y),
        a=JudgeSide(
            source=source_a,
            scorer_id=scorers[0],
            agreement=found_a,
            spend=judge_spend(result_a, scorers[0]),
        ),
        b=JudgeSide(
            source=source_b,
            scorer_id=scorers[1],
            agreement=found_b,
            spend=judge_spend(result_b, scorers[1]),
        ),
        differences=differences,
        mcnemar=mcnemar,
        **options,
    )


def _differences(
    kind: LabelKind,
    y: np.ndarray,
    s_a: np.ndarray,
    s_b: np.ndarray,
    threshold: float | None,
    options: dict[str, Any],
) -> tuple[dict[str, FigureDifference], McNemar | None]:
    """Each figure for both judges on the paired items, B − A with the interval of B − A over
    resamples that draw the same items for both, and McNemar's test (binary labels)."""
    positions = resampled_positions(len(y), resamples=options["resamples"], seed=options["seed"])
    if kind == "binary":
        assert threshold is not None
        values = [binary_values(y, s, threshold) for s in (s_a, s_b)]
        replicates = [binary_replicates(y, s, threshold, positions) for s in (s_a, s_b)]
    else:
        values = [graded_values(y, s) for s in (s_a, s_b)]
        replicates = [graded_replicates(y, s, positions) for s in (s_a, s_b)]
    differences = {}
    for name in values[0]:
        value_a, value_b = values[0][name], values[1][name]
        defined = math.isfinite(value_a) and math.isfinite(value_b)
        interval = (
            percentile_interval(
                replicates[1][name] - replicates[0][name],
                level=options["level"],
                seed=options["seed"],
            )
            if defined and len(y) > 1
            else None
        )
        differences[name] = FigureDifference(
            a=value_a if math.isfinite(value_a) else None,
            b=value_b if math.isfinite(value_b) else None,
            difference=value_b - value_a if defined else None,
            interval=interval,
        )
    if kind != "binary":
        return differences, None
    right_a = (s_a >= threshold) == (y == 1)
    right_b = (s_b >= threshold) == (y == 1)
    a_only, b_only = int((right_a & ~right_b).sum()), int((right_b & ~right_a).sum())
    return differences, McNemar(
        both_right=int((right_a & right_b).sum()),
        a_only=a_only,
        b_only=b_only,
        both_wrong=int((~right_a & ~right_b).sum()),
        p_value=mcnemar_p_value(a_only, b_only),
    )
