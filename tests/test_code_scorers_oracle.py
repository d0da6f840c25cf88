"""The code scorers on Mastra's own answers (the completeness and ``scorer`` cases of the oracle
sample, plus edge cases of ours run through the oracle): scores, step results, reasons and
scorer metadata, exactly.

Runs are the ones Mastra echoed (agent-shaped messages), so both sides score the same data.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaldag import ScorerRunError, scorers
from evaldag._compat.js import camel

FIXTURES = Path(__file__).parent / "fixtures" / "code_scorers"
#: The oracle sample's cases, then our own edge cases run through the same oracle
#: (nested trajectories with budgets, weights, recorded expectations, emojis, URLs, whitespace).
CASES = [
    item
    for name in ("oracle_sample_code_scorers.json", "oracle_extra_code_scorers.json")
    for item in json.loads((FIXTURES / name).read_text(encoding="utf-8"))
]


def _factory(case):
    """The scorer of a case, built from Mastra's factory options as Python arguments."""
    name = case.get("scorer", case["kind"])
    options = case.get("options")
    if name == "completeness":
        return scorers.completeness()
    if name == "content-similarity":
        if options is None:
            return scorers.content_similarity()
        # Mastra destructures the options object: a key left out is off.
        return scorers.content_similarity(
            ignore_case=bool(options.get("ignoreCase")),
            ignore_whitespace=bool(options.get("ignoreWhitespace")),
        )
    options = options or {}
    if name == "keyword-coverage":
        return scorers.keyword_coverage()
    if name == "textual-difference":
        return scorers.textual_difference()
    if name == "tone":
        return scorers.tone(reference_tone=options.get("referenceTone"))
    if name == "tool-call-accuracy":
        return scorers.tool_call_accuracy(
            expected_tool=options.get("expectedTool"),
            strict_mode=options.get("strictMode", False),
            expected_tool_order=options.get("expectedToolOrder"),
        )
    if name == "trajectory":
        return scorers.trajectory(defaults=options.get("defaults"), weights=options.get("weights"))
    if name == "trajectory-accuracy":
        return scorers.trajectory_accuracy(
            expected_trajectory=options.get("expectedTrajectory"),
            comparison_options=options.get("comparisonOptions"),
        )
    raise AssertionError(f"no factory for {name}")


def _scrubbed(value):
    """``value`` with durations written as the oracle writes them ("<durationMs>")."""
    if isinstance(value, dict):
        return {
            key: "<durationMs>" if key == "durationMs" else _scrubbed(item)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_scrubbed(item) for item in value]
    return value


def _ids(cases):
    return [item["case"]["name"] for item in cases]


SCORED = [item for item in CASES if item["expected"]["ok"]]
FAILING = [item for item in CASES if not item["expected"]["ok"]]


@pytest.mark.parametrize("item", SCORED, ids=_ids(SCORED))
def test_code_scorer_matches_mastra(item):
    case, expected = item["case"], item["expected"]
    scorer = _factory(case)
    mastra = expected["result"]
    # A trajectory goes to Mastra as written; the echo has its durations scrubbed.
    trajectory = isinstance(case["output"], dict)
    result = scorer.run(
        input=mastra.get("input"),
        output=case["output"] if trajectory else mastra["output"],
        run_id=mastra["runId"],
        expected_trajectory=case.get("expectedTrajectory"),
    )

    assert scorer.id == expected["scorer"]["id"]
    assert scorer.name == expected["scorer"]["name"]
    assert scorer.description == expected["scorer"]["description"]
    assert scorer.type == expected["scorer"]["type"]
    assert [(camel(s["name"]), s["type"]) for s in scorer.get_steps()] == [
        (s["name"], s["type"]) for s in expected["scorer"]["steps"]
    ]
    assert result.score == expected["score"]
    assert result.reason == mastra.get("reason")
    assert result.analyze_step_result == mastra.get("analyzeStepResult")
    assert _scrubbed(result.preprocess_step_result) == mastra["preprocessStepResult"]


@pytest.mark.parametrize("item", FAILING, ids=_ids(FAILING))
def test_code_scorer_fails_like_mastra(item):
    case, expected = item["case"], item["expected"]
    with pytest.raises(ScorerRunError) as caught:
        _factory(case).run(input=case.get("input"), output=case["output"])
    error = caught.value
    mastra = expected["error"]
    assert error.id == mastra["id"]
    assert error.message.startswith(mastra["message"])
    assert error.details == mastra["details"]
    assert error.failed_step == mastra["failedStep"]
    assert error.completed_steps == mastra["completedSteps"]
    assert error.result is None
