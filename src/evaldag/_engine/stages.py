"""Columns of runs through a scorer's steps: prepare_run, then each step in call order.

Sync function steps run in a plain loop; async function steps and prompt steps run on the
engine loop, concurrently across rows, and a row goes on to its next step as soon as its
previous one is done: between step nodes, rows still in flight are pending states,
and the scorer's last step node waits for them. The graphs call these from one node per step
(``evaldag._graph.scorer_dag``).
"""

from __future__ import annotations

import asyncio
import functools
import time
import uuid
from collections.abc import Awaitable, Iterable, Sequence
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any, Literal, NamedTuple, cast, overload

from evaldag._engine.concurrency import gather_limited, row_limit
from evaldag._engine.run_state import STEP_INPUTS, RunState
from evaldag._engine.step_clock import CLOCK, judge_call_timed
from evaldag._engine.time_limits import limited_call, limited_rows
from evaldag._judge.budget import JudgeBudget
from evaldag._reader import python_data
from evaldag._scorer.run import ScorerRun
from evaldag._scorer.scores import checked_score
from evaldag._scorer.steps import (
    FunctionStep,
    NotScorable,
    PromptStep,
    ScorerSpec,
    Step,
    is_async_callable,
)
from evaldag._scorer.time_limits import step_overrun
from evaldag._util.event_loop import engine_loop, in_engine_thread, on_engine_loop, run_sync
from evaldag._util.gc_pause import gc_paused
from evaldag.errors import EvalDagError


def initial_state(run: ScorerRun) -> RunState:
    """A run about to enter the steps, with a fresh UUID4 ``run_id`` when it has none."""
    if not run.run_id:
        run = run.model_copy(update={"run_id": str(uuid.uuid4())})
    return RunState(run)


def time_limit(scorer: ScorerSpec, step_timeout: float | None) -> float | None:
    """The seconds each step of ``scorer`` may take: its own ``step_timeout``, else the run's."""
    return scorer.step_timeout if scorer.step_timeout is not None else step_timeout


def prepared_states(
    runs: Iterable[ScorerRun],
    scorer: ScorerSpec,
    concurrency: int,
    step_timeout: float | None = None,
) -> list[RunState]:
    """Each run after the scorer's ``prepare_run`` (sync or async), ready for the steps.

    :param step_timeout: the run's limit on each step, for scorers that set none.
    """
    prepare_run = scorer.prepare_run
    if prepare_run is None:
        with gc_paused():
            return [initial_state(run) for run in runs]
    seconds = time_limit(scorer, step_timeout)

    def overrun(is_async: bool) -> BaseException:
        return step_overrun(scorer.id, "prepare_run", seconds or 0, is_async=is_async)

    def prepared(run: ScorerRun) -> RunState:
        try:
            value = prepare_run(run)
            if hasattr(value, "__await__"):  # a sync function that returned a coroutine
                value = run_sync(_awaited(value))
            return initial_state(as_run(value))
        except Exception as error:
            return RunState(run).failed(scorer, "prepare_run", error)

    async def prepared_async(run: ScorerRun) -> RunState:
        try:
            return initial_state(
                as_run(await limited_call(prepare_run, (run,), {}, seconds, overrun))
            )
        except Exception as error:
            return RunState(run).failed(scorer, "prepare_run", error)

    if is_async_callable(prepare_run):
        runs_prepared = gather_limited((prepared_async(run) for run in runs), concurrency, scorer)
        return on_engine_loop(runs_prepared)
    with gc_paused():
        if seconds is not None:
            return limited_rows(
                prepared,
                list(runs),
                seconds,
                lambda run: RunState(run).failed(scorer, "prepare_run", overrun(False)),
            )
        return [prepared(run) for run in runs]


def as_run(value: Any) -> ScorerRun:
    """A prepare_run result as a ScorerRun; it may return a ScorerRun or a Mastra-shaped dict."""
    if isinstance(value, ScorerRun):
        # model_copy(update=...) skips validation: numpy or Arrow values it added are read here
        extra = value.model_extra or {}
        plain = {key: python_data(item) for key, item in extra.items()}
        changed = {key: item for key, item in plain.items() if item is not extra[key]}
        return value.model_copy(update=changed) if changed else value
    if isinstance(value, dict):
        return ScorerRun.model_validate(value)
    raise EvalDagError(
        "EVALDAG_INVALID_PREPARED_RUN",
        f"prepare_run must return a ScorerRun or a dict with an 'output' key, got "
        f"{type(value).__name__}",
    )


