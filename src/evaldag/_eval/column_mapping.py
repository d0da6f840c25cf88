"""``columns=``: which column of the user's data holds each run field, when it is not named so.

``run_evals(data, columns={"input": "question", "output": "answer"})`` reads the input from the
data's ``question`` column, as Ragas' and DeepEval's column maps do. The data is renamed to the run
fields when it is loaded, so every later check and node reads ``input``; the results' items get
the data's names back, so they show the data as it was given, and ``EvalResult.columns`` keeps the
mapping for what reads the run fields from results (the store, the report, ``compare``).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

import pandas as pd

from evaldag.errors import EvalDagError

#: The run fields a data column can be mapped to (conversations' ``inputs`` and ``turns`` too).
RUN_FIELDS = (
    "input",
    "output",
    "ground_truth",
    "request_context",
    "expected_trajectory",
    "inputs",
    "turns",
)
#: Mastra's spelling of run fields, accepted as keys and as data columns.
MASTRA_KEYS = {
    "groundTruth": "ground_truth",
    "requestContext": "request_context",
    "expectedTrajectory": "expected_trajectory",
}
_EXAMPLE = "columns={'input': 'question', 'output': 'answer', 'ground_truth': 'reference'}"


def _invalid(message: str, **details: Any) -> EvalDagError:
    return EvalDagError("INVALID_COLUMN_MAPPING", message, details=details)


def column_mapping(columns: Any) -> dict[str, str]:
    """``columns=`` checked: run field → data column, each field under evaldag's name; entries
    that name a field's own column are left out."""
    if columns is None:
        return {}
    if not isinstance(columns, Mapping):
        raise _invalid(
            f"columns= must be a dict of run field → your data's column, e.g. {_EXAMPLE}; got "
            f"{type(columns).__name__}"
        )
    mapping: dict[str, str] = {}
    for key, column in columns.items():
        field = MASTRA_KEYS.get(key, key)
        if field not in RUN_FIELDS:
            raise _invalid(_unknown_field(key, column), field=str(key))
        if not isinstance(column, str) or not column:
            raise _invalid(
                f"columns['{key}'] must name a column of the data, got {column!r}", field=field
            )
        if field in mapping:
            raise _invalid(f"columns= names the field '{field}' twice", field=field)
        mapping[field] = column
    shared = {column for column in mapping.values() if list(mapping.values()).count(column) > 1}
    if shared:
        column = min(shared)
        fields = [field for field, named in mapping.items() if named == column]
        raise _invalid(
            f"columns= maps {' and '.join(repr(f) for f in fields)} to the same data column "
            f"'{column}'; each run field reads a column of its own",
            column=column,
            fields=fields,
        )
    return {field: column for field, column in mapping.items() if field != column}


def _unknown_field(key: Any, column: Any) -> str:
    fields = ", ".join(RUN_FIELDS)
    if isinstance(column, str) and MASTRA_KEYS.get(column, column) in RUN_FIELDS:
        hint = (
            f"did you mean {{'{column}': {key!r}}}? columns= maps evaldag's run field to your "
            "data's column"
        )
    elif close := difflib.get_close_matches(str(key), RUN_FIELDS, n=1, cutoff=0.75):
        hint = f"did you mean '{close[0]}'?"
    else:
        hint = (
            "other columns need no mapping: they are carried into the results, and a scorer "
            "names the column it reads itself, e.g. faithfulness(judge, context='passages')"
        )
    return f"columns= maps {key!r}, which is not a run field ({hint}); the run fields are {fields}"


def fields_named(frame: pd.DataFrame, mapping: dict[str, str], *, has_target: bool) -> pd.DataFrame:
    """``frame`` with each mapped column renamed to its run field; a mapped column the data lacks,
    or a field the data also holds under its own name, is an error that names the columns."""
    if not mapping:
        return frame
    if has_target and "output" in mapping:
        raise _invalid(
            f"columns= maps 'output' to '{mapping['output']}', but the target produces each "
            "item's output; leave 'output' out of columns= (or the target out of the run)",
            field="output",
        )
    require_mapped_columns([str(c) for c in frame.columns], mapping)
    moved = set(mapping.values())
    for field, column in mapping.items():
        names = [field, *(key for key, name in MASTRA_KEYS.items() if name == field)]
        for name in names:
            if name in frame.columns and name not in moved:
                raise _invalid(
                    f"columns= maps '{field}' to the data column '{column}', but the data also "
                    f"has a column '{name}': which one holds the {field}? Drop or rename one, "
                    f"or leave '{field}' out of columns=",
                    field=field,
                    column=column,
                )
    return frame.rename(columns={column: field for field, column in mapping.items()})


def require_mapped_columns(found: list[str], mapping: dict[str, str]) -> None:
    """Every column ``mapping`` names is among the data's columns ``found``; the error names them
    and a close match."""
    for field, column in mapping.items():
        if column not in found:
            close = difflib.get_close_matches(column, found, n=1, cutoff=0.6)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            raise _invalid(
                f"columns= maps '{field}' to the data column '{column}', which the data does not "
                f"have (its columns: {found}){hint}",
                field=field,
                column=column,
            )
