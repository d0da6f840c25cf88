"""An eval result as score rows (one per item and scorer, and per conversation turn and turn
scorer, ``source="TEST"``) and back.

A row carries what the item's scorer columns hold; the item's other data columns ride in
``metadata["data"]`` and its position in ``metadata["item"]``, so that a stored experiment
reads back as an ``EvalResult`` the report draws. The request context is stored as Mastra
stores it, as a snapshot (primitives under dotted keys).
"""

from __future__ import annotations

import json
import math
from typing import Any

import pandas as pd

from evaldag._compat.js import json_text
from evaldag._engine.run_state import RESULT_KEYS
from evaldag._io.parquet import column_name
from evaldag._reader import is_foreign, plain_data
from evaldag._results.eval_result import EvalResult
from evaldag._results.item_columns import SCORER_COLUMNS, ScorerColumns, scorer_ids
from evaldag._store.rows import ScoreRow, request_context_snapshot
from evaldag._store.values import loaded_json, stored_json
from evaldag.errors import EvalDagError

#: Item columns that map onto row fields; the others are kept in ``metadata["data"]``.
_RUN_COLUMNS = ("run_id", "input", "output", "ground_truth", "request_context")
_PROMPT_KEYS = tuple(f"{stage}_prompt" for stage in ("preprocess", "analyze", "generate_score"))
_DEFAULT_ENTITY = "dataset"


def result_rows(result: EvalResult, *, entity: str | None = None) -> list[ScoreRow]:
    """One TEST row per item and scorer (gates included) of ``result``.

    :param entity: what produced the outputs, e.g. the target's name (default ``"dataset"``,
        the outputs being the data's).
    """
    rows = item_rows(result.canonical_items(), result.scorers, result.experiment_id, entity)
    return rows + _turn_score_rows(result, entity or _DEFAULT_ENTITY)


def item_rows(
    items: pd.DataFrame,
    scorers: list[dict[str, Any]],
    experiment_id: str | None,
    entity: str | None = None,
    first: int = 0,
) -> list[ScoreRow]:
    """One TEST row per item of ``items`` and scorer, as :func:`result_rows` gives a run's: the
    rows of a run saved in pieces (a streamed run's parts) are those of the whole run.

    :param items: the items, their run fields under evaldag's names (``canonical_items``).
    :param scorers: the run's scorer and gate definitions (``EvalResult.scorers``).
    :param first: the run's position of the first item.
    """
    name = entity or _DEFAULT_ENTITY
    scorer_ids = [definition["id"] for definition in scorers]
    records = {definition["id"]: _scorer_record(definition) for definition in scorers}
    own = {c for sid in scorer_ids for c in (*ScorerColumns(sid).all, *ScorerColumns(sid).trials)}
    data_columns = [c for c in items.columns if c not in own and c not in _RUN_COLUMNS]
    rows = []
    for position, item in enumerate(items.to_dict("records"), start=first):
        shared = _run_fields(item)
        metadata = {"item": position, "data": {c: _cell(item[c]) for c in data_columns}}
        for sid in scorer_ids:
            rows.append(
                ScoreRow(
                    id=_row_id(experiment_id, position, sid),
                    scorer_id=sid,
                    entity_id=name,
                    entity={"id": name, "name": name},
                    scorer=records[sid],
                    source="TEST",
                    experiment_id=experiment_id,
                    metadata={**metadata, **_trials_record(item, sid)},
                    trace_id=_text(item.get("trace_id")),
                    span_id=_text(item.get("span_id")),
                    **shared,
                    **_scorer_fields(item, sid),
                )
            )
    return rows


def _text(value: Any) -> str | None:
    """A trace or span id of an item (``read_traces`` gives them), as Mastra's rows keep it."""
    return value if isinstance(value, str) and value else None


