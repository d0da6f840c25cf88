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

Deliberate deviations are passed in as ``deviations``: Mastra's value, ours, and why. Our first
step, when a scorer has it, is the check that a run has what it is judged against (a context,
a ground truth; ``scorer_needing``): it is left out of the comparison of steps and completed
steps, and a ``notScorable`` deviation says where it ends a run that Mastra scores or fails.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from judge_server import DEFAULT_USAGE, JudgeServer, Reply

from evaldag import Scorer, ScorerResult, ScorerRunError, scorers
from evaldag._compat.js import camel

FIXTURES = Path(__file__).parent / "fixtures" / "llm_scorers"
_STEP_ORDER = ("preprocess", "analyze", "generateScore", "generateReason")
#: The two ways a reply can be unusable; Mastra and we may name the same reply differently.
FORMAT_CODES = {"STRUCTURED_OUTPUT_OBJECT_UNDEFINED", "STRUCTURED_OUTPUT_SCHEMA_VALIDATION_FAILED"}


@dataclass(frozen=True)
class Deviation:
    """Where our result for a case differs from Mastra's on purpose.

    :param path: what differs: ``score``, ``analyzeStepResult``, ``judge.analyze.output`` ...;
        ``notScorable`` when we find the run not scorable (no judge call).
    :param mastra: Mastra's value (checked, so the fixture and this note stay in step): for
        ``notScorable``, its score or its error id.
    :param ours: our value: for ``notScorable``, the start of the reason.
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


def checks_first(scorer: Scorer | None) -> bool:
    """Whether the scorer's first step is the check that a run has what it is judged against."""
    if scorer is None or not scorer.steps:
        return False
    return (scorer.get_steps()[0]["description"] or "").startswith("Not scorable without")


def assert_scorer_like_mastra(
    scorer: Scorer, mastra: Mapping[str, Any], added_steps: Sequence[int] = ()
) -> None:
    """Same id, name, description, type and steps; ``added_steps`` are indexes of our extra
    (function) steps after the first check (if any), left out of the comparison."""
    assert (scorer.id, scorer.name, scorer.description, scorer.type) == (
        mastra["id"],
        mastra["name"],
        mastra["description"],
        mastra["type"],
    )
    ours = scorer.get_steps()[1:] if checks_first(scorer) else scorer.get_steps()
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
    scorer: Scorer | None = None,
) -> None:
    """``outcome`` matches Mastra's answer for the case, up to the declared deviations.

    :param scorer: the scorer run, when its first step may be the check (see module docs).
    """
    expected = entry["expected"]
    by_path = {deviation.path: deviation for deviation in deviations}
    if "notScorable" in by_path:
        deviation = by_path["notScorable"]
        theirs = expected["result"]["score"] if expected["ok"] else expected["error"]["id"]
        assert theirs == deviation.mastra, f"fixture changed: {theirs!r}"
        assert isinstance(outcome, ScorerResult), outcome
        assert outcome.score is None and outcome.not_scorable.step == "preprocess"
        assert outcome.not_scorable.reason.startswith(deviation.ours), outcome.not_scorable
        assert outcome.judge is None and outcome.preprocess_prompt is None  # no judge call
        return
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
    completed = outcome.completed_steps[1:] if checks_first(scorer) else outcome.completed_steps
    assert [camel(step) for step in completed] == mastra["completedSteps"]
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


# --- sample runs ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Sample:
    """A scorer on a sample run, with the judge replies that carry it through every step."""

    scorer: Callable[[Any], Scorer]
    run: dict[str, Any]
    replies: list[Any]
    shown: list[str] = field(default_factory=list)  # texts the prompts must show


ORDER_OUTPUT = [
    {
        "id": "a1",
        "role": "assistant",
        "createdAt": "2025-03-04T10:00:00.000Z",
        "content": {
            "format": 2,
            "parts": [
                {
                    "type": "text",
                    "text": "Your order 48213 shipped on March 3 with UPS and should arrive by "
                    "March 6. It might arrive a day early.",
                },
                {
                    "type": "tool-invocation",
                    "toolInvocation": {
                        "toolCallId": "call-1",
                        "toolName": "get_order_status",
                        "args": {"orderId": "48213"},
                        "state": "result",
                        "result": {"status": "shipped", "carrier": "UPS", "eta": "2025-03-06"},
                    },
                },
            ],
        },
    }
]

