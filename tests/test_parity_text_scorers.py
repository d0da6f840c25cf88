"""The five text scorers against Mastra's answers on 300 pairs of real prose.

``fixtures/code_scorers/text-pairs.public.json`` holds, per pair, Mastra's score and step results
for completeness, content similarity, keyword coverage, textual difference and tone (one user
message in, one assistant message out). Completeness depends on English tagging (Mastra uses the
JS library compromise, we use our own tagger), so it has agreement targets; the other four agree
on every pair, step results included.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from evaldag import ScorerRun, scorers
from evaldag.dag import scorers_driver

PAIRS = json.loads(
    (Path(__file__).parent / "fixtures" / "code_scorers" / "text-pairs.public.json").read_text()
)


def _results(scorer):
    """Every pair scored in one columnar execution of the scorer's DAG."""
    runs = pd.Series(
        [
            ScorerRun(
                input={"inputMessages": [_message("user", pair["input"])]},
                output=[_message("assistant", pair["output"])],
            )
            for pair in PAIRS
        ],
        dtype=object,
    )
    dr = scorers_driver([scorer])
    return dr.execute([scorer.id], inputs={"runs": runs, "concurrency": 1})[scorer.id]


def _message(role, text):
    content = {"format": 2, "parts": [{"type": "text", "text": text}]}
    return {"id": f"{role}-0", "role": role, "content": content}


def _scored(scorer):
    frame = _results(scorer)
    assert frame["error"].isna().all(), frame["error"].dropna().head()
    return frame


def test_completeness_meets_agreement_targets():
    frame = _scored(scorers.completeness())
    expected = [pair["mastra"]["completeness"]["score"] for pair in PAIRS]
    gaps = [abs(ours - theirs) for ours, theirs in zip(frame["score"], expected, strict=True)]
    identical = sum(gap < 1e-9 for gap in gaps) / len(gaps)
    close = sum(gap <= 0.02 for gap in gaps) / len(gaps)
    assert identical >= 0.95, f"identical on {identical:.1%} of pairs"
    assert close >= 0.99, f"within 0.02 on {close:.1%} of pairs"


def test_completeness_reproduces_mastra_on_pairs_of_identical_and_empty_text():
    frame = _scored(scorers.completeness())
    for index, pair in enumerate(PAIRS):
        if pair["pair"] in ("same", "empty_out"):
            assert frame["score"][index] == pair["mastra"]["completeness"]["score"], index


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
    frame = _scored(scorer)
    mismatches = []
    rows = zip(PAIRS, frame["score"], frame["steps"], strict=True)
    for index, (pair, score, steps) in enumerate(rows):
        mastra = pair["mastra"][name]
        if (
            score != mastra["score"]
            or steps["preprocess_step_result"] != mastra["preprocessStepResult"]
            or steps.get("analyze_step_result") != mastra.get("analyzeStepResult")
        ):
            mismatches.append(index)
    assert mismatches == []
