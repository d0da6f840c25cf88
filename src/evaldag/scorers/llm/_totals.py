"""Sums of scores as Mastra adds them, so that scores round the same way."""

from __future__ import annotations

from collections.abc import Iterable


def js_total(values: Iterable[float]) -> float:
    """The values added one by one from the left, as JavaScript's ``reduce`` adds them.

    ``sum()`` compensates rounding errors of floats from Python 3.12 on, so a total such as
    0.7 + 0.3 + 0.3 could differ from Mastra's in the last bit, and a score compared with a
    threshold or rounded at a half could come out differently.
    """
    total = 0.0
    for value in values:
        total += value
    return total
