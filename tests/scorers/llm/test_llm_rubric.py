"""Rubric through the loopback judge server: Mastra's answers for the same judge replies, the
rubric's sources, one verdict per criterion with the rubric's flags, the gate, the reason."""

from __future__ import annotations

import pytest
from llm_scorer_cases import (
    assert_like_mastra,
    assert_scorer_like_mastra,
    parametrized_cases,
    replayed,
)

from evaldag import EvalDagError, ScorerRun, ScorerRunError, scorers
from evaldag.scorers.llm.rubric import RubricCriterion, parse_rubric

#: Our extra step: analyze (function) after the judged analyze, one verdict per criterion.
ADDED_STEPS = (1,)


@parametrized_cases("rubric")
def test_scores_like_mastra_for_the_same_judge_replies(judge_server, entry):
    case = entry["case"]
    scorer = scorers.rubric(
        judge_server.judge(),
        criteria=case.get("args", {}).get("criteria"),
        scale=case.get("options", {}).get("scale", 1),
    )
    assert_like_mastra(replayed(scorer, entry, judge_server), entry)
    if entry["expected"]["ok"]:
        assert_scorer_like_mastra(scorer, entry["expected"]["scorer"], ADDED_STEPS)


def _verdict(text, satisfied=True, required=True, reasoning="r"):
    return {"criterion": text, "satisfied": satisfied, "required": required, "reasoning": reasoning}


def _graded(server, verdicts, criteria, output="The report.", **options):
    server.script({"criteria": verdicts, "overallAssessment": "Summed up."})
    scorer = scorers.rubric(server.judge(), criteria=criteria, **options)
    return scorer.run(input="Write the report.", output=output)


_TWO = [{"description": "Has a summary"}, {"description": "Cites sources", "required": False}]


def test_the_judge_reads_the_task_the_output_and_the_marked_criteria(judge_server):
    result = _graded(judge_server, [_verdict("Has a summary"), _verdict("Cites sources")], _TWO)
    prompt = result.analyze_prompt
    assert "<task>\nWrite the report.\n</task>" in prompt
    assert "<output>\nThe report.\n</output>" in prompt
    assert "<rubric>\n1. [required] Has a summary\n2. [optional] Cites sources\n</rubric>" in prompt
    assert "The rubric has 2 criteria" in prompt
    assert len(judge_server.requests) == 1  # the reason is not judged


@pytest.mark.parametrize(
    ("verdicts", "criteria", "score"),
    [
        ([True, False], _TWO, 3.0),  # the optional criterion does not gate
        ([False, True], _TWO, 0.0),
        ([True, False], [{"description": "A", "required": False}] * 2, 0.0),  # none required
        ([True, True], [{"description": "A", "required": False}] * 2, 3.0),
    ],
)
def test_the_gate_is_every_required_criterion(judge_server, verdicts, criteria, score):
    judged = [
        _verdict(c["description"], satisfied, c.get("required", True))
        for c, satisfied in zip(criteria, verdicts, strict=True)
    ]
    assert _graded(judge_server, judged, criteria, scale=3).score == score


def test_the_rubrics_required_flags_win_over_the_judges(judge_server):
    judged = [_verdict("Has a summary", satisfied=False, required=False), _verdict("Cites")]
    result = _graded(judge_server, judged, _TWO)
    assert result.score == 0  # Mastra: 1, the judge unmarked the failed required criterion
    analysis = result.analyze_step_result
    assert [c["required"] for c in analysis["criteria"]] == [True, False]
    assert analysis["requiredFromRubric"] == [0, 1]
    assert "verdictCountMismatch" not in analysis
    (execution,) = result.judge["analyze"].executions
    assert execution.output["criteria"] == judged


def test_a_criterion_without_a_verdict_is_unsatisfied(judge_server):
    result = _graded(judge_server, [_verdict("Has a summary")], _TWO + [{"description": "Dated"}])
    assert result.score == 0
    analysis = result.analyze_step_result
    assert analysis["verdictCountMismatch"] == {"expected": 3, "received": 1}
    assert analysis["criteria"][2] == {
        "criterion": "Dated",
        "satisfied": False,
        "required": True,
        "reasoning": "The judge gave no verdict for this criterion.",
    }
    assert result.reason.endswith("To finish, address the 1 unmet required criterion above.")


def test_the_reason_lists_every_criterion(judge_server):
    judged = [_verdict("A", reasoning="Has A."), _verdict("B", False, reasoning="No B.")]
    result = _graded(judge_server, judged, "- A\n- B")
    assert result.reason == (
        "❌ Rubric not yet satisfied.\n\n✅ [required] A\n   → Has A.\n❌ [required] B\n   → No B."
        "\n\nSummed up.\n\nTo finish, address the 1 unmet required criterion above."
    )


