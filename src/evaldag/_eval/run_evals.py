"""``run_evals``: a dataset in, scores, gates, thresholds and a verdict out.

The eval is one Hamilton DAG (``evaldag._graph.eval_dag``). Items go through it in row batches, each
batch one ``execute()`` of the columnar scorer nodes; the aggregation nodes then run once over
all items. Batches keep memory flat on large datasets and give progress, callbacks and
fail-fast a place to act between them; with judges or a target, the next batch runs beside the
current one's last rows (``evaldag._eval.batches``).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterable, Mapping
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import pandas as pd
from hamilton import driver

from evaldag._cluster.batches import ClusterBatches, PreparedRun, cluster_batches
from evaldag._eval.checkpoint import (
    PARTS_SUFFIX,
    Checkpoint,
    ResultsDirectory,
    Resume,
    checked_resume,
    finished_run,
    run_experiment_id,
    run_fingerprint,
)
from evaldag._eval.column_mapping import column_mapping
from evaldag._eval.eval_plan import eval_plan
from evaldag._eval.local_batches import scored_items, waits
from evaldag._eval.measures import JudgeMeasures
from evaldag._eval.preflight import checked_data, scorer_judges
from evaldag._eval.stored_parts import StoredParts
from evaldag._eval.streamed_batches import (
    StreamSettings,
    require_streamable,
    streamed_data,
    streamed_items,
    streams,
    verdict_columns,
)
from evaldag._eval.telemetry import RunTelemetry, traced_result, traced_run
from evaldag._eval.trials import ReducerSetting, with_trials
from evaldag._eval.trust import checked_share, require_trustworthy, trust_marked
from evaldag._graph.drivers import eval_driver
from evaldag._graph.plan import EvalPlan, last_node
from evaldag._graph.render import full_picture
from evaldag._io.flat import results_format, write_flat
from evaldag._io.parquet import is_results_directory, writable_directory, writable_path
from evaldag._io.parquet_data import ParquetBatches
from evaldag._judge.budget import JudgeBudget, require_prices
from evaldag._judge.settings import cache_location
from evaldag._judge.transport import require_caches
from evaldag._results.eval_result import EvalResult, checked_name
from evaldag._scorer.builder import Scorer
from evaldag._scorer.time_limits import (
    DEFAULT_STEP_TIMEOUT,
    DEFAULT_TARGET_TIMEOUT,
    checked_time_limit,
)
from evaldag._util.gc_pause import heap_frozen
from evaldag._util.lock_handover import quick_lock_handover
from evaldag.errors import EvalDagError, ResultNotSavedError, error_message

if TYPE_CHECKING:
    from evaldag._store.stores import ScoreStore

_FUNCTION_BATCH = 20_000
#: Items per batch of a run with judge or target calls, in rounds of ``concurrency`` calls:
#: small batches keep progress moving, and lose no concurrency as the next batch runs beside
#: the current one's last rows.
_WAITING_BATCH_ROUNDS = 8
#: The same on a cluster, where a batch costs more (sent to a worker, its results sent back to
#: the client, the scheduler's bookkeeping of both).
_CLUSTER_BATCH_ROUNDS = 32


def _batch_size(plan: EvalPlan, concurrency: int, batch_size: int | None, on_cluster: bool) -> int:
    if batch_size is not None:
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
            raise EvalDagError(
                "INVALID_BATCH_SIZE", f"batch_size must be an integer >= 1, got {batch_size!r}"
            )
        return batch_size
    if not waits(plan):
        return _FUNCTION_BATCH
    return max(64, concurrency * (_CLUSTER_BATCH_ROUNDS if on_cluster else _WAITING_BATCH_ROUNDS))


def run_evals(
    data: Any,
    *,
    scorers: Any = (),
    gates: Iterable[Scorer] = (),
    target: Any = None,
    columns: Mapping[str, str] | None = None,
    concurrency: int = 8,
    on_item_complete: Callable[..., Any] | None = None,
    on_error: Literal["record", "raise"] = "record",
    progress: bool | None = None,
    batch_size: int | None = None,
    out: str | os.PathLike[str] | None = None,
    store: ScoreStore | str | os.PathLike[str] | None = None,
    name: str | None = None,
    checkpoint: str | os.PathLike[str] | None = None,
    resume: bool | Literal["refresh"] = True,
    executor: Any = None,
    cache: bool | str | os.PathLike[str] | None = None,
    max_error_share: float = 1.0,
    budget_usd: float | None = None,
    step_timeout: float | None = DEFAULT_STEP_TIMEOUT,
    target_timeout: float | None = DEFAULT_TARGET_TIMEOUT,
    trials: int = 1,
    reducer: ReducerSetting = "mean",
) -> EvalResult:
    """Score every item of ``data`` with every scorer and gate, then aggregate.

    :param data: a DataFrame (``input``; ``output`` unless a target produces it; optional
        ``ground_truth``, ``request_context``, ``expected_trajectory``; other columns carried
        through) or a table with ``to_pandas()`` (pyarrow, polars, Hugging Face ``datasets``),
        a list of dicts, or a path to a ``.parquet``, ``.csv`` or ``.jsonl`` file; or Parquet
        files as a directory, a glob or an fsspec URL (``"s3://bucket/evals/*.parquet"``),
        read batch by batch where each batch runs, never whole (as is a single ``.parquet``
        file with ``executor=`` or ``out=`` a directory; see docs/cluster.md).
        With a target, an item may be a conversation: ``inputs`` (turns in order on one thread)
        or ``turns`` (``[{"input", "gates", "scorers"}]``, each turn with its own assertions).
        ``columns=`` reads these fields from columns named otherwise.
    :param scorers: scorers, ``scorer.with_threshold(...)`` or ``{"scorer": s, "threshold": t}``;
        or Mastra's agent config ``{"agent": [...], "trajectory": [...]}`` or workflow config
        ``{"workflow": [...], "steps": {"<node>": [...]}, "trajectory": [...]}``, whose results
        are keyed ``agent.<id>``, ``trajectory.<id>``, ``workflow.<id>``, ``steps.<node>.<id>``.
    :param gates: scorers whose average must be 1.0, e.g. checks.
    :param target: produces outputs: a function of the input (sync or async; gets
        ``request_context``, ``thread_id`` and ``history`` if it has those parameters) returning
        a text or a transcript, ``evaldag.agent(...)``, a litellm model string, or a Hamilton
        dataflow (``evaldag.workflow(...)``, a driver or a module), run once per item.
    :param columns: run field → the data column holding it, for data that names the fields
        otherwise: ``{"input": "question", "output": "answer", "ground_truth": "reference"}``
        (also ``request_context``, ``expected_trajectory``, ``inputs`` and ``turns``). The
        results' items keep the data's names (``result.columns`` holds the mapping). A scorer's
        own column, as ``context="contexts"``, is named on the scorer, by the data's name.
    :param concurrency: judge, async-step and target calls in flight at once.
    :param on_item_complete: ``f(item, target_result, scorer_results)`` after each item, batch
        by batch in dataset order (with streamed data too: the arguments come back with the
        batch from where it was scored). What it raises stops the run as an
        ``OnItemCompleteError`` naming the item and carrying the items scored so far (a
        ``checkpoint`` keeps them too).
    :param on_error: ``"record"`` keeps a scorer's error in its item row and goes on;
        ``"raise"`` stops at the first scorer error, as Mastra does.
    :param progress: show progress: items done, rate and failed items (default: a bar on a
        terminal for runs over a second; elsewhere, as in CI logs, a line every 5 % of the
        items or 30 s for runs over 5 s).
    :param batch_size: items per DAG execution (default: 20,000; ``concurrency * 8`` when
        judges or a target are involved, the next batch then running beside the current one's
        last rows; ``concurrency * 32`` then on a cluster, where a batch costs more).
    :param out: write the results to this file: ``.parquet`` (everything), or ``.csv`` /
        ``.jsonl`` (the items; lists and dicts as JSON, in a CSV cell as JSON text;
        ``evaldag.read_results`` reads any of them back); or to a directory (a path without
        suffix): each batch's items in ``part-NNNNN.parquet`` as it finishes (its
        conversations' turn rows in ``turns-part-NNNNN.parquet``), then ``summary.json``
        (``EvalResult.read_parquet`` reads it back whole). The directory is
        the run's checkpoint: run again with the same ``out``, the parts still valid are kept
        (``resume`` as for ``checkpoint``) and the run keeps its experiment id. With streamed
        data, the result then holds only the item columns its verdict reads.
    :param store: save the run and every item's scores (``source="TEST"`` rows) in this score
        store: a ``ScoreStore``, a SQLite file path or a database URL (``postgresql://...``, or
        the scheme of a store ``evaldag.register_store`` added). It is opened (and its
        tables checked) before anything runs. With streamed data and ``out`` a directory, each
        part's rows are saved as its batch finishes, then the run. A results file or store that
        cannot take the run (a full disk, a locked database) raises ``ResultNotSavedError``
        carrying the result, after writing what can be written.
    :param name: the run's name, beside its generated ``experiment_id``: kept in the result, its
        Parquet file and the store, where ``evaldag compare``, ``store.result`` and the report
        find a run by name as well as by id. Runs may share a name (``"nightly"``); looked up by
        it, the latest one is meant.
    :param checkpoint: a Parquet path that makes the run resumable: finished batches are
        saved as they complete (a conversation's turn rows too), a rerun after a crash scores
        only what is missing, and the finished results are written there; used only when
        nothing that decides a result changed: the data, the target and each scorer (a turn's
        gates and scorers too), with the code they reach in your modules.
    :param resume: with ``checkpoint``: True goes on from it, refusing a stale one with an error
        naming what changed; ``"refresh"`` recomputes what is stale instead (the items of
        changed or new scorers on the saved outputs; everything when the target or a turn's
        gates, scorers or thresholds changed); False starts afresh. Saved batches (and parts
        taken from ``out`` a directory) call no ``on_item_complete``.
    :param cache: judge reply cache for judges that set none: a directory, a database URL
        (``"postgresql://user@host/db"``, which the workers of a cluster and runs on other
        machines share; ``"sqlite:///path"``), True for ``$EVALDAG_CACHE_DIR`` (else
        ``~/.cache/evaldag``), False for none (a checkpoint still journals the replies of its
        run, until it is complete).
    :param executor: run the row batches as tasks on a cluster: ``"dask"`` (a local one),
        ``"dask://HOST:PORT"`` (a scheduler) or a ``dask.distributed.Client``; ``"ray"`` (the
        Ray cluster of ``RAY_ADDRESS`` or this machine, else a local one) or
        ``"ray://HOST:PORT"``. Every option works as in a local run, with the same results;
        the judge limits and ``budget_usd`` hold for the whole cluster (see docs/cluster.md).
    :param max_error_share: the share of items a scorer, gate or the target may fail on; above
        it, or when one fails on every item (or on every item it did not find not scorable; a
        turn's scorer and gate on the turns it ran on), the run raises
        ``UntrustworthyRunError`` (carrying the result, after writing ``out``) instead of
        returning a verdict, as it does when no scorer or gate could score any item.
    :param budget_usd: stop judging once the judge calls have cost this many US dollars
        (litellm's prices): items whose judge was not called yet are not scorable, with a
        ``budget`` reason, and fail their scorer's gate or threshold; what was scored is kept.
        Calls in flight finish.
    :param step_timeout: seconds each scorer step (and ``prepare_run``) may take on one item,
        for scorers that set no ``step_timeout`` of their own (default 600; None for no limit:
        a step that never returns then holds the run forever). A step that
        overruns it is that item's error (the scorer's ``error`` column names the step and the
        limit, ``failed_step`` the step) and the run goes on. An async step is cancelled; a sync
        step cannot be stopped, so its thread runs on and its result is dropped. A prompt
        step's judge call is bounded by the judge's ``timeout`` per attempt instead.
    :param target_timeout: seconds each call of the target (each turn of a conversation) may
        take (default 1800; None for no limit); an item whose call overruns it has a
        ``target_error`` naming the limit, and the run goes on. An async target is cancelled;
        a sync one's thread runs on.
    :param trials: score each item this many times with every scorer that has a judge (a
        prompt step), each trial its own judge calls (the reply cache keys them by trial);
        scorers without one are deterministic and score once. The target runs once. Each
        repeated scorer's items get its trials' scores, their mean, spread and verdict flips
        (``<id>.trial_scores``, ``.trial_mean``, ``.trial_spread``, ``.trial_flips``) and
        ``summary.trials`` its run-to-run standard deviation, flip share and a cluster-bootstrap
        interval.
    :param reducer: how an item's trial scores become its score (``<id>.score``, which
        averages, gates and thresholds read): ``"mean"``, ``"median"``, ``"mode"``, ``"max"``,
        ``"min"``, ``evaldag.pass_at_k(k)`` or ``evaldag.pass_hat_k(k)`` (also as text,
        ``"pass_at_k(3)"``); one for every judged scorer, or a dict by scorer id (``"mean"``
        for those it leaves out).
    """
    plan = eval_plan(scorers, gates, target)
    mapping = column_mapping(columns)
    max_error_share = checked_share(max_error_share)
    name = checked_name(name)
    budget = None if budget_usd is None else JudgeBudget(budget_usd)
    time_limits = {
        "step_timeout": checked_time_limit(step_timeout, "step_timeout"),
        "target_timeout": checked_time_limit(target_timeout, "target_timeout"),
    }
    if not isinstance(concurrency, int) or isinstance(concurrency, bool) or concurrency < 1:
        raise EvalDagError(
            "INVALID_CONCURRENCY", f"concurrency must be an integer >= 1, got {concurrency!r}"
        )
    if on_error not in ("record", "raise"):
        raise EvalDagError(
            "INVALID_ON_ERROR", f"on_error must be 'record' or 'raise', got {on_error!r}"
        )
    out_directory = out is not None and is_results_directory(out)
    resume = checked_resume(resume, checkpoint or (out if out_directory else None))
    for option, path in (("out", out), ("checkpoint", checkpoint)):
        if path is not None:
            _require_writable(path, option, data, directory=option == "out" and out_directory)
    if out_directory and checkpoint is not None:
        raise EvalDagError(
            "INVALID_OUTPUT_PATH",
            f"out='{out}' is a directory, which is the run's checkpoint too (a rerun takes the "
            "parts written there); leave out checkpoint=",
            details={"option": "checkpoint", "path": str(checkpoint)},
        )
    if store is not None:
        from evaldag._store.locations import require_store  # SQLAlchemy loads when used

        require_store(store)
    streamed = streams(data, executor, out)
    if streamed:
        require_streamable(checkpoint=checkpoint)
        # one trial: the same after
        size = _batch_size(plan, concurrency, batch_size, executor is not None)
        dataset, plan = streamed_data(data, plan, mapping, size)
        fields = None
    else:
        dataset, fields, plan = checked_data(data, plan, mapping)
    plan = with_trials(plan, trials, reducer)
    size = _batch_size(plan, concurrency, batch_size, executor is not None)
    judges = list(scorer_judges(plan))
    require_caches((judge for _, judge in judges), cache)
    if budget is not None:
        require_prices(budget, judges)
    # A results directory is one run however often it is resumed: the experiment id it began
    # with, under which a store may hold its rows already.
    resumed = None
    if out is not None and out_directory and resume is not False:
        resumed = run_experiment_id(out)
    experiment_id = resumed or str(uuid.uuid4())
    with traced_run(plan, name, experiment_id) as telemetry, ExitStack() as stack:
        stack.enter_context(heap_frozen())
        stack.enter_context(quick_lock_handover())
        cluster = None
        if executor is not None:  # a cluster started here stops with the run
            cluster = stack.enter_context(cluster_batches(executor, plan, budget))
        stored = None
        if streamed and out is not None and out_directory and store is not None:
            stored = _stored_parts(stack, store, out, plan, experiment_id, mapping, target)
        run_inputs = _run_inputs(plan, cache, experiment_id, name, mapping)
        if cluster is not None:
            budget = cluster.budget
            # The client's cache: a file the workers on this machine share (SQLite in WAL
            # mode), or a database every worker reaches.
            run_inputs["judge_cache"] = cache_location(cache) or cache
        result, failures = _local_run(
            plan,
            dataset,
            fields,
            run_inputs={**run_inputs, "judge_budget": budget, **time_limits},
            batch_size=size,
            concurrency=concurrency,
            on_item_complete=on_item_complete,
            on_error=on_error,
            progress=progress,
            out=out,
            checkpoint=checkpoint,
            resume=resume,
            telemetry=telemetry,
            cluster=cluster,
            stored=stored,
            max_error_share=max_error_share,
        )
        saved = _saved(
            result,
            failures,
            store if stored is None else None,  # else saved part by part: only what failed
            target,
            files=(out, checkpoint),
            items_in=None if stored is None else out,
        )
        # Its span says what it found, an untrustworthy run's too, before that raises.
        return require_trustworthy(traced_result(telemetry, saved), max_error_share)


def _stored_parts(
    stack: ExitStack,
    store: ScoreStore | str | os.PathLike[str],
    out: str | os.PathLike[str],
    plan: EvalPlan,
    experiment_id: str,
    mapping: dict[str, str],
    target: Any,
) -> StoredParts:
    """The store a streamed run saves part by part, open for the run."""
    from evaldag._store.locations import open_store
    from evaldag._store.results import entity_name

    return StoredParts(
        stack.enter_context(open_store(store)),
        out,
        experiment_id=experiment_id,
        scorers=plan.definitions(),
        columns=mapping,
        entity=entity_name(target),
    )


def _require_writable(
    path: str | os.PathLike[str], option: str, data: Any, *, directory: bool
) -> None:
    """``out`` or ``checkpoint`` checked before any work: a results file, a checkpoint (a
    .parquet file) or a directory of results, none of them the data."""
    if directory:
        writable_directory(path, option)
    else:
        writable_path(path, option, len(PARTS_SUFFIX) if option == "checkpoint" else 0)
        if results_format(path, option) != "parquet" and option == "checkpoint":
            raise EvalDagError(
                "INVALID_OUTPUT_PATH",
                f"checkpoint='{path}' must be a .parquet file (it is read back)",
                details={"option": option, "path": str(path)},
            )
    if isinstance(data, str | os.PathLike) and Path(path).resolve() == Path(data).resolve():
        raise EvalDagError(
            "INVALID_OUTPUT_PATH",
            f"{option}='{path}' is the data file: writing the results would overwrite "
            "the data; give another path",
            details={"option": option, "path": str(path)},
        )


#: What could not be written: the results files it was (none for the store), and why.
Unsaved = list[tuple[tuple[str, ...], Exception]]


def _saved(
    result: EvalResult,
    unsaved: Unsaved,
    store: Any,
    target: Any,
    files: tuple[str | os.PathLike[str] | None, ...],
    items_in: str | os.PathLike[str] | None = None,
) -> EvalResult:
    """``result``, saved in ``store`` when one is given (before a verdict can raise, and even
    when a results file could not be written: what can be written is); raises
    ``ResultNotSavedError`` carrying the result when a file (``unsaved``) or the store could
    not take it. ``items_in``: the results directory holding a streamed run's items, which
    ``result`` does not hold (its store failures are in ``unsaved``)."""
    if store is not None:
        from evaldag._store.locations import save_result

        try:
            save_result(store, result, target=target)
        except Exception as error:
            unsaved = [*unsaved, ((), error)]
    if not unsaved:
        return result
    from evaldag._store.locations import shown_location

    failed = {path for paths, _ in unsaved for path in paths}
    written = [str(f) for f in files if f is not None and str(f) not in failed]
    problems = [e.message if isinstance(e, EvalDagError) else error_message(e) for _, e in unsaved]
    kept = f"in {', '.join(written)} and " if written else ""
    cause = unsaved[0][1]
    again = "(error.result.to_parquet(path), store.save_result(error.result))"
    if items_in is not None:  # the store failed on a streamed run: its items are in the parts
        again = (
            f"(store.save_result(EvalResult.read_parquet('{items_in}')), or the same run "
            "again: it takes the parts written and saves them)"
        )
    raise ResultNotSavedError(
        f"The run finished but was not saved: {'; '.join(problems)}. Nothing is lost: the "
        f"result is {kept}on this error (error.result); save it again once there is room "
        f"{again}",
        result=result,
        cause=cause,
        details={
            "store": None if store is None else shown_location(store),
            "experimentId": result.experiment_id,
            "problems": problems,
        },
    ) from cause


def _run_inputs(
    plan: EvalPlan,
    cache: bool | str | os.PathLike[str] | None,
    experiment_id: str,
    name: str | None,
    data_columns: dict[str, str],
) -> dict[str, Any]:
    """The graph's inputs that stay the same for every batch: the judge cache, the run's
    experiment id and name, the data's names of the run fields, and the target."""
    inputs: dict[str, Any] = {
        "judge_cache": cache,
        "experiment_id": experiment_id,
        "experiment_name": name,
        "data_columns": data_columns,
    }
    if plan.target is not None:
        inputs["target"] = plan.target
    if plan.turn_specs:
        inputs["turn_specs"] = plan.turn_specs
    return inputs


def _local_run(
    plan: EvalPlan,
    dataset: pd.DataFrame | ParquetBatches,
    fields: pd.DataFrame | None,
    *,
    run_inputs: dict[str, Any],
    batch_size: int,
    concurrency: int,
    on_item_complete: Callable[..., Any] | None,
    on_error: str,
    progress: bool | None,
    out: str | os.PathLike[str] | None,
    checkpoint: str | os.PathLike[str] | None,
    resume: Resume,
    telemetry: RunTelemetry | None = None,
    cluster: ClusterBatches | None = None,
    stored: StoredParts | None = None,
    max_error_share: float = 1.0,
) -> tuple[EvalResult, Unsaved]:
    """The eval here: the batches (``evaldag._eval.local_batches``; each on a worker of the
    ``cluster`` if one is given; read where they run from streamed Parquet data:
    ``evaldag._eval.streamed_batches``), then the verdict's nodes over all items; and the
    results files that could not be written. With ``out`` a directory, each batch's items go
    to their part there as it finishes, and the verdict's nodes read only the columns they
    need of a streamed run's items (which is all the result holds); with ``stored``, the store
    takes each part as its batch is handed on, then the run's record. What is written says
    why the verdict cannot be trusted when it cannot (``max_error_share``, see
    ``evaldag._eval.trust``)."""
    saved: Checkpoint | None = None
    directory = out if out is not None and is_results_directory(out) else None
    if checkpoint is not None or directory is not None:
        mapping = run_inputs["data_columns"]
        definition = {
            "scorers": plan.definitions(),
            "batch_size": batch_size,
            "fingerprint": run_fingerprint(plan),
            **({"columns": mapping} if mapping else {}),
        }
        if directory is not None:
            # kept for a resumed run: see ``run_experiment_id``
            definition["experiment_id"] = run_inputs["experiment_id"]
            saved = ResultsDirectory(directory, definition, resume)
        else:
            assert checkpoint is not None and isinstance(dataset, pd.DataFrame)
            finished = finished_run(checkpoint, definition, dataset, resume)
            if finished is not None:
                finished = finished.model_copy(update={"name": run_inputs["experiment_name"]})
                finished = trust_marked(finished, max_error_share)
                return finished, _out_written(finished, out)
            saved = Checkpoint(checkpoint, definition, resume)
        if cache_location(run_inputs["judge_cache"]) is None:
            # Every judge reply is journaled as it arrives (in the cache, when there is one: it
            # is the journal), so a resumed run repeats no finished call; cache=False turns off
            # the reply cache, not the checkpoint.
            run_inputs = {**run_inputs, "judge_cache": saved.replies}
    dr = eval_driver(plan)
    measures = JudgeMeasures(plan)
    inputs = {"concurrency": concurrency, **run_inputs}
    if isinstance(dataset, ParquetBatches):
        settings = StreamSettings(
            columns=run_inputs["data_columns"],
            kept=None if directory is None else verdict_columns(plan),
            directory=saved if isinstance(saved, ResultsDirectory) else None,
            raise_errors=on_error == "raise",
            completions=on_item_complete is not None,
        )
        wanted = ["batch_items"]
        if on_error == "raise" or on_item_complete is not None:  # the outputs and outcomes
            wanted += ["outputs", *(last_node(s) for s in plan.scorers)]
        run = PreparedRun(dr, plan, wanted, inputs)
        scored = streamed_items(
            run,
            dataset,
            settings,
            progress=progress,
            cluster=cluster,
            on_item_complete=on_item_complete,
            stored=stored,
        )
    else:
        assert fields is not None
        scored = scored_items(
            dr,
            plan,
            dataset,
            fields,
            inputs=inputs,
            batch_size=batch_size,
            on_item_complete=on_item_complete,
            on_error=on_error,
            progress=progress,
            checkpoint=saved,
            telemetry=telemetry,
            cluster=cluster,
        )
    turns = {} if scored.turns is None else {"turns": scored.turns}
    inputs = {"items": scored.items, **turns, **measures.inputs(), **run_inputs}
    result = _result(dr, inputs, lambda: full_picture(dr, plan).source)
    result = trust_marked(result, max_error_share)
    unsaved: Unsaved = []  # the results files that could not be written, and why
    written = str(checkpoint if directory is None else directory)
    if scored.checkpoint_error is not None:
        unsaved.append(((written,), scored.checkpoint_error))
    elif saved is not None:
        try:
            saved.finish(result)
        except EvalDagError as error:  # its batches are kept: a rerun resumes from them
            unsaved.append(((written,), error))
    if stored is not None and (store_error := stored.finish(result)) is not None:
        unsaved.append(((), store_error))
    return result, unsaved + ([] if directory is not None else _out_written(result, out))


def _result(dr: driver.Driver, inputs: dict[str, Any], picture: Callable[[], str]) -> EvalResult:
    """The verdict's nodes over every item (``inputs``: ``items`` and what the run measured,
    beside the run's own), and what draws the picture of the graph the result came from (when
    it is asked for: ``EvalResult.dag_dot``)."""
    result = dr.execute(["eval_result"], inputs=inputs)["eval_result"]
    return result.model_copy(update={"dag_dot": picture})


def _out_written(result: EvalResult, out: str | os.PathLike[str] | None) -> Unsaved:
    """Write ``result`` to ``out`` (Parquet, or the items as CSV or JSON lines); what could not
    be written."""
    if out is None:
        return []
    try:
        if (fmt := results_format(out, "out")) == "parquet":
            result.to_parquet(out)
        else:
            write_flat(result.items, out, fmt)
    except Exception as error:  # a full disk, or a value the format cannot hold: it is kept
        return [((str(out),), error)]
    return []
