"""run_evals: validation (spec §6.2), averaging (§6.5), gates, thresholds and verdict (§6.7),
targets, data forms, callbacks, Parquet, the DAG, and our deviations from Mastra."""

import asyncio
import io
import json
import math
import uuid

import pandas as pd
import pytest

import evaldag
from evaldag import (
    EvalDagError,
    EvalResult,
    PromptStep,
    UntrustworthyRunError,
    create_scorer,
    not_scorable,
    run_evals,
)
from evaldag._eval.progress import ProgressBar


def scoring(scorer_id, fn):
    return create_scorer(scorer_id).generate_score(fn)


def constant(scorer_id, value):
    return scoring(scorer_id, lambda: value)


def by_output(scorer_id, table):
    return scoring(scorer_id, lambda run: table[run.output])


DATA = pd.DataFrame({"input": ["q1", "q2", "q3"], "output": ["a", "b", "c"]})


# --- validation (§6.2) -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("threshold", "message"),
    [
        (1.5, 'Minimum threshold for scorer "s" must be a finite number between 0 and 1, got 1.5'),
        (-0.1, "got -0.1"),
        (float("nan"), "got nan"),
        (float("inf"), "got inf"),
        (None, "must be a number or an object with min/max bounds, got null"),
        ([0.5], "got an array"),
        ("0.5", "got a str"),
        ({}, "must define at least one of min or max"),
        ({"min": 2}, 'Minimum threshold for scorer "s" must be a finite number'),
        ({"max": -1}, 'Maximum threshold for scorer "s" must be a finite number'),
        ({"min": 0.9, "max": 0.1}, "has min (0.9) greater than max (0.1)"),
        ({"low": 0.1}, "unknown keys ['low']"),
    ],
)
def test_invalid_thresholds(threshold, message):
    with pytest.raises(EvalDagError) as raised:
        run_evals(DATA, scorers=[{"scorer": constant("s", 1), "threshold": threshold}])
    assert raised.value.id == "INVALID_SCORER_THRESHOLD"
    assert message in raised.value.message


def test_thresholds_are_validated_before_the_data():
    with pytest.raises(EvalDagError) as raised:
        run_evals([], scorers=[{"scorer": constant("s", 1), "threshold": 7}])
    assert raised.value.id == "INVALID_SCORER_THRESHOLD"


def test_with_threshold_forms():
    scorer = constant("s", 1)
    assert scorer.with_threshold(0.7).threshold == 0.7
    assert scorer.with_threshold(min=0.3, max=0.8).threshold == {"min": 0.3, "max": 0.8}
    assert scorer.with_threshold(max=0.8).threshold == {"max": 0.8}
    with pytest.raises(EvalDagError, match="INVALID|not both|min"):
        scorer.with_threshold(0.5, max=0.9)
    with pytest.raises(EvalDagError) as raised:
        scorer.with_threshold(min=0.9, max=0.2)
    assert raised.value.id == "INVALID_SCORER_THRESHOLD"


def test_a_bare_minimum_on_a_scorer_whose_lower_scores_are_better_is_refused():
    """toxicity(judge).with_threshold(0.2) asked for at least 0.2 of toxicity: a toxic run (0.9)
    passed, a clean one (0.0) failed. A bound on such a scorer is written out, max or min."""
    toxic = create_scorer("toxic", better="lower").generate_score(lambda run: 0.9)
    for refused in (
        lambda: toxic.with_threshold(0.2),
        lambda: run_evals(DATA, scorers=[{"scorer": toxic, "threshold": 0.2}], progress=False),
    ):
        with pytest.raises(EvalDagError) as raised:
            refused()
        assert raised.value.id == "INVALID_SCORER_THRESHOLD"
        assert 'lower scores of "toxic" are better' in raised.value.message
        assert "with_threshold(max=0.2)" in raised.value.message
    failed = run_evals(DATA, scorers=[toxic.with_threshold(max=0.2)], progress=False)
    assert [t.passed for t in failed.threshold_results] == [False]
    assert failed.verdict == "scored"  # a threshold missed (Mastra's verdict)
    assert toxic.with_threshold(min=0.2).threshold == {"min": 0.2}  # a minimum said outright