class PendingState:
    """A run on its way through a scorer's steps: ``task``, on the engine loop, ends in its
    RunState.

    ``limit`` is shared by the rows of one scorer (in ``run_evals``, of the batches in flight
    together: see :func:`row_limit`): it bounds the rows waiting on a judge call or an async
    step, whatever their step. A pending state pickles as the RunState it ends in.
    """

    __slots__ = ("limit", "task")
    #: Set on the engine loop, by the call that starts the row's step (``_started_rows``).
    task: asyncio.Task[RunState]

    def __init__(self, limit: AbstractAsyncContextManager[Any]) -> None:
        self.limit = limit

    def __reduce__(self) -> tuple[Any, ...]:
        return _unpickled, (settled_states([self])[0],)


def _unpickled(state: RunState) -> RunState:
    return state


@overload
def advanced_states(
    states: Sequence[RunState | PendingState],
    scorer: ScorerSpec,
    step: Step,
    concurrency: int,
    judge_cache: bool | str | Path | None = None,
    *,
    settle: Literal[True] = True,
    budget: JudgeBudget | None = None,
    step_timeout: float | None = None,
) -> list[RunState]: ...
@overload
def advanced_states(
    states: Sequence[RunState | PendingState],
    scorer: ScorerSpec,
    step: Step,
    concurrency: int,
    judge_cache: bool | str | Path | None = None,
    *,
    settle: bool,
    budget: JudgeBudget | None = None,
    step_timeout: float | None = None,
) -> list[RunState | PendingState]: ...
def advanced_states(
    states: Sequence[RunState | PendingState],
    scorer: ScorerSpec,
    step: Step,
    concurrency: int,
    judge_cache: bool | str | Path | None = None,
    *,
    settle: bool = True,
    budget: JudgeBudget | None = None,
    step_timeout: float | None = None,
) -> Sequence[RunState | PendingState]:
    """Each state after ``step``; finished states pass through untouched.

    Sync function steps over settled states run here in a plain loop. Async function steps and
    prompt steps, and any step after one, run on the engine loop, each row as soon as its
    previous step is done, at most ``concurrency`` rows of the scorer waiting at a time. Unless
    ``settle``, rows still in flight come back as PendingStates for the next step to chain onto.

    :param judge_cache: the run's reply cache, for judges that set none (see ``run_evals``).
    :param budget: the run's judge budget, asked before each judge call (see ``run_evals``).
    :param step_timeout: the run's limit on each step, for scorers that set none; a row's clock
        starts once it has its slot, and a prompt step's judge call has the judge's own limit.
    """
    definition = step.definition
    seconds = time_limit(scorer, step_timeout)
    in_flight = any(type(state) is PendingState for state in states)
    if isinstance(definition, FunctionStep) and not definition.is_async and not in_flight:
        settled = cast("Sequence[RunState]", states)  # none in flight
        return _advanced_sync(settled, scorer, step, definition, seconds)
    if isinstance(definition, PromptStep):
        # The judge transport (aiohttp) is imported on this thread, before the rows start: on
        # the engine loop every row of the first batch would wait for it. A run of code
        # scorers never imports it.
        import evaldag._judge.transport  # noqa: F401
    row = _Row(scorer, step, judge_cache, budget, seconds)
    if in_engine_thread():  # a scorer run from a step: on a private loop, all at once
        private = asyncio.Semaphore(concurrency)
        return run_sync(_gathered(_next_state(s, row, private) for s in states))
    shared = next((s.limit for s in states if type(s) is PendingState), None)
    limit = shared or row_limit(scorer, concurrency)
    advanced: list[RunState | PendingState] = []
    started = []
    for state in states:
        if type(state) is RunState and state.done:
            advanced.append(state)
        else:
            pending = PendingState(limit)
            advanced.append(pending)
            started.append((pending, state))
    engine_loop().call_soon_threadsafe(_started_rows, started, row)
    return settled_states(advanced) if settle else advanced


def settled_states(states: Sequence[RunState | PendingState]) -> list[RunState]:
    """``states`` with every pending one waited for."""
    waiting = [state for state in states if isinstance(state, PendingState)]
    # Their tasks are read on the engine loop, after the calls that made them (_started_rows).
    done = iter(on_engine_loop(_gathered(p.task for p in waiting)) if waiting else ())
    return [next(done) if isinstance(state, PendingState) else state for state in states]


async def _gathered(awaitables: Iterable[Awaitable[Any]]) -> list[Any]:
    """Their results; read on the engine loop, where the rows' tasks exist."""
    return list(await asyncio.gather(*awaitables))


class _Row(NamedTuple):
    """What a row's step on the engine loop needs besides its state."""

    scorer: ScorerSpec
    step: Step
    judge_cache: bool | str | Path | None
    budget: JudgeBudget | None
    seconds: float | None  # the step's time limit

    def overrun(self, is_async: bool) -> BaseException:
        return step_overrun(
            self.scorer.id, self.step.node_name, self.seconds or 0, is_async=is_async
        )