def test_a_pass_says_so_whatever_the_scale(judge_server):
    # Mastra prints the failure header when a pass scores below 1 (scale < 1).
    result = _graded(judge_server, [_verdict("A")], "A", scale=0.5)
    assert result.score == 0.5
    assert result.reason.startswith("✅ Rubric satisfied: every required criterion is met.")


def test_with_only_optional_criteria_the_footer_counts_the_unmet_ones(judge_server):
    judged = [_verdict("A", False, False), _verdict("B", False, False)]
    result = _graded(judge_server, judged, [{"description": d, "required": False} for d in "AB"])
    assert result.reason.endswith("To finish, address the 2 unmet criteria above.")


def test_an_empty_output_is_graded_as_empty(judge_server):
    result = _graded(judge_server, [_verdict("A", False)], "A", output="")
    assert "<output>\n(the output is empty)\n</output>" in result.analyze_prompt
    assert result.score == 0


def test_without_a_rubric_the_run_passes_at_full_scale(judge_server):
    result = _graded(judge_server, [_verdict("Invented")], None, scale=5)
    assert result.score == 5  # Mastra: 1, unscaled
    assert "There is no rubric for this output" in result.analyze_prompt
    assert result.analyze_step_result["criteria"] == []
    assert result.analyze_step_result["verdictCountMismatch"] == {"expected": 0, "received": 1}
    assert result.reason == "No rubric was provided, so the rubric check passed by default."


@pytest.mark.parametrize(
    "fields",
    [
        {"request_context": {"rubric": "- From the context"}},
        {"additionalContext": {"rubric": [{"description": "From the context"}]}},
        {"input": {"inputMessages": [], "rubric": "From the context", "originalTask": "Do it."}},
    ],
)
def test_the_rubric_can_come_with_the_run(judge_server, fields):
    judge_server.script({"criteria": [_verdict("From the context")], "overallAssessment": "Ok."})
    scorer = scorers.rubric(judge_server.judge())
    result = scorer.run_one(ScorerRun(output="Done.", **fields))
    assert result.score == 1
    assert "1. [required] From the context" in result.analyze_prompt


def test_task_and_output_may_come_from_an_agent_loops_input(judge_server):
    judge_server.script({"criteria": [_verdict("A")], "overallAssessment": "Ok."})
    run_input = {"originalTask": "Research X.", "currentText": "Draft so far."}
    result = scorers.rubric(judge_server.judge(), criteria="A").run(input=run_input, output=None)
    assert "<task>\nResearch X.\n</task>" in result.analyze_prompt
    assert "<output>\nDraft so far.\n</output>" in result.analyze_prompt


def test_a_bad_rubric_in_the_run_fails_the_run(judge_server):
    scorer = scorers.rubric(judge_server.judge())
    with pytest.raises(ScorerRunError) as raised:
        scorer.run(input="q", output="o", request_context={"rubric": [{"required": True}]})
    assert "the run's request_context['rubric'][0] of rubric(...)" in raised.value.cause.message
    assert judge_server.requests == []


@pytest.mark.parametrize(
    ("fields", "where", "held"),
    [
        ({"request_context": {"rubric": {"criteria": ["A"]}}}, "request_context", "dict"),
        ({"request_context": {"rubric": 5}}, "request_context", "int"),
        ({"input": {"inputMessages": ["q"], "rubric": {"criteria": ["A"]}}}, "input", "dict"),
    ],
)
def test_a_rubric_of_another_type_fails_the_run_not_passes_as_no_rubric(
    judge_server, fields, where, held
):
    # Mastra reads such a rubric as none and passes the run at 1 without judging anything.
    scorer = scorers.rubric(judge_server.judge())
    with pytest.raises(ScorerRunError) as raised:
        scorer.run_one(ScorerRun(output="Done.", **{"input": "q", **fields}))
    message = raised.value.cause.message
    assert f"the run's {where}['rubric'] of rubric(...) must be a checklist string" in message
    assert message.endswith(f"got {held}")
    assert judge_server.requests == []


def test_parse_rubric_strips_list_markers_and_blank_lines():
    text = "- One\n* Two\n• Three\n1. Four\n\n  2) Five  \n   \n12.Six"
    assert parse_rubric(text) == [
        RubricCriterion(description=d) for d in ("One", "Two", "Three", "Four", "Five", "Six")
    ]


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({"criteria": 3}, "criteria of rubric(...) must be a checklist string"),
        ({"criteria": ["plain text"]}, "criteria[0] of rubric(...) must be a criterion"),
        ({"criteria": [{"description": ""}]}, "criteria[0] of rubric(...) is not valid"),
        ({"criteria": [{"description": "A", "weight": 2}]}, "Extra inputs are not permitted"),
        ({"scale": -1}, "scale of rubric(...) must be a number above 0"),
    ],
)
def test_bad_arguments_are_named(arguments, named):
    with pytest.raises(EvalDagError) as raised:
        scorers.rubric("openai/gpt-4o-mini", **arguments)
    assert named in raised.value.message
