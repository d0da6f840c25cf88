"""When each row's steps and judge calls ran, while a traced run scores (``evaldag._eval.
telemetry`` makes its spans from them).

The engine moves columns of rows through a step, so a row's step has no span of its own while
it runs: its times are noted here, by scorer and run, and become spans once its batch is scored.
Only a run whose tracer provider is configured sets ``CLOCK``; otherwise a column's step costs
one look-up of it.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any

#: A row's key: its scorer's id and its run (the ScorerRun object a row keeps through the steps,
#: alive until its batch is traced; one item's scorers may share it).
RowKey = tuple[str, int]
#: A step's or judge call's stage and its start and end, in ns since the epoch.
Times = tuple[str, int, int]


class StepClock:
    """The times of the steps and judge calls of the rows scored so far, by row."""

    __slots__ = ("judge_calls", "steps")

    def __init__(self) -> None:
        self.steps: defaultdict[RowKey, list[Times]] = defaultdict(list)
        self.judge_calls: defaultdict[RowKey, list[Times]] = defaultdict(list)

    def timed(self, advanced: Callable[[Any], Any], scorer_id: str, stage: str) -> Any:
        """``advanced`` (a row's step) noting its times, for a row that is not done."""
        steps = self.steps

        def timed_advanced(state: Any) -> Any:
            if state.done:
                return advanced(state)
            started = time.time_ns()
            try:
                return advanced(state)
            finally:
                steps[scorer_id, id(state.run)].append((stage, started, time.time_ns()))

        return timed_advanced

    async def timed_async(
        self, advanced: Awaitable[Any], scorer_id: str, stage: str, state: Any
    ) -> Any:
        """``advanced`` (a row's async step) awaited, its times noted."""
        started = time.time_ns()
        try:
            return await advanced
        finally:
            self.steps[scorer_id, id(state.run)].append((stage, started, time.time_ns()))

    def popped(self, scorer_id: str, run: Any) -> tuple[list[Times], list[Times]]:
        """A row's step and judge call times, forgotten here."""
        key = (scorer_id, id(run))
        return self.steps.pop(key, []), self.judge_calls.pop(key, [])


#: The clock of the traced run in this context (None: no tracer provider is configured).
CLOCK: ContextVar[StepClock | None] = ContextVar("evaldag_step_clock", default=None)


def judge_call_timed(scorer_id: str, stage: str, state: Any, started: int) -> None:
    """Note a judge call that started at ``started`` (ns) and ends now, if a run is traced."""
    clock = CLOCK.get()
    if clock is not None:
        clock.judge_calls[scorer_id, id(state.run)].append((stage, started, time.time_ns()))
