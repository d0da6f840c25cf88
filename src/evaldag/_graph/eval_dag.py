"""The eval as one Hamilton DAG: each batch of rows through every scorer, then all items
through the verdict.

::

    run_fields → read_outputs → item_runs → runs → <scorer id>.prepared_run → … → <scorer id> ┐
    dataset → outputs ──────────────────────────────────── … every scorer and gate … ─┴→ batch_items

    items → <id>.average → … → verdict → eval_result

``dataset`` is one batch of rows as the data gives them, ``run_fields`` the fields of their runs
as read before the run (``run_evals`` reads each item's once, checking it); ``run_evals``
executes the graph up to ``batch_items`` per batch, then the verdict's nodes once, with
``items`` (every batch's items) as an input; on a Dask or Ray cluster (``evaldag._cluster``)
a batch's ``execute()`` runs on a worker. The scorers' nodes are in ``scorer_dag``; averages,
gates, thresholds and the verdict in ``verdict``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pandas as pd
from hamilton.function_modifiers import ResolveAt, config, group, inject, resolve, source, value

from evaldag._engine.columns import TEXT
from evaldag._engine.targets import TargetFailure, TargetRun, empty_answer, no_answer
from evaldag._graph.plan import RUNS, EvalPlan, step_runs_node
from evaldag._reader import python_data
from evaldag._results.item_columns import SCORER_COLUMNS, ScorerColumns
from evaldag._scorer.run import read_run, run_field
from evaldag._util.gc_pause import gc_paused
from evaldag.errors import EvalDagError


@config.when(has_target=False)
def outputs__data(dataset: pd.DataFrame) -> pd.Series:
    """Each item's output, as the data gives it."""
    return dataset["output"]


@config.when(has_target=False)
def read_outputs__data(run_fields: pd.DataFrame) -> pd.Series:
    """Each item's output as its run holds it, read before the run (``run_fields``)."""
    return run_fields["output"]


@config.when(has_target=True)
def read_outputs__target(target_runs: pd.Series) -> pd.Series:
    """Each item's output as the target produced it, read as its run holds it (a transcript in
    Mastra's shape); the TargetFailure it raised, or one when it is no text or transcript
    evaldag reads."""
    return pd.Series(
        [r if isinstance(r, TargetFailure) else _read_output(r) for r in target_runs],
        index=target_runs.index,
        dtype=object,
    )


def _read_output(run: TargetRun) -> Any:
    if run.turns:  # a conversation's: each turn's messages were read as the turn ended
        return run.output
    try:
        read = run_field("output", run.output)
    except EvalDagError as error:
        return TargetFailure(
            f"the target returned an output evaldag cannot read: {error.message}", "EvalDagError"
        )
    if empty := empty_answer(read):  # a workflow's nodes still ran: they are scored
        return TargetFailure(no_answer(empty), "ValueError", run.steps, run.trajectory)
    return read


@config.when(has_target=True)
def outputs__target(target_runs: pd.Series, read_outputs: pd.Series) -> pd.Series:
    """Each item's output as the target produced it (numpy and Arrow values in it as Python
    data), or the TargetFailure it raised or that reading it gave."""
    return pd.Series(
        [
            failure if isinstance(failure := read, TargetFailure) else python_data(r.output)
            for r, read in zip(target_runs, read_outputs, strict=True)
        ],
        index=target_runs.index,
        dtype=object,
    )


def item_runs(
    dataset: pd.DataFrame, run_fields: pd.DataFrame, read_outputs: pd.Series
) -> pd.Series:
    """One ScorerRun per item, of its fields as read before the run and its output as read,
    with a fresh run_id (or the one a ``run_id`` column gives: an item of a checkpoint scored
    again keeps its own); an item the target failed on has no output (a workflow's step and
    trajectory scorers score what ran before the failure)."""
    names = [field for field in run_fields.columns if field != "output"]
    columns = [run_fields[field].tolist() for field in names]
    values = []
    ids = iter(dataset["run_id"].tolist()) if "run_id" in dataset else _run_ids(len(dataset))
    with gc_paused():
        for output, *cells in zip(read_outputs.tolist(), *columns, strict=True):
            fields = dict(zip(names, cells, strict=True))
            fields["output"] = None if isinstance(output, TargetFailure) else output
            fields["run_id"] = next(ids)
            values.append(read_run(fields))
    return pd.Series(values, index=dataset.index, dtype=object)


