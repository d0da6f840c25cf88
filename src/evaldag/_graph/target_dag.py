"""What trajectory and step scorers read: each item's trajectory, each workflow node's value.

::

    runs → trajectory_runs → trajectory.<id>.prepared_run → …

``runs`` hold each item's input and output (``eval_dag``); a trajectory scorer or gate reads
``trajectory_runs``, the same runs with the output replaced by its trajectory (Mastra's
``extractTrajectory`` of an agent's messages, spec §6.6).
"""

from __future__ import annotations

import pandas as pd
from hamilton.function_modifiers import config

from evaldag.transcripts import extract_trajectory


@config.when(has_trajectory_runs=True)
def trajectory_runs(runs: pd.Series) -> pd.Series:
    """Each run with the trajectory of its messages as output; the item's expected trajectory
    stays on the run."""
    return pd.Series(
        [run.model_copy(update={"output": extract_trajectory(run.output)}) for run in runs],
        index=runs.index,
        dtype=object,
    )
