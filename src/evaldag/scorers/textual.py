"""Prebuilt code scorers over text: completeness, content similarity, keyword coverage, textual
difference and tone (Mastra's ``create*Scorer`` of the same names, same ids and step results).

Each reads ``run.input`` as plain text or Mastra's agent input (its ``inputMessages``) and
``run.output`` as plain text or a list of messages; several messages are joined with ``", "``.
Any other value (an app's own dict, a number) is the row's error, never read as empty text.
A text longer than the scorer's ``max_chars`` (:data:`MAX_CHARS` unless set) is an error on its
row, not read: completeness takes about 20 s a megabyte and textual difference's cost grows with
the product of the two lengths.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evaldag._compat.js import collapsed_whitespace, js_length
from evaldag._reader import checked_input_texts, checked_transcript
from evaldag._scorer.builder import Scorer, create_scorer
from evaldag.errors import EvalDagError
from evaldag.scorers import _text
from evaldag.scorers._nlp import completeness_elements
from evaldag.transcripts import compare_two_strings, get_text_content
from evaldag.transcripts import run_messages as _run_messages

_NLP_DESCRIPTION = (
    'Leverage the nlp method from "compromise" to extract elements from the input and output '
    "and calculate the coverage."
)


#: The longest text (input or output, in characters) a text scorer reads unless its
#: ``max_chars`` says otherwise.
MAX_CHARS = 1_000_000


@dataclass(frozen=True)
class _Limit:
    """A text scorer's size limit, and how to set it (for the error)."""

    scorer_id: str
    factory: str
    max_chars: int | None

    def checked(self, text: str, field: str) -> str:
        if self.max_chars is not None and len(text) > self.max_chars:
            raise EvalDagError(
                "EVALDAG_TEXT_TOO_LONG",
                f"{self.scorer_id}: {field} is {len(text):,} characters long, more than its "
                f"limit max_chars={self.max_chars:,}; score a shorter text or raise the limit "
                f"with scorers.{self.factory}(max_chars=...) (None: no limit)",
                details={"field": field, "characters": len(text), "max_chars": self.max_chars},
            )
        return text


def _limit(scorer_id: str, factory: str, max_chars: int | None) -> _Limit:
    if max_chars is not None and (
        not isinstance(max_chars, int) or isinstance(max_chars, bool) or max_chars < 1
    ):
        raise EvalDagError(
            "EVALDAG_INVALID_SCORER_OPTION",
            f"{factory}(max_chars=...) must be a positive integer or None, got {max_chars!r}",
        )
    return _Limit(scorer_id, factory, max_chars)


def _input_text(run: Any, limit: _Limit) -> str:
    """This turn's input messages' text; a value no reader takes (a dict of an app's own, a
    number) is an error, not an empty text."""
    text = ", ".join(checked_input_texts(run.input, limit.scorer_id))
    return limit.checked(text, "run.input")


def _output_text(run: Any, limit: _Limit) -> str:
    """Every output message's text, whatever its role; a value no reader takes is an error."""
    messages = _run_messages(checked_transcript(run.output, limit.scorer_id), "assistant")
    return limit.checked(", ".join(get_text_content(message) for message in messages), "run.output")


def _completeness_elements(run: Any, limit: _Limit) -> dict[str, Any]:
    if run.input is None or run.output is None:
        raise EvalDagError(
            "EVALDAG_COMPLETENESS_MISSING_TEXT",
            "Inputs cannot be null or undefined: completeness needs run.input and run.output "
            "(strings or Mastra messages)",
            details={"input": run.input is None, "output": run.output is None},
        )
    input_text, output_text = _input_text(run, limit), _output_text(run, limit)
    inputs, outputs = completeness_elements(input_text), completeness_elements(output_text)
    present = set(outputs)
    return {
        "inputElements": inputs,
        "outputElements": outputs,
        "missingElements": [element for element in inputs if element not in present],
        "elementCounts": {"input": len(inputs), "output": len(outputs)},
    }


