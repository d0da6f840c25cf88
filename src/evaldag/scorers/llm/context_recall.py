"""Context recall: the share of the reference answer's claims that the retrieved context holds.

Mastra's ``createContextRecallScorer`` (id ``context-recall-scorer``): the judge lists the claims
of the run's ground truth (the reference answer), then says of each whether the retrieved
context supports it (``yes``) or not (``no``). Score = supported claims / claims × scale. A run
without ground truth or without context is not scorable. The response itself is not judged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, Field

from evaldag._scorer.builder import Scorer
from evaldag.scorers.llm._item_verdicts import JudgedStep, item_verdict_scorer
from evaldag.scorers.llm._retrieval import indexed, run_context
from evaldag.scorers.llm._shared import (
    PromptTemplate,
    choice,
    ground_truth_text,
    llm_scorer,
    model_documented,
    positive_scale,
    scorer_needing,
)

INSTRUCTIONS = """\
You check whether the context a retrieval system found holds the information of a reference
answer: everything needed to give that answer.
You work in two passes: first you split the reference answer into its claims, then you check
each claim against the retrieved context and nothing else.
- A claim is supported when some piece of the context states it or plainly implies it; the
  wording may differ.
- A claim is not supported when no piece of the context states or implies it, even if the claim
  is true. Your own knowledge of the world does not count.
- Be strict: a piece on the same topic that lacks the claim's specific fact does not support it.
Answer in the JSON format you are asked for."""

CLAIMS_PROMPT = PromptTemplate("""\
Split the reference answer below into claims. A claim states one piece of information: a
fact, a figure, a date, a name or a relation between things.

- Split sentences that say several things into one claim each.
- Keep numbers, dates, units and names exactly as written.
- Write each claim so that it stands on its own: replace "it" or "they" with what they refer to.
- Leave out questions, instructions and wording that carries no information.
- Do not add anything the reference answer does not say.
- If the reference answer is empty, answer {"claims": []}.

For the reference answer "The Louvre is in Paris. It opened in 1793 and is the most visited
museum in the world.", the claims are:
{"claims": ["The Louvre is in Paris", "The Louvre opened in 1793",
  "The Louvre is the most visited museum in the world"]}

<reference_answer>
$ground_truth
</reference_answer>

Answer with JSON: {"claims": ["...", "..."]}""")

VERDICTS_PROMPT = PromptTemplate("""\
Check whether the retrieved context below supports each claim of a reference answer.

<retrieved_context>
$context
</retrieved_context>

There are $item_count claims:
<claims>
$items
</claims>

For each claim, in the order given, give a verdict:
- "yes": a piece of the context states the claim or plainly implies it;
- "no": no piece of the context states or implies it.
Give exactly one verdict per claim: $item_count verdicts. In "reason", name the piece that
supports the claim ("[0]", "[1]" ...) or say what the context lacks.

Example: with the context "[0] The Louvre is a museum in Paris." "[1] It opened to the public
in 1793." and the claims ["The Louvre is in Paris", "The Louvre has 35,000 works on display"],
answer:
{"verdicts": [
  {"verdict": "yes", "reason": "[0] says the Louvre is in Paris."},
  {"verdict": "no", "reason": "No piece gives the number of works on display."}
]}

Answer with JSON: {"verdicts": [{"verdict": "yes" | "no", "reason": "..."}]}""")

REASON_PROMPT = PromptTemplate("""\
The context retrieved for a question was scored for recall, from 0 to $scale: the share of the
reference answer's claims that the context supports.

<reference_answer>
$reference
</reference_answer>

<retrieved_context>
$context
</retrieved_context>

Score: $score
Verdicts, one per claim of the reference answer: $verdicts

In one or two sentences, explain this score: which claims the context covers (and with which
pieces), and what information it is missing. Take the score as given; do not recompute it.
Start with "The score is $score because".""")


class Claims(BaseModel):
    """The claims of the reference answer."""

    claims: list[str] = Field(description="One self-contained claim per entry.")


class Verdict(BaseModel):
    """Whether the retrieved context supports one claim."""

    verdict: str = choice("yes", "no", description="yes: a context piece supports the claim.")
    reason: str = Field(description="The piece that supports the claim, or what is missing.")


class Verdicts(BaseModel):
    """One verdict per claim, in claim order."""

    verdicts: list[Verdict]


@model_documented
def context_recall(
    model: Any,
    *,
    context: list[str] | str | Callable[[Any], Any] | None = None,
    context_extractor: Callable[[Any, Any], Any] | None = None,
    scale: float = 1,
    id: str = "context-recall-scorer",
) -> Scorer:
    """Share of the ground truth's claims that the retrieved context supports, times ``scale``.

    :param context: the retrieved context (required): a list of strings (the same pieces for
        every run), the name of a data column holding each run's list of strings
        (``'contexts'``), or a function of the run (sync or async) returning it.
    :param context_extractor: Mastra's form of a function: ``f(input, output)`` is
        ``context=lambda run: f(run.input, run.output)``; give one of the two.
    :param scale: the score when the context holds every claim.

    Each run needs ``ground_truth`` (the reference answer; not a string: its JSON) and a context
    with text; a run without either is not scorable (no judge call). Steps: preprocess (not
    scorable without them), preprocess (judge: the ground truth's claims), analyze (judge: one
    verdict per claim), analyze (one verdict per claim kept: extra ones dropped, a missing one
    counts as unsupported, a mismatch is recorded in ``verdictCountMismatch``; no verdict at all
    for the claims fails the item),
    generate_score, generate_reason (judge).
    """
    factory = "context_recall"
    context_of = run_context(
        context, extractor=context_extractor, factory=factory, scoring="Context Recall"
    )
    scale = positive_scale(scale, factory)

    async def context_text(run: Any) -> str:
        return indexed(await context_of(run))

    return item_verdict_scorer(
        scorer_needing(
            llm_scorer(
                id,
                model,
                INSTRUCTIONS,
                factory=factory,
                max_score=scale,
                name="Context Recall Scorer",
                description="A scorer that evaluates how well retrieved context covers the "
                "claims in a ground-truth reference answer",
                type="agent",
                columns=context_of.columns,
            ),
            context=context_of,
            ground_truth=True,
        ),
        items=JudgedStep(
            CLAIMS_PROMPT, Claims, "Extract atomic claims from the ground-truth answer"
        ),
        verdicts=JudgedStep(
            VERDICTS_PROMPT,
            Verdicts,
            "Check if each ground-truth claim is attributable to the retrieval context",
        ),
        reason=JudgedStep(
            REASON_PROMPT, description="Explain the context recall evaluation results"
        ),
        texts={
            "ground_truth": ground_truth_text,
            "reference": ground_truth_text,
            "context": context_text,
        },
        item="claim",
        missing="no",
        scale=scale,
    )
