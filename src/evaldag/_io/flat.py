"""Results as CSV or JSON Lines, for tools that read no Parquet: one row per item, flat.

Only the items are written (scores, reasons, errors, the data's columns); nested values (step
results, judge records, messages) become JSON text. The run's averages, gates and verdict stay
in the Parquet format, which ``EvalResult.read_parquet`` and ``evaldag report`` read.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any, Literal

import pandas as pd

from evaldag._compat.js import json_text
from evaldag._io.files import atomic_write
from evaldag.errors import EvalDagError

ResultsFormat = Literal["parquet", "csv", "jsonl"]
_SUFFIXES: dict[str, ResultsFormat] = {
    ".parquet": "parquet",
    ".pq": "parquet",
    ".csv": "csv",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
}


def results_format(path: str | os.PathLike[str], option: str) -> ResultsFormat:
    """The format a results path's suffix asks for; an unknown suffix is an error."""
    suffix = Path(path).suffix.lower()
    found = _SUFFIXES.get(suffix)
    if found is None:
        raise EvalDagError(
            "INVALID_OUTPUT_PATH",
            f"{option}='{path}': a results file ends in .parquet (everything, readable by "
            f"evaldag report), .csv or .jsonl (the items only), not {suffix or 'no suffix'!r}",
            details={"option": option, "path": str(path)},
        )
    return found


def _cell(value: Any) -> Any:
    if value is None or isinstance(value, str | bool | int) or pd.isna(value) is True:
        return value
    if isinstance(value, float):
        return None if math.isnan(value) else value
    return json_text(value)


def write_flat(items: pd.DataFrame, path: str | os.PathLike[str], fmt: ResultsFormat) -> Path:
    """Write ``items`` to ``path`` as CSV or JSON Lines, whole or not at all."""
    flat = items.reset_index(drop=True).astype(object).map(_cell)
    if fmt == "csv":
        return atomic_write(path, lambda temporary: flat.to_csv(temporary, index=False))
    return atomic_write(
        path,
        lambda temporary: flat.to_json(temporary, orient="records", lines=True, force_ascii=False),
    )
