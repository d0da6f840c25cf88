"""``visualize``: the DAG ``run_evals`` would run for a configuration, drawn."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from evaldag._eval.eval_plan import eval_plan
from evaldag._eval.scorer_configs import require_some_scorer
from evaldag._graph.drivers import eval_driver
from evaldag._graph.render import compact_picture, full_picture
from evaldag._io.pictures import write_picture
from evaldag._scorer.builder import Scorer

if TYPE_CHECKING:
    import graphviz


def visualize(
    *,
    scorers: Iterable[Any] = (),
    gates: Iterable[Scorer] = (),
    target: Any = None,
    path: str | os.PathLike[str] | None = None,
    full: bool = False,
) -> graphviz.Digraph:
    """The DAG ``run_evals`` would run for this configuration, written to ``path`` if given.

    The compact view shows each scorer as a box listing its steps, then the gates, thresholds
    and verdict; ``full=True`` draws every Hamilton node. PNG and SVG need Graphviz's ``dot``
    program; a ``.dot`` path gets the DOT text.
    """
    plan = eval_plan(scorers, gates, target)
    require_some_scorer(plan.all_scorers, turn_assertions=False)
    digraph = full_picture(eval_driver(plan), plan) if full else compact_picture(plan)
    if path is not None:
        write_picture(digraph, path)
    return digraph