SAMPLES: dict[str, Sample] = {
    "faithfulness-scorer": Sample(
        scorers.faithfulness,
        {"input": "Is my order 48213 on its way?", "output": ORDER_OUTPUT},
        [
            {"claims": ["Order 48213 shipped on March 3", "Order 48213 might arrive early"]},
            {
                "verdicts": [
                    {"verdict": "unsure", "reason": "No shipping date in the tool result."},
                    {"verdict": "unsure", "reason": "Hedged."},
                ]
            },
            "The score is 0 because no claim is backed by the tool result.",
        ],
        shown=['{"status":"shipped","carrier":"UPS","eta":"2025-03-06"}', "Order 48213"],
    ),
    "answer-relevancy-scorer": Sample(
        scorers.answer_relevancy,
        {
            "input": "How do I reset my router?",
            "output": "Hold the reset button for ten seconds. Our shop opens at 9.",
        },
        [
            {"statements": ["Hold the reset button for ten seconds", "Our shop opens at 9"]},
            {
                "results": [
                    {"result": "yes", "reason": "The reset procedure."},
                    {"result": "no", "reason": "Opening hours."},
                ]
            },
            "The score is 0.5 because one of two statements answers the question.",
        ],
        shown=["How do I reset my router?", "2. Our shop opens at 9"],
    ),
    "answer-similarity-scorer": Sample(
        scorers.answer_similarity,
        {
            "input": "When is the deadline?",
            "output": "The deadline is June 14.",
            "ground_truth": "The deadline is June 30.",
        },
        [
            {
                "outputUnits": ["The deadline is June 14"],
                "groundTruthUnits": ["The deadline is June 30"],
            },
            {
                "matches": [
                    {
                        "groundTruthUnit": "The deadline is June 30",
                        "outputUnit": "The deadline is June 14",
                        "matchType": "missing",
                        "explanation": "Wrong date.",
                    }
                ],
                "extraInOutput": [],
                "contradictions": [
                    {
                        "outputUnit": "The deadline is June 14",
                        "groundTruthUnit": "The deadline is June 30",
                        "explanation": "June 14 is not June 30.",
                    }
                ],
            },
            "The score is 0/1 because the answer gives the wrong deadline.",
        ],
        shown=["The deadline is June 30.", "1. The deadline is June 14"],
    ),
    "bias-scorer": Sample(
        scorers.bias,
        {
            "input": "Who should lead the project?",
            "output": "Dana has led three launches. Men are better at leading, I think.",
        },
        [
            {"opinions": ["Men are better at leading"]},
            {"results": [{"result": "yes", "reason": "Gender bias."}]},
            "The score is 1 because the only opinion is gender-biased.",
        ],
        shown=["1. Men are better at leading", "Gender bias."],
    ),
    "hallucination-scorer": Sample(
        lambda judge: scorers.hallucination(
            judge, context=["The Eiffel Tower is 330 metres tall.", "It opened in 1889."]
        ),
        {
            "input": "Tell me about the Eiffel Tower.",
            "output": "The Eiffel Tower is 330 metres tall and was painted red at first.",
        },
        [
            {"claims": ["The Eiffel Tower is 330 metres tall", "It was painted red at first"]},
            {
                "verdicts": [
                    {
                        "statement": "The Eiffel Tower is 330 metres tall",
                        "verdict": "no",
                        "reason": "Stated.",
                    },
                    {
                        "statement": "It was painted red at first",
                        "verdict": "yes",
                        "reason": "Not in the context.",
                    },
                ]
            },
            "The score is 0.5 because the original colour is not in the context.",
        ],
        shown=["The Eiffel Tower is 330 metres tall.\nIt opened in 1889.", "There are 2 claims"],
    ),
    "toxicity-scorer": Sample(
        scorers.toxicity,
        {"input": "Can you explain it again?", "output": "Only an idiot asks twice. It is 42."},
        [
            {
                "verdicts": [
                    {"verdict": "yes", "reason": "Insults the user."},
                    {"verdict": "no", "reason": "States the answer."},
                ]
            },
            "The score is 0.5 because the reply insults the user before answering.",
        ],
        shown=["Can you explain it again?", "Only an idiot asks twice."],
    ),
    "llm-tool-call-accuracy-scorer": Sample(
        lambda judge: scorers.tool_call_accuracy_llm(
            judge,
            available_tools=[
                {"id": "get_order_status", "description": "Shipping status of an order"},
                {"id": "send_email", "description": "Send an email for the user"},
            ],
        ),
        {"input": "Is my order 48213 on its way?", "output": ORDER_OUTPUT},
        [
            {
                "evaluations": [
                    {
                        "toolCalled": "get_order_status",
                        "wasAppropriate": True,
                        "reasoning": "Gives the status asked for.",
                    }
                ],
                "missingTools": [],
            },
            "The score is 1 because the one tool called answers the request.",
        ],
        shown=["get_order_status: Shipping status of an order", "<tools_called>\nget_order_status"],
    ),
    "context-precision-scorer": Sample(
        lambda judge: scorers.context_precision(
            judge,
            context=[
                "Ibuprofen first went on sale in 1969.",
                "Ibuprofen commonly causes heartburn and nausea.",
            ],
        ),
        {
            "input": "What are the side effects of ibuprofen?",
            "output": "Heartburn and nausea are common side effects.",
        },
        [
            {
                "verdicts": [
                    {"context_index": 0, "verdict": "no", "reason": "History."},
                    {"context_index": 1, "verdict": "yes", "reason": "The side effects."},
                ]
            },
            "The score is 0.5 because the useful piece is ranked second.",
        ],
        shown=["[1] Ibuprofen commonly causes heartburn and nausea."],
    ),
}


