"""What a failed gate or threshold says in a test: one line each, naming the worst items."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd

from evaldag._report.failing import failing_items, item_ids
from evaldag._scorer.thresholds import ThresholdSpec, threshold_text

if TYPE_CHECKING:
    from evaldag._results.eval_result import EvalResult, GateResult, ThresholdResult

#: How many of the items that fall short a line names.
NAMED_ITEMS = 3


class EvalAssertionError(AssertionError):
    """An eval result that does not meet what a test asks of it; one line per failure."""

    def __init__(self, failures: list[str]) -> None:
        super().__init__("\n".join(failures))
        self.failures = failures


def raise_failures(failures: list[str | None]) -> None:
    """Raise ``EvalAssertionError`` with the lines that are not None, if any."""
    lines = [line for line in failures if line is not None]
    if lines:
        raise EvalAssertionError(lines)


def gate_failure(result: EvalResult, gate: GateResult, min_pass_rate: float = 1.0) -> str | None:
    """The line saying why ``gate`` fails at ``min_pass_rate``; None when it passes."""
    passed = gate.passed if min_pass_rate == 1.0 else gate.score >= min_pass_rate
    if passed and gate.reason is None:
        return None
    line = f"gate {gate.id!r} failed: score {gate.score:.4g}, required at least {min_pass_rate:g}"
    return line + _why(result, gate.id, min_pass_rate, gate.reason)


def threshold_failure(result: EvalResult, threshold: ThresholdResult) -> str | None:
    """The line saying why ``threshold`` is missed; None when it is met."""
    if threshold.passed:
        return None
    line = (
        f"threshold of {threshold.id!r} missed: average {threshold.average_score:.4g}, "
        f"required {threshold_text(threshold.threshold)}"
    )
    if threshold.errors:
        line += f", and the scorer failed on {threshold.errors} item(s)"
    return line + _why(result, threshold.id, threshold.threshold, threshold.reason)


def _why(result: EvalResult, sid: str, requirement: ThresholdSpec, reason: str | None) -> str:
    """``; worst items: q7 (error), q2 (0.00) and 4 more`` and the reason, when there are any."""
    parts = [reason] if reason else []
    items = result.items
    if f"{sid}.score" in items.columns:
        short = failing_items(items, sid, requirement).index
        ids = item_ids(items)
        named = [f"{ids[n]} ({_score_text(items, sid, n)})" for n in short[:NAMED_ITEMS]]
        if len(short) > NAMED_ITEMS:
            named[-1] += f" and {len(short) - NAMED_ITEMS} more"
        if named:
            parts.append(f"worst items: {', '.join(named)}")
    return "".join(f"; {part}" for part in parts)


def _score_text(items: pd.DataFrame, sid: str, label: Any) -> str:
    if pd.notna(items.at[label, f"{sid}.error"]):
        return "error"
    return f"{items.at[label, f'{sid}.score']:.2f}"
