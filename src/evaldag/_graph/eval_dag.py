"""The eval as one Hamilton DAG: data → outputs → runs → every scorer → items → verdict.

::

    dataset → outputs → runs → <scorer id>.prepared_run → … → <scorer id> ┐
                                                                          ├→ batch_items
                         … every scorer and gate …                        ┘
    batch_items → items → <id>.average → <gate>.gate_result / <id>.threshold_result
                → verdict → eval_result

``dataset`` is one batch of rows: run_evals executes the graph up to ``batch_items`` per batch
and sets ``items`` to their concatenation; with a Dask or Ray executor, ``dataset`` is a
``Parallelizable`` of batches and ``items`` collects them. Scorer subdags come from
``evaldag._graph.scorer_dag``; aggregation bodies from ``evaldag._graph.verdict``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
from hamilton import driver
from hamilton.execution import executors
from hamilton.execution.executors import TaskExecutor
from hamilton.function_modifiers import group, inject, parameterize, source, value
from hamilton.htypes import Collect, Parallelizable

from evaldag._engine.concurrency import gc_paused
from evaldag._engine.run_state import SCORER_COLUMNS
from evaldag._engine.targets import TargetFailure, target_outputs
from evaldag._eval.dataset import RUN_FIELDS
from evaldag._graph import verdict as aggregation
from evaldag._graph.scorer_dag import TEXT, built_driver, scorer_subdag, write_picture
from evaldag._results.eval_result import (
    EvalResult,
    GateResult,
    ScoreAverage,
    ScorerUsage,
    Summary,
    ThresholdResult,
    Verdict,
)
from evaldag._scorer.run import ScorerRun
from evaldag._scorer.thresholds import ThresholdSpec

if TYPE_CHECKING:
    import graphviz

    from evaldag._scorer.builder import Scorer


@dataclass(frozen=True)
class EvalPlan:
    """What one eval runs: scorers (with thresholds), gates and an optional target."""

    scorers: tuple[Scorer, ...]
    gates: tuple[Scorer, ...]
    thresholds: dict[str, ThresholdSpec]
    target: Callable[..., Any] | None = None

    @property
    def all_scorers(self) -> tuple[Scorer, ...]:
        return (*self.scorers, *self.gates)

    def definitions(self) -> list[dict[str, Any]]:
        """JSON-ready description of every scorer and gate, kept with the results."""
        gate_ids = {g.id for g in self.gates}
        return [
            {
                "id": s.id,
                "name": s.name,
                "description": s.description,
                "role": "gate" if s.id in gate_ids else "scorer",
                "threshold": self.thresholds.get(s.id),
                "steps": [{"name": st["name"], "type": st["type"]} for st in s.get_steps()],
            }
            for s in self.all_scorers
        ]


def _source_nodes(plan: EvalPlan) -> list[Callable[..., Any]]:
    target = plan.target

    def outputs(dataset: pd.DataFrame, concurrency: int) -> pd.Series:
        """Each item's output: the data's, or what the target produced (or a TargetFailure)."""
        if target is None:
            return dataset["output"]
        contexts = (
            dataset["request_context"].tolist()
            if "request_context" in dataset.columns
            else [None] * len(dataset)
        )
        produced = target_outputs(target, dataset["input"].tolist(), contexts, concurrency)
        return pd.Series(produced, index=dataset.index, dtype=object)

    def runs(dataset: pd.DataFrame, outputs: pd.Series) -> pd.Series:
        """One ScorerRun per item the target did not fail on, with a fresh run_id."""
        present = [field for field in RUN_FIELDS[2:] if field in dataset.columns]
        columns = [dataset[field].tolist() for field in present]
        values, index = [], []
        ids = run_ids(len(dataset))
        with gc_paused():
            for label, input, output, *cells in zip(
                dataset.index.tolist(),
                dataset["input"].tolist(),
                outputs.tolist(),
                *columns,
                strict=True,
            ):
                if isinstance(output, TargetFailure):
                    continue
                fields = {field: _cell(cell) for field, cell in zip(present, cells, strict=True)}
                values.append(ScorerRun(input=input, output=output, run_id=next(ids), **fields))
                index.append(label)
        return pd.Series(values, index=pd.Index(index, dtype=dataset.index.dtype), dtype=object)

    return [outputs, runs]


def run_ids(count: int) -> Iterator[str]:
    """``count`` random version-4 UUID strings, from one read of the OS's random source."""
    random = os.urandom(16 * count)
    for start in range(0, 16 * count, 16):
        h = random[start : start + 16].hex()
        variant = "89ab"[int(h[16], 16) & 3]
        yield f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{variant}{h[17:20]}-{h[20:]}"


