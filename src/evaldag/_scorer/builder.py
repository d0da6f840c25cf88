"""The scorer builder: ``create_scorer(id).preprocess(f).analyze(g).generate_score(h)``.

A :class:`Scorer` is immutable: each builder call returns a new scorer with one step appended,
so a base scorer can be extended in several directions. Steps run in call order; the DAG they
form is built in ``evaldag._graph.scorer_dag``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal

from evaldag._compat.js import camel
from evaldag._scorer.needs import DataNeed
from evaldag._scorer.run import ScorerRun
from evaldag._scorer.steps import (
    FunctionStep,
    PromptStep,
    StageName,
    Step,
    step_definition,
    step_inputs,
)
from evaldag._scorer.thresholds import ThresholdSpec, validated_threshold
from evaldag._scorer.time_limits import checked_time_limit
from evaldag.errors import EvalDagError

if TYPE_CHECKING:
    import graphviz
    from hamilton import driver

    from evaldag._results.scorer_result import ScorerResult


class Scorer:
    """A scoring pipeline; each step is a typed Hamilton node of the scorer's DAG."""

    def __init__(
        self,
        id: str,
        *,
        name: str | None = None,
        description: str = "",
        type: Any = None,
        judge: Any = None,
        prepare_run: Callable[..., Any] | None = None,
        columns: tuple[str, ...] = (),
        max_score: float = 1,
        step_timeout: float | None = None,
        steps: tuple[Step, ...] = (),
        needs: tuple[DataNeed, ...] = (),
        better: Literal["higher", "lower"] = "higher",
    ) -> None:
        if not id or not isinstance(id, str):
            raise EvalDagError(
                "MASTR_SCORER_FAILED_TO_CREATE_MISSING_ID",
                "Scorers must have an ID field. Please provide an ID in the scorer config: "
                "create_scorer('my-scorer', ...)",
                details={"id": repr(id)},
            )
        if judge is not None:
            from evaldag._judge.settings import as_judge

            judge = as_judge(judge, f"judge= of scorer '{id}'")
        if prepare_run is not None and not callable(prepare_run):
            raise EvalDagError(
                "EVALDAG_INVALID_PREPARE_RUN",
                f"prepare_run of scorer '{id}' must be a callable taking the run, got "
                f"{prepare_run.__class__.__name__}",
            )
        self._id = id
        self._name = name
        self._description = description
        self._type = type
        self._judge = judge
        self._prepare_run = prepare_run
        self._columns = _checked_columns(id, columns)
        self._max_score = _checked_max_score(id, max_score)
        self._step_timeout = checked_time_limit(step_timeout, f"step_timeout of scorer '{id}'")
        self._steps = steps
        self._needs = _checked_needs(id, needs, self._columns)
        if better not in ("higher", "lower"):
            raise EvalDagError(
                "EVALDAG_INVALID_SCORER_OPTION",
                f"better of scorer '{id}' must be 'higher' or 'lower', got {better!r}",
                category="USER",
            )
        self._better = better

    id = property(lambda self: self._id, doc="The scorer's id; names its nodes and columns.")
    name = property(lambda self: self._name or self._id, doc="Display name (defaults to id).")
    description = property(lambda self: self._description)
    type = property(lambda self: self._type, doc="'agent', 'trajectory' or None.")
    judge = property(lambda self: self._judge, doc="Judge settings shared by prompt steps.")
    prepare_run = property(lambda self: self._prepare_run)
    columns = property(
        lambda self: self._columns,
        doc="Dataset columns the scorer reads besides the run's fields; each item's value is "
        "on the run under the column's name (``run.contexts``).",
    )
    steps = property(lambda self: self._steps, doc="The steps, in call order.")
    needs = property(
        lambda self: self._needs,
        doc="What the scorer needs of each item's data (``DataNeed``), checked for every item "
        "before any step of a run.",
    )
    step_timeout = property(
        lambda self: self._step_timeout,
        doc="Seconds each step (and prepare_run) may take on one run, or None: then "
        "``run_evals(step_timeout=...)`` decides.",
    )

    max_score = property(
        lambda self: self._max_score,
        doc="The top of the scorer's scale (1, or e.g. 10 for faithfulness(scale=10)): its "
        "scores and its threshold's bounds lie from 0 to this; a score off the scale is the "
        "item's error.",
    )

    better = property(
        lambda self: self._better,
        doc="Which way its scores are better: 'higher', or 'lower' for a measure of what should "
        "not be there (bias, hallucination, toxicity); ``evaldag compare`` reads it.",
    )

    def __repr__(self) -> str:
        steps = ", ".join(step.node_name for step in self._steps)
        return f"Scorer(id={self._id!r}, steps=[{steps}])"

    def _with_step(self, stage: StageName, definition: Any) -> Scorer:
        checked = step_definition(definition, stage)
        repeats = sum(1 for step in self._steps if step.stage == stage)
        node_name = stage if repeats == 0 else f"{stage}_{repeats + 1}"
        step = Step(stage, node_name, checked, step_inputs(checked, self._steps))
        return self._copy(steps=(*self._steps, step))

    def _copy(self, **changes: Any) -> Scorer:
        fields = {
            "name": self._name,
            "description": self._description,
            "type": self._type,
            "judge": self._judge,
            "prepare_run": self._prepare_run,
            "columns": self._columns,
            "max_score": self._max_score,
            "step_timeout": self._step_timeout,
            "steps": self._steps,
            "needs": self._needs,
            "better": self._better,
        }
        return Scorer(self._id, **{**fields, **changes})

    def with_prepare_run(self, prepare_run: Callable[..., Any] | None) -> Scorer:
        """A new scorer that transforms each run first, e.g. with ``filter_run(...)``.

        Useful to narrow what a prebuilt scorer or check sees.
        """
        return self._copy(prepare_run=prepare_run)

    def needing(self, *needs: DataNeed) -> Scorer:
        """A new scorer that also needs ``needs`` of each item's data: ``run_evals`` checks every
        item against them before any step runs (a required column the data lacks, or a cell of
        the wrong shape, is an error naming the row, the column and the scorer)."""
        return self._copy(needs=(*self._needs, *needs))

    def with_step_timeout(self, seconds: float | None) -> Scorer:
        """A new scorer whose steps may each take ``seconds`` per run (None: no limit of its
        own); useful on a prebuilt scorer or check."""
        return self._copy(step_timeout=seconds)

    def preprocess(self, step: Callable[..., Any] | PromptStep) -> Scorer:
        """A new scorer with a preprocess step appended; its value is ``preprocess_step_result``."""
        return self._with_step("preprocess", step)

    def analyze(self, step: Callable[..., Any] | PromptStep) -> Scorer:
        """A new scorer with an analyze step appended; its value is ``analyze_step_result``."""
        return self._with_step("analyze", step)

    def generate_score(self, step: Callable[..., Any] | PromptStep) -> Scorer:
        """A new scorer with a generate_score step appended; it returns the score, a number from
        0 to ``max_score``."""
        return self._with_step("generate_score", step)

    def generate_reason(self, step: Callable[..., Any] | PromptStep) -> Scorer:
        """A new scorer with a generate_reason step appended; it returns the reason."""
        return self._with_step("generate_reason", step)

    def without_reason(self) -> Scorer:
        """A new scorer without its generate_reason step: the same scores with no reason, and
        for an LLM scorer one judge call fewer per item (a third of faithfulness' calls)."""
        return self._copy(steps=tuple(s for s in self._steps if s.stage != "generate_reason"))

    def with_threshold(
        self, minimum: float | None = None, *, min: float | None = None, max: float | None = None
    ) -> ScorerWithThreshold:
        """This scorer with a threshold on its dataset average, for ``run_evals(scorers=[...])``.

        ``with_threshold(0.7)`` asks for an average of at least 0.7;
        ``with_threshold(min=0.3, max=0.8)`` for one within [0.3, 0.8] (inclusive). A scorer
        whose lower scores are better (``better == "lower"``) takes ``max=`` (or ``min=``), not a
        bare minimum, which would pass its worse runs.
        """
        if minimum is not None and (min is not None or max is not None):
            raise EvalDagError(
                "INVALID_SCORER_THRESHOLD",
                f"with_threshold for scorer '{self._id}': give a minimum, or min=/max=, not both",
            )
        spec = minimum if minimum is not None else {"min": min, "max": max}
        threshold = validated_threshold(self._id, spec, self._max_score, self._better)
        return ScorerWithThreshold(self, threshold)

    def get_steps(self) -> list[dict[str, Any]]:
        """``[{name, type, description}]`` per step, as Mastra's ``getSteps()``."""
        return [
            {"name": step.stage, "type": step.kind, "description": step.definition.description}
            for step in self._steps
        ]

    def require_generate_score(self) -> None:
        """Raise before anything runs when no step computes the score."""
        if not any(step.stage == "generate_score" for step in self._steps):
            raise EvalDagError(
                "MASTR_SCORER_FAILED_TO_RUN_MISSING_GENERATE_SCORE",
                f"Cannot execute pipeline without generateScore() step: add "
                f".generate_score(...) to scorer '{self._id}'",
                details={
                    "scorerId": self._id,
                    "steps": ", ".join(camel(step.stage) for step in self._steps),
                },
            )

    @property
    def has_async_steps(self) -> bool:
        """Whether any step needs an event loop (async functions or LLM prompts)."""
        return any(
            not isinstance(step.definition, FunctionStep) or step.definition.is_async
            for step in self._steps
        )

    @cached_property
    def _driver(self) -> driver.Driver:
        from evaldag._graph.drivers import scorers_driver

        return scorers_driver([self])

    def run(
        self,
        *,
        input: Any = None,
        output: Any,
        run_id: str | None = None,
        request_context: Any = None,
        ground_truth: Any = None,
        expected_trajectory: Any = None,
        **columns: Any,
    ) -> ScorerResult:
        """Score one run through the scorer's DAG.

        ``columns`` give the values of the dataset columns the scorer reads (``columns=``).

        :return: the result; raises ``ScorerRunError`` (with the partial result) when a step fails.
        """
        return self.run_one(
            ScorerRun(
                input=input,
                output=output,
                run_id=run_id,
                request_context=request_context,
                ground_truth=ground_truth,
                expected_trajectory=expected_trajectory,
                **columns,
            )
        )

    def run_one(self, run: ScorerRun) -> ScorerResult:
        """Score a ready-made :class:`~evaldag.ScorerRun` (``run`` with its fields as a model)."""
        from evaldag._graph.drivers import scorer_outcomes

        self.require_generate_score()
        outcome = scorer_outcomes(self._driver, self, [run], concurrency=1)[0]
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    async def arun(self, **fields: Any) -> ScorerResult:
        """``run`` for async code: the DAG executes in a worker thread, the loop stays free."""
        return await asyncio.to_thread(lambda: self.run(**fields))

    def visualize(self, path: str | None = None) -> graphviz.Digraph:
        """The scorer's DAG as a graphviz object; also written to ``path`` (.png, .svg, .dot)."""
        from evaldag._graph.plan import EvalPlan
        from evaldag._graph.render import full_picture
        from evaldag._io.pictures import write_picture

        picture = full_picture(self._driver, EvalPlan(scorers=(self,)))
        if path is not None:
            write_picture(picture, path)
        return picture


