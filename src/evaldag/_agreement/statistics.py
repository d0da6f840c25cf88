"""The statistics of agreement, each computed by scikit-learn or SciPy, never by hand.

A figure is computed once on the items (its value) and once on each bootstrap resample of them
(its replicates, whose percentiles make its interval). Where scikit-learn computes a figure for
many label sets in one call (precision, recall and F1 of a multilabel indicator matrix, whose
columns are the resamples; mean absolute error with ``multioutput``), the replicates come from
that call; the others are computed resample by resample. A figure a resample cannot define
(recall without a positive item, ROC-AUC with one class) is NaN there and left out of the
interval.
"""

from __future__ import annotations

import warnings
from contextlib import contextmanager
from typing import Any

import numpy as np

from evaldag.errors import EvalDagError

INSTALL_HINT = "pip install 'evaldag[agreement]'"
#: The figures of binary labels, in the order they are shown.
BINARY_FIGURES = (
    "precision",
    "recall",
    "f1",
    "balanced_accuracy",
    "cohen_kappa",
    "roc_auc",
    "best_threshold",
)
#: The figures of ordinal or continuous labels.
GRADED_FIGURES = ("spearman", "kendall_tau", "mae")


def _libraries() -> tuple[Any, Any, Any]:
    """scikit-learn, its metrics and SciPy's stats, or the error that says how to install them."""
    try:
        import sklearn
        from scipy import stats
        from sklearn import metrics
    except ImportError as error:
        raise EvalDagError(
            "EVALDAG_AGREEMENT_NOT_INSTALLED",
            f"agreement with labels computes its statistics with scikit-learn and SciPy, which "
            f"are not installed: {INSTALL_HINT}",
            domain="AGREEMENT",
            cause=error,
        ) from error
    return sklearn, metrics, stats


@contextmanager
def _quiet() -> Any:
    """scikit-learn's and SciPy's warnings off: an undefined figure is NaN, said in a note."""
    sklearn, _, _ = _libraries()
    with warnings.catch_warnings(), sklearn.config_context(skip_parameter_validation=True):
        warnings.simplefilter("ignore")
        yield


def _defined(value: Any) -> float:
    number = float(value)
    return number if np.isfinite(number) else np.nan


# --- binary labels ---------------------------------------------------------------------------


def confusion_counts(labels: np.ndarray, predicted: np.ndarray) -> dict[str, int]:
    """True and false positives and negatives (scikit-learn's confusion matrix)."""
    _, metrics, _ = _libraries()
    tn, fp, fn, tp = metrics.confusion_matrix(labels, predicted, labels=[0, 1]).ravel()
    return {
        "true_positive": int(tp),
        "false_positive": int(fp),
        "false_negative": int(fn),
        "true_negative": int(tn),
    }


def roc_points(labels: np.ndarray, scores: np.ndarray) -> list[tuple[float, float, float]]:
    """The ROC curve (scikit-learn's ``roc_curve``): (false positive rate, true positive rate,
    threshold) from the strictest threshold down; empty without both classes."""
    _, metrics, _ = _libraries()
    if len(np.unique(labels)) < 2:
        return []
    with _quiet():
        fpr, tpr, thresholds = metrics.roc_curve(labels, scores, drop_intermediate=False)
    return [(float(f), float(t), float(h)) for f, t, h in zip(fpr, tpr, thresholds, strict=True)]


def _best_threshold(labels: np.ndarray, scores: np.ndarray) -> float:
    """The score threshold at which ``score >= threshold`` reaches the highest balanced
    accuracy, (TPR + TNR) / 2, on scikit-learn's ROC curve; the lowest such threshold wins."""
    _, metrics, _ = _libraries()
    if len(np.unique(labels)) < 2:
        return np.nan
    fpr, tpr, thresholds = metrics.roc_curve(labels, scores, drop_intermediate=False)
    finite = np.isfinite(thresholds)
    balanced = (tpr + 1 - fpr)[finite] / 2
    best = np.flatnonzero(balanced == balanced.max())
    return float(thresholds[finite][best[-1]])


def _indicator(matrix: np.ndarray) -> np.ndarray:
    """A multilabel indicator matrix of the columns (one column repeated: scikit-learn reads a
    single column as one binary label set, whose classes it would score apart)."""
    return matrix if matrix.shape[1] > 1 else np.hstack([matrix, matrix])


def binary_values(labels: np.ndarray, scores: np.ndarray, threshold: float) -> dict[str, float]:
    """Each binary figure of the judge (positive when ``score >= threshold``) against the labels
    (1 positive, 0 negative), by scikit-learn's functions; NaN where a figure is undefined."""
    _, metrics, _ = _libraries()
    labels = labels.astype(int)
    predicted = (scores >= threshold).astype(int)
    both = len(np.unique(labels)) == 2
    with _quiet():
        precision, recall, f1, _ = metrics.precision_recall_fscore_support(
            labels, predicted, labels=[1], average=None, zero_division=np.nan
        )
        values = {
            "precision": precision[0],
            "recall": recall[0],
            "f1": f1[0],
            "balanced_accuracy": metrics.balanced_accuracy_score(labels, predicted)
            if both
            else np.nan,
            "cohen_kappa": metrics.cohen_kappa_score(labels, predicted),
            "roc_auc": metrics.roc_auc_score(labels, scores) if both else np.nan,
            "best_threshold": _best_threshold(labels, scores),
        }
    return {name: _defined(value) for name, value in values.items()}


