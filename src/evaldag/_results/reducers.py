"""Reducers: an item's trial scores (``run_evals(trials=N)``) made into its one score.

``mean`` (the default), ``median``, ``mode``, ``max`` and ``min`` reduce the scores;
``pass_at_k(k)`` and ``pass_hat_k(k)`` reduce the trials' verdicts (a trial passes when its
score meets the scorer's pass line, see ``evaldag._results.trials``) to a share in [0, 1]:

- pass@k, the chance that at least one of k trials drawn from the n run passes, estimated
  without bias as ``1 - C(n - c, k) / C(n, k)`` for c passing trials (Chen et al., 2021; Inspect's
  ``pass_at``);
- pass^k, the chance that all k pass, ``C(c, k) / C(n, k)`` (τ-bench's reliability measure).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from evaldag.errors import EvalDagError

_SCORE_REDUCERS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "mean": lambda scores: scores.mean(axis=1),
    "median": lambda scores: np.median(scores, axis=1),
    "max": lambda scores: scores.max(axis=1),
    "min": lambda scores: scores.min(axis=1),
}
_WITH_K = re.compile(r"^(pass_at_k|pass_hat_k)\((\d+)\)$")


@dataclass(frozen=True)
class Reducer:
    """How an item's trial scores become its score: ``mean``, ``median``, ``mode``, ``max``,
    ``min``, or a pass reducer with its ``k`` (``pass_at_k(k)``, ``pass_hat_k(k)``)."""

    name: str
    k: int | None = None

    def __str__(self) -> str:
        return self.name if self.k is None else f"{self.name}({self.k})"

    def reduced(self, scores: np.ndarray, passes: np.ndarray) -> np.ndarray:
        """Each row's reduced score.

        :param scores: one row per item, one column per trial, every cell a score.
        :param passes: the same shape: whether each trial's score meets the pass line.
        """
        if self.name == "mode":
            return np.array([_mode(row) for row in scores], dtype=float)
        if self.name in _SCORE_REDUCERS:
            return _SCORE_REDUCERS[self.name](scores).astype(float)
        trials = scores.shape[1]
        passed = passes.sum(axis=1)
        k = self.k or 1
        if self.name == "pass_at_k":
            return np.array([1.0 - math.comb(trials - c, k) / math.comb(trials, k) for c in passed])
        return np.array([math.comb(c, k) / math.comb(trials, k) for c in passed])


def _mode(row: np.ndarray) -> float:
    # The lowest of the most common scores: a split between pass and fail does not pass.
    values, counts = np.unique(row, return_counts=True)
    return float(values[counts == counts.max()].min())


def _k_checked(k: Any, name: str) -> int:
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise EvalDagError(
            "INVALID_REDUCER",
            f"{name}(k) needs k, an integer >= 1 (the trials drawn), got {k!r}",
            details={"reducer": name, "k": repr(k)},
        )
    return k


def pass_at_k(k: int) -> Reducer:
    """The reducer pass@k: the chance that at least one of k of an item's trials passes."""
    return Reducer("pass_at_k", _k_checked(k, "pass_at_k"))


def pass_hat_k(k: int) -> Reducer:
    """The reducer pass^k: the chance that k of an item's trials, drawn, all pass (τ-bench)."""
    return Reducer("pass_hat_k", _k_checked(k, "pass_hat_k"))


def reducer_named(value: Any, field: str = "reducer") -> Reducer:
    """A reducer from a ``Reducer`` or its name (``"median"``, ``"pass_at_k(3)"``), else
    ``INVALID_REDUCER`` naming ``field``."""
    if isinstance(value, Reducer):
        return value
    if isinstance(value, str):
        text = value.strip().replace(" ", "")
        if text in _SCORE_REDUCERS or text == "mode":
            return Reducer(text)
        found = _WITH_K.match(text)
        if found:
            return Reducer(found[1], _k_checked(int(found[2]), found[1]))
    raise EvalDagError(
        "INVALID_REDUCER",
        f"{field}={value!r} is no reducer: use one of 'mean', 'median', 'mode', 'max', 'min', "
        "'pass_at_k(k)', 'pass_hat_k(k)' (or evaldag.pass_at_k(k), evaldag.pass_hat_k(k))",
        details={"field": field, "value": repr(value)},
    )
