"""Summarization through the loopback judge server: Mastra's answers for the same judge replies,
the two axes, the question cap, one answer per question, the source and the summary, options."""

from __future__ import annotations

import pytest
from llm_scorer_cases import (
    Deviation,
    assert_like_mastra,
    assert_scorer_like_mastra,
    parametrized_cases,
    replayed,
)

from evaldag import EvalDagError, ScorerRunError, scorers
from evaldag.scorers.llm.summarization import summary_text

_COVERED = [
    {
        "question": "Did the council approve the bike lane network?",
        "answered": True,
        "reason": "Approved.",
    },
    {
        "question": "Will the network add 18 miles of protected lanes?",
        "answered": True,
        "reason": "18 miles.",
    },
]
DEVIATIONS = {
    "summarization-max-questions-cap-scale": [
        Deviation(
            "analyzeStepResult",
            {"coverage": _COVERED},
            {
                "coverage": [
                    *_COVERED,
                    {
                        "question": "Is the project partly funded by a state grant?",
                        "answered": False,
                        "reason": "The judge gave no answer.",
                    },
                ],
                "verdictCountMismatch": {"expected": 3, "received": 2},
            },
            "one answer per counted question, the missing one recorded as unanswered (Mastra "
            "counts it as unanswered in the score only; the score is the same)",
        )
    ],
}
#: Our extra step: analyze (function) after the judged analyze, one answer per question.
ADDED_STEPS = (2,)
_OPTIONS = {"maxQuestions": "max_questions", "scale": "scale", "source": "source"}


@parametrized_cases("summarization")
def test_scores_like_mastra_for_the_same_judge_replies(judge_server, entry):
    options = {_OPTIONS[key]: value for key, value in entry["case"].get("options", {}).items()}
    if "source" in options:  # Mastra's fixed source text; a string here names a data column
        options["source"] = [options["source"]]
    scorer = scorers.summarization(judge_server.judge(), **options)
    outcome = replayed(scorer, entry, judge_server)
    assert_like_mastra(outcome, entry, DEVIATIONS.get(entry["case"]["name"], ()), scorer)
    if entry["expected"]["ok"]:
        assert_scorer_like_mastra(scorer, entry["expected"]["scorer"], ADDED_STEPS)


def _claims(*supported):
    return [{"claim": f"claim {n}", "supported": s, "reason": "r"} for n, s in enumerate(supported)]


def _answers(*answered):
    return [
        {"question": f"question {n}?", "answered": a, "reason": "r"} for n, a in enumerate(answered)
    ]


def _scored(server, claims, questions, answers, output="The summary.", **options):
    server.script(
        {"alignment": claims, "questions": [f"question {n}?" for n in range(questions)]},
        {"coverage": answers},
        "The score is explained.",
    )
    scorer = scorers.summarization(server.judge(), **options)
    return scorer.run(input="Summarize: the source text.", output=output)


@pytest.mark.parametrize(
    ("supported", "answered", "options", "score"),
    [
        ((True, True, False), (True, True, True, True), {}, 0.67),  # faithfulness is lower
        ((True, True), (True, False, False, True), {}, 0.5),  # coverage is lower
        ((True,), (True, True), {"scale": 10}, 10.0),
        ((), (True, True), {}, 0.0),  # no claims
        ((True, False, False), (False, False), {}, 0.0),
    ],
)
def test_score_is_the_lower_axis(judge_server, supported, answered, options, score):
    result = _scored(
        judge_server, _claims(*supported), len(answered), _answers(*answered), **options
    )
    assert result.score == score


def test_no_questions_scores_zero(judge_server):
    result = _scored(judge_server, _claims(True), 0, [])
    assert result.score == 0
    assert "There are 0 questions" in result.analyze_prompt


def test_questions_past_the_cap_are_not_asked_or_counted(judge_server):
    result = _scored(judge_server, _claims(True), 5, _answers(True, True), max_questions=2)
    assert result.score == 1
    assert "There are 2 questions" in result.analyze_prompt
    assert "question 2?" not in result.analyze_prompt
    assert "at most 2 closed questions" in result.preprocess_prompt