def runs(item_runs: pd.Series, outputs: pd.Series) -> pd.Series:
    """The runs of the items the target did not fail on: what the scorers score."""
    kept = [not isinstance(output, TargetFailure) for output in outputs.tolist()]
    return item_runs if all(kept) else item_runs[kept]


def _run_ids(count: int) -> Iterator[str]:
    """``count`` random version-4 UUID strings, from one read of the OS's random source."""
    random = os.urandom(16 * count)
    for start in range(0, 16 * count, 16):
        h = random[start : start + 16].hex()
        variant = "89ab"[int(h[16], 16) & 3]
        yield f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{variant}{h[17:20]}-{h[20:]}"


def _scorer_frames(plan: EvalPlan) -> inject:
    frames = {s.id: source(s.id) for s in plan.all_scorers}
    # group() of nothing is an error: a run scored only by its conversations' turns has none.
    return inject(
        scored=group(**frames) if frames else value({}),
        from_target=value(plan.target is not None),
        reads=value({s.id: plan.runs_of(s) for s in plan.all_scorers}),
    )


def _fails_with_target(failure: TargetFailure | None, reads: str) -> bool:
    """Whether the target's failure on an item fails a scorer reading the runs ``reads``: every
    scorer, except, where a workflow failed at a node, its trajectory scorers and the step
    scorers of the nodes that completed. The step scorers of the failed node and of the nodes
    that never ran fail: a step the pipeline did not reach was not checked."""
    if failure is None:
        return False
    if failure.trajectory is None or reads == RUNS:
        return True
    if not reads.startswith("steps."):
        return False  # a trajectory scorer: the path up to the failure
    return not any(
        reads == step_runs_node(name) and step.status == "success"
        for name, step in failure.steps.items()
    )


@resolve(when=ResolveAt.CONFIG_AVAILABLE, decorate_with=_scorer_frames)
def batch_items(
    dataset: pd.DataFrame,
    outputs: pd.Series,
    item_runs: pd.Series,
    scored: dict[str, pd.DataFrame],
    from_target: bool,
    reads: dict[str, str],
) -> pd.DataFrame:
    """One row per item of the batch: its columns, the output, every scorer's columns."""
    index = dataset.index
    columns: dict[str, Any] = {column: dataset[column] for column in dataset.columns}
    failures = [o if isinstance(o, TargetFailure) else None for o in outputs]
    failed = pd.Series([f is not None for f in failures], index=index)
    if from_target:
        columns["output"] = pd.Series(
            [None if f else o for f, o in zip(failures, outputs, strict=True)],
            index=index,
            dtype=object,
        )
        columns["target_error"] = pd.Series(
            [f and f"{f.error_type}: {f.message}" for f in failures], index=index, dtype=TEXT
        )
    skipped = pd.Series(
        [f and f"target failed: {f.message}" for f in failures], index=index, dtype=TEXT
    )
    columns["run_id"] = pd.Series([run.run_id for run in item_runs], index=index, dtype=TEXT)
    for sid, frame in scored.items():
        frame, own = frame.reindex(index), ScorerColumns(sid)
        for column in SCORER_COLUMNS:
            columns[own.column(column)] = frame[column]
        if failed.any():
            hit = pd.Series([_fails_with_target(f, reads[sid]) for f in failures], index=index)
            columns[own.error] = frame["error"].where(~hit, skipped)
            columns[own.failed_step] = frame["failed_step"].where(~hit, "target")
    return pd.DataFrame(columns, index=dataset.index)
