"""A local run's batches: each one ``execute()`` of the eval graph up to ``batch_items``, handed on
in dataset order (the next beside the current one's last rows when items wait on calls:
``evaldag._eval.batches``), scored again for each further trial (``evaldag._eval.trials``),
saved to the checkpoint as it finishes, with ``on_item_complete``, ``on_error="raise"`` and
progress between batches. What they give, every item and turn, is an input of the verdict's
nodes. On a cluster the batches are the same, each ``execute()`` a task on a worker
(``evaldag._cluster``), as many running ahead as the cluster has room for."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pandas as pd
from hamilton import driver

from evaldag._cluster.batches import ClusterBatches
from evaldag._engine.concurrency import RowSlots
from evaldag._engine.targets import TargetFailure
from evaldag._eval.batches import batches, row_batches
from evaldag._eval.checkpoint import Checkpoint, ResultsDirectory, SavedBatch
from evaldag._eval.progress import ProgressBar
from evaldag._eval.rescoring import RESCORED, Rescoring, ordered_items
from evaldag._eval.telemetry import RunTelemetry
from evaldag._eval.trials import TrialRuns
from evaldag._graph.plan import EvalPlan, last_node
from evaldag._results.item_columns import ScorerColumns
from evaldag._util.event_loop import run_sync
from evaldag.errors import EvalDagError, OnItemCompleteError


def waits(plan: EvalPlan) -> bool:
    """Whether the run's items wait on calls: a target, judges or async steps."""
    return plan.target is not None or any(s.has_async_steps for s in plan.all_scorers)


@dataclass(frozen=True)
class ScoredItems:
    """Every item and turn of a local run's batches; and why the checkpoint stopped taking
    batches, if it did (the run went on without saving more)."""

    items: pd.DataFrame
    turns: pd.DataFrame | None
    checkpoint_error: EvalDagError | None = None


def scored_items(
    dr: driver.Driver,
    plan: EvalPlan,
    dataset: pd.DataFrame,
    fields: pd.DataFrame,
    *,
    inputs: dict[str, Any],
    batch_size: int,
    on_item_complete: Callable[..., Any] | None,
    on_error: str,
    progress: bool | None,
    checkpoint: Checkpoint | None,
    telemetry: RunTelemetry | None = None,
    cluster: ClusterBatches | None = None,
) -> ScoredItems:
    """Every batch of ``dataset`` through ``dr``, or as ``checkpoint`` saved it.

    :param fields: the run fields of ``dataset``'s rows, read before the run (``run_fields``).
    :param inputs: the graph's inputs that stay the same for every batch (``concurrency``, the
        judge cache, the target, ...).
    :param telemetry: the run's spans, when a tracer provider is configured: each batch's
        items are traced once scored.
    """
    wanted = ["batch_items", "outputs"]
    if on_item_complete is not None or on_error == "raise":
        wanted += [last_node(s) for s in plan.scorers]
    if plan.turn_specs:
        wanted.append("turn_items")
    if telemetry is not None:  # every scorer's and gate's runs, for their spans
        wanted += [node for node in telemetry.wanted if node not in wanted]
    rescoring = Rescoring(plan)
    repeated = None if plan.trials is None else TrialRuns(plan)
    stale: dict[int, SavedBatch] = {}  # saved batches with scorers to score again, by start
    saved_turns: dict[int, pd.DataFrame] = {}  # the turn rows of saved batches, by start

    def saved_items(start: int, rows: pd.DataFrame) -> pd.DataFrame | None:
        found = None if checkpoint is None else checkpoint.saved_batch(start, rows)
        if found is None or (found.stale and plan.workflow):  # a workflow's runs are not saved
            return None
        if found.stale:
            stale[start] = found
            return None
        if found.turns is not None:
            saved_turns[start] = found.turns
        return ordered_items(found.items, plan)

    def executed(start: int, rows: pd.DataFrame) -> dict[str, Any]:
        batch_inputs = {**inputs, "run_fields": fields.iloc[start : start + len(rows)]}
        if start in stale:
            values = rescoring.values(stale.pop(start), rows, batch_inputs, on_error == "raise")
        elif cluster is not None:
            values = cluster.values(rows, wanted, inputs, batch_inputs["run_fields"])
        else:
            values = dr.execute(wanted, inputs={"dataset": rows, **batch_inputs})
        if repeated is None:
            return values
        check = None if on_error == "record" else lambda v: raise_first_failure(v, plan, start)
        return repeated.values(values, rows, batch_inputs, check)

    item_batches: list[pd.DataFrame] = []
    turn_batches: list[pd.DataFrame] = []
    checkpoint_error = None
    bar = ProgressBar(len(dataset), enabled=progress)
    error_columns = [ScorerColumns(s.id).error for s in plan.all_scorers]
    scored = batches(
        row_batches(dataset, batch_size),
        executed,
        saved_items=saved_items,
        slots=RowSlots(inputs["concurrency"]) if waits(plan) and cluster is None else None,
        ahead=None if cluster is None else cluster.ahead,
    )
    try:
        for batch in scored:
            items: pd.DataFrame = batch.items  # a saved batch's; an executed one's below
            completed = None
            if batch.values is None and plan.turn_specs:
                turn_batches.append(saved_turns.pop(batch.start))
            if batch.values is not None:
                values = batch.values
                if on_error == "raise":
                    raise_first_failure(values, plan, completed=batch.start)
                items = values["batch_items"]
                turns = values["turn_items"] if plan.turn_specs else None
                if turns is not None:
                    turn_batches.append(turns)
                if checkpoint is not None and checkpoint_error is None:
                    try:
                        checkpoint.save(batch.start, batch.rows, items, turns)
                    except EvalDagError as error:  # a full disk: the run goes on without
                        checkpoint_error = error
                if telemetry is not None:
                    telemetry.batch_scored(batch.rows, values)
                if on_item_complete is not None and RESCORED not in values:
                    completed = completed_items(batch.rows, values, plan, inputs["data_columns"])
            item_batches.append(items)
            if on_item_complete is not None and completed is not None:
                kept = None if checkpoint_error else kept_in(checkpoint)
                called_back(on_item_complete, completed, items.index, item_batches, kept)
            errors = int(items[error_columns].notna().any(axis=1).sum())
            bar.advance(len(batch.rows), errors=errors)
    finally:
        scored.close()  # a batch run ahead stops with the run
        bar.close()
    return ScoredItems(
        items=pd.concat(item_batches) if len(item_batches) > 1 else item_batches[0],
        turns=pd.concat(turn_batches, ignore_index=True) if turn_batches else None,
        checkpoint_error=checkpoint_error,
    )


