"""What a score may be: a real number on its scorer's scale, from 0 to ``max_score``.

Every score evaldag accepts passes :func:`checked_score`: a generate_score step's result, be it
a function's or a judge's ``{"score": ...}`` (for scorers and gates, in ``run_evals``, in
conversations' turns, in ``scorer.run`` and in live scoring), and, through
:func:`score_problem`, the scores a prebuilt LLM scorer reads from a judge's JSON. Anything
else (NaN, an infinity, a bool, a text, a number off the scale) is that item's error: averaged,
7.0 on a 0–1 scale would pass every threshold.
"""

from __future__ import annotations

import math
import numbers
from typing import Any, Literal

from evaldag.errors import EvalDagError

Problem = Literal["not a number", "not finite", "below 0", "above the top"]
#: How far past a bound a score may lie and still count as the bound: float noise, as in
#: ``0.1 * 3 / 0.3`` (1.0000000000000002), must not fail an item.
TOLERANCE = 1e-9


def score_problem(value: Any, top: float) -> Problem | None:
    """Why ``value`` is not a score from 0 to ``top``, or None when it is one."""
    kind = type(value)  # float and int first: this runs once per item and scorer
    if (
        kind is not float
        and kind is not int
        and (kind is bool or not isinstance(value, numbers.Real))
    ):
        return "not a number"
    if not math.isfinite(value):
        return "not finite"
    if value < -TOLERANCE * top:
        return "below 0"
    if value > top * (1 + TOLERANCE):
        return "above the top"
    return None


def score_value(value: Any, top: float) -> float:
    """A score that :func:`score_problem` found none with, as a float within [0, ``top``]."""
    number = float(value)
    return number if 0 <= number <= top else min(max(number, 0.0), top)


def checked_score(value: Any, scorer_id: str, max_score: float, *, judged: bool = False) -> float:
    """``value`` as the score of scorer ``scorer_id``, else ``EVALDAG_INVALID_SCORE``, whose
    message names the scorer, the value, the allowed range and the fix.

    :param judged: whether the value is a judge's reply (the fix is then the prompt's).
    """
    problem = score_problem(value, max_score)
    if problem is None:
        return score_value(value, max_score)
    top = f"{max_score:g}"
    said = "the judge's generate_score reply gave" if judged else "generate_score returned"
    scale = f"scores of '{scorer_id}' lie in [0, {top}] (max_score={top})"
    if problem == "not a number":
        told = f"{said} {value!r:.80} ({type(value).__name__}), which is not a number; {scale}"
    elif problem == "not finite":
        told = f"{said} {_shown(value)}, which is not a finite number; {scale}"
    else:
        told = f"{said} {_shown(value)}; {scale}"
    raise EvalDagError(
        "EVALDAG_INVALID_SCORE",
        f"{told}: {_fix(problem, value, max_score, judged)}",
        details={"scorerId": scorer_id, "value": f"{value!r:.80}", "maxScore": max_score},
    )


def _shown(value: Any) -> str:
    return repr(float(value))  # 7.0, nan, -inf: not numpy's np.float64(7.0)


def _fix(problem: Problem, value: Any, max_score: float, judged: bool) -> str:
    if problem == "above the top":
        larger = 10.0 ** min(math.ceil(math.log10(value)), 308)
        within = "ask the judge for a score within it" if judged else "scale the score into it"
        return f"{within}, or set max_score={larger:g} if that is the scorer's scale"
    if problem == "below 0":
        return (
            "ask the judge for a score within it"
            if judged
            else "map the score into it (for a measure where lower is better, score it from 0 "
            "up and give the threshold a max=)"
        )
    return (
        "return a number within it such as 0.75, or not_scorable(reason) when the run cannot be "
        "scored"
    )
