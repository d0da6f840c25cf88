"""Context relevance: how relevant the retrieved context was to the question, and was it used?

Mastra's ``createContextRelevanceScorerLLM`` (id ``context-relevance-scorer``): the judge rates
each context piece's relevance to the user's question (high, medium, low, none), says whether
the response used it, and lists information that was missing from the context. Score = mean
relevance weight (high 1, medium 0.7, low 0.3, none 0) − 0.1 per highly relevant piece left
unused − 0.15 per missing item (at most 0.5), floored at 0, × scale.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from pydantic import Field

from evaldag._compat.js import js_total, round_to_two_decimals
from evaldag._scorer.builder import Scorer
from evaldag._scorer.steps import PromptStep
from evaldag.scorers.llm._options import ScorerOptions, options_model
from evaldag.scorers.llm._retrieval import piece_verdicts, pieces_prompt, run_context
from evaldag.scorers.llm._shared import (
    CamelAnswer,
    PromptTemplate,
    json_text,
    llm_scorer,
    model_documented,
    positive_scale,
    scorer_needing,
    user_text,
)

INSTRUCTIONS = """\
You judge the context a retrieval system gave an AI assistant for a user's question: how
relevant each piece was to the question, and whether the assistant's response made use of it.
- "high": the piece answers the question or directly supports the answer.
- "medium": background that bears on the question without answering it.
- "low": on a related topic, but of little help for this question.
- "none": unrelated to the question.
- A piece was used when the response states or relies on its information.
- Also note what information the question needed that no piece provided.
Be fair and specific, and answer in the JSON format you are asked for."""

EVALUATIONS_PROMPT = PromptTemplate("""\
Rate how relevant each retrieved context piece was for answering the user's question, and
whether the response used it.

<user_question>
$input
</user_question>

<response>
$output
</response>

There are $piece_count context pieces, numbered from 0:
<context>
$context
</context>

For each piece, in order, give:
- "context_index": its number;
- "contextPiece": its text;
- "relevanceLevel": "high" (answers the question or directly supports the answer), "medium"
  (useful background), "low" (related topic, little help) or "none" (unrelated);
- "wasUsed": true when the response states or relies on the piece's information;
- "reasoning": why.
Give exactly one evaluation per piece: $piece_count evaluations. Then list in
"missingContext" the information the question needed that no piece gave (an empty list when
nothing was missing), and sum up in "overallAssessment".

Example: for the question "When does the museum open on Sundays?", the response "It opens at
10 am on Sundays." and the pieces [0] "Sunday hours: 10:00 to 18:00." [1] "The museum was
founded in 1901.", answer:
{"evaluations": [
  {"context_index": 0, "contextPiece": "Sunday hours: 10:00 to 18:00.",
   "relevanceLevel": "high", "wasUsed": true, "reasoning": "Gives the Sunday opening time."},
  {"context_index": 1, "contextPiece": "The museum was founded in 1901.",
   "relevanceLevel": "none", "wasUsed": false, "reasoning": "History, not opening hours."}
], "missingContext": [],
 "overallAssessment": "The one relevant piece answered the question and was used."}

Answer with JSON: {"evaluations": [{"context_index": 0, "contextPiece": "...",
"relevanceLevel": "high" | "medium" | "low" | "none", "wasUsed": true | false,
"reasoning": "..."}], "missingContext": ["..."], "overallAssessment": "..."}""")

REASON_PROMPT = PromptTemplate("""\
The context retrieved for a question was scored for relevance, from 0 to $scale: the mean
relevance of its pieces (high 1, medium 0.7, low 0.3, none 0), minus $unused_penalty for each
highly relevant piece the response did not use and $missing_penalty for each piece of missing
information (at most $max_missing_penalty in all).

<user_question>
$input
</user_question>

Score: $score
Evaluations, one per context piece: $evaluations
Missing information: $missing

