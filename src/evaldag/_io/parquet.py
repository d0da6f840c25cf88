"""Eval results as Parquet: items as rows, everything else in the file's metadata.

Columns holding nested values (step results, judge records, agent-run messages) are stored as
JSON text and decoded on read, since Arrow cannot infer one type for dicts of varying shape.
The items' index is no column of its own (pandas' ``__index_level_0__``, which DuckDB and
Polars would show as data): row numbers counting on from a start are a number in the metadata,
and other labels (a DataFrame's own index, the rows kept by a filter) an ``item`` column, or the
index's name. Files are written whole or not at all (``evaldag._io.files``).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa

from evaldag._compat.js import json_text
from evaldag._io.files import atomic_write, name_problem
from evaldag.errors import EvalDagError

_METADATA_KEY = b"evaldag"


_INT64 = range(-(2**63), 2**63)


def _is_plain_column(values: pd.Series) -> bool:
    """Whether Arrow stores the column as it is: strings, or bytes, or numbers that fit 64
    bits, or booleans, and None."""
    kinds = {type(value) for value in values if value is not None}
    if kinds <= {int, float}:
        return all(value in _INT64 for value in values if type(value) is int)
    return kinds <= {str} or kinds <= {bytes} or kinds <= {bool}


def column_name(name: Any) -> Any:
    """A column's name as a file's metadata keeps it: an integer as itself (Parquet's and
    JSON's names are text), anything else as its text."""
    return name if type(name) is int else str(name)


def json_ready(value: Any) -> Any:
    """A value the json module cannot write (a numpy number, a model) as one it can."""
    return json.loads(json_text(value) or "null")


def _cell_text(value: Any) -> str | None:
    # A missing cell stays missing; anything else becomes JSON text.
    if isinstance(value, float) and math.isnan(value):
        return None
    return json_text(value)


def is_results_directory(path: str | os.PathLike[str]) -> bool:
    """Whether a results path names a directory (one there, a path ending in a separator, or
    one without a suffix that is no file): the run writes its items there in parts
    (``part-NNNNN.parquet``) and a ``summary.json``."""
    text = os.fspath(path)
    target = Path(text)
    # os.path's tests: Path's raise on a name too long for the file system
    return (
        text.endswith(("/", os.sep))
        or os.path.isdir(text)
        or (not target.suffix and not os.path.exists(text) and bool(target.name))
    )


def writable_path(path: str | os.PathLike[str], option: str, longer_by: int = 0) -> Path:
    """``path`` checked as a results file to write, before any work: errors name ``option``.

    :param longer_by: how many bytes longer the names are that the run writes beside it.
    """
    target = Path(path)
    problem = None
    if not str(path).strip():
        problem = "is empty"
    elif too_long := name_problem(target, longer_by):  # first: stat() fails on such a name
        problem = f"cannot be written: {too_long}"
    elif target.is_dir():
        problem = "is a directory"
    elif target.exists() and not target.is_file():
        problem = "exists and is not a regular file (a device, a FIFO or a socket)"
    else:
        problem = _ancestor_problem(target.parents)
    if problem:
        raise EvalDagError(
            "INVALID_OUTPUT_PATH",
            f"{option}='{path}' {problem}; give the path of a .parquet file to write",
            details={"option": option, "path": str(path)},
        )
    return target


def writable_directory(path: str | os.PathLike[str], option: str) -> Path:
    """``path`` checked as a directory of results to write, before any work."""
    target = Path(path)
    problem = None
    if target.exists() and not target.is_dir():
        problem = "exists and is not a directory"
    else:
        problem = _ancestor_problem((target, *target.parents))
    if problem:
        raise EvalDagError(
            "INVALID_OUTPUT_PATH",
            f"{option}='{path}' {problem}; give a directory to write the results to",
            details={"option": option, "path": str(path)},
        )
    return target


def _ancestor_problem(ancestors: Iterable[Path]) -> str | None:
    """Why nothing can be written under the first of ``ancestors`` that exists, if it cannot."""
    parent = next((p for p in ancestors if p.exists()), None)
    if parent is not None and not parent.is_dir():
        return f"is under '{parent}', which is a file"
    if parent is not None and not os.access(parent, os.W_OK):
        return f"is under '{parent}', which is not writable"
    return None


def write_results(items: pd.DataFrame, metadata: dict[str, Any], path: Path) -> Path:
    """Write ``items`` and ``metadata`` to ``path`` atomically."""
    import pyarrow.parquet as pq  # with its file systems: loaded by what reads or writes a file

    table_columns = {}
    json_columns = []
    for column in items.columns:
        values = items[column]
        if values.dtype == object and not _is_plain_column(values):
            table_columns[column] = values.map(_cell_text).astype(object)
            json_columns.append(column)
        else:
            table_columns[column] = values
    frame = pd.DataFrame(table_columns, index=items.index)
    index = _index_record(items)
    if "column" in index:
        frame.insert(0, index["column"], items.index)
    table = pa.Table.from_pandas(frame, preserve_index=False)
    object_columns = [str(c) for c in items.columns if items[c].dtype == object]
    meta = {
        **metadata,
        "json_columns": [str(c) for c in json_columns],
        "object_columns": object_columns,
        "index": index,
    }
    if any(type(c) is not str for c in items.columns):  # read back as they were
        meta["column_names"] = [column_name(c) for c in items.columns]
    kept = json.dumps(meta, default=json_ready).encode()
    table = table.replace_schema_metadata({**(table.schema.metadata or {}), _METADATA_KEY: kept})
    return atomic_write(path, lambda temporary: pq.write_table(table, temporary))


def _index_record(items: pd.DataFrame) -> dict[str, Any]:
    """How the items' index is kept: ``{"start": n}`` for the row numbers n, n + 1, ...;
    otherwise ``{"column": c, "name": index name}``, ``c`` the index's name or ``item`` (with
    underscores before it while a data column has it)."""
    labels = items.index
    if len(labels) == 0:
        return {"start": 0}
    if pd.api.types.is_integer_dtype(labels.dtype) and labels.name is None:
        start = int(labels[0])
        if labels.equals(pd.RangeIndex(start, start + len(labels))):
            return {"start": start}
    name = labels.name
    column = name if isinstance(name, str) and name not in items.columns else "item"
    while column in items.columns:
        column = f"_{column}"
    return {"column": column, "name": name}


def _indexed(items: pd.DataFrame, index: dict[str, Any] | None) -> pd.DataFrame:
    """The items with the index ``_index_record`` kept (files written before it: as read)."""
    if index is None:
        return items
    if "column" in index:
        return items.set_index(index["column"]).rename_axis(index["name"])
    return items.set_axis(pd.RangeIndex(index["start"], index["start"] + len(items)))


def unreadable_results(path: Path, error: Exception) -> EvalDagError:
    """The error of a results file that could not be read."""
    return EvalDagError(
        "INVALID_RESULTS_FILE",
        f"Cannot read eval results from '{path}': {error}",
        details={"path": str(path)},
        cause=error,
    )


#: The file of a results directory that holds everything but the items (JSON).
SUMMARY_FILE = "summary.json"


def part_name(number: int) -> str:
    """The name of a results directory's part ``number`` (its batch's, from 0)."""
    return f"part-{number:05d}.parquet"


def _part_number(path: Path) -> int:
    return int(path.name.removeprefix("part-").removesuffix(".parquet"))


def directory_results(path: Path) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The items (every part's, in order) and metadata (the summary's) of a results directory:
    ``part-NNNNN.parquet`` files written by ``write_results`` and ``summary.json``."""
    summary = path / SUMMARY_FILE
    try:
        metadata = json.loads(summary.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise EvalDagError(
            "INVALID_RESULTS_FILE",
            f"'{path}' is a directory without an evaldag results summary ({SUMMARY_FILE}): "
            "not a run's results, or its run has not finished (run it again to finish it)",
            details={"path": str(path)},
        ) from None
    except (OSError, ValueError) as error:
        raise unreadable_results(summary, error) from error
    parts = sorted(path.glob("part-*.parquet"), key=_part_number)
    frames = [parquet_results(part)[0] for part in parts]
    items = pd.concat(frames) if len(frames) > 1 else frames[0] if frames else pd.DataFrame()
    if len(items) != metadata["summary"]["total_items"]:
        raise EvalDagError(
            "INVALID_RESULTS_FILE",
            f"The results directory '{path}' holds {len(items)} items in {len(parts)} parts, "
            f"but its run scored {metadata['summary']['total_items']}: a part is missing or "
            "was added; run the eval again with the same out= to write it again",
            details={"path": str(path), "parts": len(parts)},
        )
    return items, metadata


def parquet_results(path: Path) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The items and metadata written by ``write_results`` (or of a results directory: see
    ``directory_results``)."""
    import pyarrow.parquet as pq

    if path.is_dir():
        return directory_results(path)
    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowException) as error:
        raise unreadable_results(path, error) from error
    raw = (table.schema.metadata or {}).get(_METADATA_KEY)
    if raw is None:
        raise EvalDagError(
            "INVALID_RESULTS_FILE",
            f"'{path}' is a Parquet file but not an evaldag results file (no evaldag metadata); "
            "write it with EvalResult.to_parquet or evaldag run --out",
            details={"path": str(path)},
        )
    metadata = json.loads(raw)
    items = _indexed(table.to_pandas(), metadata.pop("index", None))
    json_columns = set(metadata.pop("json_columns"))
    for column in metadata.pop("object_columns"):
        # pandas reads text back as its string dtype with NaN for missing; restore what was written
        items[column] = pd.Series(
            [_decoded(v, column in json_columns) for v in items[column]],
            index=items.index,
            dtype=object,
        )
    names = metadata.pop("column_names", None)
    if names is not None and len(names) == len(items.columns):
        items.columns = pd.Index(names, dtype=object)
    return items, metadata


def results_metadata(path: Path) -> dict[str, Any]:
    """The metadata ``write_results`` kept in ``path``, without reading its rows."""
    import pyarrow.parquet as pq

    raw = (pq.read_schema(path).metadata or {}).get(_METADATA_KEY)
    return {} if raw is None else json.loads(raw)


def _decoded(value: Any, is_json: bool) -> Any:
    if not isinstance(value, str):
        return None if value is None or (isinstance(value, float) and math.isnan(value)) else value
    return json.loads(value) if is_json else value
