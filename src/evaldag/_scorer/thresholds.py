"""Thresholds: a scorer's dataset average must reach a minimum, or stay within ``{min, max}``."""

from __future__ import annotations

import math
import numbers
from typing import Any

from evaldag.errors import EvalDagError

#: A threshold as Mastra writes it: a minimum, or a dict with ``min`` and/or ``max``.
ThresholdSpec = float | dict[str, float]


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, list | tuple):
        return "an array"
    return f"a {type(value).__name__}"


def _finite_within(value: Any, top: float) -> bool:
    return (
        isinstance(value, numbers.Real)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and 0 <= float(value) <= top
    )


def _scale_words(max_score: float) -> str:
    # Mastra's message for the usual scale; the scorer's own scale where it has another.
    return "1" if max_score == 1 else f"{max_score:g} (the scorer's scale)"


def _threshold_error(scorer_id: str, message: str, threshold: Any) -> EvalDagError:
    return EvalDagError(
        "INVALID_SCORER_THRESHOLD",
        message,
        details={"scorerId": scorer_id, "threshold": repr(threshold)},
    )


def validated_threshold(
    scorer_id: str, threshold: Any, max_score: float = 1, better: str = "higher"
) -> ThresholdSpec:
    """``threshold`` checked as Mastra does (spec §6.2), else ``INVALID_SCORER_THRESHOLD``.

    Bounds lie on the scorer's own scale, from 0 to ``max_score`` (1 unless the scorer scores
    on a larger scale, such as ``faithfulness(model, scale=10)``). A bare number is a minimum,
    which a scorer whose lower scores are better (``better="lower"``: toxicity, bias...) refuses:
    it would pass the worse runs.
    """
    scale = _scale_words(max_score)
    if isinstance(threshold, numbers.Real) and not isinstance(threshold, bool):
        if better == "lower":
            raise _threshold_error(
                scorer_id,
                f'Threshold {threshold:g} for scorer "{scorer_id}" is a minimum (an average of '
                f'at least {threshold:g}), but lower scores of "{scorer_id}" are better: a worse '
                f'run would pass and a better one fail. Give {{"max": {threshold:g}}} '
                f"(with_threshold(max={threshold:g})) for at most {threshold:g}, or "
                f'{{"min": {threshold:g}}} (with_threshold(min={threshold:g})) if a minimum is '
                "meant",
                threshold,
            )
        if not _finite_within(threshold, max_score):
            raise _threshold_error(
                scorer_id,
                f'Minimum threshold for scorer "{scorer_id}" must be a finite number between 0 '
                f"and {scale}, got {threshold}",
                threshold,
            )
        return float(threshold)
    if not isinstance(threshold, dict):
        raise _threshold_error(
            scorer_id,
            f'Threshold for scorer "{scorer_id}" must be a number or an object with min/max '
            f"bounds, got {_describe(threshold)}",
            threshold,
        )
    unknown = set(threshold) - {"min", "max"}
    if unknown:
        raise _threshold_error(
            scorer_id,
            f'Threshold for scorer "{scorer_id}" has unknown keys {sorted(unknown, key=repr)}; '
            'use "min" and/or "max"',
            threshold,
        )
    bounds = {key: threshold[key] for key in ("min", "max") if threshold.get(key) is not None}
    if not bounds:
        raise _threshold_error(
            scorer_id,
            f'Threshold for scorer "{scorer_id}" must define at least one of min or max',
            threshold,
        )
    for key, bound in bounds.items():
        if not _finite_within(bound, max_score):
            label = "Minimum" if key == "min" else "Maximum"
            raise _threshold_error(
                scorer_id,
                f'{label} threshold for scorer "{scorer_id}" must be a finite number between 0 '
                f"and {scale}, got {bound}",
                threshold,
            )
    if "min" in bounds and "max" in bounds and bounds["min"] > bounds["max"]:
        raise _threshold_error(
            scorer_id,
            f'Threshold for scorer "{scorer_id}" has min ({bounds["min"]}) greater than max '
            f"({bounds['max']})",
            threshold,
        )
    return {key: float(bound) for key, bound in bounds.items()}


def threshold_passed(average: float, threshold: ThresholdSpec) -> bool:
    """Whether ``average`` meets ``threshold``; bounds are inclusive, non-finite averages fail."""
    if not math.isfinite(average):
        return False
    if isinstance(threshold, dict):
        low, high = threshold.get("min"), threshold.get("max")
        return not (low is not None and average < low) and not (high is not None and average > high)
    return average >= threshold


def threshold_text(threshold: ThresholdSpec) -> str:
    """``>= 0.70``, ``<= 0.30`` or ``0.20 to 0.80``: each bound exactly (``>= 0.855``)."""
    low, high = (None if b is None else figure_text(b, b) for b in threshold_bounds(threshold))
    if low is not None and high is not None:
        return f"{low} to {high}"
    return f">= {low}" if low is not None else f"<= {high}"


def threshold_bounds(threshold: ThresholdSpec) -> tuple[float | None, float | None]:
    """The lowest and highest average ``threshold`` allows (a number is a minimum)."""
    if isinstance(threshold, dict):
        return threshold.get("min"), threshold.get("max")
    return float(threshold), None


def figure_text(
    value: float, against: ThresholdSpec | None = None, *, digits: int = 2, signed: bool = False
) -> str:
    """``value`` with ``digits`` decimals, or with as many more as it takes to show it on the
    side of each bound of ``against`` (the threshold it is shown beside) where it lies: beside a
    threshold of 1.0, 0.999 reads ``0.999``, never ``1.00``; beside itself, a value reads
    exactly. ``signed``: with its sign (``+0.05``)."""
    value = float(value)  # a NumPy number compares to a NumPy bool
    marks = [] if against is None else [b for b in threshold_bounds(against) if b is not None]
    sign = "+" if signed else ""
    if math.isfinite(value):
        for places in range(digits, 18):
            text = f"{value:{sign}.{places}f}"
            if all(_side(float(text), mark) == _side(value, mark) for mark in marks):
                return text
    return f"{value:{sign}}"  # nan, inf


def _side(value: float, mark: float) -> int:
    return (value > mark) - (value < mark)
