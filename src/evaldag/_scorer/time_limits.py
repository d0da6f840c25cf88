"""Time limits on steps and targets (``step_timeout``, ``target_timeout``): their values, and
the error an item records when a call overruns one. ``evaldag._engine.time_limits`` enforces
them."""

from __future__ import annotations

import math
from typing import Any

from evaldag.errors import EvalDagError, TimeLimitError

#: The run's limit on each scorer step of one item, unless it sets another (None: no limit).
DEFAULT_STEP_TIMEOUT = 600.0
#: The run's limit on each call of the target (each turn), unless it sets another.
DEFAULT_TARGET_TIMEOUT = 1800.0


def checked_time_limit(value: Any, field: str) -> float | None:
    """``value`` as seconds: a positive finite number, or None for no limit."""
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not (0 < value and math.isfinite(value))
    ):
        raise EvalDagError(
            "EVALDAG_INVALID_TIME_LIMIT",
            f"{field} must be a positive finite number of seconds, or None for no limit, got "
            f"{value!r}",
            details={"field": field, "value": repr(value)},
        )
    return float(value)


def _stopped(is_async: bool) -> str:
    if is_async:
        return "and was cancelled"
    return "and was abandoned (its thread runs on: Python cannot stop a thread)"


def step_overrun(scorer_id: str, step: str, seconds: float, *, is_async: bool) -> TimeLimitError:
    """The error of an item whose step ``step`` of scorer ``scorer_id`` took too long."""
    return TimeLimitError(
        "EVALDAG_STEP_TIMEOUT",
        f"step '{step}' of scorer '{scorer_id}' took longer than step_timeout={seconds:g} s "
        f"{_stopped(is_async)}; if it needs longer, raise step_timeout (None: no limit)",
        details={"scorerId": scorer_id, "step": step, "stepTimeout": seconds},
    )


def target_overrun(seconds: float, *, is_async: bool) -> TimeLimitError:
    """The error of an item whose target call took too long."""
    return TimeLimitError(
        "EVALDAG_TARGET_TIMEOUT",
        f"the target took longer than target_timeout={seconds:g} s {_stopped(is_async)}; if it "
        "needs longer, raise target_timeout (None: no limit)",
        domain="EVAL",
        details={"targetTimeout": seconds},
    )
