"""``evaldag.agreement``: how often a scorer agrees with people, with intervals, per slice.

The items of an ``EvalResult`` hold the data's columns, human labels among them. Each item is
compared when the scorer scored it and it has a label; the others are counted by why they are
not (the scorer failed, could not score it, skipped it; no label), never dropped unsaid and
never read as a class. Binary labels give a confusion matrix, precision, recall, F1, balanced
accuracy, Cohen's κ, ROC-AUC and the threshold that maximises balanced accuracy; graded labels
give Spearman's ρ, Kendall's τ and the mean absolute error. Every figure has a percentile
bootstrap interval (seeded, as the averages' are), over all items and per slice of a column.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from evaldag._agreement.labels import LabelKind, ReadLabels, read_labels
from evaldag._agreement.statistics import (
    BINARY_FIGURES,
    GRADED_FIGURES,
    binary_replicates,
    binary_values,
    confusion_counts,
    graded_replicates,
    graded_values,
    roc_points,
)
from evaldag._experiments.compare import experiment_result
from evaldag._results.eval_result import EvalResult
from evaldag._results.intervals import (
    LEVEL,
    SEED,
    ConfidenceInterval,
    percentile_interval,
    resampled_positions,
)
from evaldag._results.item_columns import has_scorer, item_states, scorer_ids
from evaldag.errors import EvalDagError

#: Resamples per figure: each recomputes every figure with scikit-learn, so fewer than the
#: averages' 10,000; ``resamples=`` raises it.
RESAMPLES = 2_000
#: A score at or above it is the judge's "positive", unless ``threshold=`` says otherwise.
THRESHOLD = 0.5
#: The slice of the items whose ``by`` column is empty.
NO_VALUE = "(no value)"
#: Each figure's name in text and reports.
FIGURE_NAMES = {
    "precision": "precision",
    "recall": "recall",
    "f1": "F1",
    "balanced_accuracy": "balanced accuracy",
    "cohen_kappa": "Cohen's κ",
    "roc_auc": "ROC-AUC",
    "best_threshold": "best threshold",
    "spearman": "Spearman's ρ",
    "kendall_tau": "Kendall's τ-b",
    "mae": "mean absolute error",
}


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True)


class Figure(_Model):
    """One statistic of agreement: its value on the items and its bootstrap interval."""

    value: float | None = Field(description="None where the items do not define it.")
    interval: ConfidenceInterval | None = Field(
        default=None, description="None below two items, or when no resample defines it."
    )


class ConfusionMatrix(_Model):
    """The judge's calls (score >= threshold: positive) against the labels."""

    true_positive: int
    false_positive: int
    false_negative: int
    true_negative: int


class RocPoint(_Model):
    """A point of the ROC curve: the rates of calling items positive at ``score >= threshold``."""

    false_positive_rate: float
    true_positive_rate: float
    threshold: float = Field(description="Infinite for the first point, where none is called.")


class SliceAgreement(_Model):
    """The agreement on one slice of the items (all of them, or those of one ``by`` value).

    ``items`` = ``compared`` + ``failed`` + ``not_scorable`` + ``skipped`` + ``unlabelled``.
    """

    slice: str | None = Field(description="The ``by`` value; None for all the items.")
    items: int
    compared: int = Field(description="Items the scorer scored that have a label.")
    failed: int = Field(description="Items the scorer (or the target) failed on.")
    not_scorable: int = Field(description="Items the scorer declared not scorable.")
    skipped: int = Field(description="Items the scorer never ran on.")
    unlabelled: int = Field(description="Scored items without a label.")
    positives: int | None = Field(description="Compared items labelled positive (binary).")
    confusion: ConfusionMatrix | None = Field(description="Binary labels only.")
    roc: list[RocPoint] = Field(default_factory=list, description="Binary labels of two classes.")
    figures: dict[str, Figure] = Field(description="Figure name → value and interval, in order.")
    notes: list[str] = Field(
        default_factory=list, description="Why a figure is missing or its interval is partial."
    )

    def left_out(self) -> list[tuple[str, int]]:
        """Why items were not compared (``'not scorable'``, ...) and how many, the nonzero ones."""
        counts = (
            ("failed", self.failed),
            ("not scorable", self.not_scorable),
            ("skipped", self.skipped),
            ("unlabelled", self.unlabelled),
        )
        return [(reason, count) for reason, count in counts if count]