def kept_in(checkpoint: Checkpoint | None) -> str | None:
    """The option whose files keep a run's finished batches, as a user gave it."""
    if checkpoint is None:
        return None
    option = "out" if isinstance(checkpoint, ResultsDirectory) else "checkpoint"
    return f"{option}='{checkpoint.path}'"


def completed_items(
    batch: pd.DataFrame, values: dict[str, Any], plan: EvalPlan, data_columns: dict[str, str]
) -> list[tuple[dict[str, Any], Any, dict[str, Any]]]:
    """What ``on_item_complete`` gets for each item of ``batch``, in order: the item (under the
    data's names), its output (or the target's failure) and each scorer's result or error."""
    outcomes = {s.id: values[last_node(s)] for s in plan.scorers}
    outputs = values["outputs"]
    completed = []
    for label, row in batch.rename(columns=data_columns).iterrows():
        scorer_results = {
            sid: states[label].outcome() for sid, states in outcomes.items() if label in states
        }
        completed.append((row.to_dict(), outputs[label], scorer_results))
    return completed


def called_back(
    on_item_complete: Callable[..., Any],
    completed: list[tuple[dict[str, Any], Any, dict[str, Any]]],
    labels: pd.Index,
    scored: list[pd.DataFrame],
    kept: str | None,
) -> None:
    """``on_item_complete`` called with each item's arguments in turn (and awaited, when it is
    async). What it raises stops the run: an ``OnItemCompleteError`` naming the item (of
    ``labels``, in the order of ``completed``) and carrying the batches of items ``scored`` so
    far (this one's last), joined only then.

    :param kept: the option that keeps them on disk too (``checkpoint='run.parquet'``), if any.
    """
    for label, arguments in zip(labels, completed, strict=True):
        try:
            answer = on_item_complete(*arguments)
            if inspect.isawaitable(answer):
                run_sync(_awaited(answer))
        except Exception as error:
            raise _callback_error(error, label, arguments[0], pd.concat(scored), kept) from error


def _raised(error: Exception) -> str:
    """``KeyError: 'x'``, or the class alone for an error without text."""
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _callback_error(
    error: Exception, label: Any, item: dict[str, Any], scored: pd.DataFrame, kept: str | None
) -> OnItemCompleteError:
    named = f"item {label}" + (f" (id {item['id']!r})" if item.get("id") is not None else "")
    where = f"in {kept} and on this error" if kept else "on this error"
    rerun = (
        "run again with the same checkpoint: it scores only the rest (saved batches call no "
        "on_item_complete)"
        if kept
        else "run again (with checkpoint='run.parquet', a run stopped so resumes where it stopped)"
    )
    return OnItemCompleteError(
        f"on_item_complete raised {_raised(error)} on {named}. "
        f"The run stopped there, without a verdict; the {len(scored):,} items scored so far "
        f"are kept {where} (error.items). Fix the callback (or catch what it raises inside it "
        f"to let the run go on) and {rerun}",
        item=label,
        items=scored,
        cause=error,
        details={"item": str(label), "scoredItems": len(scored), "kept": kept},
    )


async def _awaited(value: Any) -> Any:
    return await value


def raise_first_failure(values: dict[str, Any], plan: EvalPlan, completed: int) -> None:
    """Mastra's fail-fast: the first target or scorer failure of the batch stops the run."""
    for label, output in values.get("outputs", {}).items():
        if isinstance(output, TargetFailure):
            raise EvalDagError(
                "RUN_EXPERIMENT_TARGET_FAILED_TO_GENERATE_RESULT",
                "Failed to run experiment: Error generating result from target "
                f"(item {label}): {output.message}",
                details={"item": str(label), "completedItems": completed},
            )
    for scorer in plan.scorers:
        for label, state in values.get(last_node(scorer), {}).items():
            if state.error is not None:
                raise EvalDagError(
                    "RUN_EXPERIMENT_SCORER_FAILED_TO_SCORE_RESULT",
                    f"Failed to run experiment: Error running scorer {scorer.id} (item "
                    f"{label}): {state.error.message}",
                    details={
                        "scorerId": scorer.id,
                        "item": str(label),
                        "completedItems": completed,
                    },
                    cause=state.error,
                )
