"""The scorer builder and scorer.run: every rule of spec §2–§4, and our deviations."""

import asyncio
import math
import pickle
import subprocess
import sys
import uuid

import pandas as pd
import pytest

from evaldag import (
    EvalDagError,
    PromptStep,
    ScorerRun,
    ScorerRunError,
    create_scorer,
    is_not_scorable,
    not_scorable,
)
from evaldag._graph.drivers import scorer_outcomes, scorers_driver


def constant(value):
    return lambda: value


def raising(message):
    def step():
        raise ValueError(message)

    return step


# --- create_scorer -------------------------------------------------------------------------


@pytest.mark.parametrize("bad_id", [None, "", 0])
def test_missing_id_is_an_error(bad_id):
    with pytest.raises(EvalDagError) as raised:
        create_scorer(bad_id)
    assert raised.value.id == "MASTR_SCORER_FAILED_TO_CREATE_MISSING_ID"
    assert (raised.value.domain, raised.value.category) == ("SCORER", "USER")


def test_name_defaults_to_id():
    assert create_scorer("s").name == "s"
    assert create_scorer("s", name="Nice").name == "Nice"


def test_builder_returns_new_immutable_scorers():
    base = create_scorer("s").preprocess(constant(1))
    a = base.generate_score(constant(0.1))
    b = base.generate_score(constant(0.9))
    assert [s.stage for s in base.steps] == ["preprocess"]
    assert a.run(output="x").score == 0.1
    assert b.run(output="x").score == 0.9
    with pytest.raises(AttributeError):
        a.id = "other"


# --- steps and their parameters ------------------------------------------------------------


def test_steps_run_in_call_order_and_see_earlier_results():
    seen = {}

    def preprocess(results):
        seen["preprocess"] = dict(results)
        return "p"

    scorer = create_scorer("s").generate_score(constant(0.5)).preprocess(preprocess)
    result = scorer.run(output="x")
    assert seen["preprocess"] == {"generate_score_step_result": 0.5}
    assert result.preprocess_step_result == "p"
    assert result.score == 0.5


def test_injected_values():
    def generate_reason(run, results, preprocess_step_result, analyze_step_result, score):
        return (run.output, sorted(results), preprocess_step_result, analyze_step_result, score)

    scorer = (
        create_scorer("s")
        .preprocess(lambda run: run.input.upper())
        .analyze(lambda preprocess_step_result: preprocess_step_result + "!")
        .generate_score(lambda analyze_step_result: len(analyze_step_result) / 10)
        .generate_reason(generate_reason)
    )
    result = scorer.run(input="hey", output="out")
    assert result.reason == (
        "out",
        ["analyze_step_result", "generate_score_step_result", "preprocess_step_result"],
        "HEY",
        "HEY!",
        0.4,
    )


def test_repeated_stage_overwrites_result_and_gets_numbered_node():
    scorer = (
        create_scorer("rep")
        .analyze(constant(1))
        .analyze(lambda analyze_step_result: analyze_step_result + 1)
        .generate_score(lambda analyze_step_result: analyze_step_result / 10)
    )
    assert [s.node_name for s in scorer.steps] == ["analyze", "analyze_2", "generate_score"]
    result = scorer.run(output="x")
    assert (result.analyze_step_result, result.score) == (2, 0.2)


def test_unknown_parameter_is_an_error_when_added():
    with pytest.raises(EvalDagError) as raised:
        create_scorer("s").analyze(lambda run, outputs: 1)
    message = str(raised.value)
    assert "'outputs'" in message and "preprocess_step_result" in message
    assert raised.value.details["parameter"] == "outputs"


@pytest.mark.parametrize("step", [lambda *args: 1, lambda **kwargs: 1, "not callable"])
def test_steps_must_take_named_parameters(step):
    with pytest.raises(EvalDagError):
        create_scorer("s").preprocess(step)


def test_prompt_step_create_prompt_parameters_are_checked():
    with pytest.raises(EvalDagError, match="'context'"):
        PromptStep("judge it", lambda run, context: "prompt")
    with pytest.raises(EvalDagError, match="description"):
        PromptStep("", lambda run: "prompt")


def test_async_and_sync_steps_mix():
    async def analyze(preprocess_step_result):
        await asyncio.sleep(0)
        return preprocess_step_result * 2

    async def generate_score(analyze_step_result):
        return analyze_step_result / 10

    scorer = create_scorer("s").preprocess(constant(2)).analyze(analyze)
    result = scorer.generate_score(generate_score).run(output="x")
    assert (result.analyze_step_result, result.score) == (4, 0.4)


