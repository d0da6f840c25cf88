"""Where a scorer becomes a Hamilton DAG: one node per step, named after the value it holds.

::

    runs → <id>.prepared_run → <id>.preprocessed → <id>.analyzed → <id>.scored
         → <id>.reasoned → <id>

Each node maps a column of runs (a ``pd.Series`` of run states) to the next, so a whole batch
is one ``execute()``; a repeated stage is ``<id>.analyzed_2``, … ``<id>`` holds the scorer's
item columns. The functions below are written once; ``@resolve`` maps them over the scorers
of the ``plan`` config with ``@parameterize``, which is all that is generated per scorer.
Scorers and steps reach the nodes as bound values, never as node results, so results pickle.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from hamilton.function_modifiers import ResolveAt, parameterize, resolve, source, value

from evaldag._engine.columns import scored_frame
from evaldag._engine.stages import advanced_states, prepared_states
from evaldag._graph.plan import EvalPlan, last_node
from evaldag._judge.budget import JudgeBudget
from evaldag._scorer.steps import ScorerSpec, Step

#: A judge-cache setting: a directory, True for the default one, False for none, None to let
#: each judge's own setting decide.
JudgeCacheSetting = bool | str | Path | None


def _prepared_runs(plan: EvalPlan) -> parameterize:
    return parameterize(
        **{
            f"{s.id}.prepared_run": {"runs": source(plan.runs_of(s)), "scorer": value(s)}
            for s in plan.all_scorers
        }
    )


def _step_nodes(plan: EvalPlan) -> parameterize:
    nodes = {}
    for scorer in plan.all_scorers:
        previous = f"{scorer.id}.prepared_run"
        for step in scorer.steps:
            name = f"{scorer.id}.{step.value_name}"
            nodes[name] = {
                "states": source(previous),
                "scorer": value(scorer),
                "step": value(step),
                "settle": value(step is scorer.steps[-1]),
            }
            previous = name
    return parameterize(**nodes)


def _item_frames(plan: EvalPlan) -> parameterize:
    return parameterize(
        **{
            s.id: {
                "states": source(last_node(s)),
                "stages": value(tuple(st.stage for st in s.steps)),
            }
            for s in plan.all_scorers
        }
    )


@resolve(when=ResolveAt.CONFIG_AVAILABLE, decorate_with=_prepared_runs)
def prepared_run(
    runs: pd.Series, scorer: ScorerSpec, concurrency: int, step_timeout: float | None = None
) -> pd.Series:
    """Each run after the scorer's prepare_run, with its run_id set."""
    prepared = prepared_states(runs, scorer, concurrency, step_timeout)
    return pd.Series(prepared, index=runs.index, dtype=object)


@resolve(when=ResolveAt.CONFIG_AVAILABLE, decorate_with=_step_nodes)
def step_states(
    states: pd.Series,
    scorer: ScorerSpec,
    step: Step,
    settle: bool,
    concurrency: int,
    judge_cache: JudgeCacheSetting = None,
    judge_budget: JudgeBudget | None = None,
    step_timeout: float | None = None,
) -> pd.Series:
    """Each run after the step: its result added, or the error or not-scorable that ends it
    (a step longer than the scorer's ``step_timeout``, else the run's, ends in an error).

    Before the scorer's last step, runs still waiting on the judge are pending states that
    the next step chains onto, so no run waits for the slowest of a step; the last step
    (``settle``) waits for all of them.
    """
    advanced = advanced_states(
        list(states),
        scorer,
        step,
        concurrency,
        judge_cache,
        settle=settle,
        budget=judge_budget,
        step_timeout=step_timeout,
    )
    return pd.Series(advanced, index=states.index, dtype=object)


@resolve(when=ResolveAt.CONFIG_AVAILABLE, decorate_with=_item_frames)
def scorer_items(states: pd.Series, stages: tuple[str, ...]) -> pd.DataFrame:
    """Per run: score, reason, error, failed and completed steps, step details, judge records."""
    return scored_frame(states, list(stages))
