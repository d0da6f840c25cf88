"""Where row batches run when not here: Dask or Ray, through Hamilton's task executors."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from hamilton.execution.executors import TaskExecutor

from evaldag.errors import EvalDagError


def _missing(extra: str, error: ImportError) -> EvalDagError:
    return EvalDagError(
        "EXECUTOR_UNAVAILABLE",
        f"executor={extra!r} needs the '{extra}' extra: pip install 'evaldag[{extra}]'",
        category="SYSTEM",
        cause=error,
    )


@contextmanager
def task_executor(executor: Any) -> Iterator[TaskExecutor]:
    """A Hamilton task executor for ``executor``; clusters started here are stopped after.

    :param executor: ``"dask"`` (a local Dask cluster), a ``dask.distributed.Client``,
        ``"ray"`` (a local Ray instance), or a Hamilton ``TaskExecutor``.
    """
    if isinstance(executor, TaskExecutor):
        yield executor
    elif executor == "dask":
        try:
            from distributed import Client, LocalCluster
            from hamilton.plugins.h_dask import DaskExecutor
        except ImportError as error:
            raise _missing("dask", error) from error
        with (
            LocalCluster(processes=True, dashboard_address=":0") as cluster,
            Client(cluster) as client,
        ):
            yield DaskExecutor(client=client)
    elif executor == "ray":
        try:
            import ray
            from hamilton.plugins.h_ray import RayTaskExecutor
        except ImportError as error:
            raise _missing("ray", error) from error
        started = not ray.is_initialized()
        if started:
            ray.init(include_dashboard=False)
        try:
            yield RayTaskExecutor(skip_init=True)
        finally:
            if started:
                ray.shutdown()
    elif type(executor).__name__ == "Client" and type(executor).__module__.startswith(
        "distributed"
    ):
        from hamilton.plugins.h_dask import DaskExecutor

        yield DaskExecutor(client=executor)
    else:
        raise EvalDagError(
            "INVALID_EXECUTOR",
            f"executor must be 'dask', 'ray', a dask.distributed.Client or a Hamilton "
            f"TaskExecutor, got {executor!r}",
        )
