"""What the target produced, and what trajectory scorers read of it.

::

    dataset → target_runs → outputs → runs → trajectory_runs → trajectory.<id>.prepared_run → …

``target_runs`` holds, per item, what the target produced: its output; for a conversation each
turn (``turn_dag``); for a workflow each node's record and the trajectory. ``runs`` hold each
item's input and output (``eval_dag``); a trajectory scorer or gate reads ``trajectory_runs``,
the same runs with the output replaced by the item's trajectory: Mastra's ``extractTrajectory``
of an agent's messages, or a workflow's execution path (spec §6.6). A step scorer of a workflow
reads ``steps.<node>.runs``: the node's inputs as the run's input, its output as the output.
A workflow's step and trajectory runs come from ``item_runs``, every item's run: an item whose
workflow failed at a node (no output, so no ``runs``) still has the nodes that completed
before it and its path up to the failure.

    target_runs, item_runs → steps.<node>.runs → steps.<node>.<id>.prepared_run → …
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
from hamilton.function_modifiers import ResolveAt, config, parameterize, resolve, value

from evaldag._engine import targets
from evaldag._graph.plan import EvalPlan, step_runs_node
from evaldag.transcripts import extract_trajectory


@config.when(has_target=True)
def target_runs(
    dataset: pd.DataFrame, target: Callable, concurrency: int, target_timeout: float | None = None
) -> pd.Series:
    """Per item, the target's run (its output; each turn of a conversation), or the
    TargetFailure it raised or its time limit (``target_timeout``, seconds per call) ended;
    conversations (``inputs``) run their turns in order."""
    count = len(dataset)
    contexts = dataset["request_context"] if "request_context" in dataset else [None] * count
    turns = dataset["inputs"] if "inputs" in dataset else [None] * count
    produced = targets.target_runs(
        target,
        dataset["input"].tolist(),
        list(contexts),
        [None if t is None or isinstance(t, float) else list(t) for t in turns],
        concurrency,
        target_timeout,
    )
    return pd.Series(produced, index=dataset.index, dtype=object)


@config.when(has_trajectory_runs=True, workflow_target=False)
def trajectory_runs__messages(runs: pd.Series) -> pd.Series:
    """Each run with the trajectory of its messages as output; the item's expected trajectory
    stays on the run."""
    return pd.Series(
        [run.model_copy(update={"output": extract_trajectory(run.output)}) for run in runs],
        index=runs.index,
        dtype=object,
    )


@config.when(has_trajectory_runs=True, workflow_target=True)
def trajectory_runs__workflow(item_runs: pd.Series, target_runs: pd.Series) -> pd.Series:
    """Each item's run with the workflow's execution path as output: a ``workflow_step`` per
    node that ran, in order, with its status, output and duration; where a node failed, the
    path up to it (its step last, ``failed``). Items refused before any node ran are left out."""
    values, index = [], []
    for label, run in item_runs.items():
        trajectory = target_runs[label].trajectory
        if trajectory is not None:
            values.append(run.model_copy(update={"output": trajectory}))
            index.append(label)
    return pd.Series(values, index=pd.Index(index, dtype=item_runs.index.dtype), dtype=object)


def _workflow_steps(plan: EvalPlan) -> parameterize:
    return parameterize(**{step_runs_node(step): {"step": value(step)} for step in plan.steps})


@config.when(has_steps=True)
@resolve(when=ResolveAt.CONFIG_AVAILABLE, decorate_with=_workflow_steps)
def step_runs(item_runs: pd.Series, target_runs: pd.Series, step: str) -> pd.Series:
    """Per item where the node completed (before a later node failed, too), a run of the
    node's inputs (a dict by parameter name) and its output; items where it did not run or
    failed are left out (``batch_items`` records the target's failure for them)."""
    values, index = [], []
    for label, run in item_runs.items():
        ran = target_runs[label].steps.get(step)
        if ran is not None and ran.status == "success":
            values.append(run.model_copy(update={"input": ran.input, "output": ran.output}))
            index.append(label)
    return pd.Series(values, index=pd.Index(index, dtype=item_runs.index.dtype), dtype=object)
