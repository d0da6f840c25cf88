"""A Hamilton dataflow as a workflow target: one execution per item, the final output, each
node's inputs and output and the execution path scored (Mastra's workflow scorer config); the
model inside the dataflow is the loopback judge server."""

from __future__ import annotations

import importlib.util
import sys

import pytest
from hamilton import driver
from judge_server import API_KEY, MODEL
from repo_paths import FIXTURES

import evaldag
from evaldag import EvalDagError, checks, create_scorer, run_evals, scorers

FLOW_PATH = FIXTURES / "workflows/support_flow.py"


def _flow():
    name = "support_flow"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, FLOW_PATH)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def _target(server, **options):
    model = {"model": f"openai/{MODEL}", "api_base": server.url, "api_key": API_KEY}
    return evaldag.workflow(_flow(), ["reply"], inputs=model, **options)


PATH = {"steps": [{"name": "category"}, {"name": "draft"}, {"name": "reply"}]}


def test_each_node_and_the_path_are_scored(judge_server):
    judge_server.on("billing", "Your invoice is on its way.")
    judge_server.reply = "Thanks, we are on it."
    seen = []

    def category_right(run):
        seen.append(run.input)
        return float(run.output == run.ground_truth)

    result = run_evals(
        [
            {"input": "Where is my invoice?", "ground_truth": "billing"},
            {"input": "The app is slow", "ground_truth": "other"},
        ],
        target=_target(judge_server),
        scorers={
            "workflow": [checks.includes("support team")],
            "steps": {
                "category": [create_scorer("right").generate_score(category_right)],
                "draft": [checks.includes("invoice").with_threshold(0.5)],
            },
            "trajectory": [
                scorers.trajectory_accuracy(PATH, {"ordering": "strict"}),
                scorers.trajectory(),
            ],
        },
        concurrency=2,
    )
    assert result.to_dict()["scores"] == {
        "workflow": {"check-includes": 1.0},
        "steps": {"category": {"right": 1.0}, "draft": {"check-includes": 0.5}},
        "trajectory": {"code-trajectory-accuracy-scorer": 1.0, "code-trajectory-scorer": 1.0},
    }
    assert result.verdict == "passed"
    # A step scorer gets the node's inputs as the run's input and its output as the output.
    assert sorted(seen, key=str) == [
        {"ticket": "The app is slow"},
        {"ticket": "Where is my invoice?"},
    ]
    items = result.items
    assert items["output"][0] == "Your invoice is on its way.\n-- The support team"
    assert items["steps.draft.check-includes.score"].tolist() == [1.0, 0.0]
    systems = sorted(r.system for r in judge_server.requests)
    assert systems == ["You answer billing tickets.", "You answer other tickets."]


def test_the_trajectory_holds_the_nodes_in_order_with_durations(judge_server):
    judge_server.reply = "Done."
    trajectories = []
    probe = create_scorer("probe", type="trajectory").generate_score(
        lambda run: trajectories.append(run.output) or 1
    )
    run_evals([{"input": "hi"}], target=_target(judge_server), scorers={"trajectory": [probe]})
    ((trajectory),) = trajectories
    assert [s["name"] for s in trajectory["steps"]] == ["category", "draft", "reply"]
    first = trajectory["steps"][0]
    assert first["stepType"] == "workflow_step" and first["stepId"] == "category"
    assert first["status"] == "success" and first["output"] == {"value": "other"}
    assert trajectory["steps"][2]["durationMs"] >= 10  # reply sleeps 10 ms
    assert trajectory["totalDurationMs"] >= sum(s["durationMs"] for s in trajectory["steps"])


def test_a_failing_node_is_the_items_target_error_and_the_run_goes_on(judge_server, caplog):
    judge_server.reply = "Sorry about that."
    result = run_evals(
        [{"input": "it crashed"}, {"input": "hello"}],
        target=_target(judge_server),
        scorers={
            "workflow": [checks.includes("Sorry")],
            "steps": {"draft": [checks.includes("S")]},
        },
    )
    items = result.items
    assert (
        items["target_error"][0] == "RuntimeError: node 'category' failed: the classifier crashed"
    )
    assert items["workflow.check-includes.error"][0].startswith("target failed")
    assert items["workflow.check-includes.score"][1] == 1.0
    assert result.summary.target_errors == 1
    assert "Oh no an error" not in caplog.text  # the failure is recorded, not logged


