"""Draw the pictures of the three target kinds in ``docs/concepts.md`` from the real DAGs.

Each picture is a target and the part of the eval DAG it feeds, both read from the Hamilton
graphs ``run_evals`` would run, not drawn by hand:

- ``images/target-function.svg``: a function target, then ``target_runs → outputs → runs`` and
  the scorers reading ``runs``;
- ``images/target-agent.svg``: ``evaldag.agent``'s tool-calling loop (its model and tools), then
  the agent scorers on ``runs`` and the trajectory scorers on ``trajectory_runs``;
- ``images/target-workflow.svg``: the ``rag_pipeline_steps`` dataflow's own Hamilton DAG, its
  nodes recorded by lifecycle hooks into ``steps.<node>.runs`` and ``trajectory_runs``, and
  the workflow, step and trajectory scorers.

Run ``python docs/gen_pictures.py`` after changing the eval DAG's target nodes (it needs
Graphviz's ``dot``); ``--dot`` writes the DOT text beside each picture instead, which needs
nothing. No model is called.
"""

from __future__ import annotations

import html
import importlib.util
import inspect
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import graphviz

import evaldag
from evaldag import checks, scorers
from evaldag._eval.run_evals import eval_plan
from evaldag._graph.drivers import eval_driver
from evaldag._graph.plan import EvalPlan

IMAGES = Path(__file__).with_name("images")
DATAFLOW = Path(__file__).resolve().parents[1] / "dataflows" / "rag_pipeline_steps"
#: The eval DAG's nodes between the data and the scorers: what a target's outputs go through.
_RUN_NODES = (
    "dataset",
    "target_runs",
    "read_outputs",
    "outputs",
    "item_runs",
    "runs",
    "trajectory_runs",
)
_TARGET = {"style": "rounded,filled", "fillcolor": "#fff3c4"}
_EVAL = {"style": "rounded,filled", "fillcolor": "#b3dfe8"}
_SCORER = {"style": "rounded,filled", "fillcolor": "#c8e6c9"}
_RECORDED = {"style": "dashed", "color": "#7a7a7a", "fontcolor": "#555555"}
#: What some edges of the eval DAG carry, by (upstream node, node).
_EDGE_LABELS = {
    ("runs", "trajectory_runs"): "extractTrajectory\nof the messages",
    ("target_runs", "trajectory_runs"): "execution path",
}


def support_answer(input: str) -> str:
    """The app under test: a question in, an answer (a text or a transcript) out."""
    return f"About {input!r}: ..."


def get_weather(location: str) -> dict:
    """Get current weather for a location.

    :param location: City name
    """
    return {"location": location, "temperature": 22}


def _picture(name: str) -> graphviz.Digraph:
    picture = graphviz.Digraph(
        name,
        graph_attr={"rankdir": "LR", "fontname": "Helvetica", "fontsize": "12", "nodesep": "0.3"},
        node_attr={"fontname": "Helvetica", "fontsize": "11", "shape": "box", "style": "rounded"},
        edge_attr={"fontname": "Helvetica", "fontsize": "9"},
    )
    return picture


def _signature(function: Callable[..., Any]) -> str:
    return f"{function.__name__}{inspect.signature(function, eval_str=True)}"


def _eval_part(picture: graphviz.Digraph, plan: EvalPlan) -> None:
    """The eval DAG from the data to the scorers: its run nodes and their edges as Hamilton has
    them, each scorer (a box of its step nodes) on the runs it reads, then the verdict."""
    nodes = eval_driver(plan).graph.nodes
    shown = {
        name
        for name in nodes
        if name in _RUN_NODES or (name.startswith("steps.") and name.endswith(".runs"))
    }
    for name in sorted(shown):
        picture.node(name, name, **_EVAL)
        for dependency in nodes[name].dependencies:
            if dependency.name in shown:
                label = _EDGE_LABELS.get((dependency.name, name), "")
                if dependency.name == "target_runs" and name.startswith("steps."):
                    label = "the node's inputs, output"
                picture.edge(dependency.name, name, label=label)
    picture.node("verdict", "items → averages, gates,\nthresholds → verdict", **_EVAL)
    gates = set(plan.gate_ids)
    for scorer in plan.all_scorers:
        steps = " → ".join(step.value_name for step in scorer.steps)
        role = "gate" if scorer.id in gates else "scorer"
        label = f"<<B>{html.escape(scorer.id)}</B> <I>{role}</I><BR/>{html.escape(steps)}>"
        picture.node(scorer.id, label, **_SCORER)
        picture.edge(plan.runs_of(scorer), scorer.id)
        picture.edge(scorer.id, "verdict")


