"""A saved batch scored again by the scorers that changed since (``run_evals(resume="refresh")``).

The batch's saved outputs are kept (the target is not called again: its run is rebuilt from the
saved ``output`` and ``target_error``), its items keep their run ids, and the scorers that did
not change keep their columns; the changed ones run through the eval DAG of a plan holding only
them, and their columns replace the saved ones. A conversation's turn rows are kept as saved:
when a turn's gates or scorers changed, the checkpoint runs every batch again whole
(``evaldag._eval.checkpoint``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pandas as pd
from hamilton import driver

from evaldag._engine.targets import TargetFailure, TargetRun
from evaldag._eval.checkpoint import SavedBatch
from evaldag._graph.drivers import eval_driver
from evaldag._graph.plan import EvalPlan, last_node
from evaldag._results.item_columns import SCORER_COLUMNS, ScorerColumns

#: In the values of a batch scored again: the ids of the scorers that were.
RESCORED = "rescored"


def ordered_items(items: pd.DataFrame, plan: EvalPlan) -> pd.DataFrame:
    """``items`` with the scorers' columns in the plan's order, after the item's own columns,
    then their trials' columns, as a batch scored whole has them."""
    scored = [f"{s.id}.{c}" for s in plan.all_scorers for c in SCORER_COLUMNS]
    trials = [c for s in plan.all_scorers for c in ScorerColumns(s.id).trials if c in items]
    taken = {*scored, *trials}
    return items[[c for c in items.columns if c not in taken] + scored + trials]


def _target_run(output: Any, error: Any) -> TargetRun | TargetFailure:
    """The target's run of an item as its saved columns tell it."""
    if isinstance(error, str):
        kind, _, message = error.partition(": ")  # batch_items wrote "<type>: <message>"
        return TargetFailure(message, kind)
    return TargetRun(output)


class Rescoring:
    """Scores saved batches again for their stale scorers, one driver per set of them."""

    def __init__(self, plan: EvalPlan) -> None:
        self.plan = plan
        self._drivers: dict[tuple[str, ...], tuple[EvalPlan, driver.Driver]] = {}

    def _driver(self, stale: tuple[str, ...]) -> tuple[EvalPlan, driver.Driver]:
        if stale not in self._drivers:
            plan = dataclasses.replace(
                self.plan,
                scorers=tuple(s for s in self.plan.scorers if s.id in stale),
                gates=tuple(g for g in self.plan.gates if g.id in stale),
                thresholds={},
            )
            self._drivers[stale] = (plan, eval_driver(plan))
        return self._drivers[stale]

    def values(
        self, saved: SavedBatch, rows: pd.DataFrame, inputs: dict[str, Any], states: bool
    ) -> dict[str, Any]:
        """The batch's items with the stale scorers' columns scored again, under
        ``batch_items``; its saved turn rows, under ``turn_items``; with ``states``, the stale
        scorers' last nodes too (for ``on_error="raise"``).

        :param inputs: the graph's inputs beside ``dataset`` (concurrency, judge cache, ...).
        """
        plan, dr = self._driver(saved.stale)
        items = saved.items
        wanted = ["batch_items"] + ([last_node(s) for s in plan.all_scorers] if states else [])
        overrides = {}
        if plan.target is not None:
            errors = items["target_error"] if "target_error" in items else [None] * len(items)
            runs = [_target_run(o, e) for o, e in zip(items["output"], errors, strict=True)]
            overrides["target_runs"] = pd.Series(runs, index=rows.index, dtype=object)
        values = dr.execute(
            wanted,
            inputs={"dataset": rows.assign(run_id=items["run_id"]), **inputs},
            overrides=overrides,
        )
        fresh = values["batch_items"]
        columns = {f"{sid}.{c}": fresh[f"{sid}.{c}"] for sid in saved.stale for c in SCORER_COLUMNS}
        # A trial's columns of a stale scorer are gone with its scores (trials add them again).
        gone = [c for sid in saved.stale for c in ScorerColumns(sid).trials if c in items]
        merged = items.drop(columns=gone).assign(**columns)
        turns = {} if saved.turns is None else {"turn_items": saved.turns}
        return {
            **values,
            **turns,
            "batch_items": ordered_items(merged, self.plan),
            RESCORED: saved.stale,
        }
