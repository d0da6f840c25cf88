"""Replaying Mastra's LLM-scorer cases through the loopback judge server.

``tests/fixtures/llm_scorers/<scorer>.json`` holds, per case, the oracle case (the judge's
scripted raw replies, options, run fields) and Mastra's answer (``expected``), copied from
``shared/fixtures/llm-scorers.*.json`` and ``oracle-sample.*.json``. A test builds our scorer
for the case, scripts the same replies on a :class:`~judge_server.JudgeServer` and compares:

- score, step results, reason, result keys and the scorer's id, name, description, type and
  steps;
- per judged step, the judge record fields that do not depend on the prompt text: status,
  output, judge model id, usage, attempt and model call counts (and the raw output of a
  failed execution);
- for a failing case, the failed step, the completed steps and the snapshot.

Deliberate deviations are passed in as ``deviations``: Mastra's value, ours, and why.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from judge_server import DEFAULT_USAGE, JudgeServer, Reply

from evaldag import Scorer, ScorerResult, ScorerRunError
from evaldag.errors import camel

FIXTURES = Path(__file__).parent / "fixtures" / "llm_scorers"
_STEP_ORDER = ("preprocess", "analyze", "generateScore", "generateReason")
#: The two ways a reply can be unusable; Mastra and we may name the same reply differently.
FORMAT_CODES = {"STRUCTURED_OUTPUT_OBJECT_UNDEFINED", "STRUCTURED_OUTPUT_SCHEMA_VALIDATION_FAILED"}


@dataclass(frozen=True)
class Deviation:
    """Where our result for a case differs from Mastra's on purpose.

    :param path: what differs: ``score``, ``analyzeStepResult``, ``judge.analyze.output`` ...
    :param mastra: Mastra's value (checked, so the fixture and this note stay in step).
    :param ours: our value.
    :param why: the reason, as in ``docs/differences-from-mastra.md``.
    """

    path: str
    mastra: Any
    ours: Any
    why: str


def mastra_cases(scorer: str) -> list[dict[str, Any]]:
    """The ``{case, expected}`` entries of one scorer."""
    return json.loads((FIXTURES / f"{scorer}.json").read_text(encoding="utf-8"))


def case_ids(entries: Sequence[Mapping[str, Any]]) -> list[str]:
    return [entry["case"]["name"] for entry in entries]


def scripted_replies(case: Mapping[str, Any]) -> list[Reply]:
    """The case's judge replies in call order, reporting the case's usage and model."""
    judge = case.get("judge") or {}
    if isinstance(judge, Mapping):
        contents = [judge[step] for step in _STEP_ORDER if step in judge]
    else:
        contents = list(judge)
    usage = dict(DEFAULT_USAGE)
    if "judgeUsage" in case:
        names = {"inputTokens": "prompt_tokens", "outputTokens": "completion_tokens"}
        names["totalTokens"] = "total_tokens"
        usage = {names[key]: value for key, value in case["judgeUsage"].items()}
    return [Reply(content=c, usage=usage, model=case.get("judgeModelId")) for c in contents]


def replayed(
    scorer: Scorer, entry: Mapping[str, Any], server: JudgeServer
) -> ScorerResult | ScorerRunError:
    """Our scorer run on the case's run with the case's judge replies scripted."""
    case, expected = entry["case"], entry["expected"]
    echoed = expected["result"] if expected["ok"] else expected["error"].get("result")
    source = echoed or case  # Mastra's converted messages when it echoed them
    server.script(*scripted_replies(case))
    try:
        return scorer.run(
            input=source.get("input"),
            output=source["output"],
            run_id="oracle-run",
            ground_truth=case.get("groundTruth"),
            request_context=case.get("requestContext"),
        )
    except ScorerRunError as error:
        return error


def _at(data: Mapping[str, Any], path: str) -> Any:
    value: Any = data
    for key in path.split("."):
        value = value[key]
    return value


def _expected(mastra: Mapping[str, Any], path: str, deviations: Mapping[str, Deviation]) -> Any:
    deviation = deviations.get(path)
    theirs = _at(mastra, path) if _has(mastra, path) else None
    if deviation is None:
        return theirs
    assert theirs == deviation.mastra, f"fixture changed at {path}: {theirs!r}"
    return deviation.ours


def _has(data: Mapping[str, Any], path: str) -> bool:
    try:
        _at(data, path)
    except (KeyError, TypeError):
        return False
    return True


def assert_scorer_like_mastra(
    scorer: Scorer, mastra: Mapping[str, Any], added_steps: Sequence[int] = ()
) -> None:
    """Same id, name, description, type and steps; ``added_steps`` are indexes of our extra
    (function) steps, left out of the comparison."""
    assert (scorer.id, scorer.name, scorer.description, scorer.type) == (
        mastra["id"],
        mastra["name"],
        mastra["description"],
        mastra["type"],
    )
    ours = scorer.get_steps()
    for index in sorted(added_steps, reverse=True):
        assert ours[index]["type"] == "function"
        del ours[index]
    theirs = [
        {"name": step["name"], "type": step["type"], "description": step.get("description")}
        for step in mastra["steps"]
    ]
    assert [{**step, "name": camel(step["name"])} for step in ours] == theirs


def _assert_executions(ours: Mapping[str, Any], theirs: Mapping[str, Any], where: str) -> None:
    assert list(ours) == list(theirs), where
    for step, record in theirs.items():
        mine = ours[step]["executions"]
        assert len(mine) == len(record["executions"]), (where, step)
        for our, their in zip(mine, record["executions"], strict=True):
            keys = ["status", "judgeModelId", "usage", "attemptCount", "modelCallCount"]
            if their["status"] == "success":
                keys.append("output")
            else:
                keys.append("rawOutput")
                assert our["error"]["code"] in FORMAT_CODES, (where, step)
            for key in keys:
                assert our.get(key) == their.get(key), (where, step, key)


def assert_like_mastra(
    outcome: ScorerResult | ScorerRunError,
    entry: Mapping[str, Any],
    deviations: Sequence[Deviation] = (),
) -> None:
    """``outcome`` matches Mastra's answer for the case, up to the declared deviations."""
    expected = entry["expected"]
    by_path = {deviation.path: deviation for deviation in deviations}
    if expected["ok"]:
        assert isinstance(outcome, ScorerResult), outcome
        ours = outcome.to_dict()
        theirs = expected["result"]
        assert outcome.score == _expected(expected, "score", by_path)
        assert sorted(ours) == sorted(theirs)
        for key in ("preprocessStepResult", "analyzeStepResult", "reason"):
            assert ours.get(key) == _expected(theirs, key, by_path), key
        judge = json.loads(json.dumps(theirs.get("judge", {})))
        for path, deviation in by_path.items():
            if path.startswith("judge."):
                step, key = path.split(".")[1:]
                (execution,) = judge[step]["executions"]
                assert execution[key] == deviation.mastra, f"fixture changed at {path}"
                execution[key] = deviation.ours
        _assert_executions(ours.get("judge", {}), judge, entry["case"]["name"])
        return
    mastra = expected["error"]
    assert isinstance(outcome, ScorerRunError), outcome
    assert outcome.id == mastra["id"]
    assert camel(outcome.failed_step) == mastra["failedStep"]
    assert [camel(step) for step in outcome.completed_steps] == mastra["completedSteps"]
    if mastra.get("result") is None:
        assert outcome.result is None
        assert outcome.message.startswith(mastra["message"])
        return
    snapshot = outcome.result.to_dict()
    theirs = mastra["result"]
    assert sorted(snapshot) == sorted(theirs)
    for key in ("preprocessStepResult", "analyzeStepResult"):
        assert snapshot.get(key) == theirs.get(key), key
    _assert_executions(snapshot.get("judge", {}), theirs.get("judge", {}), mastra["message"])


def parametrized_cases(scorer: str) -> Callable[[Callable[..., Any]], Any]:
    """``@parametrized_cases('bias')``: the test gets each case as ``entry``."""
    entries = mastra_cases(scorer)
    return pytest.mark.parametrize("entry", entries, ids=case_ids(entries))
