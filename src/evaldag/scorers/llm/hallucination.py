"""Hallucination: the share of the response's claims that its context does not back.

Mastra's ``createHallucinationScorer`` (id ``hallucination-scorer``): the judge lists the claims
of the response, then says of each whether it is a hallucination (``yes``: it contradicts the
context or asserts what the context does not support) or not (``no``). Score = hallucinated
claims / claims × scale; higher is worse. The context is ``context=`` (pieces, a data column or
a function of the run) or, when that is None, the JSON of the run's tool results, as for
faithfulness; a run without context is not scorable. The response is everything the assistant
said in the run, where Mastra reads its last text.
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

There are $item_count claims:
<claims>
$items
</claims>

For each claim, in the order given, give a verdict:
- "yes" (a hallucination): the claim contradicts the context, or asserts something the context
  does not support, including hedged claims about things the context does not mention and
  judgments ("groundbreaking", "the best") the context does not state;
- "no" (not a hallucination): the context supports the claim; a less precise date, a rounded
  number, a left-out detail or a hedge about something the context states are fine.
Give exactly one verdict per claim: $item_count verdicts. Repeat the claim in "statement" and
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


class Verdict(BaseModel):
    """Whether one claim is a hallucination."""

    statement: str | None = Field(default=None, description="The claim judged.")
    verdict: str = choice("yes", "no", description="yes: the claim is a hallucination.")
    reason: str = Field(description="What in the context backs or contradicts the claim.")


class Verdicts(BaseModel):
    """One verdict per claim, in claim order."""

    verdicts: list[Verdict]


@model_documented
def hallucination(
    model: Any,
    *,
    context: list[str] | str | Callable[[Any], Any] | None = None,
    scale: float = 1,
    id: str = "hallucination-scorer",
) -> Scorer:
    """Share of the response's claims that the context does not back, times ``scale``.

    :param context: the context to check claims against: a list of strings (the same pieces for
        every run), the name of a data column holding each run's list of strings
        (``'contexts'``), or a function of the run (sync or async) returning it (Mastra's
        ``getContext``, given the run only). When None, the context is the JSON of each tool
        result in the run's output, as for faithfulness. A run whose context holds no text is
        not scorable (no judge call).
    :param scale: the score of a response whose every claim is a hallucination.

    Steps: preprocess (not scorable without a context; only when it is not a fixed list),
    preprocess (judge: claims), analyze (judge: one verdict per claim), analyze (one verdict per
    claim kept; a mismatch is recorded in ``verdictCountMismatch`` and a missing verdict counts
    as a hallucination; no verdict at all for the claims fails the item, naming the judge's
    reply), generate_score, generate_reason (judge). A response with no claims (the judge lists
    none) scores 0, as Mastra's.
    """
    factory = "hallucination"
    context_of = run_context(context, factory=factory, default=TOOL_RESULTS)
    scale = positive_scale(scale, factory)
    return item_verdict_scorer(
        scorer_needing(
            llm_scorer(
                id,
                model,
                INSTRUCTIONS,
                factory=factory,
                better="lower",
                max_score=scale,
                name="Hallucination Scorer",
                description="A scorer that evaluates the hallucination of an LLM output to an "
                "input",
                type="agent",
                columns=context_of.columns,
            ),
            context=context_of,
        ),
        items=JudgedStep(CLAIMS_PROMPT, Claims, "Extract all claims from the given output"),
        verdicts=JudgedStep(VERDICTS_PROMPT, Verdicts),
        reason=JudgedStep(REASON_PROMPT),
        texts={"context": context_of.text_of},
        item="claim",
        missing="yes",
        scale=scale,
    )
