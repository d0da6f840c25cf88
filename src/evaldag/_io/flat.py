"""Results as CSV or JSON Lines, for tools that read no Parquet: one row per item, flat; and CSV
cells read as the values they hold.

Only the items are written (scores, reasons, errors, the data's columns). JSON Lines keeps a
list or a dict as one; a CSV cell holds text, so there it is JSON text, which reads back as the
list or dict (``csv_values``). The run's averages, gates and verdict stay in the Parquet format,
which ``EvalResult.read_parquet`` and ``evaldag report`` read.
"""

from __future__ import annotations

import json
import math
import os
import warnings
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Any, Literal

import pandas as pd

from evaldag._compat.js import json_text
from evaldag._io.files import atomic_write, atomic_write_text
from evaldag._reader import looks_like_json, structured_json, transcript_json
from evaldag.errors import EvalDagError

ResultsFormat = Literal["parquet", "csv", "jsonl"]
_SUFFIXES: dict[str, ResultsFormat] = {
    ".parquet": "parquet",
    ".pq": "parquet",
    ".csv": "csv",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
}
#: How a CSV cell of a run field that starts like JSON is read, by the field's own rule
#: (``evaldag._reader``): the JSON of a transcript, of a request context or a
#: trajectory; None keeps the text (a reference answer may itself be JSON an app should write).
_CSV_FIELDS: dict[str, Callable[[str, str], Any] | None] = {
    "input": transcript_json,
    "output": transcript_json,
    "ground_truth": None,
    "groundTruth": None,
    "request_context": structured_json,
    "requestContext": structured_json,
    "expected_trajectory": structured_json,
    "expectedTrajectory": structured_json,
}


def results_format(path: str | os.PathLike[str], option: str) -> ResultsFormat:
    """The format a results path's suffix asks for; an unknown suffix is an error."""
    suffix = Path(path).suffix.lower()
    found = _SUFFIXES.get(suffix)
    if found is None:
        directory = "; a directory (a path without suffix) takes them in parts" * (option == "out")
        raise EvalDagError(
            "INVALID_OUTPUT_PATH",
            f"{option}='{path}': a results file ends in .parquet (everything, readable by "
            f"evaldag report), .csv or .jsonl (the items only), not {suffix or 'no suffix'!r}"
            f"{directory}",
            details={"option": option, "path": str(path)},
        )
    return found


def _value(value: Any) -> Any:
    """A cell as a JSON value: pandas' missing markers (NaN, NA, NaT) become None."""
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        return None if math.isnan(value) else value
    return None if pd.isna(value) is True else value


def _csv_cell(value: Any) -> Any:
    value = _value(value)
    if value is None or isinstance(value, str | bool | int | float):
        return value
    text = json_text(value) or "null"
    # A value JSON writes as a string (bytes as base64, a datetime in ISO 8601) is that text,
    # as in a JSONL line, not the text in JSON's quotes.
    return json.loads(text) if text.startswith('"') else text


def write_flat(items: pd.DataFrame, path: str | os.PathLike[str], fmt: ResultsFormat) -> Path:
    """Write ``items`` to ``path`` as CSV or JSON Lines, whole or not at all."""
    if fmt == "csv":
        flat = items.reset_index(drop=True).astype(object).map(_csv_cell)
        return atomic_write(path, lambda temporary: flat.to_csv(temporary, index=False))
    lines = (
        json_text({column: _value(value) for column, value in row.items()})
        for row in items.astype(object).to_dict("records")
    )
    return atomic_write_text(path, "".join(f"{line}\n" for line in lines))


def csv_text(path: Path) -> pd.DataFrame:
    """A CSV file's cells as text: ``001`` stays ``"001"``, ``NA`` stays ``"NA"``; only empty
    cells are missing. A row with more cells than the header is an error, not a lost cell."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", pd.errors.ParserWarning)
        return pd.read_csv(path, dtype=str, keep_default_na=False, na_values=[""], index_col=False)


def csv_values(
    frame: pd.DataFrame, text: Collection[str] = (), fields: Mapping[str, str] | None = None
) -> pd.DataFrame:
    """A CSV file's text cells as the values they hold: JSON text of an array or an object is
    that array or object, as evaldag writes one; in a run field, what the field's rule reads
    (``_CSV_FIELDS``: JSON text of a transcript, not of another answer, in ``input`` and
    ``output``; none in ``ground_truth``). Columns named in ``text`` stay text; ``fields`` names
    the run field a column named otherwise holds (``columns=``), whose rule reads it."""
    read = {}
    for name in frame.columns:
        reader = _CSV_FIELDS.get((fields or {}).get(name, name), _json_value)
        if name in text or reader is None:
            continue
        cells = frame[name].tolist()
        values = [_csv_value(reader, cell, name) for cell in cells]
        if any(value is not cell for value, cell in zip(values, cells, strict=True)):
            read[name] = pd.Series(values, index=frame.index, dtype=object)
    return frame.assign(**read) if read else frame


def _csv_value(reader: Callable[[str, str], Any], cell: Any, name: str) -> Any:
    if type(cell) is not str or not looks_like_json(cell):
        return cell
    try:
        return reader(cell, name)
    except EvalDagError:  # refused later by the run, naming the row
        return cell


def _json_value(text: str, name: str) -> Any:
    """``text``'s JSON when it is an array or an object, else ``text``."""
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return value if isinstance(value, list | dict) else text