class Agreement(_Model):
    """How a scorer's scores agree with human labels, over all items and per slice."""

    scorer_id: str
    labels: str = Field(description="The data column holding the labels.")
    kind: LabelKind
    positive: list[Any] = Field(default_factory=list, description="Binary: the positive labels.")
    order: list[Any] = Field(default_factory=list, description="Ordinal labels, low to high.")
    threshold: float | None = Field(description="Binary: a score at or above it is positive.")
    by: str | None = Field(default=None, description="The column the slices are values of.")
    overall: SliceAgreement
    slices: list[SliceAgreement] = Field(default_factory=list)
    level: float = LEVEL
    resamples: int = RESAMPLES
    seed: int = SEED

    def to_frame(self) -> pd.DataFrame:
        """One row per slice and figure: slice, figure, value, low, high (all items first)."""
        rows = [
            {
                "slice": part.slice,
                "compared": part.compared,
                "figure": name,
                "value": figure.value,
                "low": None if figure.interval is None else figure.interval.low,
                "high": None if figure.interval is None else figure.interval.high,
            }
            for part in (self.overall, *self.slices)
            for name, figure in part.figures.items()
        ]
        return pd.DataFrame(rows)


def _error(message: str, **details: Any) -> EvalDagError:
    return EvalDagError("INVALID_AGREEMENT_OPTION", message, domain="AGREEMENT", details=details)


def _close(name: str, names: Sequence[str]) -> str:
    found = difflib.get_close_matches(name, [str(n) for n in names], n=1)
    return f" (did you mean '{found[0]}'?)" if found else ""


def scorer_of(result: EvalResult, scorer: str | None) -> str:
    """The scorer compared: ``scorer``, or the run's only scorer."""
    ids = [d["id"] for d in result.scorers if d.get("role") != "gate"] or [
        sid for sid in _item_scorers(result) if sid not in {g.id for g in result.gate_results}
    ]
    if scorer is None:
        if len(ids) != 1:
            raise _error(
                f"the run has {len(ids)} scorers ({', '.join(ids) or 'none'}): give scorer= "
                "the one to compare with the labels",
                scorers=ids,
            )
        return ids[0]
    if not has_scorer(result.items, scorer):
        known = _item_scorers(result)
        raise _error(
            f"scorer='{scorer}' did not run here{_close(scorer, known)}; the run's scorers and "
            f"gates are {known}",
            scorer=scorer,
        )
    return scorer


def _item_scorers(result: EvalResult) -> list[str]:
    return scorer_ids(result.items.columns)


def require_column(items: pd.DataFrame, column: str, option: str) -> None:
    """``column`` is one of the items' columns, or an error naming the option and a close one."""
    if not isinstance(column, str) or column not in items.columns:
        names = [str(c) for c in items.columns if not str(c).count(".")]
        raise _error(
            f"{option}={column!r} is no column of the results{_close(str(column), names)}; "
            f"the data's columns are {names}",
            option=option,
        )


def compared_items(
    result: EvalResult, scorer: str, read: ReadLabels
) -> tuple[pd.Series, pd.Series, dict[str, pd.Series]]:
    """Each item's score (NaN unless scored) and label (NaN: none), and masks of the items left
    out by why: ``failed``, ``not_scorable``, ``skipped``, ``unlabelled``."""
    states = item_states(result.items, scorer)
    labelled = read.values.notna()
    excluded = {
        "failed": states.failed,
        "not_scorable": states.not_scorable,
        "skipped": states.skipped,
        "unlabelled": states.scored & ~labelled,
    }
    return states.counted_scores, read.values, excluded


