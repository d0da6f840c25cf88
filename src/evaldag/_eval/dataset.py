"""The dataset an eval runs over: a DataFrame (or a table with ``to_pandas()``), a list of
dicts, or a Parquet/CSV/JSONL file."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa

from evaldag._eval.column_mapping import MASTRA_KEYS, fields_named, require_mapped_columns
from evaldag._io.files import file_kind
from evaldag._io.flat import csv_text, csv_values
from evaldag._reader import plain_data, python_data
from evaldag.errors import EvalDagError

#: The run fields of which a data item needs one (``inputs`` and ``turns`` hold conversations).
_ITEM_FIELDS = ("input", "inputs", "turns")


def _invalid(message: str, **details: Any) -> EvalDagError:
    return EvalDagError("INVALID_DATA_ITEM", message, details=details)


def _csv(path: Path, columns: dict[str, str]) -> pd.DataFrame:
    """A CSV file's cells as text, but JSON text of arrays and objects as them (``csv_values``;
    a column mapped to a run field by that field's rule)."""
    fields = {column: field for field, column in columns.items()}
    return csv_values(csv_text(path), fields=fields)


def _parquet(path: Path) -> pd.DataFrame:
    import pyarrow.parquet as pq  # with its file systems: loaded when a Parquet file is read

    return arrow_frame(pq.read_table(path))


def arrow_frame(table: pa.Table) -> pd.DataFrame:
    """An Arrow table's rows; nested columns (lists, structs, maps) as the lists and dicts pyarrow
    reads (pandas would give numpy arrays, and floats for integers beside a missing one), keys
    missing from a row's struct left out (Arrow gives every row the keys of all)."""
    frame = table.to_pandas()
    names = table.column_names
    for name, column in zip(names, table.columns, strict=True):
        if pa.types.is_nested(column.type) and name in frame.columns and names.count(name) == 1:
            values = column.to_pylist(maps_as_pydicts="strict")
            frame[name] = pd.Series(
                [plain_data(v) for v in values], index=frame.index, dtype=object
            )
    return frame


