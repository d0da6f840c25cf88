"""What every prebuilt LLM scorer shares: its judge, prompt templates, texts, verdicts, scores.

How a prebuilt LLM scorer is written (``faithfulness.py`` is the reference):

1. **Prompts first, at the top of the module**: ``INSTRUCTIONS`` (the judge's system prompt)
   and one :class:`PromptTemplate` per judged step, in our own words (never Mastra's text),
   asking for the judgment Mastra's prompt asks for. Placeholders are ``$name``; JSON braces
   need no escaping. Show the run's texts between tags (``<output>…</output>``) so an empty
   text is visibly empty.
2. **What the judge returns**: one pydantic model per judged preprocess/analyze step, with
   Mastra's field names (camelCase where Mastra's are). Verdict fields are plain strings
   listing their values with :func:`choice`: the JSON schema steers the judge, a judge
   that answers ``"Yes. "`` is still read (see :func:`answer`) and one that answers outside
   the list (``"partially"``) is asked again. Fields Mastra types as an
   enum are ``Literal``. Models with camelCase JSON derive from :class:`CamelAnswer` and keep
   snake_case attribute names. A model's name and docstring are part of the schema the judge
   reads: reuse one (``_item_verdicts.Claims``) only where they are the same.
3. **The factory** ``name(model, *, option=default, ...) -> Scorer``, decorated with
   :func:`model_documented` (which gives its docstring the ``:param model:`` paragraph every
   LLM scorer shares): Mastra's options as keyword arguments with Mastra's defaults (no
   options dict that replaces the defaults), checked when the scorer is built
   (:func:`positive_scale`, :func:`number_option`); then ``llm_scorer(ID, model,
   INSTRUCTIONS, factory="name", name=..., description=..., type=...)`` with Mastra's id,
   name and description, and the steps. A scorer
   that judges against a context reads it through one option, ``context=`` (a list, a data
   column name or a function of the run: ``_retrieval.run_context``), passes its
   ``columns=`` to ``llm_scorer``, and wraps the new scorer in :func:`scorer_needing`,
   which makes a run without a context (or without the ground truth it needs) not scorable
   before any judge call; the judged steps then read ``await context_of(run)``.
4. **An item-verdict scorer** (the judge lists items, gives a verdict per item, the score is
   the share of ``yes``: faithfulness, hallucination, answer relevancy, context recall, bias,
   toxicity) adds its steps with ``_item_verdicts.item_verdict_scorer(llm_scorer(...),
   items=JudgedStep(ITEMS_PROMPT, Items), verdicts=JudgedStep(VERDICTS_PROMPT, Verdicts),
   reason=JudgedStep(REASON_PROMPT), scale=scale, ...)`` and writes no step function: the
   factory fills ``$input``, ``$output``, ``$items``, ``$item_count``, ``$verdicts``,
   ``$score`` and ``$scale``, and ``texts={"context": context_text}`` fills the scorer's own
   placeholders. The scoring rule is ``points`` (what each answer counts; ``yes`` 1 by
   default). With ``item="claim",
   missing="unsure"`` it adds, after the judged analyze step, one that keeps one verdict per
   item: a matching answer is left untouched (Mastra's result), otherwise the verdicts are cut
   or padded with ``missing`` and ``verdictCountMismatch`` is recorded in the analyze result,
   so the score is taken over the items, never over whatever the judge returned; a judge that
   gave no verdict at all though it had something to judge fails the item
   (``_item_verdicts.verdicts_given``).
5. **Other scorers** add ``PromptStep(description, create_prompt, output_schema=Model)`` for
   judged steps and plain functions for the arithmetic. ``create_prompt`` functions take the
   run and step results by parameter name (``run``, ``preprocess_step_result``, ...) and
   return ``TEMPLATE.render(...)``; the user's and the assistant's texts come from
   :func:`user_text` and :func:`assistant_text`, the reference answer from
   :func:`ground_truth_text`, the context from ``_retrieval``. When the judge must
   answer once per item, a function step after the judged one cuts or pads its answers
   (``_item_verdicts.aligned_verdicts``) and records ``verdictCountMismatch``. :func:`share`
   is ``count / total × scale`` with Mastra's two-decimal rounding.
6. **Tests**: Mastra's answers for scripted judge replies go in
   ``tests/fixtures/llm_scorers/<scorer-id>.json`` and are replayed through the loopback judge
   server by ``tests/llm_scorer_cases.py``; every deviation from Mastra is listed there with
   its reason and in ``docs/differences-from-mastra.md``. The prompts, rendered for a sample
   run, are kept in ``tests/fixtures/llm_scorers/prompts/<scorer-id>.md`` for review.
"""

from __future__ import annotations

import inspect
import math
import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from string import Template
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

