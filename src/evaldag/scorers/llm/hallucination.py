"""Hallucination: the share of the response's claims that its context does not back.

Mastra's ``createHallucinationScorer`` (id ``hallucination-scorer``): the judge lists the claims
of the response, then says of each whether it is a hallucination (``yes``: it contradicts the
context or asserts what the context does not support) or not (``no``). Score = hallucinated
claims / claims × scale; higher is worse. The context is ``context=``, or what ``get_context``
returns for the run.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, Field

from evaldag._scorer.builder import Scorer, create_scorer
from evaldag._scorer.steps import PromptStep
from evaldag.errors import EvalDagError
from evaldag.scorers.llm._shared import (
    PromptTemplate,
    assistant_text,
    choice,
    context_option,
    item_verdicts,
    json_text,
    numbered,
    positive_scale,
    said_yes,
    scorer_judge,
    share,
    user_text,
)

INSTRUCTIONS = """\
You look for hallucinations in what an AI assistant said: claims its context does not back.
You work in two passes: first you list the claims a response makes, then you check each claim
against the context and nothing else.
- A claim that contradicts the context is a hallucination.
- A claim the context does not support is a hallucination, including hedged claims ("may",
  "might") about things the context does not mention, and praise or judgments ("pioneering",
  "made history") the context does not state.
- Not hallucinations: a less precise date than the context gives (the year for a full date),
  a reasonable rounding of a number, leaving details out, and hedged claims about what the
  context does say.
- Your own knowledge of the world does not count. An empty response has no hallucinations.
Answer in the JSON format you are asked for."""

CLAIMS_PROMPT = PromptTemplate("""\
List every claim made in the response below. A claim is a statement that something is so:
a fact, a figure, a date, a relation between things, a prediction or a possibility.

- Split sentences that say several things into one claim each.
- Keep numbers, dates, units and names exactly as written.
- Write each claim so that it stands on its own: replace "it" or "they" with what they refer to.
- Keep hedged claims ("might", "could", "probably") as claims, with their hedge.
- Leave out questions, instructions to the reader and pleasantries.

For the response "The museum opens at 9 am and is free on Sundays. It might close early on
holidays.", the claims are:
{"claims": ["The museum opens at 9 am", "The museum is free on Sundays",
  "The museum might close early on holidays"]}

<response>
$output
</response>

If the response above is empty, answer exactly {"claims": []}.
Answer with JSON: {"claims": ["...", "..."]}""")

VERDICTS_PROMPT = PromptTemplate("""\
Check each claim below against the context, and only the context: is it a hallucination?

<context>
$context
</context>

There are $claim_count claims:
<claims>
$claims
</claims>

For each claim, in the order given, give a verdict:
- "yes" (a hallucination): the claim contradicts the context, or asserts something the context
  does not support, including hedged claims about things the context does not mention and
  judgments ("groundbreaking", "the best") the context does not state;
- "no" (not a hallucination): the context supports the claim; a less precise date, a rounded
  number, a left-out detail or a hedge about something the context states are fine.
Give exactly one verdict per claim: $claim_count verdicts. Repeat the claim in "statement" and
give the reason for the verdict.

Example: with the context "The bridge opened in June 1932 and is 503 metres long." and the
claims ["The bridge opened in 1932", "The bridge is about 500 metres long",
"The bridge was an engineering triumph", "The bridge might be renovated soon"], answer:
{"verdicts": [
  {"statement": "The bridge opened in 1932", "verdict": "no",
   "reason": "The year matches June 1932."},
  {"statement": "The bridge is about 500 metres long", "verdict": "no",
   "reason": "A fair rounding of 503 metres."},
  {"statement": "The bridge was an engineering triumph", "verdict": "yes",
   "reason": "A judgment the context does not make."},
  {"statement": "The bridge might be renovated soon", "verdict": "yes",
   "reason": "Renovation is not mentioned in the context."}
]}

Answer with JSON: {"verdicts": [{"statement": "...", "verdict": "yes" | "no",
"reason": "..."}]}""")

REASON_PROMPT = PromptTemplate("""\
A response was scored for hallucination: the score is the share of its claims that the
context does not back, from 0 (none) to $scale (all); lower is better.

<context>
$context
</context>

<user_message>
$input
</user_message>

<response>
$output
</response>

Score: $score
Verdicts, one per claim ("yes" = hallucination): $verdicts

