"""How one step advances one run: injection, not-scorable, score validation, error snapshots.

A run's progress through a scorer is a :class:`RunState`. Each stage node of a scorer's DAG
maps a column of states to a column of new states (see ``evaldag._graph.scorer_dag``); this
module holds what happens to each of them. A state that failed or was declared not scorable
passes later steps untouched.
"""

from __future__ import annotations

import math
import numbers
import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from evaldag._compat.js import json_text
from evaldag._engine.concurrency import gather_limited, gc_paused, run_sync
from evaldag._results.scorer_result import (
    JudgeExecution,
    JudgeStepRecord,
    NotScorableInfo,
    ScorerResult,
)
from evaldag._scorer.run import ScorerRun
from evaldag._scorer.steps import FunctionStep, NotScorable, PromptStep, Step, is_async_callable
from evaldag.errors import EvalDagError, ScorerRunError

if TYPE_CHECKING:
    from evaldag._scorer.builder import Scorer

_RESULT_KEYS = ("preprocess_step_result", "analyze_step_result")
_PROMPT_KEYS = (
    "preprocess_prompt",
    "analyze_prompt",
    "generate_score_prompt",
    "generate_reason_prompt",
)


class RunState:
    """One run part-way through a scorer. Immutable by convention: steps return new states."""

    __slots__ = ("completed", "error", "judge", "not_scorable", "prompts", "results", "run")

    def __init__(
        self,
        run: ScorerRun,
        results: dict[str, Any] | None = None,
        prompts: dict[str, str] | None = None,
        judge: dict[str, list[JudgeExecution]] | None = None,
        completed: tuple[str, ...] = (),
        not_scorable: NotScorableInfo | None = None,
        error: ScorerRunError | None = None,
    ) -> None:
        self.run = run
        self.results = results or {}
        self.prompts = prompts or {}
        self.judge = judge or {}
        self.completed = completed
        self.not_scorable = not_scorable
        self.error = error

    @property
    def done(self) -> bool:
        """Whether later steps must leave this run alone."""
        return self.error is not None or self.not_scorable is not None

    def _replace(self, **changes: Any) -> RunState:
        fields = {name: getattr(self, name) for name in self.__slots__}
        fields.update(changes)
        return RunState(**fields)

    def inputs(self, parameters: tuple[str, ...]) -> dict[str, Any]:
        """The values a step asks for by parameter name."""
        return {name: _INPUTS[name](self) for name in parameters}

    def advanced(
        self,
        step: Step,
        value: Any,
        prompt: str | None = None,
        execution: JudgeExecution | None = None,
    ) -> RunState:
        """The state after ``step`` returned ``value`` (raises if it is an invalid score)."""
        judge = (
            self.judge if execution is None else _with_execution(self.judge, step.stage, execution)
        )
        prompts = self.prompts if prompt is None else {**self.prompts, step.stage: prompt}
        if type(value) is NotScorable:
            not_scorable = NotScorableInfo(step=step.stage, reason=value.reason)
            return RunState(self.run, self.results, prompts, judge, self.completed, not_scorable)
        if step.stage == "generate_score":
            value = validated_score(value)
        results = {**self.results, step.result_key: value}
        return RunState(self.run, results, prompts, judge, (*self.completed, step.stage))

    def failed(
        self,
        scorer: Scorer,
        step_stage: str,
        error: BaseException,
        execution: JudgeExecution | None = None,
    ) -> RunState:
        """The state after a step raised ``error``: a ScorerRunError with the snapshot."""
        judge = _with_execution(self.judge, step_stage, execution)
        snapshot = self._replace(judge=judge)
        return self._replace(
            judge=judge,
            error=ScorerRunError(
                scorer_id=scorer.id,
                steps=[s.stage for s in scorer.steps],
                failed_step=step_stage,
                completed_steps=self.completed,
                cause=error,
                result=snapshot.snapshot(),
            ),
        )

    def snapshot(self) -> ScorerResult | None:
        """The partial result of a failed run, or None when no step produced anything."""
        if (
            all(value is None for value in self.results.values())
            and not self.prompts
            and not self.judge
        ):
            return None
        return self.result()

    def result(self) -> ScorerResult:
        """The run's fields plus what the steps produced."""
        results = self.results
        fields: dict[str, Any] = dict(self.run)
        fields.update({key: results.get(key) for key in _RESULT_KEYS})
        fields.update({f"{stage}_prompt": text for stage, text in self.prompts.items()})
        fields["reason"] = results.get("generate_reason_step_result")
        if self.not_scorable is None:
            fields["score"] = results.get("generate_score_step_result")
        fields["not_scorable"] = self.not_scorable
        if self.judge:
            fields["judge"] = {
                stage: JudgeStepRecord(executions=list(executions))
                for stage, executions in self.judge.items()
            }
        return ScorerResult(**fields)

    def outcome(self) -> ScorerResult | ScorerRunError:
        """What the run ends with: its result, or the error that stopped it."""
        return self.error if self.error is not None else self.result()


