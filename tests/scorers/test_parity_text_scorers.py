"""The five text scorers against Mastra's answers on 300 pairs of real prose.

``fixtures/code_scorers/text-pairs.public.json`` holds, per pair, Mastra's score and step results
for completeness, content similarity, keyword coverage, textual difference and tone (one user
message in, one assistant message out). Completeness depends on English tagging (Mastra uses the
JS library compromise, we a port of its tagger), so it has agreement targets; the other four agree
on every pair, step results included.
"""

from __future__ import annotations

import json

import pytest
from repo_paths import FIXTURES

from evaldag import ScorerRun, scorers
from evaldag._graph.drivers import scorer_outcomes, scorers_driver

PAIRS = json.loads((FIXTURES / "code_scorers" / "text-pairs.public.json").read_text())


def _results(scorer):
    """Every pair's result, from one columnar execution of the scorer's DAG."""
    runs = [
        ScorerRun(
            input={"inputMessages": [_message("user", pair["input"])]},
            output=[_message("assistant", pair["output"])],
        )
        for pair in PAIRS
    ]
    outcomes = scorer_outcomes(scorers_driver([scorer]), scorer, runs, concurrency=1)
    errors = [outcome for outcome in outcomes if isinstance(outcome, Exception)]
    assert errors == []
    return outcomes


def _message(role, text):
    content = {"format": 2, "parts": [{"type": "text", "text": text}]}
    return {"id": f"{role}-0", "role": role, "content": content}


def test_completeness_meets_agreement_targets():
    results = _results(scorers.completeness())
    expected = [pair["mastra"]["completeness"]["score"] for pair in PAIRS]
    gaps = [abs(ours.score - theirs) for ours, theirs in zip(results, expected, strict=True)]
    identical = sum(gap < 1e-9 for gap in gaps) / len(gaps)
    close = sum(gap <= 0.02 for gap in gaps) / len(gaps)
    assert identical >= 0.99, f"identical on {identical:.1%} of pairs"
    assert close >= 0.99, f"within 0.02 on {close:.1%} of pairs"


def test_completeness_reproduces_mastra_on_pairs_of_identical_and_empty_text():
    results = _results(scorers.completeness())
    for index, pair in enumerate(PAIRS):
        if pair["pair"] in ("same", "empty_out"):
            assert results[index].score == pair["mastra"]["completeness"]["score"], index


@pytest.mark.parametrize(
    ("scorer", "name"),
    [
        (scorers.content_similarity(), "content-similarity"),
        (scorers.keyword_coverage(), "keyword-coverage"),
        (scorers.textual_difference(), "textual-difference"),
        (scorers.tone(), "tone"),
    ],
)
def test_text_scorer_matches_mastra_on_every_pair(scorer, name):
    mismatches = []
    for index, (pair, result) in enumerate(zip(PAIRS, _results(scorer), strict=True)):
        mastra = pair["mastra"][name]
        if (
            result.score != mastra["score"]
            or result.preprocess_step_result != mastra["preprocessStepResult"]
            or result.analyze_step_result != mastra.get("analyzeStepResult")
        ):
            mismatches.append(index)
    assert mismatches == []