def _turn_score_rows(result: EvalResult, entity: str) -> list[ScoreRow]:
    """One TEST row per turn of a conversation and turn scorer or gate that ran on it, as
    Mastra saves them (``metadata.turnIndex``); ``metadata.item`` is the conversation's
    position."""
    turns = result.turns
    if turns is None or turns.empty:
        return []
    positions = {label: position for position, label in enumerate(result.items.index)}
    gates = {(t.index, g.id) for t in result.turn_results for g in t.gate_results}
    turn_scorers = scorer_ids(turns.columns)
    rows = []
    for turn in turns.to_dict("records"):
        position, index = positions[turn["item"]], int(turn["turn"])
        for sid in turn_scorers:
            fields = _scorer_fields(turn, sid)
            if fields["completed_steps"] is None and fields["error"] is None:
                continue  # not a scorer of this turn
            role = "gate" if (index, sid) in gates else "scorer"
            rows.append(
                ScoreRow(
                    id=_row_id(result.experiment_id, position, f"turn{index}:{sid}"),
                    scorer_id=sid,
                    entity_id=entity,
                    entity={"id": entity, "name": entity},
                    scorer=_scorer_record({"id": sid, "role": role}),
                    source="TEST",
                    experiment_id=result.experiment_id,
                    metadata={"item": position, "turnIndex": index},
                    thread_id=_cell(turn.get("thread_id")),
                    **_run_fields(turn),
                    **fields,
                )
            )
    return rows


def result_from_rows(rows: pd.DataFrame, stored: dict[str, Any]) -> EvalResult:
    """The ``EvalResult`` an experiment's rows and its stored summary (``experiment_record``)
    make; the items in their original order."""
    columns = stored["item_columns"]
    names = {str(column): column for column in columns}  # a data column's name, as JSON's key
    items: dict[Any, dict[str, Any]] = {}
    turns: dict[tuple[Any, Any], dict[str, Any]] = {}
    for row in rows.to_dict("records"):
        metadata = row["metadata"] or {}
        if "turnIndex" in metadata:
            key = (metadata.get("item"), metadata["turnIndex"])
            turn = turns.setdefault(
                key,
                {"item": key[0], "turn": key[1], "input": row["input"], "output": row["output"],
                 "run_id": row["run_id"], "thread_id": row["thread_id"]},
            )  # fmt: skip
            turn.update(_item_columns(row))
            continue
        item = items.get(metadata.get("item"))
        if item is None:
            context = row["additional_context"] or {}
            item = items[metadata.get("item")] = {
                "run_id": row["run_id"],
                "input": row["input"],
                "output": row["output"],
                "ground_truth": context.get("groundTruth"),
                "request_context": row["request_context"],
                **{names.get(k, k): v for k, v in (metadata.get("data") or {}).items()},
            }
        item.update(_item_columns(row))
    renamed = stored["result"].get("columns") or {}  # the data's names of the run fields
    frame = pd.DataFrame([items[key] for key in sorted(items)]).rename(columns=renamed)
    frame = frame.reindex(columns=columns)
    turn_columns = stored.get("turn_columns")
    turn_frame = None
    if turns and turn_columns:
        turn_frame = pd.DataFrame([turns[key] for key in sorted(turns)])
        if "id" in turn_columns and "id" in frame.columns:
            turn_frame["id"] = frame["id"].iloc[turn_frame["item"]].to_numpy()
        turn_frame = turn_frame.reindex(columns=turn_columns)
    return EvalResult.model_validate({**stored["result"], "items": frame, "turns": turn_frame})


def experiment_record(result: EvalResult) -> dict[str, Any]:
    """What the store keeps of a result besides its rows: everything but its frames (the items,
    which the rows hold), and the items' column names in order."""
    frames = {name for name, value in result if isinstance(value, pd.DataFrame)}
    metadata = loaded_json(stored_json(result.model_dump(exclude=frames)))
    record = {"result": metadata, "item_columns": [column_name(c) for c in result.items.columns]}
    if result.turns is not None:
        record["turn_columns"] = [str(c) for c in result.turns.columns]
    return record


def entity_name(target: Any) -> str:
    """What produced an eval's outputs: the target's name (a function's qualified name, a model
    string), or ``"dataset"`` when the outputs came with the data."""
    if target is None:
        return _DEFAULT_ENTITY
    if isinstance(target, str):
        return target
    return getattr(target, "__qualname__", type(target).__name__)


def _row_id(experiment_id: str | None, position: int, scorer_id: str) -> str:
    # Deterministic: saving the same run twice replaces its rows. Ids never hold ':'.
    if experiment_id is None:
        return f"{position}:{scorer_id}"
    return f"{experiment_id}:{position}:{scorer_id}"


def _scorer_record(definition: dict[str, Any]) -> dict[str, Any]:
    """Mastra's ``scorer`` field: ``{id, name, description, hasJudge}``, and the scorer's role."""
    return {
        "id": definition["id"],
        "name": definition.get("name") or definition["id"],
        "description": definition.get("description") or "",
        "hasJudge": any(step.get("type") == "prompt" for step in definition.get("steps", [])),
        "role": definition.get("role", "scorer"),
    }