def binary_replicates(
    labels: np.ndarray, scores: np.ndarray, threshold: float, positions: np.ndarray
) -> dict[str, np.ndarray]:
    """Each binary figure on each resample (``positions``: one row of item positions each).

    Precision, recall, F1 and balanced accuracy come from one scikit-learn call over the
    resamples as columns of a multilabel indicator matrix, κ from its confusion matrices;
    ROC-AUC is the Mann-Whitney statistic of SciPy's ranks and the best threshold the highest
    (TPR + TNR) / 2 over the observed scores, computed for all resamples at once since a
    scikit-learn call per resample costs milliseconds. ``tests/agreement/test_agreement.py``
    checks each resample's figures against scikit-learn's on that resample."""
    _, metrics, stats = _libraries()
    y = labels.astype(int)[positions].T
    s = scores[positions].T
    predicted = (s >= threshold).astype(int)
    count = y.shape[1]
    with _quiet():
        precision, recall, f1, _ = metrics.precision_recall_fscore_support(
            _indicator(y), _indicator(predicted), average=None, zero_division=np.nan
        )
        _, specificity, _, _ = metrics.precision_recall_fscore_support(
            _indicator(1 - y), _indicator(1 - predicted), average=None, zero_division=np.nan
        )
        (tn, fp), (fn, tp) = metrics.multilabel_confusion_matrix(
            _indicator(y), _indicator(predicted)
        )[:count].transpose(1, 2, 0)
        kappa = 2 * (tp * tn - fn * fp) / ((tp + fp) * (fp + tn) + (tp + fn) * (fn + tn))
        positives = y.sum(axis=0)
        negatives = len(y) - positives
        rank_sums = (stats.rankdata(s, axis=0) * y).sum(axis=0)
        auc = (rank_sums - positives * (positives + 1) / 2) / (positives * negatives)
    recall, specificity = recall[:count], specificity[:count]
    return {
        "precision": precision[:count],
        "recall": recall,
        "f1": f1[:count],
        # Balanced accuracy is the mean of each class's recall (scikit-learn's definition).
        "balanced_accuracy": (recall + specificity) / 2,
        "cohen_kappa": _finite(kappa),
        "roc_auc": _finite(auc),
        "best_threshold": _best_thresholds(labels.astype(int), scores, positions),
    }


def _finite(values: np.ndarray) -> np.ndarray:
    return np.where(np.isfinite(values), values, np.nan)


def _best_thresholds(labels: np.ndarray, scores: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """``_best_threshold`` of each resample: how often it drew each item (its weights) times
    which items each observed score calls positive gives its true and false positives there;
    a score it did not draw is no threshold of its ROC curve."""
    resamples, count = positions.shape
    offsets = positions + count * np.arange(resamples)[:, None]
    weights = np.bincount(offsets.ravel(), minlength=resamples * count).reshape(resamples, count)
    candidates = np.unique(scores)[::-1]
    called = scores[:, None] >= candidates[None, :]
    positives = weights @ labels
    negatives = count - positives
    with np.errstate(divide="ignore", invalid="ignore"):
        balanced = (
            (weights @ (called * labels[:, None])) / positives[:, None]
            + 1
            - (weights @ (called * (1 - labels)[:, None])) / negatives[:, None]
        ) / 2
    drawn = weights @ (scores[:, None] == candidates[None, :]) > 0
    balanced = np.where(drawn, balanced, -np.inf)
    # The lowest of the best thresholds, as _best_threshold takes it: candidates run downward.
    best = len(candidates) - 1 - np.argmax(balanced[:, ::-1], axis=1)
    return np.where((positives > 0) & (negatives > 0), candidates[best], np.nan)


# --- ordinal or continuous labels --------------------------------------------------------------


def graded_values(labels: np.ndarray, scores: np.ndarray) -> dict[str, float]:
    """Spearman's ρ and Kendall's τ-b of the scores with the labels (SciPy), and the mean
    absolute error between them (scikit-learn); NaN where undefined (fewer than two items, or a
    constant side)."""
    _, metrics, stats = _libraries()
    with _quiet():
        values = {
            "spearman": stats.spearmanr(labels, scores).statistic,
            "kendall_tau": stats.kendalltau(labels, scores).statistic,
            "mae": metrics.mean_absolute_error(labels, scores) if len(labels) else np.nan,
        }
    return {name: _defined(value) for name, value in values.items()}


def graded_replicates(
    labels: np.ndarray, scores: np.ndarray, positions: np.ndarray
) -> dict[str, np.ndarray]:
    """Each graded figure on each resample: Spearman's ρ as SciPy's Pearson correlation of
    SciPy's ranks (its definition) and the mean absolute error over the resamples as columns,
    Kendall's τ by SciPy resample by resample."""
    _, metrics, stats = _libraries()
    y, s = labels[positions].T, scores[positions].T
    with _quiet():
        spearman = stats.pearsonr(stats.rankdata(y, axis=0), stats.rankdata(s, axis=0), axis=0)
        kendall = [stats.kendalltau(y[:, r], s[:, r]).statistic for r in range(y.shape[1])]
        return {
            "spearman": _finite(np.asarray(spearman.statistic, dtype=float)),
            "kendall_tau": _finite(np.asarray(kendall, dtype=float)),
            "mae": metrics.mean_absolute_error(y, s, multioutput="raw_values"),
        }


# --- two judges --------------------------------------------------------------------------------


def mcnemar_p_value(a_only: int, b_only: int) -> float:
    """McNemar's exact test of two judges on the same items: the two-sided binomial test
    (SciPy's ``binomtest``) of the items only A got right among those exactly one got right;
    1 when there are none."""
    _, _, stats = _libraries()
    if a_only + b_only == 0:
        return 1.0
    return float(stats.binomtest(a_only, a_only + b_only, 0.5).pvalue)
