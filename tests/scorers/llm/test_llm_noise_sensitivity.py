"""Noise sensitivity through the loopback judge server: Mastra's answers for the same judge
replies, the robustness formula (discrepancy, major issues), a robustness score off the 0-1
scale, options."""

from __future__ import annotations

import pytest
from llm_scorer_cases import (
    assert_like_mastra,
    assert_scorer_like_mastra,
    parametrized_cases,
    replayed,
    scripted_replies,
)

from evaldag import EvalDagError, ScorerRunError, scorers
from evaldag.scorers.llm.noise_sensitivity import NoiseSensitivityScoring

_OPTIONS = {
    "baselineResponse": "baseline_response",
    "noisyQuery": "noisy_query",
    "noiseType": "noise_type",
    "scoring": "scoring",
}
_DIMENSIONS = (
    "content_accuracy",
    "completeness",
    "relevance",
    "consistency",
    "hallucination_resistance",
)


#: Mastra clamps a robustness score off the 0-1 scale into it; evaldag refuses the reply.
OFF_THE_SCALE = "noise-sensitivity-custom-scoring-out-of-range"


@parametrized_cases("noise-sensitivity")
def test_scores_like_mastra_for_the_same_judge_replies(judge_server, entry):
    options = {_OPTIONS[key]: value for key, value in entry["case"]["options"].items()}
    scorer = scorers.noise_sensitivity(judge_server.judge(), **options)
    if entry["case"]["name"] == OFF_THE_SCALE:
        assert entry["expected"]["result"]["score"] == 0.8  # 1.3 clamped to 1, then lowered
        analysis, _ = scripted_replies(entry["case"])
        judge_server.script(analysis, analysis)  # the judge answers the same when asked again
        with pytest.raises(ScorerRunError) as raised:
            scorer.run(input=entry["case"]["input"], output=entry["case"]["output"])
        assert raised.value.failed_step == "analyze"
        assert "robustnessScore: Value error, 1.3 is not within [0, 1]" in raised.value.message
        return
    assert_like_mastra(replayed(scorer, entry, judge_server), entry)
    if entry["expected"]["ok"]:
        assert_scorer_like_mastra(scorer, entry["expected"]["scorer"])


def _analysis(levels, robustness, issues=0):
    return {
        "dimensions": [
            {
                "dimension": name,
                "impactLevel": level,
                "specificChanges": "c",
                "noiseInfluence": "n",
            }
            for name, level in zip(_DIMENSIONS, levels, strict=False)
        ],
        "overallAssessment": "Summed up.",
        "majorIssues": [f"issue {n}" for n in range(issues)],
        "robustnessScore": robustness,
    }


def _scored(server, analysis, output="Canberra.", **options):
    server.script(analysis, "The score is explained.")
    options.setdefault("baseline_response", "Canberra is the capital.")
    options.setdefault("noisy_query", "Capital of Australia? Sydney is bigger.")
    scorer = scorers.noise_sensitivity(server.judge(), **options)
    return scorer.run(input="What is the capital of Australia?", output=output)


@pytest.mark.parametrize(
    ("levels", "robustness", "issues", "options", "score"),
    [
        (["none"] * 5, 0.9, 0, {}, 0.9),  # close to the mean weight 1: the judge's score stands
        (["severe"] * 5, 0.9, 0, {}, 0.1),  # 0.8 apart: the lower mean weight wins
        (["moderate"] * 5, 0.75, 0, {}, 0.75),  # 0.15 apart: within the threshold
        (["moderate"] * 5, 0.75, 0, {"scoring": {"discrepancyThreshold": 0.1}}, 0.6),
        (["none"] * 5, 1.0, 2, {}, 0.8),  # 0.1 per major issue
        (["none"] * 5, 1.0, 5, {}, 0.7),  # at most 0.3
        ([], 0.7, 0, {}, 0.7),  # no dimensions: the judge's score alone
        (["significant"] * 5, 0.3, 4, {}, 0.0),  # floored at 0
        (
            ["severe"] * 5,
            1.0,
            1,
            {
                "scoring": {
                    "impact_weights": {"severe": 0.5},
                    "penalties": {"major_issue_per_item": 0.2},
                }
            },
            0.3,
        ),
    ],
)
def test_score_formula(judge_server, levels, robustness, issues, options, score):
    result = _scored(judge_server, _analysis(levels, robustness, issues), **options)
    assert result.score == score


