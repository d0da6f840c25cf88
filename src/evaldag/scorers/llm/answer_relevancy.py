"""Answer relevancy: how much of the response addresses what the user asked.

Mastra's ``createAnswerRelevancyScorer`` (id ``answer-relevancy-scorer``): the judge splits the
response into statements, then rates each one's relevance to the user's message (``yes``
answers it, ``unsure`` partly relevant, ``no`` unrelated). Score = (yes + unsure × uncertainty
weight) / statements × scale.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from evaldag._scorer.builder import Scorer
from evaldag.scorers.llm._item_verdicts import JudgedStep, item_verdict_scorer
from evaldag.scorers.llm._shared import (
    PromptTemplate,
    choice,
    llm_scorer,
    model_documented,
    number_option,
    positive_scale,
)

INSTRUCTIONS = """\
You judge whether an AI assistant's response addresses what the user asked.
- Relevance is about the question, not about truth: a wrong answer to the question is still on
  the question, and a true statement about something else is not.
- A statement can be relevant, partly relevant or unrelated; say which, and why.
- An empty response, or one that is only an error message, does not address the question.
Answer in the JSON format you are asked for."""

STATEMENTS_PROMPT = PromptTemplate("""\
Split the response below into statements: the separate things it says.

- Split a sentence that joins several facts or claims (with "and", commas, lists) into one
  statement each, but keep a fact together with the detail that qualifies it.
- A one-word answer is a statement. An error message is one statement, whole.
- Keep the wording of the response.
- If the response is empty, answer {"statements": []}.

For the response "Yes! The store opens at 9 and closes at 6. Parking is free.", the statements
are: {"statements": ["Yes!", "The store opens at 9", "The store closes at 6",
  "Parking is free"]}

<response>
$output
</response>

Answer with JSON: {"statements": ["...", "..."]}""")

RESULTS_PROMPT = PromptTemplate("""\
Rate how relevant each statement of a response is to the user's message.

<user_message>
$input
</user_message>

There are $item_count statements:
<statements>
$items
</statements>

For each statement, in the order given, give a result:
- "yes": it answers the question directly: the thing asked for (a place for "where", a
  person for "who", a number for "how many"), or a step of the procedure asked for;
- "unsure": it is partly relevant: on the question's topic and kind of information without
  answering it, about a related case rather than the one asked about, or an attempt at the
  answer that is wrong;
- "no": it does not help answer the question: another topic, general facts about the subject
  that do not touch what was asked, small talk, or empty text.
Do not judge whether statements are true, only whether they address the question.
Give exactly one result per statement: $item_count results, each with a short reason.

Example: for the question "How long does the train from Paris to Lyon take?" and the
statements ["The TGV takes about two hours", "Trains to Marseille take three hours",
"Paris has six main stations"], answer:
{"results": [
  {"result": "yes", "reason": "Gives the travel time asked for."},
  {"result": "unsure", "reason": "A travel time, but for another route."},
  {"result": "no", "reason": "About Paris stations, not the travel time."}
]}

Answer with JSON: {"results": [{"result": "yes" | "unsure" | "no", "reason": "..."}]}""")

REASON_PROMPT = PromptTemplate("""\
A response was scored for relevance to the user's message: statements that answer the question
count fully, partly relevant ones count $uncertainty_weight, unrelated ones count 0; the score
runs from 0 to $scale.

<user_message>
$input
</user_message>

<response>
$output
</response>

Score: $score
Results, one per statement: $verdicts

In one or two sentences, explain this score: what in the response addresses the question and
what does not. Take the score as given; do not recompute it or judge correctness. If there are
no statements, say why (for example, the response is empty).
Start with "The score is $score because".""")


class Statements(BaseModel):
    """The statements a response makes."""

    statements: list[str] = Field(description="One statement per entry, in response order.")


class Result(BaseModel):
    """How relevant one statement is to the user's message."""

    result: str = choice("yes", "unsure", "no", description="yes: answers the question.")
    reason: str = Field(description="Why the statement is or is not relevant.")


class Results(BaseModel):
    """One result per statement, in statement order."""

    results: list[Result]


@model_documented
def answer_relevancy(
    model: Any,
    *,
    uncertainty_weight: float = 0.3,
    scale: float = 1,
    id: str = "answer-relevancy-scorer",
) -> Scorer:
    """Relevance of the response's statements to the user's message, times ``scale``.

    :param uncertainty_weight: what a partly relevant (``unsure``) statement counts, 0 to 1.
    :param scale: the score of a fully relevant response.

    Steps: preprocess (judge: statements), analyze (judge: one result per statement), analyze
    (one result per statement kept; a mismatch is recorded in ``verdictCountMismatch`` and a
    missing result counts as ``no``; no result at all for the statements fails the item),
    generate_score, generate_reason (judge).
    """
    weight = number_option(
        uncertainty_weight, "uncertainty_weight", "answer_relevancy", minimum=0, maximum=1
    )
    scale = positive_scale(scale, "answer_relevancy")
    return item_verdict_scorer(
        llm_scorer(
            id,
            model,
            INSTRUCTIONS,
            factory="answer_relevancy",
            max_score=scale,
            name="Answer Relevancy Scorer",
            description="A scorer that evaluates the relevancy of an LLM output to an input",
            type="agent",
        ),
        items=JudgedStep(STATEMENTS_PROMPT, Statements),
        verdicts=JudgedStep(RESULTS_PROMPT, Results),
        reason=JudgedStep(REASON_PROMPT),
        texts={"uncertainty_weight": lambda: f"{weight:g}"},
        verdict="result",
        points={"yes": 1.0, "unsure": weight},
        item="statement",
        missing="no",
        scale=scale,
    )