@pytest.mark.parametrize("data", [[], pd.DataFrame({"input": [], "output": []})])
def test_empty_data(data):
    with pytest.raises(EvalDagError) as raised:
        run_evals(data, scorers=[constant("s", 1)])
    assert raised.value.id == "RUN_EXPERIMENT_FAILED_NO_DATA_PROVIDED"
    assert raised.value.message == "Failed to run experiment: Data array is empty"


def test_items_need_input():
    with pytest.raises(EvalDagError) as raised:
        run_evals([{"input": "a", "output": "b"}, "not a dict"], scorers=[constant("s", 1)])
    assert raised.value.id == "INVALID_DATA_ITEM"
    assert "index 1" in raised.value.message
    with pytest.raises(EvalDagError) as raised:
        run_evals(pd.DataFrame({"question": ["a"], "output": ["b"]}), scorers=[constant("s", 1)])
    assert "'input'" in raised.value.message and "question" in raised.value.message


def test_items_need_output_without_target():
    with pytest.raises(EvalDagError, match="'output'"):
        run_evals(pd.DataFrame({"input": ["a"]}), scorers=[constant("s", 1)])
    with pytest.raises(EvalDagError, match="index 1"):
        run_evals(
            pd.DataFrame({"input": ["a", "b"], "output": ["x", None]}), scorers=[constant("s", 1)]
        )


def test_no_scorers():
    with pytest.raises(EvalDagError) as raised:
        run_evals(DATA)
    assert raised.value.id == "NO_SCORERS_PROVIDED"


def test_duplicate_ids_name_both_places():
    with pytest.raises(EvalDagError) as raised:
        run_evals(DATA, scorers=[constant("dup", 1)], gates=[constant("dup", 1)])
    assert raised.value.id == "DUPLICATE_SCORER_ID"
    assert "scorers[0]" in raised.value.message and "gates[0]" in raised.value.message


@pytest.mark.parametrize("bad_id", ["items", "verdict", "a.b"])
def test_ids_that_collide_with_graph_nodes(bad_id):
    with pytest.raises(EvalDagError, match="another id"):
        run_evals(DATA, scorers=[constant(bad_id, 1)])


def test_scorer_without_generate_score_fails_before_running():
    with pytest.raises(EvalDagError) as raised:
        run_evals(DATA, scorers=[create_scorer("s").preprocess(lambda: 1)])
    assert raised.value.id == "MASTR_SCORER_FAILED_TO_RUN_MISSING_GENERATE_SCORE"


@pytest.mark.parametrize(
    ("option", "value"),
    [("concurrency", 0), ("concurrency", 1.5), ("on_error", "ignore"), ("batch_size", 0)],
)
def test_bad_options_name_themselves(option, value):
    with pytest.raises(EvalDagError, match=option):
        run_evals(DATA, scorers=[constant("s", 1)], **{option: value})


def test_bad_scorer_entries():
    with pytest.raises(EvalDagError, match=r"scorers\[1\]"):
        run_evals(DATA, scorers=[constant("s", 1), "completeness"])
    with pytest.raises(EvalDagError, match=r"gates\[0\]"):
        run_evals(DATA, gates=[{"scorer": constant("g", 1)}])


# --- averaging (§6.5) ------------------------------------------------------------------------


def test_averages_skip_not_scorable_and_omit_ids_without_numbers():
    result = run_evals(
        DATA,
        scorers=[
            by_output("half", {"a": not_scorable("no"), "b": 0.4, "c": 0.6}),
            constant("never", not_scorable()),
        ],
        progress=False,
    )
    assert result.scores == {"half": 0.5}
    assert result.summary.not_scorable == {"half": 1, "never": 3}
    assert json.loads(result.items["half.not_scorable"].iloc[0]) == {
        "step": "generate_score",
        "reason": "no",
    }
    assert math.isnan(result.items["half.score"].iloc[0])
    assert result.verdict is None
    assert "verdict" not in result.to_dict()


def test_average_is_plain_left_to_right_sum():
    result = run_evals(DATA, scorers=[by_output("s", {"a": 0.1, "b": 0.2, "c": 0.3})])
    assert result.scores["s"] == (0.1 + 0.2 + 0.3) / 3 == 0.20000000000000004