def _cell(value: Any) -> Any:
    """A dataset cell as a run field: pandas' missing markers become None."""
    if value is None or (isinstance(value, float) and value != value):
        return None
    return value


def _batch_items_node(plan: EvalPlan) -> Callable[..., pd.DataFrame]:
    ids = [s.id for s in plan.all_scorers]
    has_target = plan.target is not None

    @inject(scored=group(**{sid: source(sid) for sid in ids}))
    def batch_items(
        dataset: pd.DataFrame, outputs: pd.Series, runs: pd.Series, scored: dict[str, pd.DataFrame]
    ) -> pd.DataFrame:
        """One row per item of the batch: its columns, the output, every scorer's columns."""
        index = dataset.index
        columns: dict[str, Any] = {column: dataset[column] for column in dataset.columns}
        failures = [o if isinstance(o, TargetFailure) else None for o in outputs]
        failed = pd.Series([f is not None for f in failures], index=index)
        if has_target:
            columns["output"] = pd.Series(
                [None if f else o for f, o in zip(failures, outputs, strict=True)],
                index=index,
                dtype=object,
            )
            columns["target_error"] = pd.Series(
                [f and f"{f.error_type}: {f.message}" for f in failures], index=index, dtype=TEXT
            )
        skipped = pd.Series(
            [f and f"target failed: {f.message}" for f in failures], index=index, dtype=TEXT
        )
        columns["run_id"] = pd.Series(
            [run.run_id for run in runs], index=runs.index, dtype=TEXT
        ).reindex(index)
        for sid in ids:
            frame = scored[sid].reindex(index)
            for column in SCORER_COLUMNS:
                columns[f"{sid}.{column}"] = frame[column]
            if failed.any():
                columns[f"{sid}.error"] = frame["error"].where(~failed, skipped)
                columns[f"{sid}.failed_step"] = frame["failed_step"].where(~failed, "target")
        return pd.DataFrame(columns, index=dataset.index)

    return batch_items


def _batch_nodes(distributed: bool) -> list[Callable[..., Any]]:
    if not distributed:

        def items(batch_items: pd.DataFrame) -> pd.DataFrame:
            """All items. run_evals executes the graph batch by batch and sets it to their
            concatenation, keeping memory flat and reporting progress between batches."""
            return batch_items

        return [items]

    def dataset(data: pd.DataFrame, batch_size: int) -> Parallelizable[pd.DataFrame]:
        """The data in row batches, each run through the scorers as one task."""
        for start in range(0, len(data), batch_size):
            yield data.iloc[start : start + batch_size]

    def items(batch_items: Collect[pd.DataFrame]) -> pd.DataFrame:
        """All items, collected from the batches in order."""
        return pd.concat(list(batch_items))

    return [dataset, items]


