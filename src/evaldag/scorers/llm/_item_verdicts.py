"""Item-verdict scorers: the judge lists items, gives each a verdict, the score is the share.

Faithfulness, hallucination, answer relevancy, context recall, bias and toxicity are one chain,
which :func:`item_verdict_scorer` builds from a scorer's prompts, answer models and scoring rule:

1. preprocess (judge): the items (claims, statements, opinions); toxicity has none;
2. analyze (judge): a verdict per item;
3. analyze: one verdict per item (:func:`item_verdicts`), for scorers that say what a missing
   verdict counts as;
4. generate_score: the points of the verdicts (a ``yes`` counts 1) / verdicts × scale;
5. generate_reason (judge): the score explained.

A judge whose verdicts step answers an empty list though it had something to judge (items it
listed, or a response with text when the verdicts are on the whole response) judged nothing:
the item fails naming the step and the reply (:func:`verdicts_given`), as no verdict is no evidence
either way (a toxicity of 0, a hallucination of 1). An empty list is a judgment only when there
was nothing to judge (an empty response, a response with no claims): it scores 0, as Mastra's
(toxicity: Mastra's 1).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from pydantic import BaseModel, Field

from evaldag._scorer.builder import Scorer
from evaldag._scorer.steps import PromptStep, described_step
from evaldag.errors import EvalDagError
from evaldag.scorers.llm._shared import (
    PromptTemplate,
    answer,
    assistant_text,
    awaited,
    everything_said,
    json_text,
    numbered,
    share,
    user_text,
)

#: What a verdict counts, by its answer (trimmed, lower-cased): yes 1, anything else 0.
YES: Mapping[str, float] = MappingProxyType({"yes": 1.0})
#: How much of a judge's reply an error quotes.
REPLY_CHARACTERS = 500
#: The values a prompt's text function may take, by name.
TEXT_PARAMETERS = ("run", "results", "score", "step")

#: Mastra's descriptions of the judged steps, which most of its item-verdict scorers share.
DESCRIPTIONS = {
    "preprocess": "Extract relevant statements from the LLM output",
    "analyze": "Score the relevance of the statements to the input",
    "generate_reason": "Reason about the results",
}


class Claims(BaseModel):
    """The claims a response makes."""

    claims: list[str] = Field(description="One self-contained claim per entry.")


@dataclass(frozen=True)
class JudgedStep:
    """A judged step: its prompt, the model of the judge's answer (None for the reason, which is
    text) and what it asks, shown in the DAG and the judge record (by default Mastra's usual
    description of the step, from :data:`DESCRIPTIONS`).

    The answer model of an items or verdicts step has one field: the list.
    """

    prompt: PromptTemplate
    answer: type[BaseModel] | None = None
    description: str | None = None

    @property
    def key(self) -> str:
        """The JSON key of the answer's list (``'claims'``, ``'verdicts'`` ...)."""
        fields = self.answer.model_fields if self.answer is not None else {}
        ((name, field),) = fields.items()
        return field.alias or name


def by_name(fn: Callable[..., Any], what: str) -> Callable[..., Any]:
    """``fn`` called with the values it names among ``run``, ``results``, ``score`` and
    ``step`` (all of them when it takes ``**kwargs``).

    :param what: what ``fn`` is, for the error a parameter it cannot be given raises.
    """
    parameters = inspect.signature(fn).parameters.values()
    if any(parameter.kind is parameter.VAR_KEYWORD for parameter in parameters):
        wanted = list(TEXT_PARAMETERS)
    else:
        wanted = [p.name for p in parameters if p.name in TEXT_PARAMETERS]
    unknown = [
        p.name
        for p in parameters
        if p.name not in wanted and p.kind is not p.VAR_KEYWORD and p.default is p.empty
    ]
    if unknown:
        raise EvalDagError(
            "EVALDAG_INVALID_SCORER_OPTION",
            f"{what} takes unknown parameters {unknown}; it may take any of "
            f"{list(TEXT_PARAMETERS)}, by name",
        )

    def called(**values: Any) -> Any:
        return fn(**{name: values[name] for name in wanted})

    return called