import pandas as pd
from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field
from pydantic.alias_generators import to_camel
from pydantic.fields import FieldInfo

from evaldag._compat.js import js_json, js_truthy, round_to_two_decimals
from evaldag._judge.settings import Judge, as_judge
from evaldag._reader import checked_input, checked_transcript, read_transcript
from evaldag._reader.said import said_texts
from evaldag._scorer.builder import create_scorer
from evaldag._scorer.needs import DataNeed
from evaldag._scorer.scores import score_problem, score_value
from evaldag._scorer.steps import NotScorable, described_step, not_scorable
from evaldag.errors import EvalDagError
from evaldag.transcripts import (
    effective_role,
    get_assistant_message,
    get_user_message,
    merge_tool_invocations,
    run_messages,
)

if TYPE_CHECKING:
    from evaldag._scorer.builder import Scorer
    from evaldag.scorers.llm._retrieval import RunContext

Factory = TypeVar("Factory", bound=Callable[..., Any])

# --- prompts ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class PromptTemplate:
    """A prompt text with ``$name`` placeholders (``string.Template``), filled by :meth:`render`.

    Rendering needs every placeholder and nothing else, so a typo fails loudly instead of
    leaving ``$claims`` in what the judge reads.
    """

    text: str
    placeholders: frozenset[str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        template = Template(self.text)
        if not template.is_valid():
            raise ValueError(f"invalid placeholder in prompt template: {self.text[:80]!r}")
        object.__setattr__(self, "placeholders", frozenset(template.get_identifiers()))

    def render(self, **values: str) -> str:
        """The prompt with every placeholder replaced by its value."""
        missing = sorted(self.placeholders - values.keys())
        unknown = sorted(values.keys() - self.placeholders)
        if missing or unknown:
            raise EvalDagError(
                "EVALDAG_PROMPT_TEMPLATE_MISMATCH",
                f"prompt template rendered with missing values {missing} and unknown values "
                f"{unknown}; its placeholders are {sorted(self.placeholders)}",
                category="SYSTEM",
            )
        return Template(self.text).substitute(values)


def numbered(items: Sequence[str], empty: str) -> str:
    """``items`` as lines ``1. …``, ``2. …``; ``empty`` when there are none."""
    if not items:
        return empty
    return "\n".join(f"{number}. {item}" for number, item in enumerate(items, 1))


def json_text(value: Any) -> str:
    """``value`` as compact JSON, as ``JSON.stringify`` writes it (for prompts)."""
    return js_json(value) or "null"


# --- the judge ---------------------------------------------------------------------------------

#: The ``model`` paragraph every prebuilt LLM scorer's docstring starts its parameters with.
MODEL_PARAMETER = """\
:param model: the judge: a litellm model string (``'openai/gpt-4o-mini'``, ``'local'``), a
    dict of ``Judge`` settings or a ``Judge`` (whose own ``instructions`` are kept)."""


def model_documented(factory: Factory) -> Factory:
    """``factory`` with :data:`MODEL_PARAMETER` as the first parameter its docstring lists."""
    if factory.__doc__ is None:  # python -OO
        return factory
    lines = inspect.cleandoc(factory.__doc__).splitlines()
    first = next((i for i, line in enumerate(lines) if line.startswith(":param ")), None)
    if first is None:
        lines += ["", *MODEL_PARAMETER.splitlines()]
    else:
        lines[first:first] = MODEL_PARAMETER.splitlines()
    factory.__doc__ = "\n".join(lines)
    return factory


def llm_scorer(
    id: str,
    model: Any,
    instructions: str,
    *,
    factory: str,
    name: str,
    description: str,
    type: str | None = None,
    max_score: float = 1,
    columns: tuple[str, ...] = (),
    better: Literal["higher", "lower"] = "higher",
) -> Scorer:
    """A prebuilt LLM scorer with no steps yet: ``create_scorer(id, ...)`` judged by ``model``
    with ``instructions`` as the judge's system prompt, unless ``model`` is a ``Judge`` that
    sets its own.

    :param model: anything ``Judge`` accepts: a litellm model string (``'openai/gpt-4o-mini'``,
        ``'local'``), a dict of Judge settings or a ``Judge``.
    :param factory: the factory's name, for error messages.
    """
    judge = as_judge(model, f"model of {factory}(...)")
    if judge is None:
        raise EvalDagError(
            "EVALDAG_MISSING_MODEL",
            f"{factory}(model, ...) needs a judge model: a litellm model string such as "
            "'openai/gpt-4o-mini', 'local' for the bundled local judge, a dict of Judge "
            "settings or evaldag.Judge(...)",
        )
    if not judge.instructions:
        judge = judge.overridden_by(Judge(instructions=instructions))
    return create_scorer(
        id,
        name=name,
        description=description,
        type=type,
        judge=judge,
        columns=columns,
        max_score=max_score,
        better=better,
    )


# --- what the judge reads ----------------------------------------------------------------------


def user_text(run: Any) -> str:
    """The user's message of the run (``''`` when a transcript has none); a value no reader
    takes (an app's own dict, a number) is an error, not an empty message for the judge."""
    text = get_user_message(run.input)
    if text is None:
        checked_input(run.input, "an LLM scorer")
    return text or ""


def assistant_text(run: Any) -> str:
    """The assistant's response of the run (``''`` when a transcript has none), a trajectory's
    read from its ``rawOutput``; a value no reader takes is an error, not an empty response for
    the judge."""
    return response_text(*_response(run.output))


def everything_said(run: Any) -> str:
    """Every text the assistant said in the run (``said_texts``), a paragraph each, a trajectory's
    read from its ``rawOutput``: what the lower-is-better scorers judge, so that a toxic remark
    before a tool call counts (Mastra judges the last text). A value no reader takes is an error,
    as for :func:`assistant_text`."""
    output, field = _response(run.output)
    if isinstance(output, dict) and output.get("role") == "assistant":
        output = [output]
    if not isinstance(output, list | tuple):  # text, or a value that holds one answer at most
        return response_text(output, field)
    messages = run_messages(checked_transcript(output, "an LLM scorer", field), "assistant")
    return "\n\n".join(said_texts(messages))


def response_text(output: Any, field: str = "run.output") -> str:
    """The assistant's message in ``output`` (``''`` when a transcript has none); a value no
    reader takes is an error naming ``field``, not an empty response for the judge."""
    text = get_assistant_message(output)
    if text is None:
        checked_transcript(output, "an LLM scorer", field)
    return text or ""


def _response(run_output: Any) -> tuple[Any, str]:
    """The run's response and the field it is in: a trajectory's is its ``rawOutput``."""
    if (
        isinstance(run_output, dict)
        and "rawOutput" in run_output
        and isinstance(run_output.get("steps"), list)
    ):
        return raw_output_response(run_output["rawOutput"])
    return run_output, "run.output"


def raw_output_response(raw_output: Any) -> tuple[Any, str]:
    """A trajectory's ``rawOutput`` read as ``ScorerRun`` reads an output (the reader leaves a
    trajectory's values as given), and the field it is in."""
    return read_transcript(raw_output, "output.rawOutput"), "run.output.rawOutput"


def missing_value(value: Any) -> bool:
    """Whether a data value is missing: None, NaN or pandas' NA (an empty DataFrame cell)."""
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))


