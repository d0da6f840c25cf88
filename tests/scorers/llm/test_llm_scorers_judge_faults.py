"""Every prebuilt LLM scorer when its judge fails or answers badly, through the loopback server.

Each scorer runs on its sample run (``llm_scorer_cases.SAMPLES``); the first judged step gets
a refusal, two unusable replies, or one unusable reply before a good one.
"""

from __future__ import annotations

import inspect
import json

import pytest
from judge_server import Reply, refused
from llm_scorer_cases import SAMPLES

from evaldag import EvalDagError, ScorerRun, ScorerRunError, scorers
from evaldag.scorers.llm._shared import MODEL_PARAMETER, tool_result_context

SCORERS = sorted(SAMPLES)


def _first_judged_step(scorer):
    return next(step.stage for step in scorer.steps if step.kind == "prompt")


def _completed_before(scorer, stage):
    """The stages of the steps before the first judged one (a scorer may check a run's
    context in a preprocess function step before its judged preprocess step)."""
    stages = [step.stage for step in scorer.steps]
    first_judged = next(i for i, step in enumerate(scorer.steps) if step.kind == "prompt")
    assert stages[first_judged] == stage
    return stages[:first_judged]


@pytest.mark.parametrize("scorer_id", SCORERS)
def test_a_refused_call_is_a_scorer_run_error_with_the_failed_execution(judge_server, scorer_id):
    sample = SAMPLES[scorer_id]
    judge_server.script(refused(401))
    scorer = sample.scorer(judge_server.judge())
    with pytest.raises(ScorerRunError) as raised:
        scorer.run(**sample.run, run_id="faulty")

    error = raised.value
    stage = _first_judged_step(scorer)
    assert error.failed_step == stage
    assert error.completed_steps == _completed_before(scorer, stage)
    assert error.details["scorerId"] == scorer_id
    assert error.cause.id == "EVALDAG_JUDGE_REFUSED"
    snapshot = error.result
    assert snapshot.run_id == "faulty"
    (execution,) = snapshot.judge[stage].executions
    assert (execution.status, execution.attempt_count, execution.model_call_count) == (
        "failed",
        1,
        0,
    )
    assert execution.error.code == "EVALDAG_JUDGE_REFUSED"
    assert execution.prompt == judge_server.requests[0].prompt
    assert snapshot.score is None and snapshot.reason is None
    assert len(judge_server.requests) == 1


@pytest.mark.parametrize("scorer_id", SCORERS)
def test_two_unusable_replies_fail_the_step_after_the_fallback(judge_server, scorer_id):
    sample = SAMPLES[scorer_id]
    judge_server.script("I think the answer is fine.", '{"almost": "json"')
    scorer = sample.scorer(judge_server.judge())
    with pytest.raises(ScorerRunError) as raised:
        scorer.run(**sample.run)

    stage = _first_judged_step(scorer)
    assert raised.value.failed_step == stage
    (execution,) = raised.value.result.judge[stage].executions
    assert execution.status == "failed"
    assert (execution.attempt_count, execution.model_call_count) == (2, 2)
    assert execution.usage.total_tokens == 30
    assert execution.raw_output == '{"almost": "json"'
    assert execution.error.code in {
        "STRUCTURED_OUTPUT_OBJECT_UNDEFINED",
        "STRUCTURED_OUTPUT_SCHEMA_VALIDATION_FAILED",
    }
    first, second = judge_server.requests
    assert first.response_format is not None and second.response_format is None
    assert "JSON Schema" in second.system


