"""What a scorer needs of each item's data, checked for every item before any scorer step runs.

A scorer reads the run's fields and the data columns it declares (``columns=``). Many need more
of them: context recall needs a ``ground_truth`` column to judge against, ``faithfulness(judge,
context="contexts")`` a list of strings in each cell of ``contexts``, a trajectory scorer an
expected trajectory it can read. A scorer says so with :class:`DataNeed` values
(``scorer.needing(...)``; the prebuilt scorers do); ``run_evals`` and ``cost_estimate`` check
every item against every scorer's needs before the first step runs (``_eval/preflight.py``), so
a bad row late in the data costs no judge call and fails the run with the row, the column and
the fix, instead of failing its item after the other scorers paid for theirs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class DataNeed:
    """What a scorer needs of one data column, or run field, on every item.

    :param column: the data column (``"contexts"``) or the run field (``"ground_truth"``).
    :param reads: what the scorer reads there, for messages: ``"the reference answer it judges
        against"``.
    :param cell: checks one item's value (never a missing one: None or NaN; a run field's as the
        run holds it, JSON text read) and raises an ``EvalDagError`` saying what is wrong and
        the fix; None when any value will do.
    :param required: whether the data must have the column (an item's cell may still be empty:
        the scorer then decides, most often that the item is not scorable).
    :param from_text: whether a cell of text is read as the JSON it holds (a CSV cell holding a
        list); said in ``--estimate``'s notes.
    """

    column: str
    reads: str
    cell: Callable[[Any], object] | None = None
    required: bool = True
    from_text: bool = False
