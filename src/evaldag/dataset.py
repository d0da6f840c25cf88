"""The dataset an eval runs over: a DataFrame, a list of dicts, or a Parquet/CSV/JSONL file."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from evaldag.errors import EvalDagError

#: Dataset columns a scorer run reads; every other column is carried through untouched.
RUN_FIELDS = ("input", "output", "ground_truth", "request_context", "expected_trajectory")
#: Mastra's spelling of the same item fields.
_MASTRA_KEYS = {
    "groundTruth": "ground_truth",
    "requestContext": "request_context",
    "expectedTrajectory": "expected_trajectory",
}
_READERS = {
    ".parquet": pd.read_parquet,
    ".csv": pd.read_csv,
    ".jsonl": lambda path: pd.read_json(path, lines=True),
}


def _invalid(message: str, **details: Any) -> EvalDagError:
    return EvalDagError("INVALID_DATA_ITEM", message, details=details)


def _from_file(path: Path) -> pd.DataFrame:
    reader = _READERS.get(path.suffix.lower())
    if reader is None:
        raise EvalDagError(
            "INVALID_DATA_FILE",
            f"Cannot read data file '{path}': use a .parquet, .csv or .jsonl file",
            details={"path": str(path)},
        )
    if not path.is_file():
        raise EvalDagError(
            "INVALID_DATA_FILE", f"Data file '{path}' does not exist", details={"path": str(path)}
        )
    try:
        return reader(path)
    except Exception as error:
        raise EvalDagError(
            "INVALID_DATA_FILE",
            f"Cannot read data file '{path}' as {path.suffix.lstrip('.')}: {error}",
            details={"path": str(path)},
            cause=error,
        ) from error


def _from_items(items: Sequence[Any]) -> pd.DataFrame:
    for index, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise _invalid(
                f"Invalid data item at index {index}: must be a dict with an 'input' key, got "
                f"{type(item).__name__}",
                index=index,
            )
    return pd.DataFrame.from_records(list(items))


def loaded_dataset(data: Any, *, has_target: bool) -> pd.DataFrame:
    """``data`` as a DataFrame with the columns a run needs, checked; errors name the fix."""
    if isinstance(data, str | os.PathLike):
        frame = _from_file(Path(data))
    elif isinstance(data, pd.DataFrame):
        frame = data
    elif isinstance(data, Sequence) and not isinstance(data, str | bytes):
        frame = _from_items(data)
    else:
        raise EvalDagError(
            "INVALID_DATA",
            f"data must be a pandas DataFrame, a list of dicts or a path to a .parquet, .csv or "
            f".jsonl file, got {type(data).__name__}",
        )
    if len(frame) == 0:
        raise EvalDagError(
            "RUN_EXPERIMENT_FAILED_NO_DATA_PROVIDED",
            "Failed to run experiment: Data array is empty",
        )
    frame = frame.rename(columns={k: v for k, v in _MASTRA_KEYS.items() if k in frame.columns})
    if not frame.columns.is_unique:
        duplicated = sorted({str(c) for c in frame.columns[frame.columns.duplicated()]})
        raise _invalid(f"Data has duplicate columns {duplicated}; rename them", columns=duplicated)
    for column in ("inputs", "turns"):
        if column in frame.columns:
            raise _invalid(
                f"Data column '{column}' (multi-turn items) is not supported; give one 'input' "
                "per row",
                column=column,
            )
    if "input" not in frame.columns:
        raise _invalid(
            f"Invalid data: every item must have an 'input' (columns found: "
            f"{[str(c) for c in frame.columns]})",
            column="input",
        )
    if not has_target and "output" not in frame.columns:
        raise _invalid(
            "Invalid data: without a target, every item needs an 'output'; add an 'output' "
            "column or pass target= to produce outputs",
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
    if not frame.index.is_unique:
        frame = frame.reset_index(drop=True)
    return frame