# --- gates, thresholds, verdict (§6.7) -------------------------------------------------------


def test_gate_passes_only_at_one():
    # A gate scoring 2 is an error here, not a pass (tests/project/test_misconfiguration.py).
    result = run_evals(
        DATA,
        gates=[constant("ok", 1), by_output("almost", {"a": 1, "b": 1, "c": 0.999})],
    )
    assert [(g.id, g.passed) for g in result.gate_results] == [("ok", True), ("almost", False)]
    assert result.verdict == "failed"
    assert result.scores == {}


def test_gate_or_threshold_with_no_scorable_item_fails_and_says_why():
    """Mastra leaves such a gate or threshold out, which can turn a red run green."""
    result = run_evals(
        DATA,
        gates=[constant("ns", not_scorable())],
        scorers=[constant("nothing", not_scorable()).with_threshold(0.5), constant("s", 1)],
    )
    (gate,) = result.gate_results
    assert (gate.passed, gate.reason) == (False, "no item could be scored (3 not scorable)")
    (threshold,) = result.threshold_results
    assert (threshold.passed, threshold.reason) == (
        False,
        "no item could be scored (3 not scorable)",
    )
    assert result.verdict == "failed"


def test_threshold_bounds_are_inclusive_and_verdict_is_scored():
    # Two items: 0.8 + 0.8 = 1.6 halves to exactly 0.8 (three would give 0.8000000000000002).
    result = run_evals(
        DATA.head(2),
        scorers=[
            constant("at-min", 0.3).with_threshold(min=0.3, max=0.8),
            constant("at-max", 0.8).with_threshold(min=0.3, max=0.8),
            constant("below", 0.29).with_threshold(0.3),
        ],
        gates=[constant("g", 1)],
    )
    assert [(t.id, t.passed) for t in result.threshold_results] == [
        ("at-min", True),
        ("at-max", True),
        ("below", False),
    ]
    assert result.verdict == "scored"


def test_verdict_passed():
    result = run_evals(
        DATA, scorers=[constant("s", 0.9).with_threshold(0.5)], gates=[constant("g", 1)]
    )
    assert result.verdict == "passed"
    assert result.to_dict()["verdict"] == "passed"


def test_failed_items_fail_thresholds_and_gates():
    def flaky(run):
        if run.output == "b":
            raise TimeoutError("judge timed out")
        return 1

    result = run_evals(
        DATA, scorers=[scoring("s", flaky).with_threshold(0.5)], gates=[scoring("g", flaky)]
    )
    (threshold,) = result.threshold_results
    assert (threshold.average_score, threshold.errors, threshold.passed) == (1.0, 1, False)
    (gate,) = result.gate_results
    assert gate.score == pytest.approx(2 / 3) and not gate.passed
    assert result.summary.errors == {"s": 1, "g": 1}
    assert result.verdict == "failed"


def test_recovered_score_stays_in_the_row_but_out_of_the_average():
    def reason():
        raise ValueError("no reason")

    scorer = constant("s", 0.2).generate_reason(reason)
    # failing on every item makes the run untrustworthy; the error keeps what was computed
    with pytest.raises(UntrustworthyRunError) as raised:
        run_evals(DATA.head(1), scorers=[scorer, constant("t", 1)])
    result = raised.value.result
    row = result.items.iloc[0]
    assert row["s.score"] == 0.2
    assert row["s.error"] == "Scorer Run Failed: no reason"
    assert row["s.failed_step"] == "generate_reason"
    assert json.loads(row["s.completed_steps"]) == ["generate_score"]
    assert result.scores == {"t": 1}


# --- items, targets, data forms --------------------------------------------------------------


def test_item_columns():
    scorer = (
        create_scorer("len")
        .preprocess(lambda run: len(run.output))
        .generate_score(lambda preprocess_step_result: preprocess_step_result / 10)
        .generate_reason(lambda score: f"{score:.1f}")
    )
    data = DATA.assign(topic=["x", "y", "z"])
    items = run_evals(data, scorers=[scorer]).items
    assert list(items.columns) == [
        "input",
        "output",
        "topic",
        "run_id",
        "len.score",
        "len.reason",
        "len.error",
        "len.failed_step",
        "len.completed_steps",
        "len.not_scorable",
        "len.steps",
        "len.judge",
    ]
    assert items["topic"].tolist() == ["x", "y", "z"]
    assert json.loads(items["len.steps"].iloc[0]) == {"preprocess_step_result": 1}
    assert items["len.error"].isna().all()
    assert items["len.reason"].tolist() == ["0.1", "0.1", "0.1"]
    assert items["run_id"].is_unique


