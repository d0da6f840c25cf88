"""The plan of one eval: its scorer configuration read, its target resolved; what ``run_evals``,
``visualize`` and ``cost_estimate`` build their graphs from."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from evaldag._engine.targets import target_callable
from evaldag._eval.scorer_configs import scorer_config
from evaldag._graph.plan import EvalPlan
from evaldag._targets.workflow import as_workflow


def eval_plan(scorers: Any, gates: Iterable[Any], target: Any) -> EvalPlan:
    """The scorers (keyed as their configuration nests them), gates, thresholds and target of an
    eval; a workflow target is checked to have the nodes its step scorers name.

    :param scorers: a list of scorers, or an agent or workflow configuration (as ``run_evals``).
    :param target: None, a function, a litellm model string, an agent or a Hamilton dataflow.
    """
    flow = as_workflow(target)
    config = scorer_config(scorers, gates, workflow_target=flow is not None)
    if flow is not None:
        flow.require_nodes(config.steps)
    return EvalPlan(
        scorers=config.scorers,
        gates=config.gates,
        thresholds=config.thresholds,
        sources=config.sources,
        target=flow or (None if target is None else target_callable(target)),
        workflow=flow is not None,
        steps=config.steps,
    )