def test_a_driver_or_a_module_is_a_target_as_it_is(judge_server):
    judge_server.reply = "Fine."
    settings = {"model": f"openai/{MODEL}", "api_base": judge_server.url, "api_key": API_KEY}
    data = [{"input": {"ticket": "hello", **settings}}]
    for target in (_flow(), driver.Builder().with_modules(_flow()).build()):
        result = run_evals(data, target=target, scorers={"workflow": [checks.includes("Fine")]})
        assert result.scores == {"workflow.check-includes": 1.0}


def test_a_module_loaded_from_a_path_and_not_registered_is_a_target(judge_server):
    """As notebooks and plugin loaders load it: a module that is not in sys.modules, given as
    itself or through a driver built from it, has its nodes (and stays unregistered)."""
    judge_server.reply = "Fine."
    spec = importlib.util.spec_from_file_location("support_flow_unregistered", FLOW_PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    settings = {"model": f"openai/{MODEL}", "api_base": judge_server.url, "api_key": API_KEY}
    data = [{"input": {"ticket": "hello", **settings}}]
    for target in (module, driver.Builder().with_modules(module).build()):
        flow = evaldag.workflow(target)
        assert flow.final_vars == ("reply",)
        assert flow.nodes == {"category", "draft", "reply"}
        result = run_evals(data, target=target, scorers={"workflow": [checks.includes("Fine")]})
        assert result.scores == {"workflow.check-includes": 1.0}
    assert "support_flow_unregistered" not in sys.modules


def test_workflow_defaults(judge_server):
    flow = evaldag.workflow(_flow())
    assert flow.final_vars == ("reply",)  # the node nothing depends on
    assert flow.input_name is None  # several required inputs: give a dict, or input_name=
    assert _target(judge_server).input_name == "ticket"
    several = evaldag.workflow(_flow(), ["category", "reply"], inputs={"model": "m"})
    assert several.nodes == {"category", "draft", "reply"}


# --- validation --------------------------------------------------------------------------------


def _refused(error_id, text, server, scorers_config=None, data=None):
    with pytest.raises(EvalDagError) as raised:
        run_evals(
            data or [{"input": "hi"}],
            target=_target(server),
            scorers=scorers_config or {"workflow": [checks.includes("x")]},
        )
    assert raised.value.id == error_id, raised.value.message
    assert text in raised.value.message
    return raised.value


def test_step_scorers_must_name_nodes_that_run(judge_server):
    error = _refused(
        "INVALID_WORKFLOW_SCORERS",
        "names ['drafts'], which the workflow does not run",
        judge_server,
        {"steps": {"drafts": [checks.includes("x")]}},
    )
    assert "'category', 'draft', 'reply'" in error.message


def test_agent_configs_and_conversations_are_refused_for_workflows(judge_server):
    _refused("INVALID_WORKFLOW_SCORERS", "agent config", judge_server, {"agent": []})
    _refused(
        "NO_SCORERS_PROVIDED",
        "At least one workflow, step, or trajectory scorer must be provided",
        judge_server,
        {"workflow": [], "steps": {}, "trajectory": []},
    )
    _refused(
        "INVALID_DATA_ITEM",
        "only supported for agent targets",
        judge_server,
        data=[{"inputs": ["a", "b"]}],
    )


def test_bad_workflow_arguments_are_named():
    with pytest.raises(EvalDagError, match="needs a Hamilton driver"):
        evaldag.workflow("support_flow")
    with pytest.raises(EvalDagError, match=r"\['answer'\] are not nodes"):
        evaldag.workflow(_flow(), ["answer"])
    with pytest.raises(EvalDagError, match="config= is for modules"):
        evaldag.workflow(driver.Builder().with_modules(_flow()).build(), config={"a": 1})


def test_an_input_that_fits_no_input_is_the_items_error():
    with pytest.raises(evaldag.UntrustworthyRunError) as raised:
        run_evals(
            [{"input": "hello"}],
            target=evaldag.workflow(_flow()),
            scorers=[checks.includes("x")],  # the list form scores the workflow's output too
        )
    assert "input_name=" in raised.value.result.items["target_error"][0]
