"""What the receiver scores with: scorers and gates (given, or an eval file's), checked as
``run_evals`` checks them; the run fields read from the items' columns; the columns the scorers
read besides."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from evaldag._eval.eval_file import EvalDefinition, eval_definition
from evaldag._eval.scorer_configs import checked_gates, checked_ids, scorer_entries
from evaldag._scorer.builder import Scorer
from evaldag._traces.table import TRACE_COLUMNS
from evaldag.errors import EvalDagError

#: The run fields an item column may be mapped to (``columns=``); the request context is the
#: trace's own.
_MAPPABLE = ("input", "output", "ground_truth", "expected_trajectory")


def checked_scorers(scorers: Any, gates: Iterable[Any]) -> tuple[Scorer, ...]:
    """The scorers, then the gates, each a ``Scorer`` with its own id; a threshold (which live
    rows have no average to hold to) is left aside."""
    if isinstance(scorers, Mapping):
        raise EvalDagError(
            "EVALDAG_RECEIVER_INVALID_SCORERS",
            "the receiver scores a list of scorers and gates; an agent or workflow config "
            "({'agent': [...], 'trajectory': [...]}) is not taken: list the scorers, and give "
            "trajectory scorers columns={'output': 'trajectory'} in an eval of their own",
        )
    plain, _ = scorer_entries(scorers, "scorers")
    gate_list = checked_gates(gates)
    if not plain and not gate_list:
        raise EvalDagError("NO_SCORERS_PROVIDED", "the receiver needs at least one scorer or gate")
    checked_ids([("scorers", plain), ("gates", gate_list)])
    return (*plain, *gate_list)


def eval_file_scorers(spec: str) -> tuple[Scorer, ...]:
    """The checked scorers and gates of an eval file or module: a scoring process calls this
    to load them itself."""
    return definition_scorers(eval_definition(spec))


def definition_scorers(definition: EvalDefinition) -> tuple[Scorer, ...]:
    """The checked scorers and gates an eval defines; an eval with a target is refused: the
    traces are the outputs."""
    if definition.target is not None:
        raise EvalDagError(
            "EVALDAG_RECEIVER_INVALID_SCORERS",
            f"{definition.name} defines a target, but the receiver scores what the traces "
            "recorded and calls no target; use an eval file without one",
            details={"eval": definition.name},
        )
    return checked_scorers(definition.scorers, definition.gates)


def eval_spec(spec: str | os.PathLike[str]) -> str:
    """An eval file as an absolute path (a scoring process may start elsewhere), or a module
    name as it is."""
    text = os.fspath(spec)
    return str(Path(text).resolve()) if text.endswith(".py") or Path(text).is_file() else text


def run_fields(columns: Mapping[str, str] | None) -> dict[str, str]:
    """Run field → item column: ``input`` and ``output`` by default, ``columns`` over them."""
    fields = {"input": "input", "output": "output"}
    for field, column in (columns or {}).items():
        if field not in _MAPPABLE:
            raise EvalDagError(
                "EVALDAG_RECEIVER_INVALID_OPTION",
                f"columns maps {field!r}, which is no run field a trace gives; map "
                f"{', '.join(_MAPPABLE)}",
            )
        _require_item_column(column, f"columns[{field!r}]")
        fields[field] = column
    return fields


def read_columns(scorers: Sequence[Scorer]) -> tuple[str, ...]:
    """The item columns the scorers read besides the run's fields (``spans`` for span checks),
    each one an item has."""
    read: list[str] = []
    for scorer in scorers:
        for column in scorer.columns:
            _require_item_column(column, f"scorer '{scorer.id}' reads a column: it")
            if column not in read:
                read.append(column)
    return tuple(read)


def _require_item_column(column: str, what: str) -> None:
    if column not in TRACE_COLUMNS or column == "id":
        raise EvalDagError(
            "EVALDAG_RECEIVER_INVALID_OPTION",
            f"{what} is {column!r}, which a trace's item does not have; its columns: "
            f"{', '.join(c for c in TRACE_COLUMNS if c != 'id')}",
        )
