"""What a failed gate or threshold says in a test: one line each, naming the worst items."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from evaldag._report.failing import Requirement, failing_items, item_ids, shortfall_text
from evaldag._results.eval_result import GateResult
from evaldag._results.item_columns import has_scorer
from evaldag._scorer.thresholds import ThresholdSpec, figure_text, threshold_text

if TYPE_CHECKING:
    from evaldag._results.eval_result import EvalResult

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


def failure(result: EvalResult, requirement: Requirement, min_pass_rate: float = 1.0) -> str | None:
    """The line saying why a gate fails at ``min_pass_rate`` or a threshold is missed (after
    ``turn N:`` for a turn's); None when it passes."""
    outcome, prefix = (
        requirement.outcome,
        "" if requirement.turn is None else f"turn {requirement.turn}: ",
    )
    if isinstance(outcome, GateResult):
        passed = outcome.passed if min_pass_rate == 1.0 else outcome.score >= min_pass_rate
        if passed and outcome.reason is None:
            return None
        required: ThresholdSpec = min_pass_rate
        line = (
            f"gate {outcome.id!r} failed: score {figure_text(outcome.score, min_pass_rate)}, "
            f"required at least {figure_text(min_pass_rate, min_pass_rate)}"
        )
    else:
        if outcome.passed:
            return None
        required = outcome.threshold
        line = (
            f"threshold of {outcome.id!r} missed: average "
            f"{figure_text(outcome.average_score, outcome.threshold)}, "
            f"required {threshold_text(outcome.threshold)}"
        )
        if outcome.errors:
            line += f", and the scorer failed on {outcome.errors} item(s)"
    return prefix + line + _why(requirement.rows(result), outcome.id, required, outcome.reason)


def _why(items: pd.DataFrame, sid: str, requirement: ThresholdSpec, reason: str | None) -> str:
    """``; worst items: q7 (error), q2 (0.00) and 4 more`` and the reason, when there are any."""
    parts = [reason] if reason else []
    if has_scorer(items, sid):
        short = failing_items(items, sid, requirement).index
        ids = item_ids(items)
        named = [
            f"{ids[n]} ({shortfall_text(items, sid, n, requirement)})" for n in short[:NAMED_ITEMS]
        ]
        if len(short) > NAMED_ITEMS:
            named[-1] += f" and {len(short) - NAMED_ITEMS} more"
        if named:
            parts.append(f"worst items: {', '.join(named)}")
    return "".join(f"; {part}" for part in parts)
