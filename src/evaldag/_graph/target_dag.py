"""What the target produced, and what trajectory scorers read of it.

::

    dataset → target_runs → outputs → runs → trajectory_runs → trajectory.<id>.prepared_run → …

``target_runs`` holds, per item, what the target produced: its output and, for a conversation,
each turn (``turn_dag``). ``runs`` hold each item's input and output (``eval_dag``); a trajectory
scorer or gate reads ``trajectory_runs``, the same runs with the output replaced by its
trajectory (Mastra's ``extractTrajectory`` of an agent's messages, spec §6.6).
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
from hamilton.function_modifiers import config

from evaldag._engine import targets
from evaldag.transcripts import extract_trajectory


@config.when(has_target=True)
def target_runs(dataset: pd.DataFrame, target: Callable, concurrency: int) -> pd.Series:
    """Per item, the target's run (its output; each turn of a conversation), or the
    TargetFailure it raised; conversations (``inputs``) run their turns in order."""
    count = len(dataset)
    contexts = dataset["request_context"] if "request_context" in dataset else [None] * count
    turns = dataset["inputs"] if "inputs" in dataset else [None] * count
    produced = targets.target_runs(
        target,
        dataset["input"].tolist(),
        list(contexts),
        [None if t is None or isinstance(t, float) else list(t) for t in turns],
        concurrency,
    )
    return pd.Series(produced, index=dataset.index, dtype=object)


@config.when(has_trajectory_runs=True)
def trajectory_runs(runs: pd.Series) -> pd.Series:
    """Each run with the trajectory of its messages as output; the item's expected trajectory
    stays on the run."""
    return pd.Series(
        [run.model_copy(update={"output": extract_trajectory(run.output)}) for run in runs],
        index=runs.index,
        dtype=object,
    )