#: A scorer that judges against the reference answer needs the data to hold one per item.
GROUND_TRUTH = DataNeed("ground_truth", "the reference answer it judges against")


def has_ground_truth(run: Any) -> bool:
    """Whether the run has a ground truth: neither missing nor JavaScript-falsy (``''``, 0)."""
    return not missing_value(run.ground_truth) and js_truthy(run.ground_truth)


def ground_truth_text(run: Any) -> str:
    """The run's ground truth as text: a string as it is, anything else as JSON; ``''`` when
    there is none (see :func:`has_ground_truth`)."""
    if not has_ground_truth(run):
        return ""
    ground_truth = run.ground_truth
    return ground_truth if isinstance(ground_truth, str) else json_text(ground_truth)


async def awaited(value: Any) -> Any:
    """What a user's function returned, awaited when it is awaitable (an async function's)."""
    return await value if inspect.isawaitable(value) else value


def tool_result_context(run_output: Any) -> list[str]:
    """The JSON text of every tool result in the output's assistant messages, in order.

    Results are read from message ``parts`` and from legacy ``content.toolInvocations`` (a call
    in both counts once); only invocations in state ``'result'`` that carry a result count. A
    trajectory's are read from its ``rawOutput``; a value no reader takes (an app's own dict) is
    an error, not an output without tool results.
    """
    output, field = _response(run_output)
    return [
        json_text(invocation["result"])
        for message in run_messages(checked_transcript(output, "an LLM scorer", field), "assistant")
        if effective_role(message) == "assistant"
        for invocation in merge_tool_invocations(message)
        if isinstance(invocation, dict)
        and invocation.get("state") == "result"
        and "result" in invocation
    ]


# --- what a run is judged against ---------------------------------------------------------------