def _aggregation_nodes(plan: EvalPlan) -> list[Callable[..., Any]]:
    gate_ids = [g.id for g in plan.gates]
    scorer_ids = [s.id for s in plan.scorers]
    threshold_ids = [sid for sid in scorer_ids if sid in plan.thresholds]

    @parameterize(
        **{
            f"{sid}.average": {"scorer_id": value(sid), "errors_score_zero": value(sid in gate_ids)}
            for sid in [*scorer_ids, *gate_ids]
        }
    )
    def average(items: pd.DataFrame, scorer_id: str, errors_score_zero: bool) -> ScoreAverage:
        """The scorer's mean score and what was left out of it."""
        scored = items[[f"{scorer_id}.{c}" for c in ("score", "error", "not_scorable")]]
        return aggregation.average(
            scored.set_axis(["score", "error", "not_scorable"], axis=1), errors_score_zero
        )

    nodes: list[Callable[..., Any]] = [average]
    if gate_ids:

        @parameterize(
            **{
                f"{gid}.gate_result": {
                    "score_average": source(f"{gid}.average"),
                    "gate_id": value(gid),
                }
                for gid in gate_ids
            }
        )
        def gate_result(score_average: ScoreAverage, gate_id: str) -> GateResult | None:
            """Whether the gate's average reached 1.0."""
            return aggregation.gate_result(score_average, gate_id)

        @inject(results=group(*[source(f"{gid}.gate_result") for gid in gate_ids]))
        def gate_results(results: list[GateResult | None]) -> list[GateResult]:
            """The gates that produced a result, in configuration order."""
            return [r for r in results if r is not None]

        nodes += [gate_result, gate_results]
    else:

        def gate_results() -> list[GateResult]:
            """No gates configured."""
            return []

        nodes.append(gate_results)
    if threshold_ids:

        @parameterize(
            **{
                f"{sid}.threshold_result": {
                    "score_average": source(f"{sid}.average"),
                    "scorer_id": value(sid),
                    "threshold": value(plan.thresholds[sid]),
                }
                for sid in threshold_ids
            }
        )
        def threshold_result(
            score_average: ScoreAverage, scorer_id: str, threshold: ThresholdSpec
        ) -> ThresholdResult | None:
            """Whether the scorer's average met its threshold."""
            return aggregation.threshold_result(score_average, scorer_id, threshold)

        @inject(results=group(*[source(f"{sid}.threshold_result") for sid in threshold_ids]))
        def threshold_results(results: list[ThresholdResult | None]) -> list[ThresholdResult]:
            """The thresholds that produced a result, in configuration order."""
            return [r for r in results if r is not None]

        nodes += [threshold_result, threshold_results]
    else:

        def threshold_results() -> list[ThresholdResult]:
            """No thresholds configured."""
            return []

        nodes.append(threshold_results)

    if scorer_ids:

        @inject(averages=group(**{sid: source(f"{sid}.average") for sid in scorer_ids}))
        def scores(averages: dict[str, ScoreAverage]) -> dict[str, float]:
            """Scorer id → average score."""
            return aggregation.scores(averages)

    else:

        def scores() -> dict[str, float]:
            """No scorers besides gates: no averages."""
            return {}

    @inject(averages=group(**{sid: source(f"{sid}.average") for sid in [*scorer_ids, *gate_ids]}))
    def summary(items: pd.DataFrame, averages: dict[str, ScoreAverage]) -> Summary:
        """Item count, and not-scorable and failed items per scorer."""
        target_errors = int(items["target_error"].notna().sum()) if "target_error" in items else 0
        return Summary(
            total_items=len(items),
            not_scorable={sid: a.not_scorable for sid, a in averages.items() if a.not_scorable},
            errors={sid: a.errors for sid, a in averages.items() if a.errors},
            target_errors=target_errors,
        )

    def verdict(
        gate_results: list[GateResult], threshold_results: list[ThresholdResult]
    ) -> Verdict | None:
        """passed, scored or failed; None without gates and thresholds."""
        return aggregation.verdict(gate_results, threshold_results)

    all_ids = [*scorer_ids, *gate_ids]

    def usage(items: pd.DataFrame) -> dict[str, ScorerUsage]:
        """Judge calls, tokens and cost per scorer, and in total."""
        return judge_usage(items, all_ids)

    definitions = plan.definitions()

    def eval_result(
        scores: dict[str, float],
        summary: Summary,
        gate_results: list[GateResult],
        threshold_results: list[ThresholdResult],
        verdict: Verdict | None,
        items: pd.DataFrame,
        usage: dict[str, ScorerUsage],
        dag_dot: str,
    ) -> EvalResult:
        """Everything the run produced, with the DAG's DOT text."""
        return EvalResult(
            scores=scores,
            summary=summary,
            gate_results=gate_results,
            threshold_results=threshold_results,
            verdict=verdict,
            items=items,
            usage=usage,
            scorers=definitions,
            dag_dot=dag_dot,
        )

    return [*nodes, scores, summary, verdict, usage, eval_result]