_INPUTS: dict[str, Callable[[RunState], Any]] = {
    "run": lambda state: state.run,
    "results": lambda state: dict(state.results),
    "preprocess_step_result": lambda state: state.results.get("preprocess_step_result"),
    "analyze_step_result": lambda state: state.results.get("analyze_step_result"),
    "score": lambda state: state.results.get("generate_score_step_result"),
}


#: Columns of a scorer's item frame, one row per run.
SCORER_COLUMNS = (
    "score",
    "reason",
    "error",
    "failed_step",
    "completed_steps",
    "not_scorable",
    "steps",
    "judge",
)


def scored_columns(states: Sequence[RunState]) -> dict[str, list[Any]]:
    """The item columns of finished runs: ``score`` a float, the others text, None or step names.

    ``score`` and ``reason`` of a failed run are what its snapshot recovered (a score NaN when
    none); ``error`` says it failed, and aggregations leave such scores out. ``steps`` (the
    preprocess/analyze results and prompts), ``judge`` (the judge records) and ``not_scorable``
    are JSON text; ``completed_steps`` is the tuple of stages. Text keeps large results small.
    """
    nan = float("nan")
    with gc_paused():
        scores = [
            state.results.get("generate_score_step_result", nan)
            if state.not_scorable is None
            else nan
            for state in states
        ]
        errors = [state.error for state in states]
        return {
            "score": [nan if score is None else score for score in scores],
            "reason": [_text(state.results.get("generate_reason_step_result")) for state in states],
            "error": [None if error is None else error.message for error in errors],
            "failed_step": [None if error is None else error.failed_step for error in errors],
            "completed_steps": [state.completed for state in states],
            "not_scorable": [
                None if state.not_scorable is None else json_text(state.not_scorable)
                for state in states
            ],
            "steps": [_details(state) for state in states],
            "judge": [
                json_text(
                    {
                        stage: [execution.to_dict() for execution in executions]
                        for stage, executions in state.judge.items()
                    }
                )
                if state.judge
                else None
                for state in states
            ],
        }


def _text(value: Any) -> str | None:
    return value if value is None or isinstance(value, str) else json_text(value)


def _details(state: RunState) -> str | None:
    results = state.results
    if not state.prompts and not (
        "preprocess_step_result" in results or "analyze_step_result" in results
    ):
        return None
    details = {key: results[key] for key in _RESULT_KEYS if key in results}
    for stage, text in state.prompts.items():
        details[f"{stage}_prompt"] = text
    return json_text(details)


def _with_execution(
    judge: dict[str, list[JudgeExecution]], stage: str, execution: JudgeExecution | None
) -> dict[str, list[JudgeExecution]]:
    return judge if execution is None else {**judge, stage: [*judge.get(stage, ()), execution]}


def validated_score(value: Any) -> float:
    """``value`` as a float, or an error showing it when it is not a finite real number."""
    kind = type(value)
    if (
        kind is float or kind is int or (kind is not bool and isinstance(value, numbers.Real))
    ) and (math.isfinite(value)):
        return float(value)
    raise EvalDagError(
        "EVALDAG_INVALID_SCORE",
        f"generate_score returned {value!r} ({type(value).__name__}), which is not a finite real "
        "number; return a number such as 0.75, or not_scorable(reason) when the run cannot be "
        "scored",
        details={"value": repr(value)},
    )


def initial_state(run: ScorerRun) -> RunState:
    """A run about to enter the steps, with a fresh UUID4 ``run_id`` when it has none."""
    if not run.run_id:
        run = run.model_copy(update={"run_id": str(uuid.uuid4())})
    return RunState(run)


