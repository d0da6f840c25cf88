"""The eval graph in one pass: every item, what the run measured and the run's own values are
inputs of the verdict's nodes (nothing is overridden from outside, no node reads process-wide
state, the picture is no value of the graph), and each transcript is read once."""

import pickle

import pandas as pd
import pytest

import evaldag._reader
from evaldag import checks, run_evals
from evaldag._eval.eval_plan import eval_plan
from evaldag._graph.drivers import eval_driver

MESSAGES = pd.DataFrame(
    {
        "input": [[{"role": "user", "content": f"question {i}"}] for i in range(6)],
        "output": [
            [{"role": "assistant", "content": f"{'ok' if i % 2 else 'no'} {i}"}] for i in range(6)
        ],
    }
)


def test_the_verdicts_nodes_take_the_items_and_what_the_run_measured_as_inputs():
    nodes = eval_driver(eval_plan([checks.includes("ok")], [], None)).graph.nodes
    for name in ("items", "judge_limits", "judge_cache_problems", "dataset", "run_fields"):
        assert nodes[name].user_defined, name
    assert {"dag_dot", "run_started"}.isdisjoint(nodes)
    assert {d.name for d in nodes["usage"].dependencies} == {"items", "judge_limits"}


def test_the_result_keeps_the_picture_of_the_graph_it_came_from():
    result = run_evals(MESSAGES, scorers=[checks.includes("ok")], progress=False)
    unpickled = pickle.loads(pickle.dumps(result))  # drawn for pickling: a drawing does not pickle
    assert "digraph {" in result.dag_dot
    assert "check-includes" in result.dag_dot and "eval_result" in result.dag_dot
    assert unpickled.dag_dot == result.dag_dot
    assert result.model_dump()["dag_dot"] == result.dag_dot


@pytest.fixture
def reads(monkeypatch):
    """The field of every list of messages read into Mastra's shape (a list already in it
    passes as it is, uncounted)."""
    real = evaldag._reader._read_list
    calls = []

    def counted(value, field, role):
        calls.append(field)
        return real(value, field, role)

    monkeypatch.setattr(evaldag._reader, "_read_list", counted)
    return calls


def test_each_transcript_of_the_data_is_read_once(reads):
    result = run_evals(MESSAGES, scorers=[checks.includes("ok")], progress=False)
    assert result.items["check-includes.score"].tolist() == [0, 1, 0, 1, 0, 1]
    assert sorted(reads) == ["input"] * 6 + ["output"] * 6


def test_each_transcript_a_target_returns_is_read_once(reads):
    def target(input):
        return [{"role": "assistant", "content": f"ok, {input}"}]

    data = pd.DataFrame({"input": [f"question {i}" for i in range(4)]})
    result = run_evals(data, scorers=[checks.includes("ok")], target=target, progress=False)
    assert result.items["check-includes.score"].tolist() == [1] * 4
    assert reads == ["output"] * 4