def test_run_fields_reach_the_steps():
    seen = []

    def generate_score(run):
        seen.append((run.ground_truth, run.request_context, run.expected_trajectory))
        return 1

    run_evals(
        [
            {
                "input": "i",
                "output": "o",
                "groundTruth": "gt",
                "requestContext": {"user": "u"},
                "expected_trajectory": {"steps": []},
            }
        ],
        scorers=[scoring("s", generate_score)],
    )
    assert seen == [("gt", {"user": "u"}, {"steps": []})]


def test_callable_targets_sync_and_async_with_request_context():
    async def agent(input, request_context):
        await asyncio.sleep(0)
        return f"{input}:{request_context['lang']}"

    data = [{"input": "hi", "request_context": {"lang": "en"}}]
    echo = scoring("echo", lambda run: 1 if run.output == "hi:en" else 0)
    assert run_evals(data, scorers=[echo], target=agent).scores == {"echo": 1}
    sync_agent = lambda input: input.upper()  # noqa: E731
    upper = scoring("upper", lambda run: 1 if run.output == "HI" else 0)
    result = run_evals(data, scorers=[upper], target=sync_agent)
    assert result.scores == {"upper": 1}
    assert result.items["output"].tolist() == ["HI"]


def test_a_sync_target_runs_as_many_calls_at_once_as_the_concurrency():
    """More than the event loop's default thread pool holds (at most 32 threads): every call
    waits at a barrier until all 40 are in, so fewer threads break the barrier."""
    import threading

    barrier = threading.Barrier(40, timeout=20)
    seen = set()

    def blocking_app(input):
        barrier.wait()
        seen.add(threading.get_ident())  # all 40 alive here: no ident reused
        return input

    data = [{"input": str(i)} for i in range(40)]
    result = run_evals(
        data, scorers=[constant("one", 1)], target=blocking_app, concurrency=40, progress=False
    )
    assert result.items["target_error"].isna().all()
    assert result.items["output"].tolist() == [str(i) for i in range(40)]
    assert len(seen) == 40


def test_target_failure_is_recorded_and_its_scorers_skipped():
    calls = []

    def agent(input):
        if input == "q2":
            raise ConnectionError("agent down")
        return input

    def generate_score(run):
        calls.append(run.input)
        return 1

    result = run_evals(
        DATA[["input"]], scorers=[scoring("s", generate_score).with_threshold(0.5)], target=agent
    )
    assert calls == ["q1", "q3"]
    items = result.items
    assert items["target_error"].fillna("").tolist() == ["", "ConnectionError: agent down", ""]
    assert items["s.error"].iloc[1] == "target failed: agent down"
    assert items["s.failed_step"].iloc[1] == "target"
    assert result.summary.target_errors == 1
    assert result.verdict == "failed"  # the target failed on an item


def test_a_target_returning_none_is_the_items_target_error():
    """A function that forgot its return: no output, so no check may pass on it (an excludes
    or did_not_call gate would pass on nothing)."""

    async def forgetful(input):
        if input != "q2":
            return f"answer to {input}"

    result = run_evals(
        DATA[["input"]],
        gates=[evaldag.checks.excludes("refund"), evaldag.checks.did_not_call("delete")],
        target=forgetful,
    )
    assert result.items["target_error"].isna().tolist() == [True, False, True]
    assert "the target returned None" in result.items["target_error"][1]
    assert result.verdict == "failed"
    with pytest.raises(UntrustworthyRunError, match="forget its return"):
        run_evals(DATA[["input"]], gates=[evaldag.checks.excludes("x")], target=lambda i: None)


