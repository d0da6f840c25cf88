"""One run part-way through a scorer: its results, prompts, judge records, and how it ends.

A :class:`RunState` is immutable by convention: a step returns a new state (``advanced``, or
``failed`` with an error snapshot, or not scorable). A state that failed or was declared not
scorable passes later steps untouched; ``evaldag._engine.stages`` moves columns of states
through a step.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from evaldag._judge.records import JudgeExecution, JudgeStepRecord
from evaldag._results.scorer_result import NotScorableInfo, ScorerResult
from evaldag._scorer.run import ScorerRun, echoed
from evaldag._scorer.scores import checked_score
from evaldag._scorer.steps import NotScorable, ScorerSpec, Step
from evaldag.errors import ScorerRunError

RESULT_KEYS = ("preprocess_step_result", "analyze_step_result")


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
        return {name: STEP_INPUTS[name](self) for name in parameters}

    def advanced(
        self,
        scorer: ScorerSpec,
        step: Step,
        value: Any,
        prompt: str | None = None,
        execution: JudgeExecution | None = None,
    ) -> RunState:
        """The state after ``step`` of ``scorer`` returned ``value`` (raises when it is the
        score and not one on the scorer's scale: see ``checked_score``)."""
        judge = (
            self.judge if execution is None else _with_execution(self.judge, step.stage, execution)
        )
        prompts = self.prompts if prompt is None else {**self.prompts, step.stage: prompt}
        if type(value) is NotScorable:
            not_scorable = NotScorableInfo(step=step.stage, reason=value.reason)
            return RunState(self.run, self.results, prompts, judge, self.completed, not_scorable)
        if step.stage == "generate_score":
            value = checked_score(value, scorer.id, scorer.max_score)
        results = {**self.results, step.result_key: value}
        return RunState(self.run, results, prompts, judge, (*self.completed, step.stage))

    def failed(
        self,
        scorer: ScorerSpec,
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
        return echoed(ScorerResult, self.run, self.produced())

    def produced(self) -> dict[str, Any]:
        """What the steps produced, as a result's fields (not read yet: ``echoed`` reads them)."""
        results = self.results
        fields: dict[str, Any] = {key: results.get(key) for key in RESULT_KEYS}
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
        return fields

    def outcome(self) -> ScorerResult | ScorerRunError:
        """What the run ends with: its result, or the error that stopped it."""
        return self.error if self.error is not None else self.result()


STEP_INPUTS: dict[str, Callable[[RunState], Any]] = {
    "run": lambda state: state.run,
    "results": lambda state: dict(state.results),
    "preprocess_step_result": lambda state: state.results.get("preprocess_step_result"),
    "analyze_step_result": lambda state: state.results.get("analyze_step_result"),
    "score": lambda state: state.results.get("generate_score_step_result"),
}


def _with_execution(
    judge: dict[str, list[JudgeExecution]], stage: str, execution: JudgeExecution | None
) -> dict[str, list[JudgeExecution]]:
    return judge if execution is None else {**judge, stage: [*judge.get(stage, ()), execution]}
