"""Summarization: is the summary faithful to its source, and does it keep what matters?

Mastra's ``createSummarizationScorer`` (id ``summarization-scorer``): one judge call lists the
summary's claims, each marked supported or not by the source, and writes up to
``max_questions`` yes-questions the source answers; a second call, which never sees the source,
says which questions the summary answers. Score = min(supported claims / claims, answered
questions / questions) × scale, so a summary passes neither by being faithful but empty nor
by being thorough but wrong; 0 when there are no claims or no questions. The source is
``source=`` (pieces, a data column or a function of the run) or, when that is None, the user's
message; a run without a source is not scorable.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, Field

from evaldag._compat.js import round_to_two_decimals
from evaldag._scorer.builder import Scorer
from evaldag._scorer.steps import PromptStep, described_step
from evaldag.errors import EvalDagError
from evaldag.scorers.llm._item_verdicts import aligned_verdicts
from evaldag.scorers.llm._retrieval import RunContext, run_context
from evaldag.scorers.llm._shared import (
    PromptTemplate,
    json_text,
    llm_scorer,
    model_documented,
    numbered,
    positive_scale,
    response_text,
    scorer_needing,
    user_text,
)
from evaldag.transcripts import extract_agent_response_messages

INSTRUCTIONS = """\
You check summaries: is a summary true to its source text, and does it keep the source's
information?
- Judge only against the texts you are given, never against what you know.
- A claim of the summary is supported only when the source states it or directly implies it.
- Numbers, dates, names and technical terms must match exactly: "about 2020" is not "2020",
  "Acme Inc." is not "Acme Group". Other wording may differ when the meaning is the same.
- A weaker or stronger claim than the source makes does not match it: "grew" is not "doubled".
- Faithfulness and coverage are separate questions; judge each claim and each question on its
  own.
Answer in the JSON format you are asked for."""

SOURCE_PROMPT = PromptTemplate("""\
Check a summary against its source text, in two separate parts.

<source>
$source
</source>

<summary>
$summary
</summary>

Part 1, "alignment": list the claims the summary makes, one piece of information each (split
sentences that say several things; keep numbers, dates and names; leave out questions and
style). For each claim, set "supported" to true only when the source states it or directly
implies it, and to false when the source contradicts it or does not contain it, and give a
"reason". An empty summary makes no claims: answer [].

Part 2, "questions": write at most $max_questions closed questions that the source, and only
the source, answers with "yes". Start with its most important facts. Pick them from the source
alone: do not let the summary decide which facts to ask about, and do not skip a fact because
the summary leaves it out. Each question must be specific and have a clear yes answer, never
"maybe" or "partly". An empty source gives no questions: answer [].

Example: for the source "The bakery opened in Leeds in 2012. It sells 400 loaves a day. It
moved to York in 2019." and the summary "The bakery, opened in Leeds in 2012, sells 500
loaves a day.", answer:
{"alignment": [
  {"claim": "The bakery opened in Leeds in 2012", "supported": true,
   "reason": "The source gives Leeds and 2012."},
  {"claim": "The bakery sells 500 loaves a day", "supported": false,
   "reason": "The source says 400 loaves."}
], "questions": ["Did the bakery open in Leeds in 2012?",
  "Does the bakery sell 400 loaves a day?", "Did the bakery move to York in 2019?"]}

Answer with JSON: {"alignment": [{"claim": "...", "supported": true | false,
"reason": "..."}], "questions": ["...", "..."]}""")

COVERAGE_PROMPT = PromptTemplate("""\
Decide which of the questions below the summary answers. The summary is all you have: do not
use anything you know.

<summary>
$summary
</summary>

There are $question_count questions:
<questions>
$questions
</questions>

For each question, in the order given, repeat it in "question", set "answered" to true only
when the summary holds the information to answer it (numbers, dates and names must match
exactly), and to false when the summary leaves it out or says otherwise, and give a "reason".
Give exactly one entry per question: $question_count entries.

