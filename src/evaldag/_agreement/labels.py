"""Human labels read for agreement: binary (a positive class and the rest) or graded (ordinal
or continuous), each item's label a number, and the items without one counted.

A binary label says whether a high score is right: ``positive`` names the label values a high
score should mean (``"Consistent"`` for faithfulness, ``"yes"`` for hallucination), and every
other label is negative. Booleans and labels of 0 and 1 are binary without it (``True`` or 1
positive). ``order`` lists text labels from the one a low score should mean to the one a high
score should mean; they become evenly spaced places from 0 to 1. Other numbers are graded as
they are. A missing label (None, NaN, blank text) is no label: such items are counted, never
read as a class.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

from evaldag.errors import EvalDagError

LabelKind = Literal["binary", "graded"]
#: How many of a column's distinct labels an error message names.
_SHOWN = 8


@dataclass(frozen=True)
class ReadLabels:
    """A label column read: its kind, each item's label as a number (NaN: no label), and the
    positive values or the order it was read with."""

    kind: LabelKind
    values: pd.Series
    positive: tuple[Any, ...] = ()
    order: tuple[Any, ...] = ()
    #: Positive values no item holds (a sample may lack one; not all of them).
    absent: tuple[Any, ...] = ()


def _error(message: str, column: str, **details: Any) -> EvalDagError:
    return EvalDagError(
        "INVALID_AGREEMENT_OPTION",
        message,
        domain="AGREEMENT",
        details={"labels": column, **details},
    )


def _missing(values: pd.Series) -> pd.Series:
    blank = values.map(lambda value: isinstance(value, str) and not value.strip())
    return values.isna() | blank.astype(bool)


def _distinct(values: pd.Series) -> list[Any]:
    return sorted(pd.unique(values), key=lambda value: (str(type(value)), str(value)))


def _shown(values: list[Any]) -> str:
    more = f" and {len(values) - _SHOWN} more" if len(values) > _SHOWN else ""
    return f"{values[:_SHOWN]!r}{more}"


def _as_tuple(value: Any) -> tuple[Any, ...]:
    if isinstance(value, str) or not isinstance(value, Sequence | set | frozenset):
        return (value,)
    return tuple(value)


def _continuous(values: pd.Series) -> bool:
    """Numbers that are not all whole (booleans and class ids such as 1 to 5 are classes)."""
    if values.map(lambda value: isinstance(value, str | bool | np.bool_)).any():
        return False
    numbers = pd.to_numeric(values, errors="coerce")
    return bool(numbers.notna().all() and (numbers % 1 != 0).any())


def read_labels(
    column: pd.Series, name: str, *, positive: Any = None, order: Sequence[Hashable] | None = None
) -> ReadLabels:
    """The labels of ``column`` (the data's column ``name``) read as binary or graded."""
    if positive is not None and order is not None:
        raise _error("give positive= (binary labels) or order= (ordinal labels), not both", name)
    missing = _missing(column)
    present = column[~missing]
    if not len(present):
        raise _error(
            f"'{name}' holds no label: all {len(column):,} of its values are missing", name
        )
    distinct = _distinct(present)
    if positive is not None:
        if _continuous(present):
            raise _error(
                f"the labels in '{name}' are continuous numbers ({_shown(distinct)}), not "
                "classes: positive= names the classes a high score should mean; leave it out "
                "to compare the scores with graded labels",
                name,
            )
        wanted = _as_tuple(positive)
        absent = tuple(value for value in wanted if value not in set(distinct))
        if len(absent) == len(wanted):
            raise _error(
                f"positive={absent[0]!r} is no label in '{name}'; its labels are "
                f"{_shown(distinct)}",
                name,
                positive=[str(v) for v in wanted],
            )
        values = present.isin(wanted).astype(float)
        return ReadLabels("binary", values.reindex(column.index), positive=wanted, absent=absent)
    if order is not None:
        places = list(order)
        if len(places) < 2 or len(set(places)) != len(places):
            raise _error(f"order= must list two or more distinct labels, got {places!r}", name)
        unknown = [value for value in distinct if value not in set(places)]
        if unknown:
            raise _error(
                f"'{name}' holds {unknown[0]!r}, which order={places!r} does not list; list "
                "every label, from the one a low score should mean to the one a high score "
                "should mean",
                name,
            )
        spaced = {label: index / (len(places) - 1) for index, label in enumerate(places)}
        values = present.map(spaced).astype(float)
        return ReadLabels("graded", values.reindex(column.index), order=tuple(places))
    if present.map(lambda value: isinstance(value, bool | np.bool_)).all() and len(present):
        return ReadLabels("binary", present.astype(float).reindex(column.index), positive=(True,))
    numbers = pd.to_numeric(present, errors="coerce")
    if numbers.isna().any() or present.map(lambda value: isinstance(value, str)).any():
        raise _error(
            f"the labels in '{name}' are text ({_shown(distinct)}): give positive= the "
            "label(s) a high score should mean (binary), or order= the labels from the one a "
            "low score should mean to the one a high score should mean (ordinal)",
            name,
        )
    if set(numbers.unique()) <= {0.0, 1.0}:
        return ReadLabels("binary", numbers.astype(float).reindex(column.index), positive=(1,))
    return ReadLabels("graded", numbers.astype(float).reindex(column.index))
