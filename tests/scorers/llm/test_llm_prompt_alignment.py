"""Prompt alignment through the loopback judge server: Mastra's answers for the same judge
replies, the weights per mode, dimension scores off the 0-1 scale, history, missing texts,
options."""

from __future__ import annotations

import pytest
from llm_scorer_cases import (
    assert_like_mastra,
    assert_scorer_like_mastra,
    parametrized_cases,
    replayed,
)

from evaldag import EvalDagError, ScorerRunError, scorers

_OPTIONS = {
    "evaluationMode": "evaluation_mode",
    "scale": "scale",
    "includeConversationHistory": "include_conversation_history",
}


@parametrized_cases("prompt-alignment")
def test_scores_like_mastra_for_the_same_judge_replies(judge_server, entry):
    options = {_OPTIONS[key]: value for key, value in entry["case"].get("options", {}).items()}
    scorer = scorers.prompt_alignment(judge_server.judge(), **options)
    assert_like_mastra(replayed(scorer, entry, judge_server), entry)
    if entry["expected"]["ok"]:
        assert_scorer_like_mastra(scorer, entry["expected"]["scorer"])


def _analysis(intent, requirements, completeness, appropriateness):
    return {
        "intentAlignment": {
            "score": intent,
            "primaryIntent": "p",
            "isAddressed": True,
            "reasoning": "r",
        },
        "requirementsFulfillment": {
            "requirements": [{"requirement": "q", "isFulfilled": True, "reasoning": "r"}],
            "overallScore": requirements,
        },
        "completeness": {"score": completeness, "missingElements": [], "reasoning": "r"},
        "responseAppropriateness": {
            "score": appropriateness,
            "formatAlignment": True,
            "toneAlignment": True,
            "reasoning": "r",
        },
        "overallAssessment": "Summed up.",
    }


_INPUT = {
    "inputMessages": [{"role": "user", "content": "List two fruits."}],
    "rememberedMessages": [
        {"role": "user", "content": "I like sweet things."},
        {"role": "assistant", "content": "Noted!"},
        {"role": "user", "content": "And I dislike citrus."},
    ],
    "systemMessages": [{"role": "system", "content": "Answer in one line."}],
    "taggedSystemMessages": {},
}


def _scored(server, scores, run_input=_INPUT, output="Mango, banana.", **options):
    server.script(_analysis(*scores), "The score is explained.")
    return scorers.prompt_alignment(server.judge(), **options).run(input=run_input, output=output)


@pytest.mark.parametrize(
    ("scores", "options", "score"),
    [
        ((1, 1, 1, 1), {}, 1.0),
        ((0.5, 1, 1, 1), {}, 0.8),  # 0.4 × 0.5 + 0.3 + 0.2 + 0.1
        ((1, 0.5, 1, 1), {"evaluation_mode": "user"}, 0.85),
        ((1, 0.5, 1, 1), {"evaluation_mode": "system"}, 0.83),  # 0.35 + 0.175 + 0.15 + 0.15
        ((1, 1, 0, 0), {"evaluation_mode": "system", "scale": 10}, 7.0),
        ((1, 1, 0.5, 1), {"evaluation_mode": "both"}, 0.9),  # the user weights
    ],
)
def test_score_formula(judge_server, scores, options, score):
    assert _scored(judge_server, scores, **options).score == score


@pytest.mark.parametrize(
    ("scores", "refused"),
    [
        ((7, 1, 1, 1), "intentAlignment/score: Value error, 7 is not within [0, 1]"),
        ((1, -2, 1, 1), "requirementsFulfillment/overallScore: Value error, -2 is not within"),
        ((1, 1, 1, False), "responseAppropriateness/score: Value error, False is not a number"),
    ],
)
def test_a_dimension_score_off_the_scale_fails_the_item(judge_server, scores, refused):
    # Mastra clamps into [0, 1]: a judge grading 0-10 would score 1 on every dimension.
    judge_server.script(_analysis(*scores), _analysis(*scores))
    with pytest.raises(ScorerRunError) as raised:
        scorers.prompt_alignment(judge_server.judge()).run(input=_INPUT, output="Mango.")
    assert raised.value.failed_step == "analyze"
    assert refused in raised.value.message


