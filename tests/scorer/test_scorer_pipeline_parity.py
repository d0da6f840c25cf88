"""Mastra's own answers for scorer pipelines (oracle ``scorerPipeline`` cases), field by field."""

import json

import pytest
from repo_paths import FIXTURES

from evaldag import EvalDagError, ScorerRunError, create_scorer, not_scorable
from evaldag._compat.js import camel

CASES = json.loads((FIXTURES / "mastra/scorer_pipeline.json").read_text())
# The oracle turns "hi" / "there" into Mastra's agent-run shapes; every case uses the same ones.
RUN = next(c["expected"]["result"] for c in CASES if c["expected"].get("ok"))
FUNCTION_CASES = [c for c in CASES if all(s["do"] != "judge" for s in c["case"]["steps"])]


def _step(spec: dict, stage: str):
    action = spec["do"]
    if action == "return":
        value = None if spec.get("value") == "$undefined" else spec.get("value")
        return lambda: value
    if action == "notScorable":
        return lambda: not_scorable(spec.get("reason"))
    if action in ("throw", "throwString", "throwObject"):
        message = spec.get("message", spec.get("value"))

        def raises():
            raise RuntimeError(message)

        return raises
    if action == "context":

        def context(run, results, score):
            seen = {
                "runKeys": sorted(run.to_dict()),
                "results": {camel(key): value for key, value in results.items()},
            }
            if stage == "generate_reason":
                seen["score"] = score
            return seen

        return context
    raise AssertionError(f"unknown step action {action}")


def _scorer(case: dict):
    scorer = create_scorer(case["id"], description="oracle pipeline")
    for spec in case["steps"]:
        stage = {"generateScore": "generate_score", "generateReason": "generate_reason"}.get(
            spec["step"], spec["step"]
        )
        scorer = getattr(scorer, stage)(_step(spec, stage))
    return scorer


def _without_ctx_keys(value):
    if isinstance(value, dict):
        return {k: _without_ctx_keys(v) for k, v in value.items() if k != "ctxKeys"}
    return value


@pytest.mark.parametrize("entry", FUNCTION_CASES, ids=[c["case"]["name"] for c in FUNCTION_CASES])
def test_matches_mastra(entry):
    case, expected = entry["case"], entry["expected"]
    scorer = _scorer(case)
    assert [(camel(s["name"]), s["type"]) for s in scorer.get_steps()] == [
        (s["name"], s["type"]) for s in expected["steps"]
    ]
    run = {"input": RUN["input"], "output": RUN["output"], "run_id": "oracle-run"}
    if expected["ok"]:
        result = scorer.run(**run)
        assert result.to_dict() == _without_ctx_keys(expected["result"])
        assert result.score == expected["score"]
        return
    error = expected["error"]
    with pytest.raises(EvalDagError) as raised:
        scorer.run(**run)
    got = raised.value
    assert got.message.startswith(error["message"])  # ours may add how to fix it
    assert got.id == error["id"]
    assert (got.domain, got.category) == (error["domain"], error["category"])
    assert got.details == error["details"]
    assert list(got.to_dict()) == error["jsonKeys"]
    assert isinstance(got, ScorerRunError) == error["isScorerRunError"]
    if error["isScorerRunError"]:
        assert camel(got.failed_step) == error["failedStep"]
        assert [camel(s) for s in got.completed_steps] == error["completedSteps"]
        snapshot = None if got.result is None else got.result.to_dict()
        assert snapshot == error["result"]