def _element_coverage(preprocess_step_result: dict[str, Any]) -> float:
    return _text.coverage(
        preprocess_step_result["inputElements"], preprocess_step_result["outputElements"]
    )


def completeness(*, id: str = "completeness-scorer", max_chars: int | None = MAX_CHARS) -> Scorer:
    """How many of the input's noun phrases, verbs and terms the output covers (0-1).

    Elements are lowercase words without accents; an input element of up to 3 characters needs
    an equal output element, a longer one an output element that contains it or is contained in
    it with more than 60% of its length.

    :param max_chars: the longest input or output text read; a longer one is the row's error.
    """
    limit = _limit(id, "completeness", max_chars)

    def completeness_elements(run: Any) -> dict[str, Any]:
        return _completeness_elements(run, limit)

    return (
        create_scorer(
            id,
            name="Completeness Scorer",
            description=_NLP_DESCRIPTION,
            type="agent",
        )
        .preprocess(completeness_elements)
        .generate_score(_element_coverage)
    )


def _text_difference(run: Any, limit: _Limit) -> dict[str, Any]:
    first, second = _input_text(run, limit), _output_text(run, limit)
    longest = max(js_length(first), js_length(second))
    length_diff = abs(js_length(first) - js_length(second)) / longest if longest > 0 else 0
    return {
        "ratio": _text.lcs_ratio(first, second),
        "confidence": 1 - length_diff,
        "changes": _text.word_changes(first, second),
        "lengthDiff": length_diff,
    }


def _difference_ratio(preprocess_step_result: dict[str, Any]) -> float:
    return preprocess_step_result["ratio"]


def textual_difference(
    *, id: str = "textual-difference-scorer", max_chars: int | None = MAX_CHARS
) -> Scorer:
    """Similarity of input and output text: ``2 * LCS / (len(input) + len(output))`` (0-1).

    The step result also counts changed words and the relative length difference.

    :param max_chars: the longest input or output text read; a longer one is the row's error.
    """
    limit = _limit(id, "textual_difference", max_chars)

    def text_difference(run: Any) -> dict[str, Any]:
        return _text_difference(run, limit)

    return (
        create_scorer(
            id,
            name="Textual Difference Scorer",
            description=(
                "Calculate textual difference between input and output using sequence matching "
                "algorithms."
            ),
            type="agent",
        )
        .preprocess(text_difference)
        .generate_score(_difference_ratio)
    )


def content_similarity(
    ignore_case: bool = True,
    ignore_whitespace: bool = True,
    *,
    id: str = "content-similarity-scorer",
    max_chars: int | None = MAX_CHARS,
) -> Scorer:
    """Bigram Dice similarity of input and output text (0-1), as string-similarity computes it.

    :param ignore_case: compare lowercase text.
    :param ignore_whitespace: collapse whitespace runs to one space and trim first.
    :param max_chars: the longest input or output text read; a longer one is the row's error.
    """
    limit = _limit(id, "content_similarity", max_chars)

    def processed_texts(run: Any) -> dict[str, str]:
        first, second = _input_text(run, limit), _output_text(run, limit)
        if ignore_case:
            first, second = first.lower(), second.lower()
        if ignore_whitespace:
            first, second = collapsed_whitespace(first), collapsed_whitespace(second)
        return {"processedInput": first, "processedOutput": second}

    def similarity(preprocess_step_result: dict[str, str]) -> float:
        return compare_two_strings(
            preprocess_step_result["processedInput"], preprocess_step_result["processedOutput"]
        )

    return (
        create_scorer(
            id,
            name="Content Similarity Scorer",
            description=(
                "Calculates content similarity between input and output messages using string "
                "comparison algorithms."
            ),
            type="agent",
        )
        .preprocess(processed_texts)
        .generate_score(similarity)
    )