def _slice_agreement(
    name: str | None,
    scores: pd.Series,
    labels: pd.Series,
    excluded: dict[str, pd.Series],
    read: ReadLabels,
    threshold: float | None,
    *,
    level: float,
    resamples: int,
    seed: int,
) -> SliceAgreement:
    compared = scores.notna() & labels.notna()
    y, s = labels[compared].to_numpy(float), scores[compared].to_numpy(float)
    counts = {reason: int(mask.sum()) for reason, mask in excluded.items()}
    notes: list[str] = []
    if read.kind == "binary":
        assert threshold is not None
        values = binary_values(y, s, threshold) if len(y) else dict.fromkeys(BINARY_FIGURES, np.nan)
        replicates = _replicates(
            y, s, resamples, seed, lambda a, b, at: binary_replicates(a, b, threshold, at)
        )
        confusion = ConfusionMatrix(**confusion_counts(y.astype(int), (s >= threshold).astype(int)))
        roc = [
            RocPoint(false_positive_rate=f, true_positive_rate=t, threshold=h)
            for f, t, h in roc_points(y.astype(int), s)
        ]
        positives = int(y.sum())
        notes += _binary_notes(y, s, threshold)
    else:
        values = graded_values(y, s) if len(y) else dict.fromkeys(GRADED_FIGURES, np.nan)
        replicates = _replicates(y, s, resamples, seed, graded_replicates)
        confusion, roc, positives = None, [], None
        if len(y) and (np.ptp(y) == 0 or np.ptp(s) == 0):
            notes.append("the labels or the scores are constant: no rank correlation")
    figures = {}
    for figure, value in values.items():
        draws = replicates.get(figure) if replicates else None
        interval = None if draws is None else percentile_interval(draws, level=level, seed=seed)
        if draws is not None and math.isfinite(value):
            undefined = int((~np.isfinite(draws)).sum())
            if undefined:
                notes.append(
                    f"{figure}: {undefined:,} of {resamples:,} resamples did not define it "
                    "(left out of its interval)"
                )
        figures[figure] = Figure(
            value=value if math.isfinite(value) else None,
            interval=interval if math.isfinite(value) else None,
        )
    return SliceAgreement(
        slice=name,
        items=len(scores),
        compared=int(compared.sum()),
        **counts,
        positives=positives,
        confusion=confusion,
        roc=roc,
        figures=figures,
        notes=notes,
    )


def _replicates(y, s, resamples, seed, computed) -> dict[str, np.ndarray] | None:
    """Each figure on each resample of the compared items; None below two items."""
    if len(y) < 2:
        return None
    return computed(y, s, resampled_positions(len(y), resamples=resamples, seed=seed))


def _binary_notes(y: np.ndarray, s: np.ndarray, threshold: float) -> list[str]:
    notes = []
    if not len(y):
        return ["no item was both scored and labelled"]
    if len(np.unique(y)) < 2:
        which = "positive" if y[0] == 1 else "negative"
        notes.append(
            f"every compared label is {which}: balanced accuracy, κ, ROC-AUC and the best "
            "threshold need both classes"
        )
    if not (s >= threshold).any():
        notes.append(f"no score reached the threshold {threshold:g}: precision is undefined")
    return notes