In one or two sentences, explain this score: how relevant the pieces were, whether the
relevant ones were used, and which penalties applied. Take the score as given; do not
recompute it. Start with "The score is $score because".""")

_WEIGHTS = {"high": 1.0, "medium": 0.7, "low": 0.3, "none": 0.0}


class ContextRelevancePenalties(ScorerOptions):
    """What lowers the score: unused highly relevant pieces and missing information."""

    unused_high_relevance_context: float = Field(0.1, ge=0)
    missing_context_per_item: float = Field(0.15, ge=0)
    max_missing_context_penalty: float = Field(0.5, ge=0)


class Evaluation(CamelAnswer):
    """How relevant one context piece was, and whether the response used it."""

    context_index: int = Field(alias="context_index", description="The piece's number, from 0.")
    context_piece: str = Field(description="The piece's text.")
    relevance_level: Literal["high", "medium", "low", "none"]
    was_used: bool = Field(description="True when the response relies on the piece.")
    reasoning: str


class Evaluations(CamelAnswer):
    """One evaluation per context piece, and what the context lacked."""

    evaluations: list[Evaluation]
    missing_context: list[str] = Field(
        default_factory=list, description="Information the question needed that no piece gave."
    )
    overall_assessment: str


def _missing_evaluation(index: int, piece: str) -> dict[str, Any]:
    return {
        "context_index": index,
        "contextPiece": piece,
        "relevanceLevel": "none",
        "wasUsed": False,
        "reasoning": "The judge gave no evaluation for this context piece.",
    }


@model_documented
def context_relevance(
    model: Any,
    *,
    context: list[str] | str | Callable[[Any], Any] | None = None,
    context_extractor: Callable[[Any, Any], Any] | None = None,
    scale: float = 1,
    penalties: ContextRelevancePenalties | dict[str, float] | None = None,
    id: str = "context-relevance-scorer",
) -> Scorer:
    """Relevance of the retrieved context to the question, less penalties, times ``scale``.

    :param context: the retrieved context (required): a list of strings (the same pieces for
        every run), the name of a data column holding each run's list of strings
        (``'contexts'``), or a function of the run (sync or async) returning it. A run whose
        context holds no text is not scorable (no judge call).
    :param context_extractor: Mastra's form of a function: ``f(input, output)`` is
        ``context=lambda run: f(run.input, run.output)``; give one of the two.
    :param scale: the score of a fully relevant, fully used context.
    :param penalties: ``unused_high_relevance_context`` (0.1 per piece),
        ``missing_context_per_item`` (0.15) and ``max_missing_context_penalty`` (0.5), as a
        dict (Mastra's camelCase keys work too) or :class:`ContextRelevancePenalties`; keys
        left out keep their defaults.

    Steps: preprocess (not scorable without a context; only when it is not a fixed list),
    analyze (judge: one evaluation per piece), analyze (one evaluation per piece, in piece
    order: a missing one counts as relevance ``none``, a mismatch is recorded in
    ``verdictCountMismatch``), generate_score, generate_reason (judge).
    """
    factory = "context_relevance"
    context_of = run_context(
        context, extractor=context_extractor, factory=factory, scoring="Context Relevance"
    )
    scale = positive_scale(scale, factory)
    rates = options_model(ContextRelevancePenalties, penalties, "penalties", factory)

    def relevance_score(analyze_step_result: Any) -> float:
        evaluations = analyze_step_result["evaluations"]
        weights = js_total(_WEIGHTS[e["relevanceLevel"]] for e in evaluations)
        relevance = weights / len(evaluations)
        unused = sum(e["relevanceLevel"] == "high" and not e["wasUsed"] for e in evaluations)
        missing = len(analyze_step_result.get("missingContext") or [])
        penalty = unused * rates.unused_high_relevance_context + min(
            missing * rates.missing_context_per_item, rates.max_missing_context_penalty
        )
        return round_to_two_decimals(max(0.0, relevance - penalty) * scale)

    def reason_prompt(run: Any, analyze_step_result: Any, score: Any) -> str:
        return REASON_PROMPT.render(
            scale=f"{scale:g}",
            unused_penalty=f"{rates.unused_high_relevance_context:g}",
            missing_penalty=f"{rates.missing_context_per_item:g}",
            max_missing_penalty=f"{rates.max_missing_context_penalty:g}",
            input=user_text(run),
            score=f"{score:g}",
            evaluations=json_text(analyze_step_result["evaluations"]),
            missing=json_text(analyze_step_result.get("missingContext") or []),
        )

    return (
        scorer_needing(
            llm_scorer(
                id,
                model,
                INSTRUCTIONS,
                factory=factory,
                max_score=scale,
                name="Context Relevance (LLM)",
                description="Evaluates how relevant and useful the provided context was for "
                "generating the agent response",
                type="agent",
                columns=context_of.columns,
            ),
            context=context_of,
        )
        .analyze(
            PromptStep(
                "Analyze the relevance and utility of provided context",
                pieces_prompt(EVALUATIONS_PROMPT, context_of),
                output_schema=Evaluations,
            )
        )
        .analyze(
            piece_verdicts(
                context_of,
                "evaluations",
                _missing_evaluation,
                in_order=False,
                description="One evaluation per context piece",
            )
        )
        .generate_score(relevance_score)
        .generate_reason(
            PromptStep(
                "Generate human-readable explanation of context relevance evaluation",
                reason_prompt,
            )
        )
    )
