"""``run_evals``' row batches on a cluster: each batch is one task, run through the eval DAG on a
worker, the rest of the run stays in the client.

The client hands batches on in dataset order, as in a local run, with up to twice the batches
the cluster runs at once running ahead, so everything it does between batches (a checkpoint,
progress, ``on_item_complete``, ``on_error="raise"``, the aggregation, ``out`` and the store) is
done as it is locally. What a task needs besides its rows (the plan, the nodes wanted, the
inputs every batch gets) is shipped to the cluster once, pickled by cloudpickle (functions of an
eval file loaded from a path travel by value: see ``evaldag._eval.eval_file``). Each worker
unpickles it and builds the eval's driver once per run, and its judge calls share the limits and
the budget of the run's coordinator (:mod:`evaldag._cluster.coordinator`). Batches a worker runs
at once (see :mod:`evaldag._cluster.backends`) share its row slots, as a local run's do, and
each reports what the judge caches did in its own calls.
"""

from __future__ import annotations

import itertools
import logging
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pandas as pd

from evaldag._cluster.backends import Backend, Coordinator, DaskBackend
from evaldag._cluster.limits import ClusterBudget, ClusterLimits, LimitSharing
from evaldag._cluster.ray_backend import RayBackend, ray_started, require_connected_to
from evaldag._engine.concurrency import BatchSlots, RowSlots, batch_running
from evaldag._graph.drivers import eval_driver
from evaldag._graph.plan import EvalPlan
from evaldag._judge.budget import JudgeBudget
from evaldag._judge.cache import cache_notes, noted_elsewhere
from evaldag._judge.limiter import limits_in
from evaldag._util.credentials import location_without_credentials
from evaldag._util.gc_pause import worker_heap_frozen
from evaldag._util.lock_handover import quick_lock_handover
from evaldag.errors import EvalDagError

if TYPE_CHECKING:
    from hamilton import driver

_logger = logging.getLogger(__name__)

#: Runs whose drivers a worker keeps.
KEPT_RUNS = 4


@dataclass
class ClusterRun:
    """What every task of a run gets besides its rows: the run's id, the plan, the nodes wanted
    and the inputs pickled together, and the coordinator's handle (pickled the cluster's way)."""

    id: str
    pickled: bytes
    coordinator: Coordinator
    sharing: LimitSharing


@dataclass
class PreparedRun:
    """What a row batch runs with, the same for every batch of a run: the eval's driver and
    plan, the nodes wanted and the graph's inputs besides the batch's rows."""

    driver: driver.Driver
    plan: EvalPlan
    wanted: list[str]
    inputs: dict[str, Any]
    #: What a batch task builds once per run where it runs (a streamed run's trials' drivers).
    built: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)


#: A batch's task: its value given the run and the batch's own arguments.
BatchTask = Callable[..., Any]


@dataclass
class _WorkerRun:
    """A run as a worker keeps it: prepared, its limits, and the row slots its batches running
    here at once share (``concurrency`` per scorer and for the target, as in a local run, the
    batch that came first served first)."""

    prepared: PreparedRun
    limits: ClusterLimits
    slots: RowSlots
    arrivals: Iterator[int] = field(default_factory=itertools.count)


_prepared_runs: OrderedDict[str, _WorkerRun] = OrderedDict()
_prepared_lock = threading.Lock()


def _prepared(run: ClusterRun) -> tuple[_WorkerRun, BatchSlots]:
    """The run as this worker keeps it (unpickled and its driver built by its first task), and
    the slots of the batch that asks."""
    with _prepared_lock:
        kept = _prepared_runs.get(run.id)
        if kept is None:
            import cloudpickle

            plan, wanted, inputs = cloudpickle.loads(run.pickled)
            kept = _prepared_runs[run.id] = _WorkerRun(
                PreparedRun(eval_driver(plan), plan, wanted, inputs),
                ClusterLimits(run.coordinator, run.sharing),
                RowSlots(inputs["concurrency"]),
            )
            while len(_prepared_runs) > KEPT_RUNS:
                _prepared_runs.popitem(last=False)
            worker_heap_frozen()
        return kept, BatchSlots(kept.slots, next(kept.arrivals))


def batch_values(run: PreparedRun, rows: pd.DataFrame, run_fields: pd.DataFrame) -> Any:
    """The values of the nodes wanted for a batch's ``rows``."""
    return run.driver.execute(
        run.wanted, inputs={"dataset": rows, "run_fields": run_fields, **run.inputs}
    )


def _on_worker(run: ClusterRun, task: BatchTask, *args: Any) -> tuple[Any, list[str], int]:
    """A task: ``task(run, *args)`` under the run's limits, with what the worker's judge caches
    dropped in its calls and why they stopped (not another task's, running beside it)."""
    kept, slots = _prepared(run)
    run.coordinator.bind()
    with (
        limits_in(kept.limits),
        batch_running(slots),
        cache_notes() as notes,
        quick_lock_handover(),
    ):
        value = task(kept.prepared, *args)
    return value, notes.problems, notes.dropped


