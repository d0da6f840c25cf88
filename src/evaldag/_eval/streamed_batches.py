"""A streamed run's batches: Parquet data (a file, a directory, a glob, an fsspec URL) read row
group by row group where each batch runs, on a worker of a cluster or here.

The client plans the batches from the files' metadata (``evaldag._io.parquet_data``) and hands
them on in dataset order, as a local run does. Each batch reads its rows, checks them as
``run_evals`` checks data (``evaldag._eval.preflight``: a bad row stops the run when its batch
is read, naming the row), goes through the eval graph and, when the results go to a directory,
writes its part there (``evaldag._eval.checkpoint.ResultsDirectory``), or takes the part an
earlier run wrote if it still holds what this run would write. What it gives back is the
batch's items, or only the columns the verdict reads (:func:`verdict_columns`) when its part
holds the rest: then the client holds nothing of the data. With ``on_item_complete``, a batch
scored also gives back what the client calls it with for each item (as a local run does,
after the batch's part is written; a part taken from an earlier run calls it for none, as a
checkpoint's saved batches do). With ``store=`` beside the directory, the client saves each
part's rows as the batch is handed on (``evaldag._eval.stored_parts``).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import pandas as pd

from evaldag._cluster.batches import ClusterBatches, PreparedRun
from evaldag._engine.concurrency import RowSlots
from evaldag._eval.batches import batches
from evaldag._eval.checkpoint import ResultsDirectory
from evaldag._eval.dataset import arrow_frame
from evaldag._eval.local_batches import (
    ScoredItems,
    called_back,
    completed_items,
    kept_in,
    raise_first_failure,
    waits,
)
from evaldag._eval.preflight import checked_data
from evaldag._eval.progress import ProgressBar
from evaldag._eval.stored_parts import StoredParts
from evaldag._eval.trials import TrialRuns
from evaldag._graph.plan import EvalPlan
from evaldag._io.parquet import is_results_directory
from evaldag._io.parquet_data import (
    ParquetBatches,
    RowGroupBatch,
    batch_rows,
    is_parquet_location,
    parquet_batches,
)
from evaldag._results.item_columns import ScorerColumns
from evaldag._util.credentials import location_without_credentials
from evaldag.errors import EvalDagError


def verdict_columns(plan: EvalPlan) -> tuple[str, ...]:
    """The item columns the verdict's nodes (and the check that the run measured anything) read:
    each scorer's and gate's score, error, failed step, not-scorable mark and judge records (and
    its trials' columns), the target's error and output (its model calls)."""
    columns: list[str] = []
    for scorer in plan.all_scorers:
        own = ScorerColumns(scorer.id)
        columns += [own.score, own.error, own.failed_step, own.not_scorable, own.judge]
        if plan.trials is not None and plan.trials.repeats(scorer.id):
            columns += own.trials
    if plan.target is not None:
        columns += ["output", "target_error"]
    return tuple(columns)


@dataclass(frozen=True)
class StreamSettings:
    """What every batch of a streamed run gets besides the graph's inputs.

    :param columns: run field → the data's column holding it (``columns=``).
    :param kept: the item columns a batch gives back; None for all of them.
    :param directory: where the batches' parts go (``out=`` a directory), if anywhere.
    :param raise_errors: ``on_error="raise"``: a batch's first failure stops the run.
    :param completions: ``on_item_complete`` is given: a batch scored gives back its items'
        arguments.
    """

    columns: dict[str, str]
    kept: tuple[str, ...] | None
    directory: ResultsDirectory | None
    raise_errors: bool
    completions: bool = False


@dataclass(frozen=True)
class StreamedBatch:
    """What a batch gives back: its items (the columns kept) and, when it was scored and
    ``on_item_complete`` is given, what that gets for each item (``completed_items``); or the
    error that stops the run (a bad row, the first failure with ``on_error="raise"``)."""

    items: pd.DataFrame | None
    error: EvalDagError | None = None
    completed: list[tuple[dict[str, Any], Any, dict[str, Any]]] | None = None


def _kept(items: pd.DataFrame, kept: tuple[str, ...] | None) -> pd.DataFrame:
    return items if kept is None else items[[c for c in kept if c in items.columns]]


def streamed_batch(
    run: PreparedRun, batch: RowGroupBatch, number: int, settings: StreamSettings
) -> StreamedBatch:
    """Batch ``number`` read from its row groups, checked, scored (or taken from its part, when
    an earlier run wrote it with this data, target and scorers) and written to its part."""
    try:
        rows = arrow_frame(batch_rows(batch))
        rows.index = pd.RangeIndex(batch.start, batch.start + batch.rows)
        dataset, fields, plan = checked_data(rows, run.plan, settings.columns)
        if plan.turn_specs:
            raise conversations_refused()
        directory = settings.directory
        if directory is not None:
            saved = directory.saved_part(number, batch.start, dataset)
            if saved is not None and not saved.stale:  # a stale part is scored again whole
                return StreamedBatch(_kept(saved.items, settings.kept))
        inputs = {"run_fields": fields, **run.inputs}
        values = run.driver.execute(run.wanted, inputs={"dataset": dataset, **inputs})
        if settings.raise_errors:
            raise_first_failure(values, plan, completed=batch.start)
        if plan.trials is not None:  # scored here too: the client holds no rows
            check = partial(raise_first_failure, plan=plan, completed=batch.start)
            values = _trial_runs(run).values(
                values, dataset, inputs, check if settings.raise_errors else None
            )
        items = values["batch_items"]
        if directory is not None:
            directory.save_part(number, dataset, items)
        completed = None
        if settings.completions:
            completed = completed_items(dataset, values, plan, settings.columns)
    except EvalDagError as error:  # raised by the client, as it is (a cluster would wrap it)
        return StreamedBatch(None, error)
    return StreamedBatch(_kept(items, settings.kept), completed=completed)


def _trial_runs(run: PreparedRun) -> TrialRuns:
    """The run's further trials, their drivers built by the first batch that runs here."""
    trial_runs = run.built.get("trials")
    if trial_runs is None:  # two batches at once may both build it: the same runs
        trial_runs = run.built.setdefault("trials", TrialRuns(run.plan))
    return trial_runs


def conversations_refused() -> EvalDagError:
    return EvalDagError(
        "INVALID_DATA",
        "Streamed Parquet data cannot hold conversations ('inputs' or 'turns' items): their "
        "turns are planned over the whole dataset before the run; give them as a DataFrame, a "
        ".jsonl file or a single .parquet file without executor= and out= a directory",
    )


def streamed_items(
    run: PreparedRun,
    data: ParquetBatches,
    settings: StreamSettings,
    *,
    progress: bool | None,
    cluster: ClusterBatches | None,
    on_item_complete: Callable[..., Any] | None = None,
    stored: StoredParts | None = None,
) -> ScoredItems:
    """Every batch of ``data``, each read and scored where it runs (on a worker of ``cluster``,
    or here), handed on in order; the items they give back. As each is handed on, its part's
    rows go to the store (``stored``), then its items to ``on_item_complete``."""

    def executed(start: int, piece: tuple[int, RowGroupBatch]) -> StreamedBatch:
        number, batch = piece
        if cluster is None:
            return streamed_batch(run, batch, number, settings)
        return cluster.run(streamed_batch, run.wanted, run.inputs, batch, number, settings)

    item_batches: list[pd.DataFrame] = []
    bar = ProgressBar(data.total_rows, enabled=progress)
    error_columns = [ScorerColumns(s.id).error for s in run.plan.all_scorers]
    local_slots = waits(run.plan) and cluster is None
    scored = batches(
        ((batch.start, (number, batch)) for number, batch in enumerate(data.batches)),
        executed,
        slots=RowSlots(run.inputs["concurrency"]) if local_slots else None,
        ahead=None if cluster is None else cluster.ahead,
    )
    try:
        for handed in scored:
            got: StreamedBatch = handed.values
            if got.error is not None:
                raise got.error
            assert got.items is not None
            number, batch = handed.rows
            if stored is not None:
                stored.save(number, batch.start)
            item_batches.append(got.items)
            if on_item_complete is not None and got.completed is not None:
                kept = kept_in(settings.directory)
                called_back(on_item_complete, got.completed, got.items.index, item_batches, kept)
            errors = int(got.items[error_columns].notna().any(axis=1).sum())
            bar.advance(len(got.items), errors=errors)
    finally:
        scored.close()  # a batch run ahead stops with the run
        bar.close()
    return ScoredItems(items=pd.concat(item_batches), turns=None)


def streams(data: Any, executor: Any, out: str | os.PathLike[str] | None) -> bool:
    """Whether ``run_evals`` reads ``data`` batch by batch where each batch runs: Parquet data
    named by a directory, a glob or a URL; a single local file when a cluster reads it
    (``executor=``) or the results go to a directory (a run that holds none of its data)."""
    if not is_parquet_location(data):
        return False
    local_file = "://" not in os.fspath(data) and os.path.isfile(data)
    return not local_file or executor is not None or (out is not None and is_results_directory(out))


def streamed_data(
    data: str | os.PathLike[str], plan: EvalPlan, columns: dict[str, str], batch_size: int
) -> tuple[ParquetBatches, EvalPlan]:
    """The batches of ``data`` planned from its files' metadata, and ``plan`` as the first row
    checks it (every column the scorers read is there: a later row is checked in its batch)."""
    planned = parquet_batches(data, batch_size)
    if not planned.total_rows:
        shown = location_without_credentials(planned.location)
        raise EvalDagError(
            "RUN_EXPERIMENT_FAILED_NO_DATA_PROVIDED",
            f"Failed to run experiment: Data array is empty (no rows in '{shown}')",
        )
    first = planned.batches[0]
    head = arrow_frame(batch_rows(dataclasses.replace(first, rows=1)))
    _, _, plan = checked_data(head, plan, columns)
    if plan.turn_specs:
        raise conversations_refused()
    return planned, plan


def require_streamable(*, checkpoint: Any) -> None:
    """The options a streamed run cannot take, refused with why and what to do instead."""
    if checkpoint is not None:
        raise EvalDagError(
            "INVALID_STREAMED_RUN",
            "Parquet data read in batches (a directory, a glob, a URL, or a file on a cluster or "
            "with out= a directory): checkpoint= resumes from one file of results; give out= a "
            "directory instead: a streamed run resumes from the parts written there",
        )
