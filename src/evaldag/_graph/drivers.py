"""Hamilton drivers over the graph modules."""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

import pandas as pd
from hamilton import driver

from evaldag._graph import eval_dag, scorer_dag, target_dag, turn_dag, verdict
from evaldag._graph.plan import EvalPlan, last_node
from evaldag._graph.scorer_dag import JudgeCacheSetting
from evaldag._scorer.steps import ScorerSpec
from evaldag.errors import ConfigurationError

if TYPE_CHECKING:
    from evaldag._engine.run_state import RunState
    from evaldag._results.scorer_result import ScorerResult
    from evaldag._scorer.run import ScorerRun
    from evaldag.errors import ScorerRunError


#: Hamilton's loggers that report a failing node (its traceback, a plea to join Slack).
_FAILURE_LOGGERS = ("hamilton.execution.graph_functions", "hamilton.driver")


class _RaisedToTheCaller(logging.Filter):
    """Drops Hamilton's logs of a node failing with a ConfigurationError: run_evals raises it
    with its own message, which a traceback ahead of it would bury."""

    def filter(self, record: logging.LogRecord) -> bool:
        # Hamilton logs the plea while handling the error, without exc_info.
        error = record.exc_info[1] if record.exc_info else sys.exc_info()[1]
        return not isinstance(error, ConfigurationError)


_RAISED = _RaisedToTheCaller()


def eval_driver(plan: EvalPlan) -> driver.Driver:
    """One driver for the whole eval: every scorer and gate, and the verdict; ``items`` is an
    input: the batches' ``batch_items``, each batch one ``execute()``."""
    for name in _FAILURE_LOGGERS:
        if _RAISED not in logging.getLogger(name).filters:
            logging.getLogger(name).addFilter(_RAISED)
    return (
        driver.Builder()
        .with_modules(eval_dag, target_dag, turn_dag, scorer_dag, verdict)
        .with_config(plan.config())
        .build()
    )


def scorers_driver(scorers: Sequence[ScorerSpec]) -> driver.Driver:
    """A driver over the DAGs of ``scorers``; its inputs are ``runs``, ``concurrency`` and
    ``judge_cache``."""
    plan = EvalPlan(scorers=tuple(scorers))
    return driver.Builder().with_modules(scorer_dag).with_config(plan.config()).build()


def scorer_outcomes(
    dr: driver.Driver,
    scorer: ScorerSpec,
    runs: Sequence[ScorerRun],
    *,
    concurrency: int,
    judge_cache: JudgeCacheSetting = None,
) -> list[ScorerResult | ScorerRunError]:
    """Run ``runs`` through ``scorer``'s nodes in ``dr``: one result or error per run."""
    states = scorer_states(dr, scorer, runs, concurrency=concurrency, judge_cache=judge_cache)
    return [state.outcome() for state in states]


def scorer_states(
    dr: driver.Driver,
    scorer: ScorerSpec,
    runs: Sequence[ScorerRun],
    *,
    concurrency: int,
    judge_cache: JudgeCacheSetting = None,
    step_timeout: float | None = None,
) -> list[RunState]:
    """Run ``runs`` through ``scorer``'s nodes in ``dr``: the state each run ends in (a step
    longer than the scorer's ``step_timeout``, else ``step_timeout``, ends in an error)."""
    node = last_node(scorer)
    # Hamilton's execution ends in a reference cycle (its traversal is a closure that calls
    # itself) holding the values it computed: given as computed values, and cleared once read,
    # the runs and their states are freed now rather than at the collector's next pass, which
    # would scan every object of them (10 ms a batch of 256 traces).
    computed = {
        "runs": pd.Series(list(runs), dtype=object),
        "concurrency": concurrency,
        "judge_cache": judge_cache,
        "step_timeout": step_timeout,
    }
    try:
        dr.graph.execute([dr.graph.nodes[node]], computed=computed, inputs={})
        return list(computed[node])
    finally:
        computed.clear()
