"""Scorer steps: a Python function or an LLM-judge prompt, and what each may consume.

A step says what it consumes through its parameter names, as a Hamilton node does:
``def generate_score(analyze_step_result): ...`` receives the analyze step's result. As in
Hamilton, a parameter with a default is optional: it receives the value of its name when the
run or an earlier step gives one, and keeps its default otherwise. So a parameter of any other
name may configure a step if it has a default, and a module function bound with
``functools.partial(fn, threshold=0.7)`` is a step.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeVar

from evaldag._judge.settings import Judge, as_judge, resolved_judge
from evaldag._scorer.needs import DataNeed
from evaldag.errors import EvalDagError

StageName = Literal["preprocess", "analyze", "generate_score", "generate_reason"]
STAGES: tuple[StageName, ...] = ("preprocess", "analyze", "generate_score", "generate_reason")
#: What a stage's node holds: the runs after that step (``<scorer id>.<value name>``).
STAGE_VALUES: dict[str, str] = {
    "preprocess": "preprocessed",
    "analyze": "analyzed",
    "generate_score": "scored",
    "generate_reason": "reasoned",
}

#: The parameter names a step may declare, and what each receives.
INJECTABLE = {
    "run": "the prepared ScorerRun",
    "results": "dict of the step results so far (keys '<stage>_step_result')",
    "preprocess_step_result": "the preprocess step's result",
    "analyze_step_result": "the analyze step's result",
    "score": "the generate_score step's result",
}
#: The values an earlier step gives, by the stage of that step; the run and the results dict
#: are there for every step.
STAGE_RESULTS: dict[str, str] = {
    "preprocess": "preprocess_step_result",
    "analyze": "analyze_step_result",
    "generate_score": "score",
}
_ALWAYS_GIVEN = frozenset({"run", "results"})


@dataclass(frozen=True, slots=True)
class NotScorable:
    """Returned by a step to say the run cannot be scored; the pipeline stops there."""

    reason: str | None = None


def not_scorable(reason: str | None = None) -> NotScorable:
    """The value a step returns to stop the pipeline: the result gets ``not_scorable``, no score."""
    return NotScorable(reason)


def is_not_scorable(value: object) -> bool:
    """Whether ``value`` is what :func:`not_scorable` returns."""
    return isinstance(value, NotScorable)


def consumed_parameters(
    fn: Callable[..., Any], what: str
) -> tuple[tuple[str, ...], frozenset[str]]:
    """The value names ``fn`` consumes, in order, and those of them with a default (given only
    when there is a value: :func:`step_inputs`). A parameter of another name must have a
    default, which it keeps; one with neither is an error that lists the allowed names."""
    if not callable(fn):
        raise EvalDagError(
            "EVALDAG_INVALID_STEP",
            f"{what} must be a callable or a PromptStep, got {type(fn).__name__}",
        )
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError) as error:
        raise EvalDagError(
            "EVALDAG_INVALID_STEP", f"{what}: cannot read the parameters of {fn!r}: {error}"
        ) from error
    names, optional = [], set()
    for parameter in parameters:
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            raise EvalDagError(
                "EVALDAG_INVALID_STEP",
                f"{what}: parameter '{parameter.name}' must be named; steps receive values by "
                f"name. Allowed names: {', '.join(INJECTABLE)}",
            )
        has_default = parameter.default is not parameter.empty
        if parameter.name not in INJECTABLE:
            if has_default:
                continue  # a setting of the step: it keeps its default
            raise EvalDagError(
                "EVALDAG_INVALID_STEP",
                f"{what}: unknown parameter '{parameter.name}'. A step's parameters say what it "
                f"consumes; allowed names: {', '.join(INJECTABLE)}. A parameter of another "
                "name needs a default (or a value bound with functools.partial)",
                details={"parameter": parameter.name, "allowed": list(INJECTABLE)},
            )
        if parameter.kind is parameter.POSITIONAL_ONLY:
            raise EvalDagError(
                "EVALDAG_INVALID_STEP",
                f"{what}: parameter '{parameter.name}' is positional-only; steps receive values "
                "by name",
            )
        names.append(parameter.name)
        if has_default:
            optional.add(parameter.name)
    return tuple(names), frozenset(optional)


def step_inputs(definition: FunctionStep | PromptStep, earlier: Iterable[Step]) -> tuple[str, ...]:
    """The values a step is given by name after the ``earlier`` steps: every value it consumes,
    except one it has a default for that neither the run nor an earlier step gives (it keeps its
    default)."""
    given = _ALWAYS_GIVEN | {STAGE_RESULTS[s.stage] for s in earlier if s.stage in STAGE_RESULTS}
    return tuple(
        name for name in definition.parameters if name not in definition.optional or name in given
    )


def is_async_callable(fn: Callable[..., Any]) -> bool:
    """Whether calling ``fn`` gives a coroutine (``async def``, or an object with one)."""
    if inspect.iscoroutinefunction(fn):
        return True
    call = getattr(fn, "__call__", None)  # noqa: B004 - callable objects with an async __call__
    return call is not None and inspect.iscoroutinefunction(call)


@dataclass(frozen=True)
class PromptStep:
    """A step judged by an LLM: ``create_prompt`` builds the user prompt from the run.

    :param description: what the step asks the judge, shown in the DAG and the judge record.
    :param create_prompt: a function taking the same parameters as a function step and
        returning the prompt text (sync or async).
    :param output_schema: a pydantic model or a JSON-schema dict for preprocess/analyze steps.
    :param judge: a ``Judge``, a dict of judge settings or a litellm model string; overrides the
        scorer's judge field by field.
    """

    description: str
    create_prompt: Callable[..., Any]
    output_schema: Any = None
    judge: Any = None
    parameters: tuple[str, ...] = field(init=False, repr=False, compare=False)
    optional: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.description, str) or not self.description.strip():
            raise EvalDagError(
                "EVALDAG_INVALID_STEP", "PromptStep needs a non-empty description string"
            )
        parameters, optional = consumed_parameters(self.create_prompt, "PromptStep.create_prompt")
        object.__setattr__(self, "parameters", parameters)
        object.__setattr__(self, "optional", optional)
        if self.judge is not None:
            object.__setattr__(
                self, "judge", as_judge(self.judge, f"judge= of PromptStep '{self.description}'")
            )


@dataclass(frozen=True)
class FunctionStep:
    """A step computed by a Python function (sync or async)."""

    fn: Callable[..., Any]
    parameters: tuple[str, ...]
    is_async: bool
    #: The parameters of ``parameters`` with a default.
    optional: frozenset[str] = frozenset()

    @property
    def description(self) -> str | None:
        return getattr(self.fn, "description", None)


@dataclass(frozen=True)
class Step:
    """A stage of a scorer: which stage it is, its node name, its definition and the values it
    is given by name (:func:`step_inputs`)."""

    stage: StageName
    node_name: str
    definition: FunctionStep | PromptStep
    inputs: tuple[str, ...]
    result_key: str = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "result_key", f"{self.stage}_step_result")

    @property
    def kind(self) -> Literal["function", "prompt"]:
        return "prompt" if isinstance(self.definition, PromptStep) else "function"

    @property
    def value_name(self) -> str:
        """The name of the value this step's node holds: ``analyzed``, ``analyzed_2``, …"""
        return STAGE_VALUES[self.stage] + self.node_name[len(self.stage) :]


