"""A workflow that fails at a node: the item is a recorded error for its workflow scorers and
the failed node's step scorers, while the nodes that completed before the failure are still
scored by their step scorers and the path up to it by the trajectory scorers (Mastra scores the
steps whose status is success, and extracts the trajectory of a failed run too, spec §6.4)."""

from __future__ import annotations

import pandas as pd
import pytest
from judge_server import API_KEY, MODEL
from test_workflow_target import _flow

import evaldag
from evaldag import checks, create_scorer, run_evals, scorers

PATH = {"steps": [{"name": "category"}, {"name": "draft"}, {"name": "reply"}]}


def _target(server):
    model = {"model": f"openai/{MODEL}", "api_base": server.url, "api_key": API_KEY}
    return evaldag.workflow(_flow(), ["reply"], inputs=model)


def _probe(name, seen):
    return create_scorer(name, type="trajectory").generate_score(
        lambda run: seen.append(run.output) or 1
    )


def test_the_nodes_before_the_failure_and_the_path_are_scored(judge_server):
    judge_server.on("refund", "")  # reply raises on the empty draft: the last node fails
    judge_server.reply = "Your invoice is on its way."
    trajectories = []
    result = run_evals(
        [
            {"id": "ok", "input": "Where is my invoice?", "ground_truth": "billing"},
            {"id": "failed", "input": "I want a refund", "ground_truth": "other"},
        ],
        target=_target(judge_server),
        scorers={
            "workflow": [checks.includes("support team")],
            "steps": {
                "category": [
                    create_scorer("right").generate_score(
                        lambda run: float(run.output == run.ground_truth)
                    )
                ],
                "draft": [checks.includes("invoice")],
                "reply": [checks.includes("--")],
            },
            "trajectory": [
                scorers.trajectory_accuracy(PATH, {"ordering": "strict"}),
                _probe("probe", trajectories),
            ],
        },
    )
    items = result.items.set_index("id")
    error = "ValueError: node 'reply' failed: the model gave an empty draft"
    assert items.loc["failed", "target_error"] == error
    assert items.loc["failed", "output"] is None
    # The workflow's output and the failed node's own step scorers: the item's error.
    for sid in ("workflow.check-includes", "steps.reply.check-includes"):
        assert items.loc["failed", f"{sid}.error"] == f"target failed: {error[12:]}"
        assert items.loc["failed", f"{sid}.failed_step"] == "target"
        assert items.loc["ok", f"{sid}.score"] == 1.0
    # The nodes that completed before the failure: scored as for any item.
    assert items.loc["failed", "steps.category.right.score"] == 1.0
    assert items.loc["failed", "steps.draft.check-includes.score"] == 0.0
    assert items["steps.draft.check-includes.error"].isna().all()
    # The path up to the failure, the failed node last.
    accuracy = "trajectory.code-trajectory-accuracy-scorer"
    # reply ran (and failed), so the path holds every expected node, in order.
    assert items[f"{accuracy}.score"].tolist() == [1.0, 1.0]
    assert items[f"{accuracy}.error"].isna().all()
    failed = next(t for t in trajectories if t["steps"][-1]["status"] == "failed")
    assert [s["name"] for s in failed["steps"]] == ["category", "draft", "reply"]
    assert [s["status"] for s in failed["steps"]] == ["success", "success", "failed"]
    assert "output" not in failed["steps"][-1]
    assert failed["totalDurationMs"] >= 10  # reply sleeps 10 ms before it raises
    # Every item has a run id, the failed one included (its step and trajectory rows carry it).
    assert items["run_id"].notna().all()
    assert result.summary.target_errors == 1
    assert result.summary.errors == {"workflow.check-includes": 1, "steps.reply.check-includes": 1}
    assert result.scores["steps.category.right"] == 1.0
    assert result.scores["steps.draft.check-includes"] == 0.5