def test_a_target_is_not_called_without_an_input():
    """A blank input cell called the target with None, and its answer to nothing was scored."""
    calls = []

    def echo(input, history=()):
        calls.append(input)
        return f"you said {input}"

    data = pd.DataFrame({"input": ["q1", None], "inputs": [None, None]})
    result = run_evals(data, gates=[evaldag.checks.excludes("refund")], target=echo)
    assert calls == ["q1"] and result.verdict == "failed"
    assert result.items["target_error"][1] == (
        "ValueError: the item's input is empty (None), so the target was not called; fill it in"
    )
    turns = run_evals([{"inputs": ["hi", None]}, {"input": "q"}], gates=[], scorers=[
        evaldag.checks.excludes("refund")], target=echo)  # fmt: skip
    assert turns.items["target_error"][0].startswith("ValueError: turn 2 of 2: its input is")


def test_target_failure_with_on_error_raise():
    with pytest.raises(EvalDagError) as raised:
        run_evals(
            DATA[["input"]],
            scorers=[constant("s", 1)],
            target=lambda input: 1 / 0,
            on_error="raise",
        )
    assert raised.value.id == "RUN_EXPERIMENT_TARGET_FAILED_TO_GENERATE_RESULT"


@pytest.mark.parametrize("suffix", [".parquet", ".csv", ".jsonl"])
def test_data_from_files(tmp_path, suffix):
    path = tmp_path / f"data{suffix}"
    {".parquet": DATA.to_parquet, ".csv": lambda p: DATA.to_csv(p, index=False)}.get(
        suffix, lambda p: DATA.to_json(p, orient="records", lines=True)
    )(path)
    result = run_evals(path, scorers=[by_output("s", {"a": 1, "b": 0, "c": 1})])
    assert result.scores == {"s": 2 / 3}


def test_unreadable_and_unknown_files(tmp_path):
    with pytest.raises(EvalDagError, match="does not exist"):
        run_evals(tmp_path / "missing.csv", scorers=[constant("s", 1)])
    (tmp_path / "data.xlsx").write_text("x")
    with pytest.raises(EvalDagError, match=".parquet, .csv or .jsonl"):
        run_evals(tmp_path / "data.xlsx", scorers=[constant("s", 1)])
    (tmp_path / "bad.parquet").write_text("not parquet")
    with pytest.raises(EvalDagError, match="Cannot read data file"):
        run_evals(tmp_path / "bad.parquet", scorers=[constant("s", 1)])


def test_batches_give_the_same_result():
    data = pd.DataFrame(
        {"input": [str(i) for i in range(25)], "output": [str(i % 7) for i in range(25)]}
    )
    scorer = scoring("s", lambda run: int(run.output) / 6).with_threshold(0.4)
    whole = run_evals(data, scorers=[scorer], gates=[constant("g", 1)])
    batched = run_evals(data, scorers=[scorer], gates=[constant("g", 1)], batch_size=4)
    assert batched.to_dict() == whole.to_dict()
    assert batched.items["s.score"].tolist() == whole.items["s.score"].tolist()


# --- callbacks and progress ------------------------------------------------------------------


def test_on_item_complete_once_per_item():
    seen = []

    async def on_item_complete(item, target_result, scorer_results):
        seen.append((item["input"], target_result, scorer_results["s"].score))

    scorer = by_output("s", {"a": 0.1, "b": 0.2, "c": not_scorable()})
    run_evals(
        DATA,
        scorers=[scorer],
        gates=[constant("g", 1)],
        on_item_complete=on_item_complete,
        batch_size=2,
    )
    assert seen == [("q1", "a", 0.1), ("q2", "b", 0.2), ("q3", "c", None)]


def test_progress_bar_draws_when_forced():
    stream = io.StringIO()
    bar = ProgressBar(10, enabled=True, stream=stream)
    bar.advance(4)
    bar.advance(6)
    bar.close()
    assert "4/10 items" in stream.getvalue() and "10/10 items" in stream.getvalue()
    quiet = io.StringIO()
    ProgressBar(10, stream=quiet).advance(10)  # not a TTY: silent
    assert quiet.getvalue() == ""


# --- Parquet and the DAG ---------------------------------------------------------------------