Example: for the summary "The bakery, opened in Leeds in 2012, sells 500 loaves a day." and
the questions ["Did the bakery open in Leeds in 2012?", "Does the bakery sell 400 loaves a
day?"], answer:
{"coverage": [
  {"question": "Did the bakery open in Leeds in 2012?", "answered": true,
   "reason": "The summary gives Leeds and 2012."},
  {"question": "Does the bakery sell 400 loaves a day?", "answered": false,
   "reason": "The summary says 500 loaves."}
]}

Answer with JSON: {"coverage": [{"question": "...", "answered": true | false,
"reason": "..."}]}""")

REASON_PROMPT = PromptTemplate("""\
A summary was scored from 0 to $scale: the lower of its faithfulness (the share of its claims
the source supports: $alignment_score) and its coverage (the share of the source's key
questions it answers: $coverage_score), times $scale.

<source>
$source
</source>

<summary>
$summary
</summary>

Score: $score
Claims the source does not support: $unsupported
Questions the summary does not answer: $unanswered

In one or two sentences, explain this score: say which of the two measures set it, and what
the summary got wrong or left out. Take the score as given; do not recompute it.
Start with "The score is $score because".""")

DEFAULT_MAX_QUESTIONS = 10


class ClaimCheck(BaseModel):
    """Whether the source supports one claim of the summary."""

    claim: str
    supported: bool
    reason: str


class SourceJudgement(BaseModel):
    """The summary's claims checked against the source, and the source's key questions."""

    alignment: list[ClaimCheck]
    questions: list[str] = Field(description="Closed questions the source answers with yes.")


class Answer(BaseModel):
    """Whether the summary answers one question."""

    question: str
    answered: bool
    reason: str


class Coverage(BaseModel):
    """One answer per question, in question order."""

    coverage: list[Answer]


#: The source without ``source=``: the user's message.
USER_TEXT = RunContext(
    user_text,
    "the run's user message",
    "no source: the run has no user message to summarize, and no source= was given",
    {"option": "source"},
    text=True,
)


def summary_text(run_output: Any) -> str:
    """The summary: the last assistant message with text, or the output's text."""
    if isinstance(run_output, list):
        texts = [text for text in extract_agent_response_messages(run_output) if text.strip()]
        if texts:
            return texts[-1]
    return response_text(run_output)


def _missing_answer(question: str) -> dict[str, Any]:
    return {"question": question, "answered": False, "reason": "The judge gave no answer."}


@model_documented
def summarization(
    model: Any,
    *,
    scale: float = 1,
    source: list[str] | str | Callable[[Any], Any] | None = None,
    source_extractor: Callable[[Any, Any], Any] | None = None,
    max_questions: int = DEFAULT_MAX_QUESTIONS,
    id: str = "summarization-scorer",
) -> Scorer:
    """The lower of the summary's faithfulness and coverage, times ``scale``.

    :param scale: the score of a faithful summary that answers every question.
    :param source: the text summarized: a list of strings (the same text for every run, its
        pieces one per line), the name of a data column holding each run's text (a string or a
        list of strings), or a function of the run (sync or async) returning it. When None,
        the run's user message. A run whose source holds no text is not scorable (no judge
        call). Unlike Mastra's ``source``, a string names a column: a fixed text is
        ``source=['...']``.
    :param source_extractor: Mastra's form of a function: ``f(input, output)`` is
        ``source=lambda run: f(run.input, run.output)``; give one of the two.
    :param max_questions: the most questions the judge writes and that count (at least 1).

    The summary is the last assistant message with text (a turn that only called tools is
    skipped). Steps: preprocess (not scorable without a source; only when it is not a fixed
    list), preprocess (judge: claims checked against the source, and questions),
    analyze (judge: which questions the summary answers), analyze (one answer per counted
    question: extra ones dropped, a missing one counts as unanswered, a mismatch is recorded in
    ``verdictCountMismatch``), generate_score, generate_reason (judge).
    """
    factory = "summarization"
    scale = positive_scale(scale, factory)
    if isinstance(max_questions, bool) or not isinstance(max_questions, int) or max_questions < 1:
        raise EvalDagError(
            "EVALDAG_INVALID_SCORER_OPTION",
            "maxQuestions must be at least 1 for Summarization scoring: max_questions of "
            f"summarization(...) must be a whole number >= 1, got {max_questions!r}",
            details={"option": "max_questions"},
        )
    source_of = run_context(
        source,
        option="source",
        extractor=source_extractor,
        factory=factory,
        default=USER_TEXT,
        text=True,
    )

    def counted(preprocess_step_result: Any) -> list[str]:
        return list(preprocess_step_result["questions"])[:max_questions]

    async def source_prompt(run: Any) -> str:
        return SOURCE_PROMPT.render(
            source=await source_of.text_of(run),
            summary=summary_text(run.output),
            max_questions=str(max_questions),
        )

    def coverage_prompt(run: Any, preprocess_step_result: Any) -> str:
        questions = counted(preprocess_step_result)
        return COVERAGE_PROMPT.render(
            summary=summary_text(run.output),
            question_count=str(len(questions)),
            questions=numbered(questions, "(none)"),
        )

    def analyze(preprocess_step_result: Any, analyze_step_result: Any) -> dict[str, Any]:
        questions = counted(preprocess_step_result)
        return aligned_verdicts(analyze_step_result, "coverage", questions, _missing_answer)

    described_step(analyze, "One answer per question, extra answers dropped, missing ones filled")

    def axes(preprocess_step_result: Any, analyze_step_result: Any) -> tuple[float, float]:
        claims = preprocess_step_result["alignment"]
        questions = counted(preprocess_step_result)
        answers = analyze_step_result["coverage"]
        supported = sum(claim["supported"] for claim in claims)
        answered = sum(answer["answered"] for answer in answers)
        return (
            supported / len(claims) if claims else 0.0,
            answered / len(questions) if questions else 0.0,
        )

    def summarization_score(preprocess_step_result: Any, analyze_step_result: Any) -> float:
        if not preprocess_step_result["alignment"] or not counted(preprocess_step_result):
            return 0.0
        faithfulness, coverage = axes(preprocess_step_result, analyze_step_result)
        return round_to_two_decimals(min(faithfulness, coverage) * scale)

    async def reason_prompt(
        run: Any, preprocess_step_result: Any, analyze_step_result: Any, score: Any
    ) -> str:
        faithfulness, coverage = axes(preprocess_step_result, analyze_step_result)
        return REASON_PROMPT.render(
            scale=f"{scale:g}",
            alignment_score=f"{round_to_two_decimals(faithfulness):g}",
            coverage_score=f"{round_to_two_decimals(coverage):g}",
            source=await source_of.text_of(run),
            summary=summary_text(run.output),
            score=f"{score:g}",
            unsupported=json_text(
                [c["claim"] for c in preprocess_step_result["alignment"] if not c["supported"]]
            ),
            unanswered=json_text(
                [
                    question
                    for question, answer in zip(
                        counted(preprocess_step_result),
                        analyze_step_result["coverage"],
                        strict=True,
                    )
                    if not answer["answered"]
                ]
            ),
        )

    return (
        scorer_needing(
            llm_scorer(
                id,
                model,
                INSTRUCTIONS,
                factory=factory,
                max_score=scale,
                name="Summarization Scorer",
                description="A scorer that evaluates whether a summary stays faithful to its "
                "source text and preserves the information the source states",
                type="agent",
                columns=source_of.columns,
            ),
            context=source_of,
        )
        .preprocess(
            PromptStep(
                "Judge each summary claim against the source and draw coverage questions from it",
                source_prompt,
                output_schema=SourceJudgement,
            )
        )
        .analyze(
            PromptStep(
                "Answer the coverage questions using only the summary",
                coverage_prompt,
                output_schema=Coverage,
            )
        )
        .analyze(analyze)
        .generate_score(summarization_score)
        .generate_reason(
            PromptStep("Explain which axis produced the summarization score", reason_prompt)
        )
    )