def function_picture() -> graphviz.Digraph:
    """A function target: one call per item; its output is what the scorers read."""
    plan = eval_plan(
        [checks.includes("Hamilton"), scorers.completeness()],
        [checks.excludes("as an AI")],
        support_answer,
    )
    picture = _picture("target_function")
    with picture.subgraph(name="cluster_target") as target:
        target.attr(label="target: a function (sync or async)", style="rounded", color="#c9a227")
        target.node(
            "function", _signature(support_answer) + "\n→ a text or any transcript", **_TARGET
        )
    picture.edge("function", "target_runs", label="one call per item")
    _eval_part(picture, plan)
    return picture


def agent_picture() -> graphviz.Digraph:
    """An agent target: a tool-calling loop per turn; its messages and their trajectory."""
    agent = evaldag.agent("openai/gpt-4o-mini", tools=[get_weather], instructions="...")
    plan = eval_plan(
        {"agent": [checks.includes("°C")], "trajectory": [scorers.trajectory_accuracy()]},
        [checks.called_tool("get_weather"), checks.no_tool_errors()],
        agent,
    )
    picture = _picture("target_agent")
    with picture.subgraph(name="cluster_target") as target:
        target.attr(label="target: evaldag.agent(...)", style="rounded", color="#c9a227")
        target.node("asked", "instructions, earlier turns,\nthe item's input", **_TARGET)
        target.node(
            "model",
            f"model {agent.model.model}\n(judge transport: http or litellm;\n"
            f"at most {agent.max_steps} calls a turn)",
            **_TARGET,
        )
        for tool in agent.tools:
            target.node(
                f"tool_{tool.name}",
                f"tool {tool.name}\n{tool.schema['function']['description']}",
                **_TARGET,
            )
            target.edge("model", f"tool_{tool.name}", label="tool calls")
            target.edge(f"tool_{tool.name}", "model", label="results, errors")
        target.node(
            "message",
            "assistant message\n(Mastra format 2: text,\ntool-invocation parts)",
            **_TARGET,
        )
        target.edge("asked", "model")
        target.edge("model", "message", label="final text")
    picture.edge("message", "target_runs", label="one turn per input")
    _eval_part(picture, plan)
    return picture


def _dataflow() -> Any:
    name = "rag_pipeline_steps"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, DATAFLOW / "__init__.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # Hamilton finds a module's functions through it
        spec.loader.exec_module(module)
    return sys.modules[name]


def workflow_picture() -> graphviz.Digraph:
    """A workflow target: a Hamilton dataflow run per item, each node recorded by hooks."""
    rag = _dataflow()
    flow = rag.rag_workflow({"louvre": "The Louvre opens at 9 am."})
    plan = eval_plan(rag.step_scorers(), [], flow)
    graph = flow.driver.graph
    ran, _ = graph.get_upstream_nodes(list(flow.final_vars))
    picture = _picture("target_workflow")
    with picture.subgraph(name="cluster_target") as target:
        target.attr(
            label="target: evaldag.workflow(rag_pipeline_steps), one execution per item",
            style="rounded",
            color="#c9a227",
        )
        for node in sorted(ran, key=lambda n: n.name):
            if node.name == flow.input_name:
                target.node(f"flow.{node.name}", f"{node.name} ← the item's input", shape="note")
            elif node.user_defined:
                target.node(f"flow.{node.name}", node.name, shape="note", color="#9e9e9e")
            else:
                target.node(f"flow.{node.name}", node.name, **_TARGET)
        for node in ran:
            for dependency in node.dependencies:
                target.edge(f"flow.{dependency.name}", f"flow.{node.name}")
    for final in flow.final_vars:
        picture.edge(f"flow.{final}", "target_runs", label="final variables → output")
    for step in plan.steps:
        picture.edge(f"flow.{step}", f"steps.{step}.runs", label="lifecycle hooks", **_RECORDED)
    _eval_part(picture, plan)
    return picture


PICTURES: dict[str, Callable[[], graphviz.Digraph]] = {
    "target-function": function_picture,
    "target-agent": agent_picture,
    "target-workflow": workflow_picture,
}


def written(names: Iterable[str], *, dot_only: bool = False) -> list[Path]:
    """Draw the pictures ``names`` into ``docs/images/`` (SVG, or DOT text with ``dot_only``)."""
    IMAGES.mkdir(exist_ok=True)
    paths = []
    for name in names:
        picture = PICTURES[name]()
        if dot_only:
            path = IMAGES / f"{name}.dot"
            path.write_text(picture.source)
        else:
            path = IMAGES / f"{name}.svg"
            path.write_bytes(picture.pipe(format="svg"))
        paths.append(path)
    return paths


if __name__ == "__main__":
    for path in written(PICTURES, dot_only="--dot" in sys.argv[1:]):
        print(path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path)