def test_get_steps():
    scorer = (
        create_scorer("s")
        .preprocess(constant(1))
        .analyze(PromptStep("Extract claims", lambda run: "p"))
        .generate_score(constant(1))
    )
    assert scorer.get_steps() == [
        {"name": "preprocess", "type": "function", "description": None},
        {"name": "analyze", "type": "prompt", "description": "Extract claims"},
        {"name": "generate_score", "type": "function", "description": None},
    ]


# --- not scorable --------------------------------------------------------------------------


def test_not_scorable_stops_the_pipeline():
    calls = []

    def later():
        calls.append("later")
        return 1

    scorer = (
        create_scorer("ns")
        .preprocess(constant({"kept": True}))
        .analyze(lambda: not_scorable("no tool calls"))
        .generate_score(later)
    )
    result = scorer.run(output="x")
    assert calls == []
    assert result.score is None
    assert (result.not_scorable.step, result.not_scorable.reason) == ("analyze", "no tool calls")
    assert result.preprocess_step_result == {"kept": True}
    assert result.analyze_step_result is None
    data = result.to_dict()
    assert "score" not in data
    assert data["notScorable"] == {"step": "analyze", "reason": "no tool calls"}


def test_not_scorable_helpers():
    assert is_not_scorable(not_scorable())
    assert not_scorable().reason is None
    assert not is_not_scorable(None) and not is_not_scorable({"reason": "x"})


def test_not_scorable_from_generate_score_names_the_step():
    result = create_scorer("s").generate_score(lambda: not_scorable("empty")).run(output="")
    assert result.not_scorable.to_dict() == {"step": "generateScore", "reason": "empty"}


# --- missing generate_score ------------------------------------------------------------------


def test_missing_generate_score_fails_before_anything_runs():
    prepared = []
    scorer = create_scorer("s", prepare_run=lambda run: prepared.append(run) or run).preprocess(
        constant(1)
    )
    with pytest.raises(EvalDagError) as raised:
        scorer.run(output="x")
    assert raised.value.id == "MASTR_SCORER_FAILED_TO_RUN_MISSING_GENERATE_SCORE"
    assert raised.value.details == {"scorerId": "s", "steps": "preprocess"}
    assert prepared == []


# --- score validation ------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -math.inf, "abc", None, True, [1]])
def test_invalid_scores_fail_generate_score(bad):
    scorer = create_scorer("s").preprocess(constant(1)).generate_score(constant(bad))
    with pytest.raises(ScorerRunError) as raised:
        scorer.run(output="x")
    error = raised.value
    assert error.failed_step == "generate_score"
    assert error.completed_steps == ["preprocess"]
    assert repr(bad) in error.message
    assert error.cause.id == "EVALDAG_INVALID_SCORE"
    assert error.result.preprocess_step_result == 1


@pytest.mark.parametrize(
    ("max_score", "good"), [(1, 0), (1, 1), (1, 0.25), (10, 7), (10, 10.0), (10, 0)]
)
def test_numbers_on_the_scale_are_scores(max_score, good):
    scorer = create_scorer("s", max_score=max_score).generate_score(constant(good))
    assert scorer.run(output="x").score == good


@pytest.mark.parametrize(
    ("max_score", "bad", "told"),
    [
        (1, 7.0, "generate_score returned 7.0; scores of 's' lie in [0, 1] (max_score=1)"),
        (1, 7.0, "(max_score=1): scale the score into it, or set max_score=10 if that is the"),
        (1, 1.5, "returned 1.5; scores of 's' lie in [0, 1] (max_score=1)"),
        (10, 70, "returned 70.0; scores of 's' lie in [0, 10] (max_score=10): scale the score"),
        (10, 70, "scale the score into it, or set max_score=100 if that is the scorer's scale"),
        (1, -3.0, "generate_score returned -3.0; scores of 's' lie in [0, 1] (max_score=1)"),
        (1, -3.0, "(max_score=1): map the score into it (for a measure where lower is better"),
        (10, -3, "returned -3.0; scores of 's' lie in [0, 10] (max_score=10)"),
        (1, math.nan, "returned nan, which is not a finite number; scores of 's' lie in [0, 1]"),
        (10, math.inf, "returned inf, which is not a finite number; scores of 's' lie in [0, 10]"),
        (1, -math.inf, "returned -inf, which is not a finite number"),
        (1, True, "returned True (bool), which is not a number; scores of 's' lie in [0, 1]"),
        (10, True, "returned True (bool), which is not a number; scores of 's' lie in [0, 10]"),
        (1, "0.5", "returned '0.5' (str), which is not a number"),
    ],
)
def test_a_score_off_the_scale_fails_generate_score(max_score, bad, told):
    scorer = create_scorer("s", max_score=max_score).preprocess(constant(1))
    with pytest.raises(ScorerRunError) as raised:
        scorer.generate_score(constant(bad)).run(output="x")
    error = raised.value
    assert told in error.message
    assert error.failed_step == "generate_score"
    assert error.cause.id == "EVALDAG_INVALID_SCORE"
    assert error.cause.details["scorerId"] == "s"
    assert error.cause.details["maxScore"] == max_score
    assert error.result.preprocess_step_result == 1 and error.result.score is None


