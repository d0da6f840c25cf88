"""Faithfulness: the share of the response's claims that its context supports.

Mastra's ``createFaithfulnessScorer`` (id ``faithfulness-scorer``): the judge lists the claims
of the response, then gives each a verdict against the context (``yes`` supported, ``no``
contradicted, ``unsure`` not in the context or speculative). Score = supported claims / claims
× scale. The context is ``context=`` (pieces, a data column or a function of the run) or, when
that is None, the JSON of the run's tool results; a run without context is not scorable.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, Field

from evaldag._scorer.builder import Scorer
from evaldag.scorers.llm._item_verdicts import Claims, JudgedStep, item_verdict_scorer
from evaldag.scorers.llm._retrieval import TOOL_RESULTS, run_context
from evaldag.scorers.llm._shared import (
    PromptTemplate,
    choice,
    llm_scorer,
    model_documented,
    positive_scale,
    scorer_needing,
)

INSTRUCTIONS = """\
You check whether what an AI assistant said is backed by the context it was given.
You work in two passes: first you list the claims a response makes, then you check each claim
against the context and nothing else.
- A claim the context states or directly implies is supported ("yes").
- A claim that conflicts with the context is contradicted ("no").
- A claim the context does not address is "unsure", and so is any claim hedged with words such
  as "may", "might", "could" or "possibly", even when the context hints at it.
- Your own knowledge of the world does not count: a true claim the context does not back is
  "unsure".
- An empty response makes no claims.
Answer in the JSON format you are asked for."""

CLAIMS_PROMPT = PromptTemplate("""\
List every claim made in the response below. A claim is a statement that something is so:
a fact, a figure, a date, a relation between things, a prediction or a possibility.

- Split sentences that say several things into one claim each.
- Keep numbers, dates, units and names exactly as written.
- Write each claim so that it stands on its own: replace "it" or "they" with what they refer to.
- Keep hedged claims ("might", "could", "probably") as claims, with their hedge.
- Leave out questions, instructions to the reader and pleasantries.
- If the response is empty or makes no claims, answer {"claims": []}.

For the response "The museum opens at 9 am and is free on Sundays. It might close early on
holidays.", the claims are:
{"claims": ["The museum opens at 9 am", "The museum is free on Sundays",
  "The museum might close early on holidays"]}

<response>
$output
</response>

Answer with JSON: {"claims": ["...", "..."]}""")

VERDICTS_PROMPT = PromptTemplate("""\
Check each claim below against the context, and only the context.

<context>
$context
</context>

There are $item_count claims:
<claims>
$items
</claims>

For each claim, in the order given, give a verdict:
- "yes": the context states the claim or directly implies it;
- "no": the claim conflicts with the context;
- "unsure": the context does not address the claim, or the claim is hedged ("may", "might",
  "could", "possibly").
Give exactly one verdict per claim: $item_count verdicts. Repeat the claim in "claim" and say
in "reason" which part of the context supports or contradicts it, or that none addresses it.

Example: with the context "The library opens at 8 am. Entry is free." and the claims
["The library opens at 8 am", "Entry costs 5 euros", "The library may add a café"], answer:
{"verdicts": [
  {"claim": "The library opens at 8 am", "verdict": "yes",
   "reason": "The context gives 8 am."},
  {"claim": "Entry costs 5 euros", "verdict": "no",
   "reason": "The context says entry is free."},
  {"claim": "The library may add a café", "verdict": "unsure",
   "reason": "The claim is hedged, and the context says nothing about a café."}
]}

Answer with JSON: {"verdicts": [{"claim": "...", "verdict": "yes" | "no" | "unsure",
"reason": "..."}]}""")

REASON_PROMPT = PromptTemplate("""\
A response was scored for faithfulness to its context: the score is the share of its claims
that the context supports (verdict "yes"), on a scale from 0 to $scale.

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
Verdicts, one per claim: $verdicts

In one or two sentences, explain this score: say which claims the context supports and which
it contradicts or does not address. Take the score as given; do not recompute it. If there
are no claims, say that the response made no claims that could be checked.
Start with "The score is $score because".""")


class Verdict(BaseModel):
    """Whether the context supports one claim."""

    claim: str | None = Field(default=None, description="The claim judged.")
    verdict: str = choice("yes", "no", "unsure", description="yes: supported; no: contradicted.")
    reason: str = Field(description="Where the context supports or contradicts the claim.")


class Verdicts(BaseModel):
    """One verdict per claim, in claim order."""

    verdicts: list[Verdict]


@model_documented
def faithfulness(
    model: Any,
    *,
    context: list[str] | str | Callable[[Any], Any] | None = None,
    scale: float = 1,
    id: str = "faithfulness-scorer",
) -> Scorer:
    """Share of the response's claims that the context supports, times ``scale``.

    :param context: the context to check claims against: a list of strings (the same pieces for
        every run), the name of a data column holding each run's list of strings
        (``'contexts'``), or a function of the run (sync or async) returning it. When None, the
        context is the JSON of each tool result in the run's output (from message parts and
        legacy ``toolInvocations``). A run whose context holds no text is not scorable (no
        judge call).
    :param scale: the score of a fully supported response.

    Steps: preprocess (not scorable without a context; only when it is not a fixed list),
    preprocess (judge: claims), analyze (judge: one verdict per claim), analyze (one verdict per
    claim kept: if the judge gave more or fewer, the analyze result says so in
    ``verdictCountMismatch`` and a missing verdict counts as unsupported; no verdict at all for
    the claims fails the item), generate_score
    (supported / claims × scale, two decimals), generate_reason (judge).
    """
    factory = "faithfulness"
    context_of = run_context(context, factory=factory, default=TOOL_RESULTS)
    scale = positive_scale(scale, factory)
    return item_verdict_scorer(
        scorer_needing(
            llm_scorer(
                id,
                model,
                INSTRUCTIONS,
                factory=factory,
                max_score=scale,
                name="Faithfulness Scorer",
                description="A scorer that evaluates the faithfulness of an LLM output to an input",
                type="agent",
                columns=context_of.columns,
            ),
            context=context_of,
        ),
        items=JudgedStep(CLAIMS_PROMPT, Claims),
        verdicts=JudgedStep(VERDICTS_PROMPT, Verdicts),
        reason=JudgedStep(REASON_PROMPT),
        texts={"context": context_of.text_of},
        item="claim",
        missing="unsure",
        scale=scale,
    )
