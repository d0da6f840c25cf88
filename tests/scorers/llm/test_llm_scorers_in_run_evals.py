"""Context recall … trajectory accuracy (LLM) beyond their first judged step: a judge failure
at the reason step keeps the score in the snapshot, and run_evals scores dataset items with
their ground truth, rubric and expected steps, summing the judge usage."""

from __future__ import annotations

import pytest
from judge_server import refused
from llm_scorer_cases import SAMPLES

import evaldag
from evaldag import ScorerRunError, scorers

#: The new scorers whose reason is judged (multi-turn judge and rubric build theirs).
JUDGED_REASONS = (
    "context-recall-scorer",
    "context-relevance-scorer",
    "llm-trajectory-accuracy-scorer",
    "noise-sensitivity-scorer",
    "prompt-alignment-scorer",
    "summarization-scorer",
)


@pytest.mark.parametrize("scorer_id", JUDGED_REASONS)
def test_a_failed_reason_keeps_the_score_in_the_snapshot(judge_server, scorer_id):
    sample = SAMPLES[scorer_id]
    judge_server.script(*sample.replies)
    clean = sample.scorer(judge_server.judge()).run(**sample.run)
    judge_server.reset()

    judge_server.script(*sample.replies[:-1], refused(403))
    scorer = sample.scorer(judge_server.judge())
    with pytest.raises(ScorerRunError) as raised:
        scorer.run(**sample.run, run_id="late")

    error = raised.value
    stages = [step.stage for step in scorer.steps]
    assert error.failed_step == "generate_reason"
    assert error.completed_steps == stages[:-1]
    assert error.cause.id == "EVALDAG_JUDGE_REFUSED"
    snapshot = error.result
    assert snapshot.run_id == "late"
    assert snapshot.score == clean.score
    assert snapshot.analyze_step_result == clean.analyze_step_result
    assert snapshot.reason is None
    (failed,) = snapshot.judge["generate_reason"].executions
    assert (failed.status, failed.error.code) == ("failed", "EVALDAG_JUDGE_REFUSED")
    assert failed.prompt == clean.generate_reason_prompt


@pytest.mark.parametrize("scorer_id", ["multi-turn-judge-scorer", "rubric-scorer"])
def test_a_reason_built_by_a_function_makes_no_judge_call(judge_server, scorer_id):
    sample = SAMPLES[scorer_id]
    judge_server.script(*sample.replies)
    result = sample.scorer(judge_server.judge()).run(**sample.run)
    assert result.reason.startswith("✅")
    assert result.generate_reason_prompt is None
    assert list(result.judge) == ["analyze"]
    assert len(judge_server.requests) == 1


def test_run_evals_reads_each_items_ground_truth_rubric_and_expected_steps(judge_server):
    judge_server.on("Split the reference answer", {"claims": ["A", "B"]})
    judge_server.on(
        "supports each claim of a reference answer",
        {"verdicts": [{"verdict": "yes", "reason": "r"}, {"verdict": "no", "reason": "r"}]},
    )
    judge_server.on("scored for recall", "The score is 0.5 because B is missing.")
    judge_server.on(
        "Grade the agent's output",
        {
            "criteria": [
                {"criterion": "Mentions A", "satisfied": True, "required": True, "reasoning": "r"}
            ],
            "overallAssessment": "Fine.",
        },
    )
    judge_server.on(
        "Review the steps an agent took",
        {
            "stepEvaluations": [
                {"stepName": "s", "wasNecessary": True, "wasInOrder": True, "reasoning": "r"}
            ],
            "overallAssessment": "Fine.",
        },
    )
    judge_server.on("path through a request was scored", "The score is 1 because it was right.")
    data = [
        {
            "input": f"question {n}",
            "output": {
                "steps": [{"stepType": "tool_call", "name": "s"}],
                "rawOutput": [{"role": "assistant", "content": f"A, answer {n}."}],
            },
            "groundTruth": "A and B.",
            "requestContext": {"rubric": "- Mentions A"},
            "expectedTrajectory": {"steps": [{"name": "s"}]},
        }
        for n in range(3)
    ]
    judge = judge_server.judge()
    result = evaldag.run_evals(
        data,
        scorers=[
            scorers.context_recall(judge, context=["A is so."]),
            scorers.trajectory_accuracy_llm(judge),
        ],
        gates=[scorers.rubric(judge)],
        concurrency=3,
    )

    assert result.scores == {"context-recall-scorer": 0.5, "llm-trajectory-accuracy-scorer": 1.0}
    assert [(gate.id, gate.passed, gate.score) for gate in result.gate_results] == [
        ("rubric-scorer", True, 1.0)
    ]
    assert result.verdict == "passed"
    recall = result.usage["context-recall-scorer"]
    assert (recall.calls, recall.total_tokens) == (9, 135)
    assert result.usage["rubric-scorer"].calls == 3
    assert result.usage["total"].calls == 9 + 6 + 3
    items = result.items
    assert list(items["rubric-scorer.reason"].str.startswith("✅ Rubric satisfied")) == [True] * 3
    prompts = [request.prompt for request in judge_server.requests]
    assert sum("<expected_steps>\n1. s\n</expected_steps>" in p for p in prompts) == 3
    shown = "<reference_answer>\nA and B.\n</reference_answer>"
    assert sum(shown in p for p in prompts) == 6  # the claims and the reason prompts