@pytest.mark.parametrize("noise", [1 + 2e-16, -1e-17])
def test_float_noise_at_a_bound_is_the_bound(noise):
    score = create_scorer("s").generate_score(constant(noise)).run(output="x").score
    assert score == round(noise)


def test_an_async_step_and_a_numpy_score_are_checked_alike():
    import numpy as np

    async def seven():
        return np.float64(7.0)

    with pytest.raises(ScorerRunError, match=r"returned 7\.0; scores of 's' lie in \[0, 1\]"):
        create_scorer("s").generate_score(seven).run(output="x")
    assert create_scorer("s").generate_score(constant(np.float32(0.5))).run(output="x").score == 0.5


# --- errors and snapshots (spec §4) ----------------------------------------------------------


def test_first_step_failure_has_no_snapshot():
    scorer = create_scorer("s").preprocess(raising("pre")).generate_score(constant(1))
    with pytest.raises(ScorerRunError) as raised:
        scorer.run(output="x")
    error = raised.value
    assert (error.failed_step, error.completed_steps, error.result) == ("preprocess", [], None)
    assert error.message == "Scorer Run Failed: pre"
    assert isinstance(error.cause, ValueError)


def test_snapshot_keeps_completed_results():
    scorer = (
        create_scorer("s")
        .preprocess(constant({"p": 1}))
        .analyze(raising("boom"))
        .generate_score(constant(1))
    )
    with pytest.raises(ScorerRunError) as raised:
        scorer.run(output="x", run_id="r1")
    error = raised.value
    assert error.completed_steps == ["preprocess"]
    assert error.result.to_dict() == {
        "output": "x",
        "runId": "r1",
        "preprocessStepResult": {"p": 1},
    }
    assert error.details == {
        "scorerId": "s",
        "steps": "preprocess, analyze, generateScore",
        "failedStep": "analyze",
        "completedSteps": "preprocess",
    }


def test_reason_failure_snapshot_includes_score():
    scorer = (
        create_scorer("s")
        .preprocess(constant(1))
        .analyze(constant(2))
        .generate_score(constant(0.3))
        .generate_reason(raising("reason"))
    )
    with pytest.raises(ScorerRunError) as raised:
        scorer.run(output="x")
    assert raised.value.completed_steps == ["preprocess", "analyze", "generate_score"]
    assert raised.value.result.score == 0.3


def test_create_prompt_failure_snapshot_has_no_judge_entry():
    def broken_prompt(run):
        raise KeyError("template")

    scorer = (
        create_scorer("s", judge="openai/unused")
        .preprocess(constant(1))
        .analyze(PromptStep("analyze it", broken_prompt, output_schema={"type": "object"}))
        .generate_score(constant(1))
    )
    with pytest.raises(ScorerRunError) as raised:
        scorer.run(output="x")
    error = raised.value
    assert error.failed_step == "analyze"
    assert error.result.preprocess_step_result == 1
    assert error.result.judge is None


def test_undefined_results_give_no_snapshot():
    scorer = create_scorer("s").preprocess(constant(None)).generate_score(raising("x"))
    with pytest.raises(ScorerRunError) as raised:
        scorer.run(output="x")
    assert raised.value.result is None


def test_error_to_dict_leaves_out_the_result():
    scorer = create_scorer("s").preprocess(constant(1)).generate_score(raising("bad"))
    with pytest.raises(ScorerRunError) as raised:
        scorer.run(output="x")
    data = raised.value.to_dict()
    assert list(data) == ["message", "domain", "category", "code", "details", "cause"]
    assert data["code"] == "MASTR_SCORER_FAILED_TO_RUN_WORKFLOW_FAILED"
    assert data["cause"] == {"message": "bad", "name": "ValueError"}