def test_zero_requirements_leave_the_score_to_the_judges_overall_score(judge_server):
    analysis = _analysis(1, 0.5, 1, 1)
    analysis["requirementsFulfillment"]["requirements"] = []
    judge_server.script(analysis, "The score is explained.")
    result = scorers.prompt_alignment(judge_server.judge()).run(input="Hi!", output="Hello!")
    assert result.score == 0.85
    assert result.analyze_step_result["requirementsFulfillment"]["requirements"] == []


@pytest.mark.parametrize(
    ("mode", "shown", "hidden"),
    [
        ("user", ["<user_request>\nList two fruits.\n</user_request>"], ["<system_prompt>"]),
        ("system", ["<system_prompt>\nAnswer in one line.\n</system_prompt>"], ["<user_request>"]),
        ("both", ["<user_request>\nList two fruits.", "<system_prompt>\nAnswer in one"], []),
    ],
)
def test_the_judge_reads_the_prompts_of_the_mode(judge_server, mode, shown, hidden):
    result = _scored(judge_server, (1, 1, 1, 1), evaluation_mode=mode)
    for prompt in (result.analyze_prompt, result.generate_reason_prompt):
        for text in shown:
            assert text in prompt
        for text in hidden:
            assert text not in prompt
    assert "<response>\nMango, banana.\n</response>" in result.analyze_prompt
    assert "<conversation_history>" not in result.analyze_prompt


@pytest.mark.parametrize(
    ("history", "lines"),
    [
        (True, "user: I like sweet things.\nassistant: Noted!\nuser: And I dislike citrus."),
        ({"max_messages": 2}, "assistant: Noted!\nuser: And I dislike citrus."),
        ({"maxMessages": 1}, "user: And I dislike citrus."),
    ],
)
def test_conversation_history_on_request(judge_server, history, lines):
    result = _scored(judge_server, (1, 1, 1, 1), include_conversation_history=history)
    block = f"<conversation_history>\n{lines}\n</conversation_history>"
    assert block in result.analyze_prompt
    assert block in result.generate_reason_prompt


@pytest.mark.parametrize(
    ("mode", "run_input", "output", "message"),
    [
        ("both", _INPUT, "", "Agent response is required for prompt alignment scoring"),
        ("user", {"systemMessages": ["Be brief."]}, "Hi", "User prompt is required for user"),
        ("system", "Hello", "Hi", "System prompt is required for system prompt alignment"),
        ("both", {"inputMessages": []}, "Hi", "A user or system prompt is required for combined"),
    ],
)
def test_missing_texts_fail_before_any_judge_call(judge_server, mode, run_input, output, message):
    scorer = scorers.prompt_alignment(judge_server.judge(), evaluation_mode=mode)
    with pytest.raises(ScorerRunError) as raised:
        scorer.run(input=run_input, output=output)
    assert raised.value.failed_step == "analyze"
    assert raised.value.message.startswith(f"Scorer Run Failed: {message}")
    assert judge_server.requests == []


def test_both_mode_with_only_a_system_prompt_is_judged(judge_server):
    result = _scored(
        judge_server, (1, 1, 1, 1), run_input={"systemMessages": ["Be brief."]}, output="Hi."
    )
    assert "<user_request>\n(none was given)\n</user_request>" in result.analyze_prompt
    assert "<system_prompt>\nBe brief.\n</system_prompt>" in result.analyze_prompt


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({"scale": 0}, "scale of prompt_alignment(...) must be a number above 0"),
        ({"evaluation_mode": "assistant"}, "evaluation_mode of prompt_alignment(...) must be"),
        ({"include_conversation_history": 5}, "include_conversation_history of prompt_alignment"),
        ({"include_conversation_history": {"max_messages": 0}}, "greater than or equal to 1"),
        ({"include_conversation_history": {"max_messages": 2.5}}, "valid integer"),
    ],
)
def test_bad_arguments_are_named(arguments, named):
    with pytest.raises(EvalDagError) as raised:
        scorers.prompt_alignment("openai/gpt-4o-mini", **arguments)
    assert named in raised.value.message