def _python_cells(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with the numpy arrays and Arrow values in its cells as lists, dicts and Python
    scalars, so that a step gets what a JSONL file would give it."""
    changed = {}
    for position, (_, column) in enumerate(frame.items()):
        if column.dtype != object:
            continue
        cells = column.tolist()
        values = [python_data(cell) for cell in cells]
        if any(value is not cell for value, cell in zip(values, cells, strict=True)):
            changed[position] = pd.Series(values, index=frame.index, dtype=object)
    if not changed:
        return frame
    frame = frame.copy(deep=False)
    for position, values in changed.items():
        frame.isetitem(position, values)
    return frame


def _jsonl(path: Path, columns: dict[str, str]) -> pd.DataFrame:
    """A JSONL file's objects, values as written (pandas' reader turns ``"001"`` into 1); each
    has an input (or a conversation's), under the data's name (``columns``)."""
    items: list[Mapping[str, Any]] = []
    numbers: list[int] = []
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
            except json.JSONDecodeError as error:
                problem = f"{error.msg.removesuffix(' at')} at column {error.colno}"
                raise _file_error(path, f"line {number} is not JSON ({problem})", number) from None
            if not isinstance(item, dict):
                raise _file_error(
                    path, f"line {number} is {type(item).__name__}, not a JSON object", number
                )
            items.append(item)
            numbers.append(number)
    require_mapped_columns(_keys_of(items), columns)
    keys = _item_keys(columns)
    for number, item in zip(numbers, items, strict=True):
        if not any(key in item for key in keys):
            raise _file_error(path, f"line {number} has no '{keys[0]}'", number, keys[0])
    return pd.DataFrame.from_records(items)


def _item_keys(columns: dict[str, str]) -> tuple[str, ...]:
    """The data's keys of the run fields of which an item needs one, the input's first."""
    return tuple(columns.get(field, field) for field in _ITEM_FIELDS)


def _keys_of(items: list[Mapping[str, Any]]) -> list[str]:
    """Every key of ``items``, in order of appearance."""
    return [str(key) for key in dict.fromkeys(key for item in items for key in item)]


def _file_error(path: Path, problem: str, line: int, key: str = "input") -> EvalDagError:
    return EvalDagError(
        "INVALID_DATA_FILE",
        f"Invalid data file '{path}': {problem}; each line must be one JSON object with an '{key}'",
        details={"path": str(path), "line": line},
    )


def _from_file(path: Path, columns: dict[str, str]) -> pd.DataFrame:
    readers: dict[str, Callable[[Path], pd.DataFrame]] = {
        ".parquet": _parquet,
        ".csv": partial(_csv, columns=columns),
        ".jsonl": partial(_jsonl, columns=columns),
    }
    reader = readers.get(path.suffix.lower())
    if reader is None:
        raise EvalDagError(
            "INVALID_DATA_FILE",
            f"Cannot read data file '{path}': use a .parquet, .csv or .jsonl file",
            details={"path": str(path)},
        )
    kind = file_kind(path)
    if kind != "a regular file":
        if kind == "missing":
            problem = "does not exist"
        elif kind == "a directory":
            problem = "is a directory, not a file"
        elif kind == "a symlink to a missing file":
            problem = "does not exist: it is a symlink to a missing file"
        else:
            # Not read: Parquet needs a file it can seek in, and opening a FIFO that nothing
            # writes to would wait forever.
            problem = (
                f"is {kind}, not a regular file: evaldag reads data from a .parquet, .csv or "
                ".jsonl file on disk; write the data to one and give its path"
            )
        raise EvalDagError(
            "INVALID_DATA_FILE",
            f"Data file '{path}' {problem}",
            details={"path": str(path), "kind": kind},
        )
    try:
        return reader(path)
    except EvalDagError:
        raise
    except Exception as error:
        raise EvalDagError(
            "INVALID_DATA_FILE",
            f"Cannot read data file '{path}' as {path.suffix.lstrip('.')}: {error}",
            details={"path": str(path)},
            cause=error,
        ) from error


def _from_table(table: Any) -> pd.DataFrame:
    """A pyarrow, polars or Hugging Face table as pandas makes it, nested cells as lists and
    dicts."""
    if isinstance(table, pa.Table):
        return arrow_frame(table)
    try:
        frame = table.to_pandas()
    except Exception as error:
        raise EvalDagError(
            "INVALID_DATA",
            f"Cannot read data of type {type(table).__name__}: its to_pandas() failed: {error}",
            cause=error,
        ) from error
    if not isinstance(frame, pd.DataFrame):
        raise EvalDagError(
            "INVALID_DATA",
            f"data of type {type(table).__name__}: to_pandas() gave {type(frame).__name__}, not "
            "a DataFrame; pass a DataFrame",
        )
    return _python_cells(frame)


def _from_items(items: Sequence[Any], columns: dict[str, str]) -> pd.DataFrame:
    """A list of dicts, each with an input (or a conversation's), under the data's name
    (``columns``)."""
    keys = _item_keys(columns)
    for index, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise _invalid(
                f"Invalid data item at index {index}: must be a dict with an '{keys[0]}' key, "
                f"got {type(item).__name__}",
                index=index,
            )
    require_mapped_columns(_keys_of(list(items)), columns)
    for index, item in enumerate(items):
        if not any(key in item for key in keys):
            raise _invalid(
                f"Invalid data item at index {index}: must have '{keys[0]}', '{keys[1]}', or "
                f"'{keys[2]}' property (keys found: {[str(key) for key in item][:10]})",
                index=index,
                column=keys[0],
            )
    return _python_cells(pd.DataFrame.from_records(list(items)))


def loaded_dataset(
    data: Any, *, has_target: bool, columns: dict[str, str] | None = None
) -> pd.DataFrame:
    """``data`` as a DataFrame with the columns a run needs, checked; errors name the fix.

    :param columns: run field → the data's column holding it (checked ``columns=``); those
        columns are renamed to their fields.
    """
    columns = columns or {}
    if isinstance(data, str | os.PathLike):
        frame = _from_file(Path(data), columns)
    elif isinstance(data, pd.DataFrame):
        frame = _python_cells(data)
    elif callable(getattr(data, "to_pandas", None)):
        frame = _from_table(data)
    elif isinstance(data, Sequence) and not isinstance(data, str | bytes):
        frame = _from_items(data, columns)
    else:
        raise EvalDagError(
            "INVALID_DATA",
            f"data must be a pandas DataFrame, a table with to_pandas() (pyarrow, polars, "
            f"Hugging Face datasets), a list of dicts or a path to a .parquet, .csv or .jsonl "
            f"file, got {type(data).__name__}",
        )
    if len(frame) == 0:
        raise EvalDagError(
            "RUN_EXPERIMENT_FAILED_NO_DATA_PROVIDED",
            "Failed to run experiment: Data array is empty",
        )
    if isinstance(frame.columns, pd.MultiIndex):
        raise EvalDagError(
            "INVALID_DATA",
            "data has multi-level columns; give one level of column names ('input', 'output', "
            "...), e.g. data.droplevel(1, axis=1) or data.columns.to_flat_index()",
        )
    frame = fields_named(frame, columns, has_target=has_target)
    frame = frame.rename(columns={k: v for k, v in MASTRA_KEYS.items() if k in frame.columns})
    if not frame.columns.is_unique:
        duplicated = sorted({str(c) for c in frame.columns[frame.columns.duplicated()]})
        raise _invalid(f"Data has duplicate columns {duplicated}; rename them", columns=duplicated)
    conversations = "inputs" in frame.columns or "turns" in frame.columns
    if "input" not in frame.columns and not conversations:
        raise _invalid(
            f"Invalid data: every item must have an 'input' (columns found: "
            f"{[str(c) for c in frame.columns]}); if another column holds it, name it with "
            "columns={'input': '<column>'}",
            column="input",
        )
    if "input" in frame.columns and frame["input"].isna().any():
        # A missing input reaches scorers as None (Mastra's {input: null}), not as NaN or pd.NA.
        inputs = frame["input"]
        frame = frame.assign(input=inputs.astype(object).where(inputs.notna(), None))
    if not has_target and "output" not in frame.columns:
        raise _invalid(
            "Invalid data: without a target, every item needs an 'output'; add an 'output' "
            "column (or name the column holding it: columns={'output': '<column>'}) or pass "
            "target= to produce outputs",
            column="output",
        )
    if not has_target:
        missing = frame.index[frame["output"].isna()].tolist()
        if missing:
            raise _invalid(
                f"Invalid data item at index {missing[0]}: 'output' is missing "
                f"({len(missing)} rows without an output); fill them or pass target=",
                column="output",
                rows=missing[:20],
            )
    if "id" in frame.columns:
        ids = frame["id"][frame["id"].notna()]
        repeated = ids.index[ids.map(repr).duplicated(keep=False)].tolist()
        if repeated:
            shared = sorted({str(i) for i in ids[repeated]})[:10]
            raise _invalid(
                f"Data column 'id' must identify each item, but rows {repeated[:10]} share the "
                f"ids {shared}; make the ids unique or rename the column",
                column="id",
                rows=repeated[:20],
            )
    if not frame.index.is_unique:
        frame = frame.reset_index(drop=True)
    return frame
