"""A scorer's item columns: one row per run, what each finished run holds.

``score`` is a float; ``reason``, ``error``, ``not_scorable``, ``steps`` and ``judge`` are
Arrow-backed text (JSON for nested values); ``failed_step`` and ``completed_steps`` are
categories, the same in every batch so that batches concatenate.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pandas as pd
import pyarrow as pa

from evaldag._compat.js import json_text
from evaldag._engine.run_state import RESULT_KEYS, RunState
from evaldag._results.item_columns import SCORER_COLUMNS
from evaldag._util.gc_pause import gc_paused


def scored_columns(states: Sequence[RunState]) -> dict[str, list[Any]]:
    """The item columns of finished runs: ``score`` a float, the others text, None or step names.

    ``score`` and ``reason`` of a failed run are what its snapshot recovered (a score NaN when
    none); ``error`` says it failed, and aggregations leave such scores out. ``steps`` (the
    preprocess/analyze results and prompts), ``judge`` (the judge records) and ``not_scorable``
    are JSON text; ``completed_steps`` is the tuple of stages. Text keeps large results small.
    """
    nan = float("nan")
    with gc_paused():
        scores = [
            state.results.get("generate_score_step_result", nan)
            if state.not_scorable is None
            else nan
            for state in states
        ]
        errors = [state.error for state in states]
        return {
            "score": [nan if score is None else score for score in scores],
            "reason": [_text(state.results.get("generate_reason_step_result")) for state in states],
            "error": [None if error is None else error.message for error in errors],
            "failed_step": [None if error is None else error.failed_step for error in errors],
            "completed_steps": [state.completed for state in states],
            "not_scorable": [
                None if state.not_scorable is None else json_text(state.not_scorable)
                for state in states
            ],
            "steps": [_details(state) for state in states],
            "judge": [
                json_text(
                    {
                        stage: [execution.to_dict() for execution in executions]
                        for stage, executions in state.judge.items()
                    }
                )
                if state.judge
                else None
                for state in states
            ],
        }


def _text(value: Any) -> str | None:
    return value if value is None or isinstance(value, str) else json_text(value)


def _details(state: RunState) -> str | None:
    results = state.results
    if not state.prompts and not (
        "preprocess_step_result" in results or "analyze_step_result" in results
    ):
        return None
    details = {key: results[key] for key in RESULT_KEYS if key in results}
    for stage, text in state.prompts.items():
        details[f"{stage}_prompt"] = text
    return json_text(details)


#: Text columns hold Arrow strings: compact, and missing values cost no objects.
TEXT = pd.StringDtype("pyarrow")


def text_series(values: list[str | None], index: pd.Index) -> pd.Series:
    """``values`` as an Arrow-backed string column (built by Arrow, much faster than pandas)."""
    array = pd.arrays.ArrowStringArray(pa.array(values, type=pa.large_string()))
    return pd.Series(array, index=index, copy=False)


def _category_series(values: list[Any], categories: list[Any], labels: list[str]) -> pd.Series:
    # A run's failed step and completed steps take few values, all known from the scorer's steps:
    # one byte per row, and the same categories in every batch so that batches concatenate.
    codes = {value: code for code, value in enumerate(categories)}
    codes[None] = -1
    return pd.Categorical.from_codes([codes[v] for v in values], categories=labels)


def scored_frame(outcomes: pd.Series, stages: list[str]) -> pd.DataFrame:
    """One row per run, the columns of ``SCORER_COLUMNS`` (see ``pipeline.scored_columns``).

    :param stages: the scorer's step stages in order, which fix the categories of
        ``failed_step`` (any stage, ``prepare_run`` or ``target``) and ``completed_steps``
        (a prefix of the stages, as JSON text).
    """
    index = outcomes.index
    columns = scored_columns(list(outcomes))
    failed = sorted({*stages, "prepare_run", "target"})
    prefixes = [tuple(stages[:n]) for n in range(len(stages) + 1)]
    frame = {
        "score": pd.Series(columns["score"], index=index, dtype="float64"),
        "failed_step": pd.Series(
            _category_series(columns["failed_step"], failed, failed), index=index
        ),
        "completed_steps": pd.Series(
            _category_series(
                columns["completed_steps"], prefixes, [json.dumps(p) for p in prefixes]
            ),
            index=index,
        ),
    }
    for column in ("reason", "error", "not_scorable", "steps", "judge"):
        frame[column] = text_series(columns[column], index)
    return pd.DataFrame(frame)[list(SCORER_COLUMNS)]