def create_scorer(
    id: str,
    *,
    name: str | None = None,
    description: str = "",
    type: Any = None,
    judge: Any = None,
    prepare_run: Callable[..., Any] | None = None,
    columns: tuple[str, ...] = (),
    max_score: float = 1,
    step_timeout: float | None = None,
    better: Literal["higher", "lower"] = "higher",
) -> Scorer:
    """A scorer with no steps yet; add them with ``.preprocess`` … ``.generate_reason``.

    :param id: stable identifier; names the scorer's DAG nodes and result columns.
    :param type: ``'agent'`` or ``'trajectory'`` (routing hints, as in Mastra), or None.
    :param judge: default judge for prompt steps: a ``Judge``, a dict or a litellm model string.
    :param prepare_run: transforms each run before the steps, e.g. ``filter_run(...)``.
    :param columns: dataset columns the steps read beside the run's fields, e.g.
        ``("contexts",)``: ``run_evals`` puts each item's value on the run (``run.contexts``)
        and refuses data without the column.
    :param max_score: the top of the scorer's scale (default 1); thresholds are given on it,
        and a score outside [0, max_score] (or NaN, an infinity, a bool) is that run's error.
    :param step_timeout: seconds each step (and ``prepare_run``) may take on one run; a step
        that overruns it is that run's error (``failed_step`` names it) and the others go on.
        An async step is cancelled; a sync one's thread cannot be stopped and runs on, its
        result dropped. A prompt step's judge call is bounded by the judge's ``timeout``
        instead. None (the default) leaves it to ``run_evals(step_timeout=...)``.
    :param better: which way the scores are better: ``"higher"`` (the default), or ``"lower"``
        for a measure of what should not be there; ``evaldag compare`` reads a rise of such a
        scorer as worse.
    """
    return Scorer(
        id,
        name=name,
        description=description,
        type=type,
        judge=judge,
        prepare_run=prepare_run,
        columns=columns,
        max_score=max_score,
        step_timeout=step_timeout,
        better=better,
    )


