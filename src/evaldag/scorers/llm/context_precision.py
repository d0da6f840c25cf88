"""Context precision: are the context pieces that helped the response ranked first?

Mastra's ``createContextPrecisionScorer`` (id ``context-precision-scorer``): the judge says of
each retrieved context piece, in rank order, whether it was useful for producing the response
to the user's message. The score is the mean average precision of those verdicts: for each
useful piece at rank k, the share of useful pieces among the first k, averaged, × scale.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel, Field

from evaldag._compat.js import round_to_two_decimals
from evaldag._scorer.builder import Scorer
from evaldag._scorer.steps import PromptStep
from evaldag.scorers.llm._retrieval import (
    indexed,
    piece_verdicts,
    pieces_prompt,
    run_context,
)
from evaldag.scorers.llm._shared import (
    PromptTemplate,
    assistant_text,
    choice,
    json_text,
    llm_scorer,
    model_documented,
    positive_scale,
    said_yes,
    scorer_needing,
    user_text,
)

INSTRUCTIONS = """\
You judge retrieved context for a question-answering system: for each piece of context, was
it useful for producing the response to the user's question?
- Judge each piece on its own, against both the question and the response.
- A piece is useful when the response relies on it or the question needs it: it supplies a
  fact, figure or detail the response states or the answer requires.
- Background that is on the topic but adds nothing the response needed is not useful, and
  neither is a piece about something else. Be strict.
Answer in the JSON format you are asked for."""

VERDICTS_PROMPT = PromptTemplate("""\
Say which of the retrieved context pieces below were useful for producing the response to the
user's question.

<user_question>
$input
</user_question>

<response>
$output
</response>

There are $piece_count context pieces, numbered from 0 in retrieval order:
<context>
$context
</context>

For each piece, in order, give "context_index" (its number), a verdict ("yes" when it supplies
information the response uses or the question needs, "no" otherwise) and a reason.
Give exactly one verdict per piece: $piece_count verdicts.

Example: for the question "What are the health benefits of walking?", the response "Walking
strengthens the heart and lifts the mood." and the pieces [0] "Brisk walking lowers blood
pressure and strengthens the heart." [1] "The first pedometer was sold in 1965." [2] "A daily
walk reduces symptoms of depression.", answer:
{"verdicts": [
  {"context_index": 0, "verdict": "yes", "reason": "Supports the heart benefit."},
  {"context_index": 1, "verdict": "no", "reason": "History, not a health benefit."},
  {"context_index": 2, "verdict": "yes", "reason": "Supports the mood benefit."}
]}

Answer with JSON: {"verdicts": [{"context_index": 0, "verdict": "yes" | "no",
"reason": "..."}]}""")

REASON_PROMPT = PromptTemplate("""\
The context retrieved for a question was scored for precision, from 0 to $scale: the mean
average precision of the judge's verdicts, which is highest when every useful piece is ranked
before every useless one.

<user_question>
$input
</user_question>

<response>
$output
</response>

<context>
$context
</context>

Score: $score
Verdicts, one per piece in rank order: $verdicts

In one or two sentences, explain this score: which pieces were useful, and how their ranks
raise or lower it. Take the score as given; do not recompute it.
Start with "The score is $score because".""")


class Verdict(BaseModel):
    """Whether one context piece was useful for the response."""

    context_index: int = Field(description="The piece's number, from 0.")
    verdict: str = choice("yes", "no", description="yes: the piece was useful.")
    reason: str


class Verdicts(BaseModel):
    """One verdict per context piece."""

    verdicts: list[Verdict]


def _missing_verdict(index: int, piece: str) -> dict[str, Any]:
    return {
        "context_index": index,
        "verdict": "no",
        "reason": "The judge gave no verdict for this context piece.",
    }


def _mean_average_precision(verdicts: Sequence[Any]) -> float:
    useful = 0
    precision_sum = 0.0
    for rank, verdict in enumerate(verdicts, 1):
        if said_yes(verdict.get("verdict")):
            useful += 1
            precision_sum += useful / rank
    return precision_sum / useful if useful else 0.0


@model_documented
def context_precision(
    model: Any,
    *,
    context: list[str] | str | Callable[[Any], Any] | None = None,
    context_extractor: Callable[[Any, Any], Any] | None = None,
    scale: float = 1,
    id: str = "context-precision-scorer",
) -> Scorer:
    """Mean average precision of the retrieved context, judged per piece, times ``scale``.

    :param context: the retrieved context in rank order (required): a list of strings (the same
        pieces for every run), the name of a data column holding each run's list of strings
        (``'contexts'``), or a function of the run (sync or async) returning it. A run whose
        context holds no text is not scorable (no judge call).
    :param context_extractor: Mastra's form of a function: ``f(input, output)`` is
        ``context=lambda run: f(run.input, run.output)``; give one of the two.
    :param scale: the score of a perfectly ranked context.

    Steps: preprocess (not scorable without a context; only when it is not a fixed list),
    analyze (judge: one verdict per piece), analyze (verdicts put in piece order, one per
    piece; a missing one counts as not useful and a mismatch is recorded in
    ``verdictCountMismatch``), generate_score, generate_reason (judge).
    """
    factory = "context_precision"
    context_of = run_context(
        context, extractor=context_extractor, factory=factory, scoring="Context Precision"
    )
    scale = positive_scale(scale, factory)

    def precision_score(analyze_step_result: Any) -> float:
        precision = _mean_average_precision(analyze_step_result["verdicts"])
        return round_to_two_decimals(precision * scale)

    async def reason_prompt(run: Any, analyze_step_result: Any, score: Any) -> str:
        return REASON_PROMPT.render(
            scale=f"{scale:g}",
            input=user_text(run),
            output=assistant_text(run),
            context=indexed(await context_of(run)),
            score=f"{score:g}",
            verdicts=json_text(analyze_step_result["verdicts"]),
        )

    return (
        scorer_needing(
            llm_scorer(
                id,
                model,
                INSTRUCTIONS,
                factory=factory,
                max_score=scale,
                name="Context Precision Scorer",
                description="A scorer that evaluates the relevance and precision of retrieved "
                "context nodes for generating expected outputs",
                type="agent",
                columns=context_of.columns,
            ),
            context=context_of,
        )
        .analyze(
            PromptStep(
                "Evaluate the relevance of each context piece for generating the expected output",
                pieces_prompt(VERDICTS_PROMPT, context_of),
                output_schema=Verdicts,
            )
        )
        .analyze(
            piece_verdicts(
                context_of,
                "verdicts",
                _missing_verdict,
                in_order=True,
                description="One verdict per context piece, in context order",
            )
        )
        .generate_score(precision_score)
        .generate_reason(PromptStep("Reason about the context precision results", reason_prompt))
    )
