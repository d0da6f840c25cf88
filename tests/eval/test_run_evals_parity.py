"""Mastra's own ``runEvals`` answers (oracle cases), and our documented deviations from them."""

import json

import pytest
from repo_paths import FIXTURES

from evaldag import EvalDagError, create_scorer, not_scorable, run_evals

CASES = {c["case"]["name"]: c for c in json.loads((FIXTURES / "mastra/run_evals.json").read_text())}


def _value(spec, index):
    values = spec["scores"] if "scores" in spec else [spec["score"]] * (index + 1)
    value = values[index]
    if value == "$notScorable":
        return not_scorable()
    if isinstance(value, dict) and "$notScorable" in value:
        return not_scorable(value["$notScorable"])
    if value == "$throw" or (isinstance(value, dict) and "$throw" in value):
        raise RuntimeError(value["$throw"] if isinstance(value, dict) else "thrown")
    return value


def _scorer(spec):
    return create_scorer(spec["id"]).generate_score(
        lambda run: _value(spec, run.request_context["index"])
    )


def _entry(spec):
    if "threshold" in spec:
        return {"scorer": _scorer(spec["scorer"]), "threshold": spec["threshold"]}
    return _scorer(spec)


def _run(case, **options):
    data = [
        {"input": item["input"], "output": item["output"], "request_context": {"index": i}}
        for i, item in enumerate(case["data"])
    ]
    return run_evals(
        data,
        scorers=[_entry(s) for s in case.get("scorers", [])],
        gates=[_scorer(g) for g in case.get("gates", [])],
        concurrency=case.get("concurrency", 8),
        progress=False,
        **options,
    )


SAME_AS_MASTRA = [
    "runEvals-threshold-equal-passes",
    "runEvals-float-avg-vs-threshold",
    "runEvals-minmax-edges",
    "runEvals-gate-exactly-one",
    "runEvals-gate-0999-fails",
    "runEvals-concurrency-4",
]


@pytest.mark.parametrize("name", SAME_AS_MASTRA)
def test_same_result_as_mastra(name):
    entry = CASES[name]
    result = _run(entry["case"])
    assert result.to_dict() == entry["expected"]["result"]
    assert list(result.to_dict()) == entry["expected"]["resultKeys"]


def test_a_gate_and_a_threshold_that_scored_nothing_fail_where_mastra_leaves_them_out():
    """docs/differences-from-mastra.md: Mastra gives no verdict here, so a run exits green."""
    entry = CASES["runEvals-notScorable-everywhere"]
    result = _run(entry["case"]).to_dict()
    expected = entry["expected"]["result"]
    assert {key: result[key] for key in expected} == expected  # scores and summary as Mastra's
    reason = "no item could be scored (2 not scorable)"
    assert result["gateResults"] == [{"id": "gNS", "passed": False, "score": 0.0, "reason": reason}]
    assert result["thresholdResults"] == [
        {"id": "sNS", "passed": False, "averageScore": 0.0, "threshold": 0.9, "reason": reason}
    ]
    assert result["verdict"] == "failed"


@pytest.mark.parametrize("name", ["runEvals-invalid-threshold", "runEvals-no-scorers-no-gates"])
def test_same_configuration_errors_as_mastra(name):
    entry = CASES[name]
    expected = entry["expected"]["error"]
    with pytest.raises(EvalDagError) as raised:
        _run(entry["case"])
    assert raised.value.id == expected["id"]
    assert raised.value.message == expected["message"]
    assert (raised.value.domain, raised.value.category) == (expected["domain"], "USER")


def test_gate_that_throws_scores_zero_and_is_counted():
    """As Mastra: the failed item scores 0 for the gate. We also count it in summary.errors."""
    entry = CASES["runEvals-gate-throws-scores-zero"]
    expected = entry["expected"]["result"]
    expected["summary"]["errors"] = {"gThrow": 1}
    assert _run(entry["case"]).to_dict() == expected


def test_scorer_error_is_recorded_not_fatal():
    """Mastra rejects the whole run; we keep the error in the item row and go on."""
    result = _run(CASES["runEvals-scorer-throws-rejects"]["case"])
    items = result.items
    assert items["sThrow.score"].iloc[0] == 1
    assert items["sThrow.error"].iloc[1] == "Scorer Run Failed: scorer exploded"
    assert items["sThrow.failed_step"].iloc[1] == "generate_score"
    assert result.scores == {"sThrow": 1}
    assert result.summary.errors == {"sThrow": 1}


def test_scorer_error_with_on_error_raise_stops_like_mastra():
    entry = CASES["runEvals-scorer-throws-rejects"]
    expected = entry["expected"]["error"]
    with pytest.raises(EvalDagError) as raised:
        _run(entry["case"], on_error="raise")
    assert raised.value.id == expected["id"]
    assert raised.value.message.startswith(expected["message"])
    assert raised.value.details["scorerId"] == "sThrow"
    assert raised.value.cause.failed_step == "generate_score"


def test_null_score_is_an_error_not_a_zero():
    """Mastra skips null in `scores` but counts it as 0 against the threshold (0.5 < 0.6).

    We reject the score: the item is a recorded error, left out of the average, and a
    threshold with failed items does not pass.
    """
    result = _run(CASES["runEvals-null-score-coercion"]["case"])
    assert result.scores == {"sNull": 1}
    (threshold,) = result.threshold_results
    assert (threshold.passed, threshold.average_score, threshold.errors) == (False, 1.0, 1)
    assert result.verdict == "scored"
    assert "None" in result.items["sNull.error"].iloc[0]