def scorer_needing(
    scorer: Scorer, *, context: RunContext | None = None, ground_truth: bool = False
) -> Scorer:
    """``scorer`` (with no steps yet) with a first preprocess step that ends a run lacking what
    it is judged against as not scorable, before any judge call; ``scorer`` itself when nothing
    can be lacking (a fixed context, no ground truth needed). The scorer also needs a
    ``ground_truth`` column, and a context column's cells to be pieces (``DataNeed``).

    The step's result is None, which the next preprocess step replaces.

    :param context: the scorer's context (or source); a run for which it finds no text is not
        scorable.
    :param ground_truth: whether a run without a ground truth (:func:`has_ground_truth`) is not
        scorable.
    """
    context = None if context is None or context.fixed else context
    if context is None and not ground_truth:
        return scorer
    if context is not None and context.need is not None:
        scorer = scorer.needing(context.need)
    if ground_truth:
        scorer = scorer.needing(GROUND_TRUTH)

    async def preprocess(run: Any) -> NotScorable | None:
        if ground_truth and not has_ground_truth(run):
            return not_scorable(
                "no ground truth: the run has no ground_truth (the reference answer) to judge "
                "against"
            )
        if context is not None and not await context.found(run):
            return not_scorable(context.missing)
        return None

    needs = " and ".join(
        what for what, needed in (("context", context), ("ground truth", ground_truth)) if needed
    )
    described_step(preprocess, f"Not scorable without its {needs}")
    return scorer.preprocess(preprocess)


# --- options -----------------------------------------------------------------------------------


def _is_number(value: Any) -> bool:
    return (
        isinstance(value, numbers.Real)
        and not isinstance(value, bool)
        and math.isfinite(float(value))
    )


def positive_scale(scale: Any, factory: str) -> float:
    """``scale`` checked: a finite number above 0 (Mastra silently turns 0 into 1)."""
    if not _is_number(scale) or scale <= 0:
        raise EvalDagError(
            "EVALDAG_INVALID_SCORER_OPTION",
            f"scale of {factory}(...) must be a number above 0 (the score is multiplied by "
            f"it, e.g. scale=10 for scores from 0 to 10), got {scale!r}",
            details={"option": "scale", "value": repr(scale)},
        )
    return float(scale)


def number_option(
    value: Any,
    name: str,
    factory: str,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
) -> float:
    """A numeric option checked against its bounds (inclusive)."""
    if (
        not _is_number(value)
        or (minimum is not None and value < minimum)
        or (maximum is not None and value > maximum)
    ):
        bounds = " and ".join(
            text
            for text in (
                None if minimum is None else f">= {minimum:g}",
                None if maximum is None else f"<= {maximum:g}",
            )
            if text
        )
        raise EvalDagError(
            "EVALDAG_INVALID_SCORER_OPTION",
            f"{name} of {factory}(...) must be a number{' ' + bounds if bounds else ''}, "
            f"got {value!r}",
            details={"option": name, "value": repr(value)},
        )
    return float(value)


# --- verdicts and scores -----------------------------------------------------------------------


class CamelAnswer(BaseModel):
    """A judge's answer whose snake_case fields are camelCase in JSON, as Mastra names them."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)


def choice(*values: str, description: str) -> Any:
    """A string field whose JSON schema lists ``values``. A string that :func:`answer` reads as
    one of them validates and is kept as the judge wrote it (``' Yes.'``); any other
    (``'partially'``, ``'sí'``, ``''``) fails the reply, which is asked for again and then
    fails the item, rather than counting as a verdict that is not ``yes``."""
    allowed = frozenset(answer(value) for value in values)

    def one_of(value: str) -> str:
        if answer(value) not in allowed:
            raise ValueError(f"{value!r:.40} is not one of {', '.join(values)}")
        return value

    listed: Any = Annotated[
        str,
        AfterValidator(one_of),
        Field(description=description, json_schema_extra={"enum": list(values)}),
    ]
    return FieldInfo.from_annotation(listed)


def _unit_score(value: Any) -> float:
    problem = score_problem(value, 1.0)
    if problem is None:
        return score_value(value, 1.0)
    what = "a number" if problem == "not a number" else "within [0, 1] as the prompt asks"
    raise ValueError(f"{value!r:.40} is not {what}")


#: A score the judge gives from 0 to 1, as its prompt and JSON schema ask: anything else (7 on
#: a 0-10 scale, -1, true, "0.5") fails the reply, which is asked for again and then fails
#: the item, rather than being clamped into a confident score.
UnitScore = Annotated[
    float, BeforeValidator(_unit_score), Field(json_schema_extra={"minimum": 0, "maximum": 1})
]


def answer(value: Any) -> str:
    """A verdict as read: trimmed, lower-cased, without a final full stop (``' Yes. '`` is
    ``'yes'``)."""
    return value.strip().removesuffix(".").strip().lower() if isinstance(value, str) else ""


def said_yes(value: Any) -> bool:
    """Whether a verdict is yes, whatever its case, surrounding spaces and final full stop."""
    return answer(value) == "yes"


def share(count: float, total: int, scale: float) -> float:
    """``count / total × scale`` rounded to two decimals as Mastra rounds; 0 when total is 0."""
    if total == 0:
        return 0.0
    return round_to_two_decimals(count / total * scale)
