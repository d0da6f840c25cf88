"""Evals as test assertions: Mastra's vitest integration (``@mastra/evals/vitest``) for pytest.

Each function checks an ``EvalResult`` and raises :class:`EvalAssertionError` (an
``AssertionError``, so pytest reports it as a failed assertion) with one line per failure::

    from evaldag.testing import assert_evals, score_above

    def test_rag_answers():
        result = evaldag.run_evals(data, scorers=[...], gates=[...])
        assert_evals(result)                      # every gate and threshold passes
        score_above(result, "faithfulness", 0.8)  # strictly above

Eval files (``eval_*.py`` defining ``scorers`` or ``gates``, and ``data``) are collected by the
pytest plugin (``evaldag._testing.plugin``) as one test per gate and threshold.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evaldag._report.failing import item_ids, requirements
from evaldag._results.item_columns import has_scorer, item_states, unjudged
from evaldag._testing.failures import NAMED_ITEMS, EvalAssertionError, failure, raise_failures
from evaldag.errors import EvalDagError

if TYPE_CHECKING:
    from evaldag._results.eval_result import EvalResult, Verdict

__all__ = [
    "EvalAssertionError",
    "assert_evals",
    "has_verdict",
    "passes_gates",
    "passes_thresholds",
    "score_above",
    "score_below",
]


def assert_evals(result: EvalResult, *, min_pass_rate: float = 1.0) -> None:
    """Every gate scores at least ``min_pass_rate`` and every threshold passes, the turns'
    gates and thresholds too (Mastra's ``expectEvals(...).toPass(minPassRate)``).

    :param min_pass_rate: the share of items each gate must pass, from 0 to 1 (default: all).
    """
    if (
        isinstance(min_pass_rate, bool)
        or not isinstance(min_pass_rate, int | float)
        or not 0 <= min_pass_rate <= 1
    ):
        raise EvalDagError(
            "INVALID_MIN_PASS_RATE",
            f"min_pass_rate must be a number from 0 to 1, got {min_pass_rate!r}",
        )
    raise_failures(
        [_untrustworthy(result), *(failure(result, r, min_pass_rate) for r in requirements(result))]
    )


def has_verdict(result: EvalResult, verdict: Verdict | None) -> None:
    """The run's verdict is ``verdict`` (``"passed"``, ``"scored"``, ``"failed"`` or None)."""
    if result.verdict != verdict:
        raise_failures([f"expected the verdict {verdict!r}, got {result.verdict!r}"])
    raise_failures([_untrustworthy(result)])


def score_above(result: EvalResult, name: str, minimum: float) -> None:
    """The average of scorer ``name`` is strictly above ``minimum``, over every item: one the
    scorer failed on, or the judge budget left unjudged, fails it, as it fails a threshold;
    ``name`` may be dotted (``agent.faithfulness`` for a scorer of Mastra's agent config)."""
    score = _score(result, name)
    below = None if score > minimum else f"expected the score of {name!r} above {minimum}"
    raise_failures([below and f"{below}, got {score}", *_unchecked(result, name)])


def score_below(result: EvalResult, name: str, maximum: float) -> None:
    """The average of scorer ``name`` is strictly below ``maximum``, over every item (failed
    and unjudged items and dotted names as :func:`score_above`)."""
    score = _score(result, name)
    above = None if score < maximum else f"expected the score of {name!r} below {maximum}"
    raise_failures([above and f"{above}, got {score}", *_unchecked(result, name)])


def passes_gates(result: EvalResult) -> None:
    """Every gate passes, the turns' too; a run without gates fails this."""
    gates = [r for r in requirements(result) if r.is_gate]
    if not gates:
        raise_failures(["expected gates, but the run has none"])
    raise_failures([_untrustworthy(result), *(failure(result, gate) for gate in gates)])


def passes_thresholds(result: EvalResult) -> None:
    """Every threshold passes, the turns' too; a run without thresholds fails this."""
    thresholds = [r for r in requirements(result) if not r.is_gate]
    if not thresholds:
        raise_failures(["expected thresholds, but the run has none"])
    raise_failures([_untrustworthy(result), *(failure(result, t) for t in thresholds)])


def _untrustworthy(result: EvalResult) -> str | None:
    """The line of a result whose verdict cannot be trusted (read back from what a run that
    raised ``UntrustworthyRunError`` wrote), which no verdict assertion passes."""
    why = result.summary.untrustworthy
    return None if why is None else f"the run's verdict cannot be trusted: {why}"


def _unchecked(result: EvalResult, name: str) -> list[str]:
    """The lines of the items scorer ``name``'s average leaves out although they were to be
    checked: those it failed on and those the judge budget left unjudged (not those it could
    not score, which a threshold leaves out too)."""
    items = result.items
    if not has_scorer(items, name):
        return []
    states, ids = item_states(items, name), item_ids(items)
    lines = []
    for mask, what in (
        (states.failed, "the scorer failed on"),
        (unjudged(items, name, states), "the judge budget left unjudged"),
    ):
        labels = ids[mask].astype(str).tolist()
        if labels:
            named = ", ".join(labels[:NAMED_ITEMS]) + (
                f" and {len(labels) - NAMED_ITEMS} more" if len(labels) > NAMED_ITEMS else ""
            )
            lines.append(
                f"the score of {name!r} leaves out {len(labels)} of {len(items)} items {what} "
                f"({named}): its average checked only the rest"
            )
    return lines


def _score(result: EvalResult, name: str) -> float:
    raise_failures([_untrustworthy(result)])
    if name not in result.scores:
        raise_failures(
            [f"no average score named {name!r}; the run's scores: {sorted(result.scores)}"]
        )
    return result.scores[name]