def prepared_states(runs: Iterable[ScorerRun], scorer: Scorer, concurrency: int) -> list[RunState]:
    """Each run after the scorer's ``prepare_run`` (sync or async), ready for the steps."""
    prepare_run = scorer.prepare_run
    if prepare_run is None:
        with gc_paused():
            return [initial_state(run) for run in runs]

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
            return initial_state(as_run(await prepare_run(run)))
        except Exception as error:
            return RunState(run).failed(scorer, "prepare_run", error)

    if is_async_callable(prepare_run):
        return run_sync(gather_limited((prepared_async(run) for run in runs), concurrency))
    with gc_paused():
        return [prepared(run) for run in runs]


def as_run(value: Any) -> ScorerRun:
    """A prepare_run result as a ScorerRun; it may return a ScorerRun or a Mastra-shaped dict."""
    if isinstance(value, ScorerRun):
        return value
    if isinstance(value, dict):
        return ScorerRun.model_validate(value)
    raise EvalDagError(
        "EVALDAG_INVALID_PREPARED_RUN",
        f"prepare_run must return a ScorerRun or a dict with an 'output' key, got "
        f"{type(value).__name__}",
    )


def advanced_states(
    states: Sequence[RunState], scorer: Scorer, step: Step, concurrency: int
) -> list[RunState]:
    """Each state after ``step``; finished states pass through untouched.

    Sync function steps run in a plain loop. Async function steps and prompt steps run
    concurrently across rows, at most ``concurrency`` at a time.
    """
    definition = step.definition
    if isinstance(definition, FunctionStep) and not definition.is_async:
        return _advanced_sync(states, scorer, step, definition)
    pending = [i for i, state in enumerate(states) if not state.done]
    done = run_sync(
        gather_limited((_advanced_async(states[i], scorer, step) for i in pending), concurrency)
    )
    advanced = list(states)
    for i, state in zip(pending, done, strict=True):
        advanced[i] = state
    return advanced


def _advanced_sync(
    states: Sequence[RunState], scorer: Scorer, step: Step, definition: FunctionStep
) -> list[RunState]:
    # The hot loop of a columnar run: the common case (a plain value) is inlined, with the
    # completed-steps tuples shared between rows; anything else goes through RunState.advanced.
    fn = definition.fn
    getters = tuple((name, _INPUTS[name]) for name in definition.parameters)
    stage, key, scores = step.stage, step.result_key, step.stage == "generate_score"
    completed_after: dict[tuple[str, ...], tuple[str, ...]] = {}
    advanced = []
    with gc_paused():
        for state in states:
            if state.error is None and state.not_scorable is None:
                try:
                    value = fn(**{name: get(state) for name, get in getters})
                    if type(value) is NotScorable or hasattr(value, "__await__"):
                        if type(value) is not NotScorable:  # a sync function returned a coroutine
                            value = run_sync(_awaited(value))
                        state = state.advanced(step, value)
                    else:
                        if scores:
                            value = validated_score(value)
                        completed = completed_after.get(state.completed)
                        if completed is None:
                            completed = completed_after[state.completed] = (*state.completed, stage)
                        state = RunState(
                            state.run,
                            {**state.results, key: value},
                            state.prompts,
                            state.judge,
                            completed,
                        )
                except Exception as error:
                    state = state.failed(scorer, stage, error)
            advanced.append(state)
    return advanced


async def _advanced_async(state: RunState, scorer: Scorer, step: Step) -> RunState:
    definition = step.definition
    try:
        if isinstance(definition, PromptStep):
            from evaldag._judge.transport import judged_value

            prompt = await _awaited(definition.create_prompt(**state.inputs(definition.parameters)))
            value, execution = await judged_value(definition, step.stage, scorer.judge, prompt)
            return state.advanced(step, value, prompt=prompt, execution=execution)
        value = await _awaited(definition.fn(**state.inputs(definition.parameters)))
        return state.advanced(step, value)
    except Exception as error:
        return state.failed(scorer, step.stage, error, getattr(error, "execution", None))


async def _awaited(value: Any) -> Any:
    return await value if hasattr(value, "__await__") else value