In one or two sentences, explain this score: which claims the context backs and which it
contradicts or does not support. Take the score as given; do not recompute it. If there are
no claims, say that the response made none.
Start with "The score is $score because".""")

NO_CONTEXT = "(no context was given)"
_GET_CONTEXT_PARAMETERS = ("run", "results", "score", "step")


class Claims(BaseModel):
    """The claims a response makes."""

    claims: list[str] = Field(description="One self-contained claim per entry.")


class Verdict(BaseModel):
    """Whether one claim is a hallucination."""

    statement: str | None = Field(default=None, description="The claim judged.")
    verdict: str = choice("yes", "no", description="yes: the claim is a hallucination.")
    reason: str = Field(description="What in the context backs or contradicts the claim.")


class Verdicts(BaseModel):
    """One verdict per claim, in claim order."""

    verdicts: list[Verdict]


def _context_reader(
    context: list[str] | None, get_context: Callable[..., Any] | None
) -> Callable[..., Any]:
    """A function ``(run, results, score, step) -> context lines`` for either option."""
    if get_context is None:
        fixed = context or []
        return lambda **_: fixed
    if not callable(get_context):
        raise EvalDagError(
            "EVALDAG_INVALID_SCORER_OPTION",
            f"get_context of hallucination(...) must be a function, got "
            f"{type(get_context).__name__}",
        )
    parameters = inspect.signature(get_context).parameters.values()
    if any(parameter.kind is parameter.VAR_KEYWORD for parameter in parameters):
        wanted = list(_GET_CONTEXT_PARAMETERS)
    else:
        wanted = [p.name for p in parameters if p.name in _GET_CONTEXT_PARAMETERS]
    unknown = [
        p.name
        for p in parameters
        if p.name not in wanted and p.kind is not p.VAR_KEYWORD and p.default is p.empty
    ]
    if unknown:
        raise EvalDagError(
            "EVALDAG_INVALID_SCORER_OPTION",
            f"get_context of hallucination(...) takes unknown parameters {unknown}; it may "
            f"take any of {list(_GET_CONTEXT_PARAMETERS)}, by name",
        )

    async def read(**values: Any) -> list[str]:
        lines = get_context(**{name: values[name] for name in wanted})
        if inspect.isawaitable(lines):
            lines = await lines
        return context_option(lines, "hallucination", "the list get_context returned") or []

    return read


async def _lines(reader: Callable[..., Any], **values: Any) -> str:
    lines = reader(**values)
    if inspect.isawaitable(lines):
        lines = await lines
    return "\n".join(lines) if lines else NO_CONTEXT


def hallucination(
    model: Any,
    *,
    context: list[str] | None = None,
    get_context: Callable[..., Any] | None = None,
    scale: float = 1,
) -> Scorer:
    """Share of the response's claims that the context does not back, times ``scale``.

    :param model: the judge: a litellm model string (``'openai/gpt-4o-mini'``, ``'local'``), a
        dict of ``Judge`` settings or a ``Judge`` (whose own ``instructions`` are kept).
    :param context: the context, one string per piece; None is an empty context (nothing is
        read from tool results).
    :param get_context: a function (sync or async) returning the context for a run; it takes any
        of ``run``, ``results`` (the step results so far), ``score`` and ``step``
        (``'analyze'`` or ``'generate_reason'``) by name, and is called once for each of those
        two steps. It wins over ``context``.
    :param scale: the score of a response whose every claim is a hallucination.

    Steps: preprocess (judge: claims), analyze (judge: one verdict per claim), analyze (one
    verdict per claim kept; a mismatch is recorded in ``verdictCountMismatch`` and a missing
    verdict counts as a hallucination), generate_score, generate_reason (judge).
    """
    reader = _context_reader(context_option(context, "hallucination"), get_context)
    scale = positive_scale(scale, "hallucination")

    def claims_prompt(run: Any) -> str:
        return CLAIMS_PROMPT.render(output=assistant_text(run))

    async def verdicts_prompt(run: Any, results: Any, preprocess_step_result: Any) -> str:
        claims = preprocess_step_result["claims"]
        return VERDICTS_PROMPT.render(
            context=await _lines(reader, run=run, results=results, score=None, step="analyze"),
            claim_count=str(len(claims)),
            claims=numbered(claims, "(none)"),
        )

    def hallucination_score(analyze_step_result: Any) -> float:
        verdicts = analyze_step_result["verdicts"]
        hallucinated = sum(said_yes(verdict.get("verdict")) for verdict in verdicts)
        return share(hallucinated, len(verdicts), scale)

    async def reason_prompt(run: Any, results: Any, analyze_step_result: Any, score: Any) -> str:
        context_lines = await _lines(
            reader, run=run, results=results, score=score, step="generate_reason"
        )
        return REASON_PROMPT.render(
            scale=f"{scale:g}",
            context=context_lines,
            input=user_text(run),
            output=assistant_text(run),
            score=f"{score:g}",
            verdicts=json_text(analyze_step_result["verdicts"]),
        )

    return (
        create_scorer(
            "hallucination-scorer",
            name="Hallucination Scorer",
            description="A scorer that evaluates the hallucination of an LLM output to an input",
            type="agent",
            judge=scorer_judge(model, INSTRUCTIONS, "hallucination"),
        )
        .preprocess(
            PromptStep(
                "Extract all claims from the given output", claims_prompt, output_schema=Claims
            )
        )
        .analyze(
            PromptStep(
                "Score the relevance of the statements to the input",
                verdicts_prompt,
                output_schema=Verdicts,
            )
        )
        .analyze(
            item_verdicts(
                "claims",
                "verdicts",
                {"verdict": "yes", "reason": "The judge gave no verdict for this claim."},
                "claim",
            )
        )
        .generate_score(hallucination_score)
        .generate_reason(PromptStep("Reason about the results", reason_prompt))
    )