def _run_fields(item: dict[str, Any]) -> dict[str, Any]:
    ground_truth = _cell(item.get("ground_truth"))
    run_id = _cell(item.get("run_id"))
    return {
        "run_id": None if run_id is None else str(run_id),
        "input": _cell(item.get("input")),
        "output": _cell(item.get("output")),
        "additional_context": None if ground_truth is None else {"groundTruth": ground_truth},
        "request_context": request_context_snapshot(_cell(item.get("request_context"))) or None,
    }


def _scorer_fields(item: dict[str, Any], scorer_id: str) -> dict[str, Any]:
    """A row's score fields from an item's ``<scorer_id>.*`` columns."""
    own = ScorerColumns(scorer_id)
    cell = {column: _cell(item.get(own.column(column))) for column in SCORER_COLUMNS}
    steps = _decoded(cell["steps"]) or {}
    return {
        "score": cell["score"],
        "reason": cell["reason"],
        "error": cell["error"],
        "failed_step": cell["failed_step"],
        "completed_steps": _decoded(cell["completed_steps"]),
        "not_scorable": _decoded(cell["not_scorable"]),
        "judge": _decoded(cell["judge"]),
        **{key: steps.get(key) for key in (*RESULT_KEYS, *_PROMPT_KEYS)},
    }


def _trials_record(item: dict[str, Any], scorer_id: str) -> dict[str, Any]:
    """A repeated scorer's trials (``run_evals(trials=N)``) for its row's ``metadata.trials``:
    each trial's score by its index (from 0), their mean, spread and flips; none for a scorer
    scored once."""
    own = ScorerColumns(scorer_id)
    if own.trial_scores not in item:
        return {}
    scores = _cell(item[own.trial_scores]) or []
    return {
        "trials": {
            "scores": [{"trial": index, "score": score} for index, score in enumerate(scores)],
            "mean": _cell(item[own.trial_mean]),
            "spread": _cell(item[own.trial_spread]),
            "flips": _cell(item[own.trial_flips]),
        }
    }


def _trial_columns(row: dict[str, Any]) -> dict[str, Any]:
    """An item's trial columns from its row's ``metadata.trials`` (none for a scorer scored
    once)."""
    trials = (row["metadata"] or {}).get("trials")
    if trials is None:
        return {}
    own = ScorerColumns(row["scorer_id"])
    spread, mean = trials["spread"], trials["mean"]
    return {
        own.trial_scores: [entry["score"] for entry in trials["scores"]],
        own.trial_mean: math.nan if mean is None else mean,
        own.trial_spread: math.nan if spread is None else spread,
        own.trial_flips: trials["flips"],
    }


def _item_columns(row: dict[str, Any]) -> dict[str, Any]:
    """An item's ``<scorer_id>.*`` columns from a row, as ``run_evals`` writes them."""
    own = ScorerColumns(row["scorer_id"])
    steps = {key: row[key] for key in (*RESULT_KEYS, *_PROMPT_KEYS) if row[key] is not None}
    score = row["score"]
    return {
        **_trial_columns(row),
        own.score: math.nan if score is None else score,
        own.reason: row["reason"],
        own.error: row["error"],
        own.failed_step: row["failed_step"],
        own.completed_steps: _steps_text(row["completed_steps"]),
        own.not_scorable: json_text(row["not_scorable"]),
        own.steps: json_text(steps) if steps else None,
        own.judge: json_text(row["judge"]),
    }


def _steps_text(steps: list[str] | None) -> str | None:
    # As run_evals writes its categories: json.dumps' spacing.
    return None if steps is None else json.dumps(steps)


def _cell(value: Any) -> Any:
    """A DataFrame cell as plain Python data: a missing marker (NaN, NA) becomes None; inside a
    list or dict every value is kept, NaN and None included."""
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return None
    return plain_data(value) if is_foreign(value) else value


def _decoded(value: Any) -> Any:
    """A JSON-text cell's value (cells read back from Parquet may already be decoded)."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError as error:
        raise EvalDagError(
            "EVALDAG_STORE_INVALID_CELL",
            f"An item cell holds text that is not JSON: {value[:80]!r}",
            domain="STORAGE",
            category="SYSTEM",
            cause=error,
        ) from error
