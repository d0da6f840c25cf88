"""Trajectories as Mastra extracts them: ``extractTrajectory`` (an agent's messages) and
``extractWorkflowTrajectory`` (a workflow's step results), Mastra's answers from its own code
(``tests/fixtures/mastra/trajectories_oracle.mjs`` run on ``trajectories.json``)."""

from __future__ import annotations

import json

import pytest
from repo_paths import FIXTURES

from evaldag._engine.targets import StepRun
from evaldag._targets.workflow import workflow_trajectory
from evaldag.transcripts import extract_trajectory

CASES = json.loads((FIXTURES / "mastra/trajectories.json").read_text())


def _cases(fn):
    return pytest.mark.parametrize(
        "case", [c for c in CASES if c["fn"] == fn], ids=lambda c: c["name"]
    )


@_cases("extractTrajectory")
def test_agent_trajectories_are_mastras(case):
    (messages,) = case["args"]
    assert extract_trajectory(messages) == case["value"]


@_cases("extractWorkflowTrajectory")
def test_workflow_trajectories_are_mastras(case):
    """Our workflow records (seconds, durations) in place of Mastra's step results (epoch
    milliseconds); Mastra's ``metadata`` and ``rawWorkflowResult`` have no counterpart."""
    results, path = case["args"]
    steps = {
        name: StepRun(
            input={},
            output=results[name].get("output") if results[name]["status"] == "success" else None,
            status=results[name]["status"],
            started_at=results[name]["startedAt"] / 1000,
            duration_ms=results[name]["endedAt"] - results[name]["startedAt"],
        )
        for name in path
    }
    ours = workflow_trajectory(steps)
    expected = case["value"]
    assert ours["steps"] == expected["steps"]
    assert ours["totalDurationMs"] == pytest.approx(expected["totalDurationMs"])
