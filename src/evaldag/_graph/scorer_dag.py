"""Where a scorer becomes a Hamilton DAG.

Each scorer is a ``@subdag`` namespaced by its id, whose body is a ``@pipe_input`` chain with one
node per step in call order::

    runs → <id>.prepared_run → <id>.preprocess → <id>.analyze → <id>.generate_score
         → <id>.generate_reason → <id>.outcomes → <id>

Stage nodes are columnar: they map a ``pd.Series`` of run states to the next one, so a whole
dataset is one ``execute()``. A repeated stage is named ``<stage>_2``, ``<stage>_3`` … The
``Scorer`` object stays out of node values (closures carry it), so node results pickle.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
import pyarrow as pa
from hamilton import ad_hoc_utils, driver
from hamilton.function_modifiers import pipe_input, source, step, subdag

from evaldag._engine.run_state import (
    SCORER_COLUMNS,
    advanced_states,
    prepared_states,
    scored_columns,
)
from evaldag._scorer.steps import Step
from evaldag.errors import EvalDagError

if TYPE_CHECKING:
    import graphviz

    from evaldag._results.scorer_result import ScorerResult
    from evaldag._scorer.builder import Scorer
    from evaldag._scorer.run import ScorerRun
    from evaldag.errors import ScorerRunError


def _stage_node(scorer: Scorer, stage_step: Step) -> Callable[..., pd.Series]:
    def stage(states: pd.Series, concurrency: int) -> pd.Series:
        advanced = advanced_states(list(states), scorer, stage_step, concurrency)
        return pd.Series(advanced, index=states.index, dtype=object)

    stage.__doc__ = f"Runs after the {stage_step.stage} step ({stage_step.kind})."
    return stage


def scorer_subdag(scorer: Scorer) -> Callable[..., pd.DataFrame]:
    """The node function named after ``scorer.id``, with the scorer's subdag behind it."""

    def prepared_run(runs: pd.Series, concurrency: int) -> pd.Series:
        """Each run after prepare_run, with its run_id set."""
        states = prepared_states(runs, scorer, concurrency)
        return pd.Series(states, index=runs.index, dtype=object)

    def outcomes(prepared_run: pd.Series) -> pd.Series:
        """Each run's final state: its results, or the ScorerRunError that stopped it."""
        return prepared_run

    chain = [
        step(_stage_node(scorer, s), concurrency=source("concurrency")).named(
            s.node_name, namespace=None
        )
        for s in scorer.steps
    ]
    outcomes = pipe_input(*chain)(outcomes) if chain else outcomes

    stages = [s.stage for s in scorer.steps]

    def scored(outcomes: pd.Series) -> pd.DataFrame:
        return scored_frame(outcomes, stages)

    scored.__name__ = scored.__qualname__ = scorer.id
    scored.__doc__ = f"Per run: score, reason, error, steps and judge records of '{scorer.id}'."
    return subdag(prepared_run, outcomes, namespace=scorer.id)(scored)


#: Text columns hold Arrow strings: compact, and missing values cost no objects.
TEXT = pd.StringDtype("pyarrow")


def text_series(values: list[str | None], index: pd.Index) -> pd.Series:
    """``values`` as an Arrow-backed string column (built by Arrow, much faster than pandas)."""
    array = pd.arrays.ArrowStringArray(pa.array(values, type=pa.large_string()))
    return pd.Series(array, index=index, copy=False)


def _category_series(values: list[Any], categories: list[Any], labels: list[str]) -> pd.Series:
    # A run's failed step and completed steps take few values, all known from the scorer's steps:
    # one byte per row, and the same categories in every batch so that batches concatenate.
    codes = {value: code for code, value in enumerate(categories)}
    codes[None] = -1
    return pd.Categorical.from_codes([codes[v] for v in values], categories=labels)


def scored_frame(outcomes: pd.Series, stages: list[str]) -> pd.DataFrame:
    """One row per run, the columns of ``SCORER_COLUMNS`` (see ``pipeline.scored_columns``).

    :param stages: the scorer's step stages in order, which fix the categories of
        ``failed_step`` (any stage, ``prepare_run`` or ``target``) and ``completed_steps``
        (a prefix of the stages, as JSON text).
    """
    index = outcomes.index
    columns = scored_columns(list(outcomes))
    failed = sorted({*stages, "prepare_run", "target"})
    prefixes = [tuple(stages[:n]) for n in range(len(stages) + 1)]
    frame = {
        "score": pd.Series(columns["score"], index=index, dtype="float64"),
        "failed_step": pd.Series(
            _category_series(columns["failed_step"], failed, failed), index=index
        ),
        "completed_steps": pd.Series(
            _category_series(
                columns["completed_steps"], prefixes, [json.dumps(p) for p in prefixes]
            ),
            index=index,
        ),
    }
    for column in ("reason", "error", "not_scorable", "steps", "judge"):
        frame[column] = text_series(columns[column], index)
    return pd.DataFrame(frame)[list(SCORER_COLUMNS)]