def _keyword_sets(run: Any, limit: _Limit) -> dict[str, Any]:
    first, second = _input_text(run, limit), _output_text(run, limit)
    if not first and not second:
        return {"result": {"referenceKeywords": [], "responseKeywords": []}}
    return {
        "referenceKeywords": _text.keywords(first),
        "responseKeywords": _text.keywords(second),
    }


def _keyword_counts(preprocess_step_result: dict[str, Any]) -> dict[str, int]:
    reference = preprocess_step_result.get("referenceKeywords") or []
    response = preprocess_step_result.get("responseKeywords") or []
    if not reference and not response:
        return {"totalKeywordsLength": 0, "matchedKeywordsLength": 0}
    found = set(response)
    return {
        "totalKeywordsLength": len(reference),
        "matchedKeywordsLength": sum(1 for keyword in reference if keyword in found),
    }


def _keyword_share(analyze_step_result: dict[str, int]) -> float:
    total = analyze_step_result["totalKeywordsLength"]
    if not total:
        return 1.0
    return analyze_step_result["matchedKeywordsLength"] / total


def keyword_coverage(
    *, id: str = "keyword-coverage-scorer", max_chars: int | None = MAX_CHARS
) -> Scorer:
    """Share of the input's keywords that the output also has (0-1); 1 when the input has none.

    Keywords are lowercase words that are not stopwords (SMART list) or digits.

    :param max_chars: the longest input or output text read; a longer one is the row's error.
    """
    limit = _limit(id, "keyword_coverage", max_chars)

    def keyword_sets(run: Any) -> dict[str, Any]:
        return _keyword_sets(run, limit)

    return (
        create_scorer(
            id,
            name="Keyword Coverage Scorer",
            description=_NLP_DESCRIPTION,
            type="agent",
        )
        .preprocess(keyword_sets)
        .analyze(_keyword_counts)
        .generate_score(_keyword_share)
    )


def _tone_stability(run: Any, limit: _Limit) -> dict[str, float]:
    comparatives = [
        _text.comparative_sentiment(sentence)
        for sentence in _text.sentences(_output_text(run, limit))
    ]
    mean, variance = _text.mean_and_variance(comparatives)
    return {"score": max(0, 1 - variance), "avgSentiment": mean, "sentimentVariance": variance}


def _tone_score(preprocess_step_result: dict[str, float]) -> float:
    return preprocess_step_result["score"]


def tone(
    reference_tone: str | None = None,
    *,
    id: str = "tone-scorer",
    max_chars: int | None = MAX_CHARS,
) -> Scorer:
    """Sentiment of the output (AFINN-165 per token, negators flip the next word), 0-1.

    :param reference_tone: a text whose sentiment the output should match; the score is
        ``max(0, 1 - |difference|)``. Without it, the score is ``max(0, 1 - variance)`` of the
        output's sentence sentiments (how steady the tone is).
    :param max_chars: the longest output text read; a longer one is the row's error.
    """
    if reference_tone is not None and not isinstance(reference_tone, str):
        raise EvalDagError(
            "EVALDAG_INVALID_SCORER_OPTION",
            f"tone(reference_tone=...) must be a string, got {type(reference_tone).__name__}",
        )
    limit = _limit(id, "tone", max_chars)

    def tone_stability(run: Any) -> dict[str, float]:
        return _tone_stability(run, limit)

    def tone_difference(run: Any) -> dict[str, float]:
        response = _text.comparative_sentiment(_output_text(run, limit))
        reference = _text.comparative_sentiment(reference_tone or "")
        difference = abs(response - reference)
        return {
            "score": max(0, 1 - difference),
            "responseSentiment": response,
            "referenceSentiment": reference,
            "difference": difference,
        }

    return (
        create_scorer(
            id,
            name="Tone Scorer",
            description=(
                "Analyzes the tone and sentiment of agent responses using sentiment analysis. Can "
                "compare against a reference tone or evaluate sentiment stability."
            ),
            type="agent",
        )
        .preprocess(tone_difference if reference_tone else tone_stability)
        .generate_score(_tone_score)
    )