def test_errors_pickle_with_their_snapshot():
    scorer = create_scorer("s").preprocess(constant(1)).generate_score(raising("bad"))
    with pytest.raises(ScorerRunError) as raised:
        scorer.run(output="x")
    copy = pickle.loads(pickle.dumps(raised.value))
    assert copy.to_dict() == raised.value.to_dict()
    assert copy.result == raised.value.result
    assert copy.failed_step == "generate_score"


def test_empty_exception_message_uses_its_class_name():
    def step():
        raise ZeroDivisionError

    with pytest.raises(ScorerRunError, match="Scorer Run Failed: ZeroDivisionError"):
        create_scorer("s").generate_score(step).run(output="x")


# --- the run: ids, prepare_run, result shape -------------------------------------------------


def test_run_id_defaults_to_a_fresh_uuid4():
    scorer = create_scorer("s").generate_score(constant(1))
    first, second = scorer.run(output="x"), scorer.run(output="x")
    assert uuid.UUID(first.run_id).version == 4
    assert first.run_id != second.run_id
    assert scorer.run(output="x", run_id="mine").run_id == "mine"


def test_prepare_run_transforms_the_run():
    def prepare_run(run):
        return run.model_copy(update={"output": run.output.strip(), "ground_truth": None})

    scorer = create_scorer("s", prepare_run=prepare_run).generate_score(
        lambda run: len(run.output) / 10
    )
    result = scorer.run(output="  abc  ", ground_truth="gt")
    assert (result.output, result.ground_truth, result.score) == ("abc", None, 0.3)


def test_with_prepare_run_returns_a_new_scorer():
    base = create_scorer("s").generate_score(lambda run: len(run.output) / 10)
    trimmed = base.with_prepare_run(lambda run: run.model_copy(update={"output": "abc"}))
    assert trimmed.run(output="abcdefgh").score == 0.3
    assert base.run(output="abcdefgh").score == 0.8
    assert [s.node_name for s in trimmed.steps] == ["generate_score"]


def test_prepare_run_may_return_mastra_shaped_dicts_and_be_async():
    async def prepare_run(run):
        data = run.to_dict()
        data["groundTruth"] = "from prepare"
        data["runId"] = "prepared-id"
        return data

    scorer = create_scorer("s", prepare_run=prepare_run).generate_score(
        lambda run: 1 if run.ground_truth == "from prepare" else 0
    )
    result = scorer.run(output="x")
    assert (result.score, result.run_id) == (1, "prepared-id")


def test_prepare_run_failure_is_a_scorer_run_error():
    scorer = create_scorer("s", prepare_run=lambda run: 42).generate_score(constant(1))
    with pytest.raises(ScorerRunError) as raised:
        scorer.run(output="x")
    assert raised.value.failed_step == "prepare_run"
    assert "prepare_run must return a ScorerRun" in raised.value.message


def test_result_echoes_the_run_and_to_dict_is_camel_case():
    scorer = (
        create_scorer("s")
        .preprocess(constant({"a": 1}))
        .generate_score(constant(0.5))
        .generate_reason(constant("because"))
    )
    result = scorer.run(
        input="in",
        output="out",
        run_id="r",
        ground_truth="gt",
        request_context={"user": "u"},
        expected_trajectory={"steps": []},
    )
    assert result.to_dict() == {
        "input": "in",
        "output": "out",
        "runId": "r",
        "groundTruth": "gt",
        "requestContext": {"user": "u"},
        "expectedTrajectory": {"steps": []},
        "score": 0.5,
        "reason": "because",
        "preprocessStepResult": {"a": 1},
    }


def test_scorer_run_accepts_mastra_keys():
    run = ScorerRun.model_validate({"output": "o", "runId": "r", "groundTruth": "g"})
    assert (run.run_id, run.ground_truth) == ("r", "g")


# --- event loops -----------------------------------------------------------------------------


def test_run_works_inside_a_running_event_loop():
    async def analyze():
        await asyncio.sleep(0)
        return 3

    scorer = create_scorer("s").analyze(analyze).generate_score(lambda analyze_step_result: 0.3)

    async def notebook_cell():
        return scorer.run(output="x")

    assert asyncio.run(notebook_cell()).score == 0.3


def test_arun():
    scorer = create_scorer("s").generate_score(constant(0.7))
    assert asyncio.run(scorer.arun(output="x")).score == 0.7