def _started_rows(rows: list[tuple[PendingState, RunState | PendingState]], row: _Row) -> None:
    """Start each row's next step (on the engine loop, in the stage node's context)."""
    loop = asyncio.get_running_loop()
    for pending, previous in rows:
        pending.task = loop.create_task(_next_state(previous, row, pending.limit))


async def _next_state(
    previous: RunState | PendingState, row: _Row, limit: AbstractAsyncContextManager[Any]
) -> RunState:
    state = await previous.task if isinstance(previous, PendingState) else previous
    if state.done:
        return state
    definition = row.step.definition
    clock = CLOCK.get()

    def advancing() -> Awaitable[RunState]:  # a traced run's clock notes its times, not the wait
        step = _advanced_async(state, row)
        return (
            step if clock is None else clock.timed_async(step, row.scorer.id, row.step.stage, state)
        )

    if isinstance(definition, FunctionStep) and not definition.is_async and row.seconds is None:
        return await advancing()  # no wait: no slot
    async with limit:
        return await advancing()


def _advanced_sync(
    states: Sequence[RunState],
    scorer: ScorerSpec,
    step: Step,
    definition: FunctionStep,
    seconds: float | None,
) -> list[RunState]:
    # The hot loop of a columnar run: the common case (a plain value) is inlined, with the
    # completed-steps tuples shared between rows; anything else goes through RunState.advanced.
    fn = definition.fn
    getters = tuple((name, STEP_INPUTS[name]) for name in step.inputs)
    stage, key, scores = step.stage, step.result_key, step.stage == "generate_score"
    scorer_id, max_score = scorer.id, scorer.max_score
    completed_after: dict[tuple[str, ...], tuple[str, ...]] = {}

    def advanced(state: RunState) -> RunState:
        if state.error is not None or state.not_scorable is not None:
            return state
        try:
            value = fn(**{name: get(state) for name, get in getters})
            if type(value) is NotScorable or hasattr(value, "__await__"):
                if type(value) is not NotScorable:  # a sync function returned a coroutine
                    value = run_sync(_awaited(value))
                return state.advanced(scorer, step, value)
            if scores:
                value = checked_score(value, scorer_id, max_score)
            completed = completed_after.get(state.completed)
            if completed is None:
                completed = completed_after[state.completed] = (*state.completed, stage)
            return RunState(
                state.run, {**state.results, key: value}, state.prompts, state.judge, completed
            )
        except Exception as error:
            return state.failed(scorer, stage, error)

    clock = CLOCK.get()
    if clock is not None:
        advanced = clock.timed(advanced, scorer_id, stage)
    with gc_paused():
        if seconds is None:
            return [advanced(state) for state in states]

        def overran(state: RunState) -> RunState:
            error = step_overrun(scorer.id, step.node_name, seconds, is_async=False)
            return state.failed(scorer, stage, error)

        return limited_rows(advanced, states, seconds, overran)


async def _advanced_async(state: RunState, row: _Row) -> RunState:
    scorer, step, judge_cache, budget = row.scorer, row.step, row.judge_cache, row.budget
    definition = step.definition
    execution = None
    try:
        if isinstance(definition, PromptStep):
            if budget is not None and budget.spent:
                return state.advanced(scorer, step, NotScorable(budget.refusal()))
            inputs = state.inputs(step.inputs)
            prompt = await limited_call(
                definition.create_prompt, (), inputs, row.seconds, row.overrun
            )
            from evaldag._judge.transport import judged_value

            started = time.time_ns()
            try:
                value, execution = await judged_value(
                    prompt,
                    step.stage,
                    step_judge=definition.judge,
                    scorer_judge=scorer.judge,
                    output_schema=definition.output_schema,
                    description=definition.description,
                    run_cache=judge_cache,
                    max_score=scorer.max_score,
                    score_check=functools.partial(
                        checked_score, scorer_id=scorer.id, max_score=scorer.max_score, judged=True
                    ),
                )
            except Exception as error:
                execution = getattr(error, "execution", None)
                raise
            finally:
                judge_call_timed(scorer.id, step.stage, state, started)
                if budget is not None:
                    budget.spend(execution)
            return state.advanced(scorer, step, value, prompt=prompt, execution=execution)
        inputs = state.inputs(step.inputs)
        value = await limited_call(definition.fn, (), inputs, row.seconds, row.overrun)
        return state.advanced(scorer, step, value)
    except Exception as error:
        # A reply that is no score keeps its record: the judge answered, the score is refused.
        return state.failed(scorer, step.stage, error, getattr(error, "execution", execution))


async def _awaited(value: Any) -> Any:
    return await value if hasattr(value, "__await__") else value