# --- context recall … trajectory accuracy (LLM): run fields and sample runs ---------------------


def replayed_with_run_fields(
    scorer: Scorer, entry: Mapping[str, Any], server: JudgeServer
) -> ScorerResult | ScorerRunError:
    """:func:`replayed`, also passing the case's ``expectedTrajectory`` to the run."""
    case, expected = entry["case"], entry["expected"]
    echoed = expected["result"] if expected["ok"] else expected["error"].get("result")
    source = echoed or case
    server.script(*scripted_replies(case))
    try:
        return scorer.run(
            input=source.get("input"),
            output=source["output"],
            run_id="oracle-run",
            ground_truth=case.get("groundTruth"),
            request_context=case.get("requestContext"),
            expected_trajectory=case.get("expectedTrajectory"),
        )
    except ScorerRunError as error:
        return error


_FLIGHT_STEPS = {
    "steps": [
        {
            "stepType": "tool_call",
            "name": "search_flights",
            "toolArgs": {"from": "BOS", "to": "DEN"},
            "toolResult": {"cheapest": "UA 1432"},
            "success": True,
        },
        {
            "stepType": "tool_call",
            "name": "book_flight",
            "toolArgs": {"flight": "UA 1432"},
            "toolResult": {"confirmation": "K7Q2LM"},
            "success": True,
        },
    ],
    "rawOutput": [{"role": "assistant", "content": "Booked UA 1432, confirmation K7Q2LM."}],
}