# --- the DAG ---------------------------------------------------------------------------------


def _quality():
    return (
        create_scorer("quality")
        .preprocess(lambda run: len(run.output))
        .analyze(PromptStep("judge", lambda run: "p", output_schema={"type": "object"}))
        .analyze(constant(2))
        .generate_score(constant(1))
        .generate_reason(constant("ok"))
    )


def test_each_step_is_a_named_hamilton_node():
    dr = scorers_driver([_quality()])
    names = {n.name for n in dr.list_available_variables()}
    assert {
        "runs",
        "concurrency",
        "quality.prepared_run",
        "quality.preprocessed",
        "quality.analyzed",
        "quality.analyzed_2",
        "quality.scored",
        "quality.reasoned",
        "quality",
    } <= names
    upstream = {n.name for n in dr.what_is_upstream_of("quality.scored")}
    assert {"quality.analyzed_2", "quality.analyzed", "quality.preprocessed"} <= upstream
    assert "quality.reasoned" not in upstream


def test_visualize_returns_the_graph_and_writes_dot(tmp_path):
    graph = _quality().visualize(str(tmp_path / "dag.dot"))
    assert "quality.scored" in graph.source
    assert '"quality.analyzed"' in graph.source and "#f6d7a7" in graph.source  # the LLM step
    assert (tmp_path / "dag.dot").read_text() == graph.source


def test_visualize_to_an_unknown_format_says_which_work(tmp_path):
    with pytest.raises(EvalDagError, match=r"\.png, \.svg, \.pdf or \.dot") as raised:
        _quality().visualize(str(tmp_path / "dag.txt"))
    assert raised.value.id == "EVALDAG_UNKNOWN_PICTURE_FORMAT"


def test_visualize_png_without_dot_says_how_to_fix(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(EvalDagError, match="graphviz") as raised:
        _quality().visualize(str(tmp_path / "dag.png"))
    assert raised.value.id == "EVALDAG_GRAPHVIZ_MISSING"


def test_one_execute_scores_a_whole_column_and_isolates_failures():
    def generate_score(run):
        if run.output == "bad":
            raise RuntimeError("cannot score 'bad'")
        return len(run.output) / 10

    scorer = create_scorer("len").generate_score(generate_score)
    dr = scorers_driver([scorer])
    runs = [ScorerRun(output=o, run_id=str(i)) for i, o in enumerate(["a", "bad", "abc"])]
    frame = dr.execute(["len"], inputs={"runs": pd.Series(runs), "concurrency": 4})["len"]
    assert list(frame.columns) == [
        "score",
        "reason",
        "error",
        "failed_step",
        "completed_steps",
        "not_scorable",
        "steps",
        "judge",
    ]
    assert frame["score"].iloc[0] == 0.1 and frame["score"].iloc[2] == 0.3
    assert math.isnan(frame["score"].iloc[1])
    assert frame["error"].iloc[1] == "Scorer Run Failed: cannot score 'bad'"
    assert frame["failed_step"].iloc[1] == "generate_score"
    assert pickle.loads(pickle.dumps(frame))["score"].iloc[2] == 0.3


def test_async_steps_run_concurrently_across_rows():
    in_flight, peak = [0], [0]

    async def analyze(run):
        in_flight[0] += 1
        peak[0] = max(peak[0], in_flight[0])
        await asyncio.sleep(0.01)
        in_flight[0] -= 1
        return 1

    scorer = create_scorer("slow").analyze(analyze).generate_score(constant(1))
    runs = [ScorerRun(output=str(i)) for i in range(10)]
    outcomes = scorer_outcomes(scorers_driver([scorer]), scorer, runs, concurrency=4)
    assert [o.score for o in outcomes] == [1] * 10
    assert peak[0] == 4  # bounded by concurrency, and actually concurrent


def test_import_is_lazy():
    heavy = "('litellm', 'hamilton', 'pandas')"
    code = f"import sys, evaldag; print(sorted(m for m in {heavy} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_async_steps_inside_a_running_loop_see_the_callers_context_variables():
    import contextvars

    current_user = contextvars.ContextVar("current_user", default="nobody")

    async def analyze():
        return current_user.get()

    scorer = create_scorer("ctx").analyze(analyze).generate_score(constant(1))

    async def notebook_cell():
        current_user.set("ada")
        return scorer.run(output="x")

    assert asyncio.run(notebook_cell()).analyze_step_result == "ada"