def _checked_max_score(scorer_id: str, max_score: Any) -> float:
    if (
        isinstance(max_score, bool)
        or not isinstance(max_score, int | float)
        or not (0 < max_score < float("inf"))
    ):
        raise EvalDagError(
            "EVALDAG_INVALID_MAX_SCORE",
            f"max_score of scorer '{scorer_id}' must be a positive finite number (the top of its "
            f"scale), got {max_score!r}",
            details={"scorerId": scorer_id},
        )
    return float(max_score)


def _checked_needs(scorer_id: str, needs: Any, columns: tuple[str, ...]) -> tuple[DataNeed, ...]:
    """``needs``, each on a run field or on a column the scorer reads (``columns=``)."""
    for need in needs:
        if not isinstance(need, DataNeed):
            raise EvalDagError(
                "EVALDAG_INVALID_COLUMNS",
                f"needs of scorer '{scorer_id}' must be DataNeed values, got {need!r}",
                details={"scorerId": scorer_id},
            )
        if need.column not in ScorerRun.model_fields and need.column not in columns:
            raise EvalDagError(
                "EVALDAG_INVALID_COLUMNS",
                f"scorer '{scorer_id}' needs the column '{need.column}', which it does not "
                f"read: add it to columns= (create_scorer('{scorer_id}', columns=(...)))",
                details={"scorerId": scorer_id, "column": need.column},
            )
    return tuple(needs)


def _checked_columns(scorer_id: str, columns: Any) -> tuple[str, ...]:
    if isinstance(columns, str) or not all(
        isinstance(c, str) and c and c not in ScorerRun.model_fields for c in columns
    ):
        raise EvalDagError(
            "EVALDAG_INVALID_COLUMNS",
            f"columns= of scorer '{scorer_id}' must be a tuple of dataset column names other "
            f"than the run's own fields ({', '.join(ScorerRun.model_fields)}), got {columns!r}",
            details={"scorerId": scorer_id},
        )
    return tuple(columns)


@dataclass(frozen=True)
class ScorerWithThreshold:
    """A scorer whose average is checked against ``threshold`` (see ``Scorer.with_threshold``)."""

    scorer: Scorer
    threshold: ThresholdSpec