def aligned_verdicts(
    judged: Mapping[str, Any],
    key: str,
    items: list[Any],
    missing: Callable[[Any], Mapping[str, Any]],
) -> dict[str, Any]:
    """The judge's ``judged[key]`` list cut or padded to one verdict per item.

    A matching list comes back as the judge gave it. Otherwise verdicts past the items are
    dropped (the judge record keeps them), an item without one gets ``missing(item)``, and
    ``verdictCountMismatch: {expected, received}`` records what happened.
    """
    verdicts = list(judged.get(key) or [])
    if len(verdicts) == len(items):
        return dict(judged)
    return {
        **judged,
        key: verdicts[: len(items)] + [dict(missing(item)) for item in items[len(verdicts) :]],
        "verdictCountMismatch": {"expected": len(items), "received": len(verdicts)},
    }


def verdicts_given(
    reply: Mapping[str, Any],
    key: str,
    run: Any,
    items: list[Any],
    item: str,
    whole: bool,
    response: Callable[[Any], str] = assistant_text,
) -> list[Any]:
    """The verdicts of the judge's analyze ``reply`` (``reply[key]``); an error when the list is
    empty though there was something to judge: ``items`` (what it listed, each an ``item``), or
    with none listed and verdicts on the ``whole`` response (``response(run)``), one with text."""
    verdicts = list(reply.get(key) or [])
    if verdicts or not (items or (whole and response(run).strip())):
        return verdicts
    count = len(items)
    given = (
        f"the {count} {item}{'s' * (count != 1)} it was given" if items else "a response with text"
    )
    text = json_text(dict(reply))
    if len(text) > REPLY_CHARACTERS:
        text = text[: REPLY_CHARACTERS - 1] + "…"
    raise EvalDagError(
        "EVALDAG_JUDGE_JUDGED_NOTHING",
        f"the judge's analyze reply gave no {key} for {given}, so the score would say nothing "
        f"about the response; the reply: {text}. Rerun the item, or use a judge model that "
        "follows the prompt",
        category="THIRD_PARTY",
        details={"step": "analyze", "key": key, "items": len(items), "reply": text},
    )


def item_verdicts(
    items_key: str,
    verdicts_key: str,
    missing: Mapping[str, Any],
    items: str,
    whole: bool = False,
    response: Callable[[Any], str] = assistant_text,
) -> Callable[..., dict[str, Any]]:
    """An analyze function step for after a judged one: one verdict per preprocessed item.

    :param items_key: the list of items in the preprocess result, e.g. ``'claims'``.
    :param verdicts_key: the list of verdicts in the judge's analyze result.
    :param missing: the verdict that stands for one the judge left out.
    :param items: what the items are, for the step's description, e.g. ``'claim'``.
    :param whole: whether, with no items, the judge's verdicts on the whole response are kept
        as they are (bias); otherwise they are dropped.
    :param response: the response's text the judge read.
    """

    def analyze(run: Any, preprocess_step_result: Any, analyze_step_result: Any) -> dict[str, Any]:
        listed = list((preprocess_step_result or {}).get(items_key) or [])
        verdicts_given(analyze_step_result, verdicts_key, run, listed, items, whole, response)
        if whole and not listed:
            return dict(analyze_step_result)
        return aligned_verdicts(analyze_step_result, verdicts_key, listed, lambda _: missing)

    described_step(analyze, f"One verdict per {items}: extra verdicts dropped, missing ones filled")
    return analyze