def test_a_failure_at_the_first_node_leaves_only_the_path(judge_server):
    judge_server.reply = "Sorry."
    trajectories = []
    result = run_evals(
        [{"input": "it crashed"}, {"input": "hello"}],
        target=_target(judge_server),
        scorers={
            "steps": {"draft": [checks.includes("S")], "category": [checks.includes("other")]},
            "trajectory": [_probe("probe", trajectories)],
        },
        max_error_share=1,
    )
    items = result.items
    # draft never ran: the item's error, as for the failed category (Mastra skips it silently).
    assert items["steps.draft.check-includes.score"].tolist()[1] == 1.0
    assert items["steps.draft.check-includes.error"][0].startswith("target failed: node")
    assert items["steps.draft.check-includes.failed_step"][0] == "target"
    assert pd.isna(items["steps.draft.check-includes.score"][0])
    assert items["steps.category.check-includes.error"][0].startswith("target failed: node")
    failed = next(t for t in trajectories if len(t["steps"]) == 1)
    assert [(s["name"], s["status"]) for s in failed["steps"]] == [("category", "failed")]
    assert len(judge_server.requests) == 1  # the crashed ticket never reached the model


def test_a_workflow_refused_before_any_node_fails_every_scorer():
    with pytest.raises(evaldag.UntrustworthyRunError) as raised:
        run_evals(
            [{"input": "hello"}],
            target=evaldag.workflow(_flow()),  # several required inputs: a string fits none
            scorers={
                "steps": {"category": [checks.includes("x")]},
                "trajectory": [checks.includes("x")],
            },
        )
    items = raised.value.result.items
    assert "input_name=" in items["target_error"][0]
    for sid in ("steps.category.check-includes", "trajectory.check-includes"):
        assert items[f"{sid}.error"][0].startswith("target failed"), sid


def test_a_trajectory_gate_reads_the_path_up_to_the_failure(judge_server):
    judge_server.on("refund", "")
    judge_server.reply = "Fine."
    reached = create_scorer("reached-draft", type="trajectory").generate_score(
        lambda run: float("draft" in [s["name"] for s in run.output["steps"]])
    )
    result = run_evals(
        [{"input": "I want a refund"}, {"input": "hello"}],
        target=_target(judge_server),
        scorers={"workflow": [checks.includes("Fine")]},
        gates=[reached],
    )
    assert result.items["reached-draft.score"].tolist() == [1.0, 1.0]
    assert result.items["reached-draft.error"].isna().all()
    assert result.gate_results[0].passed
    assert result.verdict == "failed"  # the workflow failed on an item


def test_a_final_node_returning_none_is_the_items_error_and_earlier_nodes_are_scored():
    """A node that forgot its return gives no output: the item's target error, not an empty
    answer every excludes check passes; the nodes before it are still scored."""
    from hamilton import ad_hoc_utils

    def retrieved(input: str) -> list:
        return [f"a passage about {input}"]

    def answer(retrieved: list) -> str:
        if "cats" not in retrieved[0]:
            return "an answer"

    flow = ad_hoc_utils.create_temporary_module(retrieved, answer, module_name="forgetful_flow")
    result = run_evals(
        [{"input": "cats"}, {"input": "dogs"}],
        target=evaldag.workflow(flow, ["answer"]),
        scorers={
            "workflow": [checks.excludes("refund")],
            "steps": {"retrieved": [checks.excludes("refund", id="passages")]},
        },
    )
    assert result.items["target_error"][0] == (
        "TypeError: node 'answer' returned None; the final variable is the item's output, a "
        "text or a transcript (did the function forget its return?)"
    )
    assert result.items["workflow.check-excludes.failed_step"][0] == "target"
    assert result.items["steps.retrieved.passages.score"].tolist() == [1.0, 1.0]


def test_a_step_the_failure_kept_from_running_fails_its_threshold():
    """A step scorer of a node after the failure checked nothing on that item: its threshold
    fails, where a skipped item would leave the run's only assertions passing on the others."""
    result = run_evals(
        [{"input": "good"}, {"input": "bad"}],
        target=evaldag.workflow(_three_nodes(), ["reply"]),
        scorers={"steps": {"reply": [checks.excludes("secret").with_threshold(1.0)]}},
    )
    items = result.items
    assert items["steps.reply.check-excludes.error"].tolist()[1] == (
        "target failed: node 'cleaned' failed: cannot clean"
    )
    assert result.summary.errors == {"steps.reply.check-excludes": 1}
    assert not result.threshold_results[0].passed
    assert result.verdict != "passed"


def _three_nodes():
    from hamilton import ad_hoc_utils

    def cleaned(input: str) -> str:
        if "bad" in input:
            raise ValueError("cannot clean")
        return input.strip()

    def draft(cleaned: str) -> str:
        return f"draft {cleaned}"

    def reply(draft: str) -> str:
        return f"{draft}!"

    return ad_hoc_utils.create_temporary_module(cleaned, draft, reply, module_name="three_nodes")