def built_driver(
    nodes: Sequence[Callable[..., Any]], builder: driver.Builder | None = None
) -> driver.Driver:
    """A Hamilton driver over node functions (``builder`` may carry executors and adapters)."""
    module = ad_hoc_utils.create_temporary_module(*nodes)
    try:
        return (builder or driver.Builder()).with_modules(module).build()
    finally:
        # Hamilton finds the functions through sys.modules while building; once built, the
        # driver holds them (and Dask or Ray workers receive them pickled by value).
        sys.modules.pop(module.__name__, None)


def scorers_driver(scorers: Sequence[Scorer]) -> driver.Driver:
    """One Hamilton driver over the subdags of ``scorers``; its inputs are ``runs`` and
    ``concurrency``."""
    return built_driver([scorer_subdag(s) for s in scorers])


def scorer_driver(scorer: Scorer) -> driver.Driver:
    """The driver of one scorer's DAG (what ``scorer.run`` executes)."""
    return scorers_driver([scorer])


def scorer_outcomes(
    dr: driver.Driver, scorer: Scorer, runs: Sequence[ScorerRun], *, concurrency: int
) -> list[ScorerResult | ScorerRunError]:
    """Run ``runs`` through ``scorer``'s nodes in ``dr``: one result or error per run."""
    node = f"{scorer.id}.outcomes"
    states = dr.execute(
        [node], inputs={"runs": pd.Series(list(runs), dtype=object), "concurrency": concurrency}
    )[node]
    return [state.outcome() for state in states]


def _style(prompt_nodes: set[str], scorer_ids: set[str]) -> Callable[..., tuple]:
    def style(*, node, node_class):
        if node.name in prompt_nodes:
            return {"fillcolor": "#f6d7a7", "style": "rounded,filled"}, node_class, "LLM judge step"
        if node.name in scorer_ids:
            return {"fillcolor": "#c8e6c9", "style": "rounded,filled"}, node_class, "scorer output"
        return {}, node_class, None

    return style


def rendered(dr: driver.Driver, scorers: Sequence[Scorer], path: str | None) -> graphviz.Digraph:
    """The DAG of ``dr`` as a graphviz object, LLM steps highlighted; written to ``path`` if given.

    ``.dot`` paths get the DOT text; other suffixes (``.png``, ``.svg``, ``.pdf``) need Graphviz's
    ``dot`` program.
    """
    prompt_nodes = {
        f"{scorer.id}.{s.node_name}"
        for scorer in scorers
        for s in scorer.steps
        if s.kind == "prompt"
    }
    digraph = dr.display_all_functions(
        None,
        deduplicate_inputs=True,
        custom_style_function=_style(prompt_nodes, {scorer.id for scorer in scorers}),
    )
    if path is not None:
        write_picture(digraph, path)
    return digraph


def write_picture(digraph: graphviz.Digraph, path: str | os.PathLike[str]) -> Path:
    """Write ``digraph`` to ``path``, in the format its suffix names."""
    target = Path(path)
    fmt = target.suffix.lstrip(".").lower()
    if fmt == "dot" or fmt == "gv":
        target.write_text(digraph.source)
        return target
    import graphviz

    if fmt not in graphviz.FORMATS:
        raise EvalDagError(
            "EVALDAG_UNKNOWN_PICTURE_FORMAT",
            f"Cannot write a DAG picture as '{target.name}': use a .png, .svg, .pdf or .dot path",
            details={"path": str(target)},
        )
    if shutil.which("dot") is None:
        raise EvalDagError(
            "EVALDAG_GRAPHVIZ_MISSING",
            f"Writing {target.name} needs Graphviz's 'dot' program, which is not on PATH. Install "
            "it (apt-get install graphviz, brew install graphviz) or write a .dot file instead.",
            category="SYSTEM",
            details={"path": str(target)},
        )
    rendered_path = digraph.render(outfile=str(target), format=fmt, cleanup=True, engine="dot")
    return Path(rendered_path)
