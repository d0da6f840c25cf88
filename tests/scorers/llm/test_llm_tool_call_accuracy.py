"""Tool call accuracy (LLM) through the loopback judge server: Mastra's answers for the same
judge replies, the tool reference the judge reads, no-call scores."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from llm_scorer_cases import (
    assert_like_mastra,
    assert_scorer_like_mastra,
    mastra_cases,
    parametrized_cases,
    replayed,
)

from evaldag import EvalDagError, ScorerRunError, scorers

TOOLS = [
    {"id": "get_weather", "description": "Current weather for a city"},
    {"id": "send_email", "description": "Send an email for the user"},
]
#: Our one-evaluation-per-call step, after the judged analyze step.
ADDED_STEPS = (2,)


@parametrized_cases("tool-call-accuracy-llm")
def test_scores_like_mastra_for_the_same_judge_replies(judge_server, entry):
    tools = entry["case"]["args"]["availableTools"]
    scorer = scorers.tool_call_accuracy_llm(judge_server.judge(), available_tools=tools)
    assert_like_mastra(replayed(scorer, entry, judge_server), entry)
    if entry["expected"]["ok"]:
        assert_scorer_like_mastra(scorer, entry["expected"]["scorer"], ADDED_STEPS)


def _evaluation(tool, appropriate):
    return {"toolCalled": tool, "wasAppropriate": appropriate, "reasoning": "r"}


@pytest.mark.parametrize(
    ("analysis", "score"),
    [
        ({"evaluations": [], "missingTools": []}, 1),
        ({"evaluations": []}, 1),
        ({"evaluations": [], "missingTools": ["get_weather"]}, 0),
        ({"evaluations": [_evaluation("a", True)] * 2 + [_evaluation("b", False)]}, 0.67),
    ],
)
def test_score(judge_server, analysis, score):
    judge_server.script(analysis, "The score is explained.")
    scorer = scorers.tool_call_accuracy_llm(judge_server.judge(), available_tools=TOOLS)
    result = scorer.run(input="Weather in Rome?", output="Let me check.")
    assert result.score == score
    assert result.preprocess_step_result == {
        "actualTools": [],
        "hasToolCalls": False,
        "toolCallInfos": [],
    }
    assert "<tools_called>\nNone\n</tools_called>" in result.analyze_prompt
    missing = json.dumps(analysis.get("missingTools") or [], separators=(",", ":"))
    assert f"Missing tools: {missing}" in result.generate_reason_prompt


@pytest.mark.parametrize("run_input", [{"question": "Weather in Rome?"}, 42, [{"q": "Rome?"}]])
def test_an_input_no_reader_takes_fails_the_run_before_any_judge_call(judge_server, run_input):
    # Mastra fails on these too, as "Input and output messages cannot be null or empty"; the
    # list of non-messages was read as a prompt and judged.
    scorer = scorers.tool_call_accuracy_llm(judge_server.judge(), available_tools=TOOLS)
    with pytest.raises(ScorerRunError) as raised:
        scorer.run(input=run_input, output="Let me check.")
    assert "run.input must be a string, a message, a list of messages" in raised.value.message
    assert "for tool_call_accuracy_llm, got " in raised.value.message
    assert judge_server.requests == []


def test_tools_may_be_objects_with_a_name_and_without_a_description(judge_server):
    tools = [
        SimpleNamespace(id=None, name="lookup", description="Find a record"),
        {"id": "ping"},
    ]
    judge_server.script({"evaluations": []}, "The score is 1.")
    result = scorers.tool_call_accuracy_llm(judge_server.judge(), available_tools=tools).run(
        input="q", output="a"
    )
    assert "<available_tools>\nlookup: Find a record\nping\n</available_tools>" in (
        result.analyze_prompt
    )


@pytest.mark.parametrize(
    ("tools", "named"),
    [
        ("get_weather", "available_tools of tool_call_accuracy_llm(...) must be a list"),
        ({"id": "get_weather"}, "must be a list"),
        ([{"description": "no id"}], "available_tools[0] of tool_call_accuracy_llm(...) has no id"),
    ],
)
def test_available_tools_are_checked(tools, named):
    with pytest.raises(EvalDagError) as raised:
        scorers.tool_call_accuracy_llm("openai/gpt-4o-mini", available_tools=tools)
    assert named in raised.value.message


@pytest.mark.parametrize(
    ("evaluations", "score"),
    [
        ([], 0),
        ([_evaluation("get_weather", True)], 0.5),
        ([_evaluation("get_weather", True)] * 2 + [_evaluation("search_web", True)], 1),
    ],
)
def test_the_score_is_taken_over_the_calls(judge_server, evaluations, score):
    # Before: over the judge's evaluations, so a judge that evaluated none of the two calls
    # (or only the appropriate one) scored 1.
    (entry,) = [
        e
        for e in mastra_cases("tool-call-accuracy-llm")
        if e["case"]["name"] == "tool-call-accuracy-llm-weather-extra-search"
    ]
    case = {**entry["case"], "judge": {"analyze": {"evaluations": evaluations}}}
    tools = case["args"]["availableTools"]
    scorer = scorers.tool_call_accuracy_llm(judge_server.judge(), available_tools=tools)
    judge_server.reply = "The score is explained."
    result = replayed(scorer, {**entry, "case": case}, judge_server)

    assert result.preprocess_step_result["actualTools"] == ["get_weather", "search_web"]
    assert result.score == score
    assert len(result.analyze_step_result["evaluations"]) == 2
    assert result.analyze_step_result["verdictCountMismatch"] == {
        "expected": 2,
        "received": len(evaluations),
    }
    assert result.judge["analyze"].executions[0].output == {"evaluations": evaluations}