@pytest.mark.parametrize(
    ("answered", "score", "mismatch"),
    [
        ((True,), 0.33, {"expected": 3, "received": 1}),
        ((True, True, True, True), 1.0, {"expected": 3, "received": 4}),
    ],
)
def test_one_answer_per_question(judge_server, answered, score, mismatch):
    result = _scored(judge_server, _claims(True), 3, _answers(*answered))
    assert result.score == score
    coverage = result.analyze_step_result["coverage"]
    assert len(coverage) == 3
    assert result.analyze_step_result["verdictCountMismatch"] == mismatch
    if len(answered) < 3:
        assert coverage[2] == {
            "question": "question 2?",
            "answered": False,
            "reason": "The judge gave no answer.",
        }
        assert '"question 1?","question 2?"' in result.generate_reason_prompt


def test_the_coverage_judge_never_sees_the_source(judge_server):
    result = _scored(judge_server, _claims(True), 1, _answers(True))
    assert "<source>\nSummarize: the source text.\n</source>" in result.preprocess_prompt
    assert "<summary>\nThe summary.\n</summary>" in result.preprocess_prompt
    assert "the source text" not in result.analyze_prompt
    assert "<summary>\nThe summary.\n</summary>" in result.analyze_prompt
    assert "the source text" in result.generate_reason_prompt


def test_an_empty_summary_is_judged_and_scores_zero(judge_server):
    result = _scored(judge_server, [], 2, _answers(False, False), output="")
    assert result.score == 0
    assert "<summary>\n\n</summary>" in result.preprocess_prompt
    assert len(judge_server.requests) == 3


def test_the_source_comes_from_the_extractor_sync_or_async(judge_server):
    async def document(run_input, run_output):
        return f"The document behind {run_input!r}."

    judge_server.script({"alignment": _claims(True), "questions": ["q?"]}, {"coverage": []}, "ok")
    scorer = scorers.summarization(judge_server.judge(), source_extractor=document)
    result = scorer.run(input="doc-7", output="Summary.")
    assert "<source>\nThe document behind 'doc-7'.\n</source>" in result.preprocess_prompt
    assert "The document behind 'doc-7'." in result.generate_reason_prompt


def test_an_extractor_that_returns_no_text_fails_the_run(judge_server):
    scorer = scorers.summarization(judge_server.judge(), source_extractor=lambda i, o: 7)
    with pytest.raises(ScorerRunError) as raised:
        scorer.run(input="q", output="o")
    assert raised.value.failed_step == "preprocess"
    assert "the text source_extractor returned of summarization(...) must be a text or a list" in (
        raised.value.cause.message
    )
    assert judge_server.requests == []


@pytest.mark.parametrize(
    ("output", "summary"),
    [
        ("Plain.", "Plain."),
        (None, ""),
        (
            [
                {"role": "assistant", "content": "First draft."},
                {"role": "assistant", "content": "Final summary."},
                {"role": "assistant", "content": "  "},
            ],
            "Final summary.",
        ),
    ],
)
def test_summary_text(output, summary):
    assert summary_text(output) == summary


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({"max_questions": 0}, "maxQuestions must be at least 1 for Summarization scoring"),
        ({"max_questions": 2.5}, "max_questions of summarization(...) must be a whole number"),
        ({"scale": 0}, "scale of summarization(...) must be a number above 0"),
        ({"source": 5}, "source of summarization(...) must be a list of strings"),
        ({"source": ["a"], "source_extractor": len}, "got both source and source_extractor"),
        ({"source_extractor": "f"}, "source_extractor of summarization(...) must be a function"),
    ],
)
def test_bad_arguments_are_named(arguments, named):
    with pytest.raises(EvalDagError) as raised:
        scorers.summarization("openai/gpt-4o-mini", **arguments)
    assert named in raised.value.message