def judge_usage(items: pd.DataFrame, scorer_ids: Sequence[str]) -> dict[str, ScorerUsage]:
    """Sum the judge records in ``items`` per scorer; ``total`` sums them all."""
    totals: dict[str, dict[str, float]] = {}
    for sid in scorer_ids:
        usage = {"calls": 0, "input_tokens": 0, "output_tokens": 0, "total_tokens": 0}
        cost = 0.0
        for text in items[f"{sid}.judge"].dropna():
            for executions in json.loads(text).values():
                for execution in executions:
                    usage["calls"] += execution.get("modelCallCount", 0)
                    tokens = execution.get("usage") or {}
                    usage["input_tokens"] += tokens.get("inputTokens") or 0
                    usage["output_tokens"] += tokens.get("outputTokens") or 0
                    usage["total_tokens"] += tokens.get("totalTokens") or (
                        (tokens.get("inputTokens") or 0) + (tokens.get("outputTokens") or 0)
                    )
                    cost += (execution.get("cost") or {}).get("totalUsd") or 0.0
        if usage["calls"]:
            totals[sid] = {**usage, "cost_usd": cost}
    if totals:
        totals["total"] = {
            key: sum(t[key] for t in totals.values()) for key in next(iter(totals.values()))
        }
    return {key: ScorerUsage(**value) for key, value in totals.items()}


def eval_driver(plan: EvalPlan, executor: TaskExecutor | None = None) -> driver.Driver:
    """One driver for the whole eval: every scorer and gate, items and aggregations.

    :param executor: a Hamilton task executor (Dask, Ray) to run row batches on; the graph then
        fans out over ``dataset: Parallelizable`` batches of the ``data`` input and collects
        them into ``items``.
    """
    nodes = [
        *_source_nodes(plan),
        *(scorer_subdag(s) for s in plan.all_scorers),
        _batch_items_node(plan),
        *_batch_nodes(executor is not None),
        *_aggregation_nodes(plan),
    ]
    builder = driver.Builder()
    if executor is not None:
        builder = (
            builder.enable_dynamic_execution(allow_experimental_mode=True)
            .with_local_executor(executors.SynchronousLocalTaskExecutor())
            .with_remote_executor(executor)
        )
    return built_driver(nodes, builder)


_AGGREGATION_STYLE = {"fillcolor": "#d1c4e9", "style": "rounded,filled"}
_GATE_STYLE = {"fillcolor": "#ffcdd2", "style": "rounded,filled"}


def _style(plan: EvalPlan) -> Callable[..., tuple]:
    prompt_nodes = {
        f"{s.id}.{st.node_name}" for s in plan.all_scorers for st in s.steps if st.kind == "prompt"
    }
    scorer_ids = {s.id for s in plan.all_scorers}

    def style(*, node, node_class):
        name = node.name
        if name in prompt_nodes:
            return {"fillcolor": "#f6d7a7", "style": "rounded,filled"}, node_class, "LLM judge step"
        if name.endswith((".gate_result", ".threshold_result")) or name in (
            "gate_results",
            "threshold_results",
            "verdict",
        ):
            return _GATE_STYLE, node_class, "gate / threshold / verdict"
        if name in scorer_ids:
            return {"fillcolor": "#c8e6c9", "style": "rounded,filled"}, node_class, "scorer output"
        if name.endswith(".average") or name in ("scores", "summary", "usage", "eval_result"):
            return _AGGREGATION_STYLE, node_class, "aggregation"
        return {}, node_class, None

    return style


def eval_graph(dr: driver.Driver, plan: EvalPlan) -> graphviz.Digraph:
    """The eval's DAG, LLM stages and gate/threshold/verdict nodes styled apart, with a legend."""
    return dr.display_all_functions(
        None, deduplicate_inputs=True, show_legend=True, custom_style_function=_style(plan)
    )


def rendered_definitions(dot: str, path: str | Path | None) -> graphviz.Source:
    """A stored DOT text as a graphviz object, written to ``path`` if given."""
    import graphviz

    source = graphviz.Source(dot)
    if path is not None:
        write_picture(source, path)
    return source
