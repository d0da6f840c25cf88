"""The eval as one Hamilton DAG: data → outputs → runs → every scorer → items.

::

    dataset → outputs → runs → <scorer id>.prepared_run → … → <scorer id> ┐
                                                                          ├→ batch_items → items
                         … every scorer and gate …                        ┘

``dataset`` is one batch of rows: ``run_evals`` executes the graph up to ``batch_items`` per
batch and sets ``items`` to their concatenation; with a Dask or Ray executor (``distributed``),
``dataset`` is a ``Parallelizable`` of batches and ``items`` collects them. The scorers' nodes
are in ``scorer_dag``; averages, gates, thresholds and the verdict in ``verdict``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pandas as pd
from hamilton.function_modifiers import ResolveAt, config, group, inject, resolve, source, value
from hamilton.htypes import Collect, Parallelizable

from evaldag._engine.columns import TEXT
from evaldag._engine.concurrency import gc_paused
from evaldag._engine.targets import TargetFailure
from evaldag._graph.plan import RUNS, EvalPlan, step_runs_node
from evaldag._reader import looks_like_json, python_data, read_transcript
from evaldag._results.item_columns import SCORER_COLUMNS, ScorerColumns
from evaldag._scorer.run import ScorerRun
from evaldag.errors import EvalDagError

#: Dataset columns a run reads beside input and output; other columns are carried through.
_RUN_FIELDS = ("ground_truth", "request_context", "expected_trajectory")


@config.when(has_target=False)
def outputs__data(dataset: pd.DataFrame) -> pd.Series:
    """Each item's output, as the data gives it."""
    return dataset["output"]


@config.when(has_target=True)
def outputs__target(target_runs: pd.Series) -> pd.Series:
    """Each item's output as the target produced it, or the TargetFailure it raised."""
    return pd.Series(
        [r if isinstance(r, TargetFailure) else _readable(r.output) for r in target_runs],
        index=target_runs.index,
        dtype=object,
    )


def _readable(output: Any) -> Any:
    """A target's output (numpy and Arrow values in it as Python data), or a TargetFailure when
    it is no text or transcript evaldag reads."""
    if isinstance(output, TargetFailure) or (type(output) is str and not looks_like_json(output)):
        return output
    try:
        read_transcript(output, "output")
    except EvalDagError as error:
        return TargetFailure(
            f"the target returned an output evaldag cannot read: {error.message}", "EvalDagError"
        )
    return python_data(output)


def _read_columns(plan: EvalPlan) -> inject:
    return inject(read_columns=value(plan.read_columns))


@resolve(when=ResolveAt.CONFIG_AVAILABLE, decorate_with=_read_columns)
def item_runs(dataset: pd.DataFrame, outputs: pd.Series, read_columns: list[str]) -> pd.Series:
    """One ScorerRun per item, with a fresh run_id (or the one a ``run_id`` column gives: an item
    of a checkpoint scored again keeps its own) and the dataset columns the scorers read; an
    item the target failed on has no output (a workflow's step and trajectory scorers score
    what ran before the failure)."""
    present = [field for field in (*_RUN_FIELDS, *read_columns) if field in dataset.columns]
    columns = [dataset[field].tolist() for field in present]
    values = []
    ids = iter(dataset["run_id"].tolist()) if "run_id" in dataset else _run_ids(len(dataset))
    with gc_paused():
        for input, output, *cells in zip(
            dataset["input"].tolist(), outputs.tolist(), *columns, strict=True
        ):
            fields = {field: _cell(cell) for field, cell in zip(present, cells, strict=True)}
            if isinstance(output, TargetFailure):
                output = None
            values.append(ScorerRun(input=input, output=output, run_id=next(ids), **fields))
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


def _cell(value: Any) -> Any:
    """A dataset cell as a run field: pandas' missing markers become None."""
    if value is None or (isinstance(value, float) and value != value):
        return None
    return value


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
    scorers of the nodes that completed."""
    if failure is None:
        return False
    if failure.trajectory is None or reads == RUNS:
        return True
    return any(
        reads == step_runs_node(name) and step.status == "failed"
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


@config.when(distributed=False)
def items__batched(batch_items: pd.DataFrame) -> pd.DataFrame:
    """All items. run_evals executes the graph batch by batch and sets this to their
    concatenation, keeping memory flat and reporting progress between batches."""
    return batch_items


@config.when(distributed=True)
def dataset(data: pd.DataFrame, batch_size: int) -> Parallelizable[pd.DataFrame]:
    """The data in row batches, each run through the scorers as one task."""
    for start in range(0, len(data), batch_size):
        yield data.iloc[start : start + batch_size]


@config.when(distributed=True)
def items__collected(batch_items: Collect[pd.DataFrame]) -> pd.DataFrame:
    """All items, collected from the batches in order."""
    return pd.concat(list(batch_items))