@pytest.mark.parametrize("scorer_id", SCORERS)
def test_replies_cut_off_at_max_tokens_fail_the_step(judge_server, scorer_id):
    # Before: the first list items of a cut-off reply were scored as the whole judgment
    # (hallucination 0.5 became 0 with its second claim cut off).
    sample = SAMPLES[scorer_id]
    first = json.dumps(sample.replies[0])
    cut = Reply(first[: len(first) * 2 // 3], finish_reason="length")
    judge_server.script(cut, cut, *sample.replies[1:])
    scorer = sample.scorer(judge_server.judge())
    with pytest.raises(ScorerRunError) as raised:
        scorer.run(**sample.run)

    assert raised.value.failed_step == _first_judged_step(scorer)
    assert raised.value.cause.id == "STRUCTURED_OUTPUT_TRUNCATED"
    assert "Judge(max_tokens=...)" in raised.value.cause.message


def _with_verdicts(reply, said):
    """``reply`` with each verdict's answer (``verdict`` or ``result``) replaced by ``said``."""
    if not isinstance(reply, dict):
        return None
    for key, listed in reply.items():
        if isinstance(listed, list) and listed and isinstance(listed[0], dict):
            field = next((f for f in ("verdict", "result") if f in listed[0]), None)
            if field is not None:
                return {**reply, key: [{**item, field: said} for item in listed]}
    return None


VERDICT_SCORERS = [
    scorer_id
    for scorer_id, sample in SAMPLES.items()
    if any(_with_verdicts(reply, "yes") for reply in sample.replies)
]


@pytest.mark.parametrize("scorer_id", VERDICT_SCORERS)
@pytest.mark.parametrize("said", ["partially", "sí", "", "yes - mostly"])
def test_a_verdict_outside_the_scorers_words_fails_the_item(judge_server, scorer_id, said):
    # Before: any other answer counted as a verdict that is not yes: 'partially' on every
    # claim scored hallucination, bias and toxicity 0 (none found) and faithfulness 0.
    sample = SAMPLES[scorer_id]
    index = next(i for i, reply in enumerate(sample.replies) if _with_verdicts(reply, said))
    unread = _with_verdicts(sample.replies[index], said)
    judge_server.script(*sample.replies[:index], unread, unread, *sample.replies[index + 1 :])
    scorer = sample.scorer(judge_server.judge())
    with pytest.raises(ScorerRunError) as raised:
        scorer.run(**sample.run)

    assert raised.value.failed_step == "analyze"
    cause = raised.value.cause
    assert cause.id == "STRUCTURED_OUTPUT_SCHEMA_VALIDATION_FAILED"
    assert f"{said!r} is not one of yes, " in cause.message


@pytest.mark.parametrize("scorer_id", VERDICT_SCORERS)
def test_verdicts_are_read_with_a_full_stop_and_any_case(judge_server, scorer_id):
    sample = SAMPLES[scorer_id]
    index = next(i for i, reply in enumerate(sample.replies) if _with_verdicts(reply, "yes"))
    replies = list(sample.replies)
    judge_server.script(
        *replies[:index], _with_verdicts(replies[index], "yes"), *replies[index + 1 :]
    )
    clean = sample.scorer(judge_server.judge()).run(**sample.run)
    judge_server.reset()

    replies[index] = _with_verdicts(replies[index], " Yes. ")
    judge_server.script(*replies)
    assert sample.scorer(judge_server.judge()).run(**sample.run).score == clean.score


@pytest.mark.parametrize("scorer_id", SCORERS)
def test_an_unusable_reply_then_a_good_one_recovers(judge_server, scorer_id):
    sample = SAMPLES[scorer_id]
    judge_server.script(*sample.replies)
    clean = sample.scorer(judge_server.judge()).run(**sample.run)
    judge_server.reset()

    judge_server.script("Sure! Here is my analysis: it looks good.", *sample.replies)
    scorer = sample.scorer(judge_server.judge())
    result = scorer.run(**sample.run)

    assert result.score == clean.score
    assert result.reason == clean.reason
    assert result.analyze_step_result == clean.analyze_step_result
    (execution,) = result.judge[_first_judged_step(scorer)].executions
    assert (execution.status, execution.attempt_count, execution.model_call_count) == (
        "success",
        2,
        2,
    )
    assert execution.usage.input_tokens == 20


FACTORIES = {
    "answer_relevancy": scorers.answer_relevancy,
    "answer_similarity": scorers.answer_similarity,
    "bias": scorers.bias,
    "context_precision": lambda model, **options: scorers.context_precision(
        model, context=["c"], **options
    ),
    "faithfulness": scorers.faithfulness,
    "hallucination": scorers.hallucination,
    "toxicity": scorers.toxicity,
}


@pytest.mark.parametrize("name", sorted(FACTORIES))
@pytest.mark.parametrize("scale", [0, -1, float("inf"), "2", True])
def test_scale_must_be_a_number_above_zero(name, scale):
    with pytest.raises(EvalDagError) as raised:
        FACTORIES[name]("openai/gpt-4o-mini", scale=scale)
    assert f"scale of {name}(...)" in raised.value.message


@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_a_model_is_required(name):
    with pytest.raises(EvalDagError) as raised:
        FACTORIES[name](None)
    assert raised.value.id == "EVALDAG_MISSING_MODEL"
    assert "needs a judge model" in raised.value.message


def test_tool_call_accuracy_llm_requires_a_model():
    with pytest.raises(EvalDagError) as raised:
        scorers.tool_call_accuracy_llm("", available_tools=[])
    assert "model of tool_call_accuracy_llm(...)" in raised.value.message


@pytest.mark.parametrize("name", scorers.llm.__all__)
def test_every_llm_scorer_lists_the_shared_model_paragraph_first(name):
    doc = inspect.getdoc(getattr(scorers.llm, name))
    first = doc[doc.index(":param ") :]
    assert first.startswith(MODEL_PARAMETER + "\n"), name
    assert doc.count(":param model:") == 1


#: Each scorer judging what a run holds, with a fixed context where it needs one (without it,
#: a run whose output holds no tool results is not scorable before anything is read).
_JUDGING = {
    **FACTORIES,
    "faithfulness": lambda model: scorers.faithfulness(model, context=["Paris is the capital."]),
    "hallucination": lambda model: scorers.hallucination(model, context=["Paris is the capital."]),
}


@pytest.mark.parametrize("name", sorted(_JUDGING))
@pytest.mark.parametrize(
    ("field", "output"),
    [
        ("run.output", {"answer": "Paris", "confidence": 0.9}),
        ("run.output", 42),
        ("run.output.rawOutput", {"steps": [], "rawOutput": {"x": 1}}),
    ],
)
def test_an_output_no_reader_takes_fails_the_run_before_any_judge_call(
    judge_server, name, field, output
):
    # Mastra reads such a value as empty text and asks its judge about nothing.
    scorer = _JUDGING[name](judge_server.judge())
    with pytest.raises(ScorerRunError) as raised:
        scorer.run(input="What is the capital?", output=output, ground_truth="Paris")
    assert f"{field} must be a string, a message or a list of messages" in raised.value.message
    assert judge_server.requests == []


def test_an_input_no_reader_takes_fails_the_run_not_an_empty_question(judge_server):
    judge_server.on("", {"statements": ["Paris."]})
    with pytest.raises(ScorerRunError) as raised:
        scorers.answer_relevancy(judge_server.judge()).run(
            input={"question": "What is the capital?"}, output="Paris."
        )
    assert "run.input must be a string, a message, a list of messages" in raised.value.message
    assert "got a dict with keys ['question']" in raised.value.message


def test_a_trajectorys_text_is_read_from_its_raw_output(judge_server):
    judge_server.on("", {"statements": ["Paris."]})
    trajectory = {
        "steps": [{"stepType": "tool_call", "name": "lookup"}],
        "rawOutput": [{"role": "assistant", "content": "Paris."}],
    }
    with pytest.raises(ScorerRunError):  # the scripted reply does not fit the verdicts' schema
        scorers.answer_relevancy(judge_server.judge()).run(input="Capital?", output=trajectory)
    assert "Paris." in str(judge_server.requests[0])


@pytest.mark.parametrize("factory", [scorers.faithfulness, scorers.hallucination])
@pytest.mark.parametrize(
    ("field", "output"),
    [
        ("run.output", {"answer": "Paris", "sources": [{"id": 1}]}),
        ("run.output.rawOutput", {"steps": [], "rawOutput": {"answer": "Paris"}}),
    ],
)
def test_tool_results_are_not_looked_for_in_an_output_no_reader_takes(
    judge_server, factory, field, output
):
    # Without context=, the context is the output's tool results: such an output was "not
    # scorable: no tool results", where nothing in it was read.
    with pytest.raises(ScorerRunError) as raised:
        factory(judge_server.judge()).run(input="Capital?", output=output)
    assert f"{field} must be a string, a message or a list of messages" in raised.value.message
    assert judge_server.requests == []


def test_a_trajectorys_tool_results_are_read_from_its_raw_output():
    messages = [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "c1", "function": {"name": "capital", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "Paris"},
    ]
    run = ScorerRun(input="Capital?", output={"steps": [], "rawOutput": messages})
    assert tool_result_context(run.output) == tool_result_context(ScorerRun(output=messages).output)
    assert tool_result_context(run.output) == ['"Paris"']
