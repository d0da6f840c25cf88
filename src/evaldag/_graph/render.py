"""Pictures of the graphs: the compact view (scorers as boxes) and Hamilton's full drawing
(written to files by :mod:`evaldag._io.pictures`).

The compact view names its boxes after the Hamilton nodes they stand for (``<id>``,
``<id>.threshold_result``, ``<gate>.gate_result``, ``verdict``), with each scorer's step nodes
listed inside; the full view draws every node as Hamilton does.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from evaldag._graph.plan import EvalPlan
from evaldag._scorer.steps import ScorerSpec
from evaldag._scorer.thresholds import threshold_text

if TYPE_CHECKING:
    import graphviz
    from hamilton import driver

_PROMPT = {"fillcolor": "#f6d7a7", "style": "rounded,filled"}
_SCORER = {"fillcolor": "#c8e6c9", "style": "rounded,filled"}
_AGGREGATION = {"fillcolor": "#d1c4e9", "style": "rounded,filled"}
_GATE = {"fillcolor": "#ffcdd2", "style": "rounded,filled"}
_VERDICT_NODES = ("gate_results", "threshold_results", "verdict")
_AGGREGATION_NODES = ("scores", "summary", "usage", "eval_result")


def _prompt_nodes(scorers: Iterable[ScorerSpec]) -> set[str]:
    return {f"{s.id}.{st.value_name}" for s in scorers for st in s.steps if st.kind == "prompt"}


def _style(plan: EvalPlan) -> Callable[..., tuple]:
    prompt_nodes = _prompt_nodes(plan.all_scorers)
    scorer_ids = {s.id for s in plan.all_scorers}

    def style(*, node, node_class):
        name = node.name
        if name in prompt_nodes:
            return _PROMPT, node_class, "LLM judge step"
        if name.endswith((".gate_result", ".threshold_result")) or name in _VERDICT_NODES:
            return _GATE, node_class, "gate / threshold / verdict"
        if name in scorer_ids:
            return _SCORER, node_class, "scorer output"
        if name.endswith(".average") or name in _AGGREGATION_NODES:
            return _AGGREGATION, node_class, "aggregation"
        return {}, node_class, None

    return style


def full_picture(dr: driver.Driver, plan: EvalPlan) -> graphviz.Digraph:
    """Every node of ``dr`` (an eval's or a scorer's) as Hamilton draws it, LLM steps and the
    verdict's nodes styled apart.

    The config (the plan, the ``@config.when`` switches) is left out of the picture: the nodes
    it selects already show it.
    """
    from hamilton.graph import VisualizationNodeModifiers

    nodes = set(dr.graph.nodes.values())
    return dr.graph.display(
        nodes,
        node_modifiers={
            n.name: {VisualizationNodeModifiers.IS_USER_INPUT} for n in nodes if n.user_defined
        },
        show_legend=True,
        deduplicate_inputs=True,
        custom_style_function=_style(plan),
        config={},
    )


def _scorer_box(scorer: ScorerSpec, role: str) -> str:
    rows = [f'<TR><TD COLSPAN="2"><B>{html.escape(scorer.id)}</B> <I>{role}</I></TD></TR>']
    if scorer.prepare_run is not None:
        rows.append(
            f'<TR><TD ALIGN="LEFT" TITLE="{html.escape(scorer.id)}.prepared_run">prepared_run'
            '</TD><TD ALIGN="LEFT"><I>function</I></TD></TR>'
        )
    for step in scorer.steps:
        node = html.escape(f"{scorer.id}.{step.value_name}")
        prompt = step.kind == "prompt"
        fill = ' BGCOLOR="#f6d7a7"' if prompt else ""
        rows.append(
            f'<TR><TD ALIGN="LEFT" PORT="{step.value_name}" TITLE="{node}"{fill}>'
            f'{step.value_name}</TD><TD ALIGN="LEFT"{fill}>'
            f"<I>{'LLM judge' if prompt else 'function'}</I></TD></TR>"
        )
    return f'<<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="0">{"".join(rows)}</TABLE>>'


def compact_picture(plan: EvalPlan) -> graphviz.Digraph:
    """The eval at a glance: data, target, each scorer as a box listing its steps, the
    gates and thresholds, and the verdict."""
    import graphviz

    picture = graphviz.Digraph("evaldag", graph_attr={"rankdir": "LR", "fontname": "Helvetica"})
    picture.attr("node", fontname="Helvetica", shape="box", style="rounded")
    picture.node("dataset", "data")
    source = "dataset"
    if plan.target is not None:
        picture.node("outputs", "target → outputs")
        picture.edge("dataset", "outputs")
        source = "outputs"
    picture.node("verdict", "verdict", **_GATE)
    picture.node("scores", "scores (averages)", **_AGGREGATION)
    gates = set(plan.gate_ids)
    for scorer in plan.all_scorers:
        role = "gate" if scorer.id in gates else "scorer"
        picture.node(scorer.id, _scorer_box(scorer, role), shape="plain")
        picture.edge(source, scorer.id)
        if role == "gate":
            check = f"{scorer.id}.gate_result"
            picture.node(check, "gate: average = 1", **_GATE)
        elif scorer.id in plan.thresholds:
            check = f"{scorer.id}.threshold_result"
            picture.node(check, f"average {threshold_text(plan.thresholds[scorer.id])}", **_GATE)
        else:
            picture.edge(scorer.id, "scores")
            continue
        picture.edge(scorer.id, check)
        picture.edge(check, "verdict")
    return picture
