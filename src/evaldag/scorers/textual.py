"""Prebuilt code scorers over text: completeness, content similarity, keyword coverage, textual
difference and tone (Mastra's ``create*Scorer`` of the same names, same ids and step results).

Each reads ``run.input`` as plain text or Mastra's agent input (its ``inputMessages``) and
``run.output`` as plain text or a list of messages; several messages are joined with ``", "``.
"""

from __future__ import annotations

from typing import Any

from evaldag._compat.js import collapsed_whitespace, js_length
from evaldag._scorer.builder import Scorer, create_scorer
from evaldag.errors import EvalDagError
from evaldag.scorers import _text
from evaldag.scorers._nlp import completeness_elements
from evaldag.transcripts import compare_two_strings, extract_input_messages, get_text_content
from evaldag.transcripts import run_messages as _run_messages

_NLP_DESCRIPTION = (
    'Leverage the nlp method from "compromise" to extract elements from the input and output '
    "and calculate the coverage."
)


def _input_text(run: Any) -> str:
    return ", ".join(extract_input_messages(run.input)) if run.input is not None else ""


def _output_text(run: Any) -> str:
    """Every output message's text, whatever its role."""
    messages = _run_messages(run.output, "assistant")
    return ", ".join(get_text_content(message) for message in messages)


def _completeness_elements(run: Any) -> dict[str, Any]:
    if run.input is None or run.output is None:
        raise EvalDagError(
            "EVALDAG_COMPLETENESS_MISSING_TEXT",
            "Inputs cannot be null or undefined: completeness needs run.input and run.output "
            "(strings or Mastra messages)",
            details={"input": run.input is None, "output": run.output is None},
        )
    inputs = completeness_elements(_input_text(run))
    outputs = completeness_elements(_output_text(run))
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


def completeness(*, id: str = "completeness-scorer") -> Scorer:
    """How many of the input's noun phrases, verbs and terms the output covers (0-1).

    Elements are lowercase words without accents; an input element of up to 3 characters needs
    an equal output element, a longer one an output element that contains it or is contained in
    it with more than 60% of its length.
    """
    return (
        create_scorer(
            id,
            name="Completeness Scorer",
            description=_NLP_DESCRIPTION,
            type="agent",
        )
        .preprocess(_completeness_elements)
        .generate_score(_element_coverage)
    )


def _text_difference(run: Any) -> dict[str, Any]:
    first, second = _input_text(run), _output_text(run)
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


def textual_difference(*, id: str = "textual-difference-scorer") -> Scorer:
    """Similarity of input and output text: ``2 * LCS / (len(input) + len(output))`` (0-1).

    The step result also counts changed words and the relative length difference.
    """
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
        .preprocess(_text_difference)
        .generate_score(_difference_ratio)
    )


def content_similarity(
    ignore_case: bool = True,
    ignore_whitespace: bool = True,
    *,
    id: str = "content-similarity-scorer",
) -> Scorer:
    """Bigram Dice similarity of input and output text (0-1), as string-similarity computes it.

    :param ignore_case: compare lowercase text.
    :param ignore_whitespace: collapse whitespace runs to one space and trim first.
    """

    def processed_texts(run: Any) -> dict[str, str]:
        first, second = _input_text(run), _output_text(run)
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


def _keyword_sets(run: Any) -> dict[str, Any]:
    first, second = _input_text(run), _output_text(run)
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


def keyword_coverage(*, id: str = "keyword-coverage-scorer") -> Scorer:
    """Share of the input's keywords that the output also has (0-1); 1 when the input has none.

    Keywords are lowercase words that are not stopwords (SMART list) or digits.
    """
    return (
        create_scorer(
            id,
            name="Keyword Coverage Scorer",
            description=_NLP_DESCRIPTION,
            type="agent",
        )
        .preprocess(_keyword_sets)
        .analyze(_keyword_counts)
        .generate_score(_keyword_share)
    )


def _tone_stability(run: Any) -> dict[str, float]:
    comparatives = [
        _text.comparative_sentiment(sentence) for sentence in _text.sentences(_output_text(run))
    ]
    mean, variance = _text.mean_and_variance(comparatives)
    return {"score": max(0, 1 - variance), "avgSentiment": mean, "sentimentVariance": variance}


def _tone_score(preprocess_step_result: dict[str, float]) -> float:
    return preprocess_step_result["score"]


def tone(reference_tone: str | None = None, *, id: str = "tone-scorer") -> Scorer:
    """Sentiment of the output (AFINN-165 per token, negators flip the next word), 0-1.

    :param reference_tone: a text whose sentiment the output should match; the score is
        ``max(0, 1 - |difference|)``. Without it, the score is ``max(0, 1 - variance)`` of the
        output's sentence sentiments (how steady the tone is).
    """
    if reference_tone is not None and not isinstance(reference_tone, str):
        raise EvalDagError(
            "EVALDAG_INVALID_SCORER_OPTION",
            f"tone(reference_tone=...) must be a string, got {type(reference_tone).__name__}",
        )

    def tone_difference(run: Any) -> dict[str, float]:
        response = _text.comparative_sentiment(_output_text(run))
        reference = _text.comparative_sentiment(reference_tone)
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
        .preprocess(tone_difference if reference_tone else _tone_stability)
        .generate_score(_tone_score)
    )
