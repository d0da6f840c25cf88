"""What a run measures of this process's judges while its batches run: the limits on calls in
flight of the endpoints they call and how they adapted, and the judge reply caches' dropped rows
and problems. The verdict's nodes take them as inputs (``usage``, ``summary``): they are the
run's, not the items', and a node reads no process-wide state."""

from __future__ import annotations

import time
from typing import Any

from evaldag._graph.plan import EvalPlan
from evaldag._judge.cache import cache_problems, dropped_rows
from evaldag._judge.limiter import judge_limits
from evaldag._scorer.steps import prompt_judges


class JudgeMeasures:
    """Taken as a run's batches start; :meth:`inputs` once they are done.

    On a cluster, the limits are read from the run's coordinator (the judge limits of the
    client's context: ``evaldag._judge.limiter.limits_in``) and the workers' caches' figures
    come back with their batches (``evaldag._judge.cache.noted_elsewhere``).
    """

    def __init__(self, plan: EvalPlan) -> None:
        self.plan = plan
        #: ``time.time()`` as the batches start: the limits' changes count from here.
        self.started = time.time()
        self._dropped = dropped_rows()
        self._problems = len(cache_problems())

    def inputs(self) -> dict[str, Any]:
        """The graph's inputs of what was measured since the batches started: ``judge_limits``
        (per scorer id, its judges' endpoints' limits), ``judge_cache_rows_dropped`` and
        ``judge_cache_problems``."""
        limits = {s.id: judge_limits(prompt_judges(s), self.started) for s in self.plan.all_scorers}
        return {
            "judge_limits": {sid: found for sid, found in limits.items() if found},
            "judge_cache_rows_dropped": dropped_rows() - self._dropped,
            "judge_cache_problems": cache_problems()[self._problems :],
        }