def item_verdict_scorer(
    scorer: Scorer,
    *,
    items: JudgedStep | None,
    verdicts: JudgedStep,
    reason: JudgedStep,
    scale: float,
    texts: Mapping[str, Callable[..., Any]] = MappingProxyType({}),
    verdict: str = "verdict",
    points: Mapping[str, float] = YES,
    item: str | None = None,
    missing: str | None = None,
    whole: bool = False,
) -> Scorer:
    """``scorer`` with the item-verdict steps appended: items, verdicts, one verdict per item,
    score (the verdicts' points / verdicts × ``scale``, two decimals) and reason.

    The prompts' placeholders ``$input`` and ``$output`` (the user's and the assistant's texts:
    for a scorer whose lower scores are better, everything the assistant said in the run),
    ``$items`` and ``$item_count`` (the preprocessed items, numbered), ``$verdicts`` (the
    verdicts as JSON), ``$score`` and ``$scale`` are filled here; any other is a ``texts`` entry.

    :param scorer: the scorer so far, ``llm_scorer(id, model, INSTRUCTIONS, ...)``.
    :param items: the preprocess step listing the items; None when the judge gives verdicts on
        the whole response.
    :param verdicts: the analyze step giving a verdict per item.
    :param reason: the generate_reason step.
    :param texts: placeholder name -> a function (sync or async) returning its text, taking any
        of ``run``, ``results`` (the step results so far), ``score`` and ``step`` (the stage)
        by name. It is called only by the steps whose prompt has the placeholder.
    :param verdict: the field of a verdict holding its answer (``'verdict'``, ``'result'``).
    :param points: what an answer counts (trimmed, lower-cased); any other counts 0.
    :param item: what an item is (``'claim'``), for the one-verdict-per-item step.
    :param missing: the answer standing for a verdict the judge left out; when given, an analyze
        step keeps one verdict per item.
    :param whole: whether the judge rates the whole response when there are no items (bias):
        its verdicts are then kept as they are.
    """
    items_key = items.key if items is not None else None
    verdicts_key = verdicts.key
    # A measure of what must not be said reads everything said; the others, the last answer.
    response = everything_said if scorer.better == "lower" else assistant_text

    def listed(results: Any) -> list[str]:
        return results["preprocess_step_result"][items_key]

    sources: dict[str, Callable[..., Any]] = {
        "input": user_text,
        "output": response,
        "items": lambda results: numbered(listed(results), "(none)"),
        "item_count": lambda results: str(len(listed(results))),
        "verdicts": lambda results: json_text(results["analyze_step_result"][verdicts_key]),
        "score": lambda score: f"{score:g}",
        "scale": lambda: f"{scale:g}",
        **texts,
    }
    fillers = {name: by_name(text, f"the text of ${name}") for name, text in sources.items()}

    def judged(step: JudgedStep, stage: str) -> PromptStep:
        async def create_prompt(run: Any, results: Any) -> str:
            values = {
                "run": run,
                "results": results,
                "score": results.get("generate_score_step_result"),
                "step": stage,
            }
            return step.prompt.render(
                **{
                    name: await awaited(fill(**values))
                    for name, fill in fillers.items()
                    if name in step.prompt.placeholders
                }
            )

        description = step.description or DESCRIPTIONS[stage]
        return PromptStep(description, create_prompt, output_schema=step.answer)

    def score(run: Any, analyze_step_result: Any) -> float:
        judged_verdicts = (
            verdicts_given(analyze_step_result, verdicts_key, run, [], "response", True, response)
            if items is None
            else analyze_step_result[verdicts_key]
        )
        total = sum(points.get(answer(v.get(verdict)), 0.0) for v in judged_verdicts)
        return share(total, len(judged_verdicts), scale)

    if items is not None:
        scorer = scorer.preprocess(judged(items, "preprocess"))
    scorer = scorer.analyze(judged(verdicts, "analyze"))
    if missing is not None:
        if items_key is None or item is None:
            raise ValueError("missing= keeps one verdict per item: give items= and item= too")
        reason_missing = f"The judge gave no {verdict} for this {item}."
        scorer = scorer.analyze(
            item_verdicts(
                items_key,
                verdicts_key,
                {verdict: missing, "reason": reason_missing},
                item,
                whole,
                response,
            )
        )
    return scorer.generate_score(score).generate_reason(judged(reason, "generate_reason"))
