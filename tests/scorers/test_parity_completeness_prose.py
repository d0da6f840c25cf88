"""Completeness against Mastra's answers on prose the tagger was never fitted to.

``fixtures/code_scorers/completeness-prose.*.json`` (built by ``completeness_prose.py`` there):
pairs of texts from this machine's documentation (man pages, info manuals, READMEs, FAQs,
changelogs, Python's docs and docstrings, package descriptions), split by source document into
a fit part and a held-out part, each short (one to three sentences) and long (whole paragraphs),
with Mastra's score for every pair (and, in the fit part, its elements). The held-out pairs were
only ever scored, never used to change the tagger.
"""

from __future__ import annotations

import json

import pytest
import repo_paths

from evaldag import ScorerRun, scorers
from evaldag._graph.drivers import scorer_outcomes, scorers_driver
from evaldag.scorers._nlp import completeness_elements

FIXTURES = repo_paths.FIXTURES / "code_scorers"


def _pairs(part: str) -> list[dict]:
    return json.loads((FIXTURES / f"completeness-prose.{part}.json").read_text(encoding="utf-8"))


def _message(role: str, text: str) -> dict:
    return {
        "id": f"{role}-0",
        "role": role,
        "content": {"format": 2, "parts": [{"type": "text", "text": text}]},
    }


def _scores(pairs: list[dict]) -> list[float]:
    """Every pair's completeness, from one columnar execution of the scorer's DAG."""
    scorer = scorers.completeness()
    runs = [
        ScorerRun(
            input={"inputMessages": [_message("user", pair["input"])]},
            output=[_message("assistant", pair["output"])],
        )
        for pair in pairs
    ]
    outcomes = scorer_outcomes(scorers_driver([scorer]), scorer, runs, concurrency=1)
    assert [outcome for outcome in outcomes if isinstance(outcome, Exception)] == []
    return [outcome.score for outcome in outcomes]


@pytest.mark.slow
@pytest.mark.parametrize("part", ["heldout", "heldout-long"])
def test_completeness_meets_targets_on_held_out_prose(part):
    pairs = _pairs(part)
    gaps = [
        abs(ours - pair["mastra"]["score"])
        for ours, pair in zip(_scores(pairs), pairs, strict=True)
    ]
    identical = sum(gap < 1e-9 for gap in gaps) / len(gaps)
    close = sum(gap <= 0.02 for gap in gaps) / len(gaps)
    assert identical >= 0.95, f"identical on {identical:.1%} of {len(gaps)} pairs"
    assert close >= 0.98, f"within 0.02 on {close:.1%} of {len(gaps)} pairs"


@pytest.mark.slow
@pytest.mark.parametrize("part", ["fit", "fit-long"])
def test_completeness_elements_agree_on_fit_prose(part):
    texts = {
        text: elements
        for pair in _pairs(part)
        for text, elements in (
            (pair["input"], pair["mastra"]["inputElements"]),
            (pair["output"], pair["mastra"]["outputElements"]),
        )
    }
    # Sets: in long texts the order can differ where noun phrases end differently.
    differing = [
        text
        for text, elements in texts.items()
        if set(completeness_elements(text)) != set(elements.split())
    ]
    assert len(differing) <= 0.01 * len(texts), differing[:5]