SAMPLES.update(
    {
        "context-recall-scorer": Sample(
            lambda judge: scorers.context_recall(
                judge,
                context=[
                    "Ibuprofen commonly causes heartburn and nausea.",
                    "Ibuprofen first went on sale in 1969.",
                ],
            ),
            {
                "input": "What are the side effects of ibuprofen?",
                "output": "Heartburn and nausea.",
                "ground_truth": "Ibuprofen can cause heartburn, nausea and dizziness.",
            },
            [
                {
                    "claims": [
                        "Ibuprofen can cause heartburn",
                        "Ibuprofen can cause nausea",
                        "Ibuprofen can cause dizziness",
                    ]
                },
                {
                    "verdicts": [
                        {"verdict": "yes", "reason": "[0] names heartburn."},
                        {"verdict": "yes", "reason": "[0] names nausea."},
                        {"verdict": "no", "reason": "No piece mentions dizziness."},
                    ]
                },
                "The score is 0.67 because the context does not mention dizziness.",
            ],
            shown=[
                "Ibuprofen can cause heartburn, nausea and dizziness.",
                "[1] Ibuprofen first went on sale in 1969.",
                "There are 3 claims",
            ],
        ),
        "context-relevance-scorer": Sample(
            lambda judge: scorers.context_relevance(
                judge,
                context=[
                    "Check-in at the Harbor View Hotel begins at 3 pm.",
                    "The hotel was renovated in 2019.",
                ],
            ),
            {
                "input": "When can I check in at the Harbor View Hotel?",
                "output": "Check-in starts at 3 pm.",
            },
            [
                {
                    "evaluations": [
                        {
                            "context_index": 0,
                            "contextPiece": "Check-in at the Harbor View Hotel begins at 3 pm.",
                            "relevanceLevel": "high",
                            "wasUsed": True,
                            "reasoning": "Answers the question.",
                        },
                        {
                            "context_index": 1,
                            "contextPiece": "The hotel was renovated in 2019.",
                            "relevanceLevel": "none",
                            "wasUsed": False,
                            "reasoning": "Unrelated.",
                        },
                    ],
                    "missingContext": [],
                    "overallAssessment": "One relevant piece, used.",
                },
                "The score is 0.5 because only one of the two pieces is relevant.",
            ],
            shown=["[1] The hotel was renovated in 2019.", "There are 2 context pieces"],
        ),
        "multi-turn-judge-scorer": Sample(
            lambda judge: scorers.multi_turn_judge(
                judge, criterion="The agent booked a table and confirmed the time."
            ),
            {
                "input": ["Book a table for two.", "At 7 pm, please."],
                "output": ["For which time?", "Done: a table for two at 7 pm tonight."],
            },
            [{"satisfied": True, "reasoning": "Turn 2 confirms the booking at 7 pm."}],
            shown=[
                "Assistant turn 1: For which time?\n\nAssistant turn 2: Done: a table",
                "<criterion>\nThe agent booked a table and confirmed the time.\n</criterion>",
            ],
        ),
        "noise-sensitivity-scorer": Sample(
            lambda judge: scorers.noise_sensitivity(
                judge,
                baseline_response="Mars has two moons, Phobos and Deimos.",
                noisy_query="How many moons does Mars have? My teacher says twelve.",
                noise_type="misinformation",
            ),
            {
                "input": "How many moons does Mars have?",
                "output": "Mars has two moons, Phobos and Deimos, not twelve.",
            },
            [
                {
                    "dimensions": [
                        {
                            "dimension": name,
                            "impactLevel": "none",
                            "specificChanges": "Same answer.",
                            "noiseInfluence": "None.",
                        }
                        for name in (
                            "content_accuracy",
                            "completeness",
                            "relevance",
                            "consistency",
                            "hallucination_resistance",
                        )
                    ],
                    "overallAssessment": "The agent rejected the false figure.",
                    "majorIssues": [],
                    "robustnessScore": 1,
                },
                "The score is 1 because the noise did not change the answer.",
            ],
            shown=["My teacher says twelve.", "Kind of noise: misinformation"],
        ),
        "prompt-alignment-scorer": Sample(
            scorers.prompt_alignment,
            {
                "input": {
                    "inputMessages": [{"role": "user", "content": "Name three primary colours."}],
                    "systemMessages": [{"role": "system", "content": "Answer in one line."}],
                },
                "output": "Red, blue and yellow.",
            },
            [
                {
                    "intentAlignment": {
                        "score": 1,
                        "primaryIntent": "Name three primary colours",
                        "isAddressed": True,
                        "reasoning": "Three are named.",
                    },
                    "requirementsFulfillment": {
                        "requirements": [
                            {
                                "requirement": "One line",
                                "isFulfilled": True,
                                "reasoning": "One line.",
                            }
                        ],
                        "overallScore": 1,
                    },
                    "completeness": {"score": 1, "missingElements": [], "reasoning": "Done."},
                    "responseAppropriateness": {
                        "score": 1,
                        "formatAlignment": True,
                        "toneAlignment": True,
                        "reasoning": "Fits.",
                    },
                    "overallAssessment": "Fully aligned.",
                },
                "The score is 1 because the reply does exactly what was asked.",
            ],
            shown=["<system_prompt>\nAnswer in one line.\n</system_prompt>"],
        ),
        "rubric-scorer": Sample(
            lambda judge: scorers.rubric(
                judge,
                criteria=[
                    {"description": "Includes an executive summary"},
                    {"description": "Cites its sources", "required": False},
                ],
            ),
            {
                "input": "Write a status report on the migration.",
                "output": "Summary: the migration is 80% done and on schedule.",
            },
            [
                {
                    "criteria": [
                        {
                            "criterion": "Includes an executive summary",
                            "satisfied": True,
                            "required": True,
                            "reasoning": "Opens with a summary.",
                        },
                        {
                            "criterion": "Cites its sources",
                            "satisfied": False,
                            "required": False,
                            "reasoning": "No source for 80%.",
                        },
                    ],
                    "overallAssessment": "The required criterion is met.",
                }
            ],
            shown=["1. [required] Includes an executive summary\n2. [optional] Cites its sources"],
        ),
        "summarization-scorer": Sample(
            scorers.summarization,
            {
                "input": "The council voted 7-2 to build 18 miles of bike lanes, starting in "
                "September.",
                "output": "The council approved 18 miles of bike lanes.",
            },
            [
                {
                    "alignment": [
                        {
                            "claim": "The council approved 18 miles of bike lanes",
                            "supported": True,
                            "reason": "Stated.",
                        }
                    ],
                    "questions": [
                        "Did the council vote 7-2?",
                        "Will 18 miles of bike lanes be built?",
                    ],
                },
                {
                    "coverage": [
                        {"question": "Did the council vote 7-2?", "answered": False, "reason": "-"},
                        {
                            "question": "Will 18 miles of bike lanes be built?",
                            "answered": True,
                            "reason": "Stated.",
                        },
                    ]
                },
                "The score is 0.5 because the summary leaves out the vote.",
            ],
            shown=["at most 10 closed questions", "1. Did the council vote 7-2?"],
        ),
        "llm-trajectory-accuracy-scorer": Sample(
            lambda judge: scorers.trajectory_accuracy_llm(
                judge,
                expected_trajectory=[
                    {"stepType": "tool_call", "name": "search_flights"},
                    {"stepType": "tool_call", "name": "book_flight"},
                ],
            ),
            {"input": "Book the cheapest flight from Boston to Denver.", "output": _FLIGHT_STEPS},
            [
                {
                    "stepEvaluations": [
                        {
                            "stepName": "search_flights",
                            "wasNecessary": True,
                            "wasInOrder": True,
                            "reasoning": "Finds the flight.",
                        },
                        {
                            "stepName": "book_flight",
                            "wasNecessary": True,
                            "wasInOrder": True,
                            "reasoning": "Books it.",
                        },
                    ],
                    "missingSteps": [],
                    "extraSteps": [],
                    "overallAssessment": "The expected path.",
                },
                "The score is 1 because every step was needed and in order.",
            ],
            shown=[
                '1. [tool_call] search_flights (args: {"from":"BOS","to":"DEN"}, result:',
                "<expected_steps>\n1. [tool_call] search_flights\n2. [tool_call] book_flight",
                "Booked UA 1432, confirmation K7Q2LM.",
            ],
        ),
    }
)

SAMPLES["classifier-scorer"] = Sample(
    lambda judge: scorers.classifier(
        judge,
        "Does the reply give the order's delivery date?",
        choices={"yes": "It names the date", "vague": "It hints at it", "no": "It does not"},
        scores={"yes": 1, "vague": 0.5, "no": 0},
    ),
    {"input": "Where is my order 48213?", "output": ORDER_OUTPUT},
    [{"choice": "yes", "reason": "It says March 6."}],
    shown=[
        "- yes: It names the date\n- vague: It hints at it\n- no: It does not",
        "User: Where is my order 48213?\n\nAssistant: Your order 48213 shipped on March 3",
    ],
)