class ClusterBatches:
    """A run's row batches on a cluster, and the limits and budget its workers share."""

    def __init__(self, backend: Backend, plan: EvalPlan, budget: JudgeBudget | None) -> None:
        self.backend, self.plan = backend, plan
        self.coordinator = backend.coordinator(None if budget is None else budget.limit_usd)
        self.coordinator.bind()
        #: Batches running ahead of the one the client hands on next.
        self.ahead = 2 * backend.batches
        self.sharing = LimitSharing.of_cluster(backend.slots)
        self.limits = ClusterLimits(self.coordinator, self.sharing)
        self.budget = None if budget is None else ClusterBudget(budget.limit_usd, self.coordinator)
        self._run: Any = None
        self._lock = threading.Lock()

    def values(
        self,
        rows: pd.DataFrame,
        wanted: list[str],
        inputs: dict[str, Any],
        run_fields: pd.DataFrame,
    ) -> Any:
        """The values of ``wanted`` for ``rows`` (and their ``run_fields``), computed on a
        worker; ``wanted`` and ``inputs`` are the same for every batch of the run (shipped
        with the first)."""
        return self.run(batch_values, wanted, inputs, rows, run_fields)

    def run(self, task: BatchTask, wanted: list[str], inputs: dict[str, Any], *args: Any) -> Any:
        """``task(run, *args)`` on a worker, ``run`` the :class:`PreparedRun` of ``wanted`` and
        ``inputs`` (the same for every batch of the run: shipped with the first)."""
        with self._lock:
            if self._run is None:
                import cloudpickle

                pickled = cloudpickle.dumps((self.plan, wanted, inputs))
                run = ClusterRun(str(uuid.uuid4()), pickled, self.coordinator, self.sharing)
                self._run = self.backend.shared(run)
        try:
            value, problems, dropped = self.backend.run(_on_worker, self._run, task, *args)
        except ImportError as error:
            raise _not_importable(error) from error
        noted_elsewhere(problems, dropped)
        return value


def _missing(extra: str, error: ImportError) -> EvalDagError:
    return EvalDagError(
        "EXECUTOR_UNAVAILABLE",
        f"executor={extra!r} needs the '{extra}' extra: pip install 'evaldag[{extra}]'",
        category="SYSTEM",
        cause=error,
    )


@contextmanager
def cluster_backend(executor: Any) -> Iterator[Backend]:
    """The cluster ``executor`` names; a cluster started here is stopped after.

    :param executor: ``"dask"`` (a local Dask cluster), ``"dask://HOST:PORT"`` (a Dask
        scheduler), a ``dask.distributed.Client``, ``"ray"`` (the Ray cluster of
        ``RAY_ADDRESS`` or this machine's, else a local one) or ``"ray://HOST:PORT"`` (a Ray
        head's client server).
    """
    if isinstance(executor, str) and location_without_credentials(executor) != executor:
        raise _credentials_in(executor)
    if isinstance(executor, str) and (executor == "dask" or executor.startswith("dask://")):
        try:
            from distributed import Client, LocalCluster
        except ImportError as error:
            raise _missing("dask", error) from error
        if executor == "dask":
            with (
                LocalCluster(processes=True, dashboard_address=":0") as cluster,
                Client(cluster) as client,
            ):
                yield DaskBackend(client)
        else:
            with Client(f"tcp://{executor.removeprefix('dask://')}", timeout=30) as client:
                yield DaskBackend(client)
    elif isinstance(executor, str) and (executor == "ray" or executor.startswith("ray://")):
        try:
            import ray

            if executor != "ray":
                import grpc  # noqa: F401 (Ray Client's transport, which plain `pip install ray` lacks)
        except ImportError as error:
            raise _missing("ray", error) from error
        started = not ray.is_initialized()
        if started:
            ray_started(ray, None if executor == "ray" else executor)
        elif executor != "ray":
            require_connected_to(ray, executor)
        backend = RayBackend()
        try:
            yield backend
        finally:
            backend.close()
            if started:
                ray.shutdown()
    elif type(executor).__name__ == "Client" and type(executor).__module__.startswith(
        "distributed"
    ):
        yield DaskBackend(executor)
    else:
        raise EvalDagError(
            "INVALID_EXECUTOR",
            "executor must be 'dask', 'ray', 'dask://HOST:PORT', 'ray://HOST:PORT' or a "
            f"dask.distributed.Client, got {executor!r}",
            details={"executor": repr(executor)},
        )


def _credentials_in(executor: str) -> EvalDagError:
    """An executor address holding a user, password or query: neither Dask nor Ray take one
    (and their errors would show it), so it is refused naming the address without them."""
    shown = location_without_credentials(executor)
    return EvalDagError(
        "INVALID_EXECUTOR",
        f"executor={shown!r} holds credentials (a user and password, a query or a fragment), "
        "which a Dask or Ray address does not take: give 'dask://HOST:PORT' or "
        "'ray://HOST:PORT'; for a Dask scheduler that requires TLS credentials pass "
        "dask.distributed.Client(address, security=...) as executor",
        details={"executor": shown},
    )


def _not_importable(error: ImportError) -> EvalDagError:
    """A module the run needs that a worker cannot import, said with the fix."""
    return EvalDagError(
        "CLUSTER_IMPORT_FAILED",
        f"a worker could not import {error.name or 'a module'!r} ({error}), which the run's "
        "scorers, target or data need: the workers import your code by module name, so install "
        "it on every worker or put its folder on their PYTHONPATH",
        category="USER",
        details={"module": error.name},
        cause=error,
    )


@contextmanager
def cluster_batches(
    executor: Any, plan: EvalPlan, budget: JudgeBudget | None
) -> Iterator[ClusterBatches]:
    """The run's batches on the cluster ``executor`` names (see
    :func:`cluster_backend`); judge calls made here (the usage
    summary's limits, batches rescored here) see the cluster's limits too."""
    with cluster_backend(executor) as backend:
        batches = ClusterBatches(backend, plan, budget)
        try:
            with limits_in(batches.limits):
                yield batches
        finally:  # the batches handed on have ended: a batch run ahead was waited for
            try:
                batches.coordinator.close()
            except Exception as error:  # the run's result (or its error) is worth more
                _logger.warning("the run's coordinator could not be ended (%s)", error)
