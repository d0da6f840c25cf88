"""The values command-line options take, checked as argparse types: a usage error names the
option and what it must be."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import TypeVar

_Number = TypeVar("_Number", int, float)


def _checked(
    text: str, parse: Callable[[str], _Number], accepted: Callable[[_Number], bool], expected: str
) -> _Number:
    try:
        value = parse(text)
    except ValueError:
        value = None
    if value is None or not accepted(value):
        raise argparse.ArgumentTypeError(f"must be {expected}, got {text!r}")
    return value


def positive_int(text: str) -> int:
    return _checked(text, int, lambda n: n >= 1, "an integer >= 1")


def dollars(text: str) -> float:
    return _checked(text, float, lambda d: 0 <= d < math.inf, "a number of US dollars >= 0")


def seconds(text: str) -> float:
    return _checked(text, float, lambda s: 0 < s < math.inf, "a positive number of seconds")


def time_limit(text: str) -> float | None:
    """Seconds, or ``none`` for no limit."""
    if text.strip().lower() == "none":
        return None
    return seconds(text)


def share(text: str) -> float:
    return _checked(text, float, lambda s: 0 <= s <= 1, "a number from 0 to 1")
