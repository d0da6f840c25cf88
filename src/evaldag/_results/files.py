"""A results file's items read back, whatever its format (``.parquet``, ``.csv``, ``.jsonl``)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd

from evaldag._io.flat import csv_text, csv_values, results_format
from evaldag._io.parquet import parquet_results, unreadable_results
from evaldag._results.item_columns import ScorerColumns, scorer_ids

#: Item columns the run adds as text, whatever they look like.
_TEXT_COLUMNS = ("run_id", "target_error")


def read_results(path: str | os.PathLike[str]) -> pd.DataFrame:
    """The items of a results file (``run_evals(out=...)``, ``evaldag run --out``,
    ``EvalResult.to_parquet``) or directory (``run_evals(out="results/")``): one row per item,
    its columns as the run made them; lists and dicts read back as lists and dicts from
    ``.parquet``, ``.jsonl`` and ``.csv`` alike.

    A CSV file holds text: its data columns read as ``run_evals`` reads a CSV file's (numbers
    stay text), scores as numbers. For a Parquet file's averages, gates and verdict, use
    ``EvalResult.read_parquet``.
    """
    target = Path(path)
    fmt = "parquet" if target.is_dir() else results_format(target, "path")
    if fmt == "parquet":
        return parquet_results(target)[0]
    try:
        items = csv_text(target) if fmt == "csv" else _jsonl_records(target)
    except (OSError, ValueError, pd.errors.ParserError) as error:
        raise unreadable_results(target, error) from error
    scorers = [ScorerColumns(sid) for sid in scorer_ids(items.columns)]
    if fmt == "csv":
        own = [column for scorer in scorers for column in scorer.all]
        items = csv_values(items, text={*own, *_TEXT_COLUMNS})
    scores = {scorer.score: pd.to_numeric(items[scorer.score]) for scorer in scorers}
    return items.assign(**{column: values.astype(float) for column, values in scores.items()})


def _jsonl_records(path: Path) -> pd.DataFrame:
    with path.open(encoding="utf-8") as lines:
        records = [json.loads(line) for line in lines if line.strip()]
    frame = pd.DataFrame.from_records(records)
    return frame.astype(object).where(frame.notna(), None)