def agreement(
    result: EvalResult | str,
    *,
    labels: str,
    scorer: str | None = None,
    positive: Any = None,
    order: Sequence[Hashable] | None = None,
    threshold: float | None = None,
    by: str | None = None,
    level: float = LEVEL,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> Agreement:
    """How ``scorer``'s scores agree with the human labels in the data's column ``labels``.

    :param result: an ``EvalResult`` (its items hold the data's columns) or a results
        ``.parquet`` file.
    :param labels: the data column holding each item's human label.
    :param scorer: the scorer's id; default: the run's only scorer.
    :param positive: binary labels: the label value (or values) a high score should mean,
        e.g. ``"faithful"`` or ``["Consistent", "Benign"]``; every other label is negative.
        Not needed for booleans or labels of 0 and 1 (True or 1 is positive).
    :param order: ordinal text labels, from the one a low score should mean to the one a high
        score should mean; they become evenly spaced places from 0 to 1 (what the mean
        absolute error compares the scores with). Numbers that are not 0 and 1 are graded as
        they are.
    :param threshold: binary labels: a score at or above it counts as the judge saying
        positive (default 0.5; required for scores above 1).
    :param by: a data column: every figure again for each of its values (``by="LLM"``).
    :param level: the intervals' confidence level.
    :param resamples: bootstrap resamples per figure (default 2,000).
    :param seed: the bootstrap's seed.
    """
    result, _ = experiment_result(result)
    if not 0 < level < 1:
        raise _error(f"level must lie in (0, 1), got {level!r}")
    if isinstance(resamples, bool) or not isinstance(resamples, int) or resamples < 1:
        raise _error(f"resamples must be an integer >= 1, got {resamples!r}")
    scorer_id = scorer_of(result, scorer)
    items = result.items
    require_column(items, labels, "labels")
    if by is not None:
        require_column(items, by, "by")
    read = read_labels(items[labels], labels, positive=positive, order=order)
    scores, values, excluded = compared_items(result, scorer_id, read)
    _require_compared(scores, values, excluded, scorer_id, labels)
    threshold = _threshold(read.kind, threshold, scores, scorer_id)
    options: dict[str, Any] = {"level": level, "resamples": resamples, "seed": seed}
    overall = _slice_agreement(None, scores, values, excluded, read, threshold, **options)
    if read.absent:
        absent = f"positive={list(read.absent)!r}: no item has this label"
        overall = overall.model_copy(update={"notes": [absent, *overall.notes]})
    slices = []
    if by is not None:
        keys = items[by].map(lambda v: NO_VALUE if _is_missing(v) else str(v))
        for key in sorted(keys.unique()):
            mask = keys == key
            parts = {reason: m[mask] for reason, m in excluded.items()}
            slices.append(
                _slice_agreement(key, scores[mask], values[mask], parts, read, threshold, **options)
            )
    return Agreement(
        scorer_id=scorer_id,
        labels=labels,
        kind=read.kind,
        positive=list(read.positive),
        order=list(read.order),
        threshold=threshold,
        by=by,
        overall=overall,
        slices=slices,
        **options,
    )


def _require_compared(
    scores: pd.Series,
    labels: pd.Series,
    excluded: dict[str, pd.Series],
    scorer_id: str,
    column: str,
) -> None:
    """At least one item is both scored and labelled, or an error saying why none is."""
    if (scores.notna() & labels.notna()).any():
        return
    if scores.notna().any():
        raise _error(
            f"no item '{scorer_id}' scored has a label in '{column}': nothing to compare",
            scorer=scorer_id,
            labels=column,
        )
    counts = ", ".join(
        f"{int(mask.sum()):,} {reason.replace('_', ' ')}"
        for reason, mask in excluded.items()
        if reason != "unlabelled" and mask.any()
    )
    raise _error(
        f"'{scorer_id}' scored none of the {len(scores):,} items ({counts}): nothing to compare "
        "with the labels",
        scorer=scorer_id,
    )


def _is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _threshold(
    kind: LabelKind, threshold: float | None, scores: pd.Series, scorer_id: str
) -> float | None:
    if kind == "graded":
        if threshold is not None:
            raise _error("threshold= applies to binary labels; these labels are graded")
        return None
    if threshold is None:
        top = scores.max()
        if pd.notna(top) and top > 1:
            raise _error(
                f"the scores of '{scorer_id}' go up to {top:g}: give threshold= the score at "
                "or above which the judge says positive",
                scorer=scorer_id,
            )
        return THRESHOLD
    if (
        isinstance(threshold, bool)
        or not isinstance(threshold, int | float)
        or not math.isfinite(threshold)
    ):
        raise _error(f"threshold must be a finite number, got {threshold!r}")
    return float(threshold)