def test_parquet_round_trip(tmp_path):
    scorer = (
        create_scorer("len")
        .preprocess(lambda run: {"n": len(run.output), "words": run.output.split()})
        .generate_score(lambda preprocess_step_result: min(1, preprocess_step_result["n"] / 3))
    )
    data = pd.DataFrame(
        {
            "input": ["q1", "q2"],
            "output": ["abc", "a"],
            "messages": [[{"role": "user", "content": "x"}], []],
        }
    )
    result = run_evals(
        data,
        scorers=[scorer.with_threshold(0.5), by_output("ns", {"abc": not_scorable("n/a"), "a": 1})],
        gates=[constant("g", 1)],
    )
    path = result.to_parquet(tmp_path / "results.parquet")
    again = EvalResult.read_parquet(path)
    assert again == result
    assert again.to_dict() == result.to_dict()
    assert again.experiment_id == result.experiment_id
    assert json.loads(again.items["len.steps"].iloc[0]) == {
        "preprocess_step_result": {"n": 3, "words": ["abc"]}
    }
    assert again.items["messages"].iloc[0] == [{"role": "user", "content": "x"}]
    assert [p.name for p in tmp_path.iterdir()] == ["results.parquet"]  # no temporary left


def test_each_run_gets_its_own_experiment_id():
    first, second = (run_evals(DATA, scorers=[constant("c", 1)]) for _ in range(2))
    assert first.experiment_id != second.experiment_id
    assert uuid.UUID(first.experiment_id).version == 4


def test_reading_a_foreign_parquet_file_says_so(tmp_path):
    DATA.to_parquet(tmp_path / "plain.parquet")
    with pytest.raises(EvalDagError, match="not an evaldag results file"):
        EvalResult.read_parquet(tmp_path / "plain.parquet")


def test_dag_node_names_on_the_dot_source(tmp_path):
    quality = create_scorer("quality").preprocess(lambda: 1).generate_score(lambda: 1)
    graph = evaldag.visualize(
        scorers=[quality.with_threshold(0.5)],
        gates=[constant("has-answer", 1)],
        path=tmp_path / "dag.dot",
        full=True,
    )
    source = graph.source
    for node in [
        "dataset",
        "outputs",
        "runs",
        "quality.prepared_run",
        "quality.preprocessed",
        "quality.scored",
        "quality.average",
        "quality.threshold_result",
        "has-answer.gate_result",
        "items",
        "verdict",
        "eval_result",
        "Legend",
        "gate / threshold / verdict",
    ]:
        assert node in source, node
    assert (tmp_path / "dag.dot").read_text() == source
    result = run_evals(DATA, scorers=[quality])
    assert "quality.scored" in result.visualize().source


def test_the_default_picture_is_compact_scorers_as_boxes_listing_their_steps(tmp_path):
    judged = create_scorer("judged").analyze(
        PromptStep("label it", lambda: "Label", output_schema=dict)
    )
    quality = create_scorer("quality").preprocess(lambda: 1).generate_score(lambda: 1)
    graph = evaldag.visualize(
        scorers=[
            quality.with_threshold({"min": 0.2, "max": 0.8}),
            judged.generate_score(lambda: 1),
        ],
        gates=[constant("has-answer", 1)],
    )
    source = graph.source
    for shown in [
        'TITLE="quality.preprocessed"',
        'TITLE="quality.scored"',
        "quality.threshold_result",
        "average 0.20 to 0.80",
        "has-answer.gate_result",
        "LLM judge",
        'TITLE="judged.analyzed"',
        "verdict",
    ]:
        assert shown in source, shown
    # a box per scorer, not a node per step: the full drawing has many more nodes
    full = evaldag.visualize(scorers=[quality], gates=[constant("has-answer", 1)], full=True)
    compact = evaldag.visualize(scorers=[quality], gates=[constant("has-answer", 1)])
    assert compact.source.count("->") < full.source.count("->") / 2


def test_data_columns_may_not_take_the_names_the_run_adds():
    with pytest.raises(EvalDagError, match=r"\['run_id', 's.score'\]") as raised:
        run_evals(DATA.assign(run_id="mine", **{"s.score": 1}), scorers=[constant("s", 1)])
    assert raised.value.id == "INVALID_DATA_ITEM"


def test_reading_a_directory_as_results_says_so(tmp_path):
    with pytest.raises(EvalDagError, match="is a directory"):
        EvalResult.read_parquet(tmp_path)
