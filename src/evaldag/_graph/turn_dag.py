"""Conversations: each turn scored by its own gates and scorers, then results by turn index.

::

    target_runs, item_runs → turn_items   (each batch)
    turns → turn_results → verdict         (every turn: the batches' turn_items)

A conversation item's turns come from the data (``turn_specs``, by item label), so their gates
and scorers are not nodes of their own: ``turn_items`` runs each through the same engine stages
as the scorer nodes, grouped by scorer, and gives one row per turn (``item``, ``turn``, the
turn's ``input`` and ``output``, the item's ``run_id``, the ``thread_id`` and
``<id>.<column>`` per assertion). Where the target failed at a turn (a ``TargetFailure``), the
turns it completed before are scored all the same; the rest fail their assertions.
``turn_results`` averages every batch's (``turns``, an input as ``items`` is) per turn index
across items, with Mastra's gate and threshold rules (spec §6.7), through the nodes of
``verdict``.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
from hamilton.function_modifiers import config

from evaldag._engine.stages import advanced_states, prepared_states
from evaldag._graph import verdict
from evaldag._graph.plan import TurnSpecs
from evaldag._graph.scorer_dag import JudgeCacheSetting, scorer_items
from evaldag._judge.budget import JudgeBudget
from evaldag._results.eval_result import TurnResult
from evaldag._results.item_columns import SCORER_COLUMNS, TURN_COLUMNS, ScorerColumns
from evaldag._scorer.run import ScorerRun
from evaldag._scorer.steps import ScorerSpec


@config.when(has_turns=True)
def turn_items(
    dataset: pd.DataFrame,
    target_runs: pd.Series,
    item_runs: pd.Series,
    turn_specs: TurnSpecs,
    concurrency: int,
    judge_cache: JudgeCacheSetting = None,
    step_timeout: float | None = None,
    judge_budget: JudgeBudget | None = None,
) -> pd.DataFrame:
    """One row per turn of the batch's conversations; ``id`` is the item's, when the data has
    that column. Where the target failed at a turn, the turns before it are scored as in a
    conversation it held to the end; the failed turn and those it never reached fail every gate
    and scorer of theirs, naming the target's error. Turn scorers' judge calls spend the run's
    ``judge_budget`` as the item scorers' do."""
    rows: list[dict[str, Any]] = []
    # scorer object → [(row, run)]: one engine pass per scorer over all its turns
    scored: dict[int, tuple[ScorerSpec, list[tuple[int, ScorerRun]]]] = {}
    failures: dict[int, list[int]] = {}  # scorer object → rows of turns the target did not hold
    failed: dict[int, str] = {}  # row → why its conversation's target failed
    for label, specs in turn_specs.items():
        if label not in target_runs.index:  # an item of another batch
            continue
        produced, run = target_runs[label], item_runs[label]
        for number, spec in enumerate(specs):
            row = len(rows)
            if number < len(produced.turns):
                turn = produced.turns[number]
                turn_run = run.model_copy(update={"input": turn.input, "output": turn.output})
                for scorer in spec.assertions:
                    scored.setdefault(id(scorer), (scorer, []))[1].append((row, turn_run))
                turn_input, turn_output = turn.input, turn.output
            else:
                # A turn the target failed at or never reached fails each of its gates and
                # scorers: left out, a crashed conversation let the others pass them.
                failed[row] = (
                    "the target failed in this conversation: "
                    f"{produced.error_type}: {produced.message}"
                )
                for scorer in spec.assertions:
                    scored.setdefault(id(scorer), (scorer, []))
                    failures.setdefault(id(scorer), []).append(row)
                turn_input, turn_output = spec.input, None
            rows.append(
                {
                    "item": label,
                    "turn": number,
                    "input": turn_input,
                    "output": turn_output,
                    "run_id": run.run_id,
                    "thread_id": produced.thread_id,
                }
            )
    frame = pd.DataFrame(rows, columns=list(TURN_COLUMNS))
    if "id" in dataset.columns:
        frame.insert(1, "id", dataset["id"].reindex(frame["item"]).tolist())
    columns: dict[str, list[pd.DataFrame]] = {}
    for key, (scorer, placed) in scored.items():
        if key in failures:
            columns.setdefault(scorer.id, []).append(_failed_rows(failures[key], failed))
        if not placed:
            continue
        at, turn_runs = zip(*placed, strict=True)
        states = prepared_states(turn_runs, scorer, concurrency, step_timeout)
        for step in scorer.steps:
            states = advanced_states(
                states,
                scorer,
                step,
                concurrency,
                judge_cache,
                budget=judge_budget,
                step_timeout=step_timeout,
            )
        items = scorer_items(
            pd.Series(states, index=list(at), dtype=object),
            tuple(step.stage for step in scorer.steps),
        )
        columns.setdefault(scorer.id, []).append(items.astype(object))
    for sid, frames in columns.items():
        joined = pd.concat(frames).reindex(frame.index)
        for column in SCORER_COLUMNS:
            values = joined[column]
            # None for a missing text: a checkpoint's batch file writes an object column's
            # NA as the text "<NA>", which read back was an error
            frame[ScorerColumns(sid).column(column)] = (
                values.astype("float64")
                if column == "score"
                else values.astype(object).where(values.notna(), None)
            )
    return frame


def _failed_rows(at: list[int], why: dict[int, str]) -> pd.DataFrame:
    """The scorer columns of turns whose conversation's target failed: each an error, failed at
    the ``target`` step, as an item's scorers are (the trust check does not blame the scorer)."""
    failed = {"error": [why[row] for row in at], "failed_step": ["target"] * len(at)}
    return pd.DataFrame(
        {column: failed.get(column, [None] * len(at)) for column in SCORER_COLUMNS},
        index=at,
        dtype=object,
    )


@config.when(has_turns=True)
def turn_results(turns: pd.DataFrame, turn_specs: TurnSpecs) -> list[TurnResult]:
    """Per turn index, across items: each turn gate's and threshold's result and each turn
    scorer's average."""
    results = []
    depth = max((len(specs) for specs in turn_specs.values()), default=0)
    for index in range(depth):
        at_index = [specs[index] for specs in turn_specs.values() if len(specs) > index]
        rows = turns[turns["turn"] == index]
        gate_ids = _ordered(gate.id for spec in at_index for gate in spec.gates)
        scorer_ids = _ordered(scorer.id for spec in at_index for scorer in spec.scorers)
        thresholds = {sid: t for spec in at_index for sid, t in spec.thresholds.items()}
        averages = {
            sid: verdict.average(rows, sid, errors_score_zero=sid in gate_ids)
            for sid in (*scorer_ids, *gate_ids)
        }
        results.append(
            TurnResult(
                index=index,
                gate_results=[verdict.gate_result(averages[gid], gid) for gid in gate_ids],
                threshold_results=[
                    verdict.threshold_result(averages[sid], sid, threshold)
                    for sid, threshold in thresholds.items()
                ],
                scores={
                    sid: averages[sid].mean for sid in scorer_ids if averages[sid].mean is not None
                },
            )
        )
    return results


def _ordered(ids: Any) -> list[str]:
    return list(dict.fromkeys(ids))