Fn = TypeVar("Fn", bound=Callable[..., Any])


def described_step(fn: Fn, description: str) -> Fn:
    """``fn`` with the description its step shows (in pictures and ``get_steps``)."""
    fn.description = description  # type: ignore[attr-defined]  # read back by FunctionStep
    return fn


class ScorerSpec(Protocol):
    """What the engine and the graphs read from a scorer (``Scorer`` is the one implementation)."""

    @property
    def id(self) -> str: ...

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def judge(self) -> Any: ...

    @property
    def prepare_run(self) -> Callable[..., Any] | None: ...

    @property
    def columns(self) -> tuple[str, ...]: ...

    @property
    def max_score(self) -> float: ...

    @property
    def better(self) -> str: ...

    @property
    def step_timeout(self) -> float | None: ...

    @property
    def steps(self) -> tuple[Step, ...]: ...

    @property
    def needs(self) -> tuple[DataNeed, ...]: ...

    @property
    def has_async_steps(self) -> bool: ...

    def __hash__(self) -> int: ...  # the engine keys a scorer's row limits by the scorer

    def without_reason(self) -> ScorerSpec:
        """The scorer without its generate_reason step (trials after the first keep the
        first's reason, so they do not ask for one)."""
        ...


def prompt_judges(scorer: ScorerSpec) -> Iterator[Judge]:
    """The judges ``scorer``'s prompt steps call: each step's settings over the scorer's (a step
    whose settings lack a model or instructions is left out: its runs fail before any call)."""
    for step in scorer.steps:
        if isinstance(step.definition, PromptStep):
            try:
                yield resolved_judge(step.definition.judge, scorer.judge, step.stage)
            except EvalDagError:
                continue


def step_definition(definition: Any, stage: StageName) -> FunctionStep | PromptStep:
    """A function or a PromptStep, checked: its parameters must be ones a step can consume."""
    if isinstance(definition, PromptStep):
        return definition
    parameters, optional = consumed_parameters(definition, f"{stage} step")
    return FunctionStep(definition, parameters, is_async_callable(definition), optional)