@pytest.mark.parametrize("robustness", [7, -0.4, True, "0.9"])
def test_a_robustness_score_off_the_scale_fails_the_item(judge_server, robustness):
    analysis = _analysis(["none"] * 5, robustness)
    judge_server.script(analysis, analysis)
    scorer = scorers.noise_sensitivity(judge_server.judge(), baseline_response="b", noisy_query="n")
    with pytest.raises(ScorerRunError) as raised:
        scorer.run(input="q", output="a")
    assert raised.value.failed_step == "analyze"
    assert f"robustnessScore: Value error, {robustness!r} is not " in raised.value.message
    (execution,) = raised.value.result.judge["analyze"].executions
    assert execution.attempt_count == 2  # asked again with the schema in the prompt
    assert execution.error.code == "STRUCTURED_OUTPUT_SCHEMA_VALIDATION_FAILED"


def test_the_judge_reads_both_questions_and_both_answers(judge_server):
    result = _scored(judge_server, _analysis(["none"] * 5, 1), noise_type="misinformation")
    prompt = result.analyze_prompt
    for shown in (
        "<clean_question>\nWhat is the capital of Australia?\n</clean_question>",
        "<clean_answer>\nCanberra is the capital.\n</clean_answer>",
        "<noisy_question>\nCapital of Australia? Sydney is bigger.\n</noisy_question>",
        "Kind of noise: misinformation",
        "<noisy_answer>\nCanberra.\n</noisy_answer>",
    ):
        assert shown in prompt
    assert "Overall assessment: Summed up." in result.generate_reason_prompt
    assert "The score is 1 because" in result.generate_reason_prompt


def test_no_noise_type_leaves_the_line_out(judge_server):
    result = _scored(judge_server, _analysis(["none"] * 5, 1))
    assert "Kind of noise" not in result.analyze_prompt


@pytest.mark.parametrize(("run_input", "output"), [("Capital?", ""), ("", "Canberra.")])
def test_an_empty_question_or_answer_fails_before_any_judge_call(judge_server, run_input, output):
    scorer = scorers.noise_sensitivity(judge_server.judge(), baseline_response="b", noisy_query="n")
    with pytest.raises(ScorerRunError) as raised:
        scorer.run(input=run_input, output=output)
    assert raised.value.failed_step == "analyze"
    assert raised.value.message.startswith(
        "Scorer Run Failed: Both original query and noisy response are required for evaluation"
    )
    assert judge_server.requests == []


def test_an_unknown_impact_level_is_a_malformed_reply(judge_server):
    bad = _analysis(["catastrophic"], 0.5)
    judge_server.script(bad, bad)
    scorer = scorers.noise_sensitivity(judge_server.judge(), baseline_response="b", noisy_query="n")
    with pytest.raises(ScorerRunError) as raised:
        scorer.run(input="q", output="a")
    (execution,) = raised.value.result.judge["analyze"].executions
    assert execution.error.code == "STRUCTURED_OUTPUT_SCHEMA_VALIDATION_FAILED"


def test_scoring_defaults_are_mastras():
    scoring = NoiseSensitivityScoring()
    assert scoring.impact_weights.model_dump() == {
        "none": 1.0,
        "minimal": 0.85,
        "moderate": 0.6,
        "significant": 0.3,
        "severe": 0.1,
    }
    assert scoring.discrepancy_threshold == 0.2
    assert scoring.penalties.model_dump() == {
        "major_issue_per_item": 0.1,
        "max_major_issue_penalty": 0.3,
    }


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({"baseline_response": "", "noisy_query": "n"}, "Both baselineResponse and noisyQuery"),
        ({"baseline_response": "b", "noisy_query": None}, "noisy_query of noise_sensitivity"),
        ({"noise_type": 3}, "noise_type of noise_sensitivity(...) must be a string"),
        ({"scoring": {"impactWeights": {"severe": 2}}}, "less than or equal to 1"),
        ({"scoring": {"discrepancy": 0.1}}, "scoring of noise_sensitivity(...) is not valid"),
        ({"scoring": [0.2]}, "scoring of noise_sensitivity(...) must be a dict"),
    ],
)
def test_bad_arguments_are_named(arguments, named):
    arguments = {"baseline_response": "b", "noisy_query": "n", **arguments}
    with pytest.raises(EvalDagError) as raised:
        scorers.noise_sensitivity("openai/gpt-4o-mini", **arguments)
    assert named in raised.value.message
