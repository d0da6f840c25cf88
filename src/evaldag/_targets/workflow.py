"""``evaldag.workflow``: a Hamilton dataflow as a target, one execution per item.

Each item's ``input`` becomes the dataflow's inputs (a dict of them, or the value of its one
required input), the final variables are requested, and Hamilton's lifecycle hooks record every
node that ran: its inputs, its output, whether it succeeded and how long it took. That record
gives the step scorers (``scorers={"steps": {"<node>": [...]}}``) each node's inputs and output,
and the trajectory scorers the execution path as Mastra's ``extractWorkflowTrajectory`` gives it
for workflow steps: one ``workflow_step`` per node, in execution order, with its status, output
and ``durationMs``, and the run's ``totalDurationMs``.

A node that raises is the item's target error (naming the node), which fails its workflow
scorers; the nodes that completed before it are still scored by their step scorers, and the path
up to the failure (the failed node last, status ``failed``) by the trajectory scorers. The other
items go on.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from hamilton import base, driver
from hamilton.lifecycle import GraphExecutionHook, NodeExecutionHook
from hamilton.node import DependencyType

from evaldag._engine.targets import StepRun, TargetFailure, TargetRun
from evaldag.errors import EvalDagError, error_message

#: Hamilton's loggers that report a failing node (its traceback, a plea to join Slack).
_FAILURE_LOGGERS = ("hamilton.execution.graph_functions", "hamilton.driver")
#: Set in a thread while it runs an item through a workflow.
_running = threading.local()
#: Held while modules missing from ``sys.modules`` are registered for a build.
_registering = threading.Lock()


class _ItemFailuresUnlogged(logging.Filter):
    """Drops Hamilton's failure logs of an item's execution: the failure is that item's target
    error, recorded in the results; other executions of Hamilton log as they would."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not getattr(_running, "item", False)


_UNLOGGED = _ItemFailuresUnlogged()


class _ExecutionRecorder(NodeExecutionHook, GraphExecutionHook):
    """Records the nodes of each execution, per thread: every item runs in its own thread."""

    def __init__(self) -> None:
        self._local = threading.local()

    def run_before_graph_execution(self, **_: Any) -> None:
        self._local.steps = {}
        self._local.started = {}

    def run_after_graph_execution(self, **_: Any) -> None:
        pass

    def run_before_node_execution(self, *, node_name: str, **_: Any) -> None:
        self._local.started[node_name] = (time.time(), time.perf_counter())

    def run_after_node_execution(
        self,
        *,
        node_name: str,
        node_kwargs: dict[str, Any],
        result: Any,
        error: Exception | None,
        success: bool,
        **_: Any,
    ) -> None:
        started_at, started = self._local.started.pop(node_name)
        self._local.steps[node_name] = StepRun(
            input=dict(node_kwargs),
            output=result if success else None,
            status="success" if success else "failed",
            started_at=started_at,
            duration_ms=(time.perf_counter() - started) * 1000,
            error=None if error is None else f"{type(error).__name__}: {error_message(error)}",
        )

    def recorded(self) -> dict[str, StepRun]:
        """The nodes of this thread's last execution, in the order they ran."""
        return dict(getattr(self._local, "steps", {}))


@dataclass(frozen=True, eq=False)
class Workflow:
    """A Hamilton dataflow run once per item; make one with :func:`workflow`."""

    driver: driver.Driver
    final_vars: tuple[str, ...]
    inputs: Mapping[str, Any]
    input_name: str | None
    recorder: _ExecutionRecorder

    def __reduce__(self) -> tuple[Any, ...]:
        # A cluster's workers build the dataflow again from its modules (imported by name
        # there), with a recorder of their own.
        dr = self.driver
        adapters = [
            a
            for a in dr.adapter.adapters
            if not isinstance(a, base.ResultMixin | _ExecutionRecorder)
        ]
        modules, config = tuple(dr.graph_modules), dict(dr.graph.config)
        return _built, (modules, config, adapters, self.final_vars, self.inputs, self.input_name)

    @property
    def nodes(self) -> frozenset[str]:
        """The names of the nodes that run for the final variables."""
        upstream, _ = self.driver.graph.get_upstream_nodes(list(self.final_vars))
        return frozenset(n.name for n in upstream if not n.user_defined)

    def require_nodes(self, steps: Sequence[str]) -> None:
        """Each node given step scorers runs for the final variables; else an error naming it."""
        ran = self.nodes
        missing = [step for step in steps if step not in ran]
        if missing:
            raise EvalDagError(
                "INVALID_WORKFLOW_SCORERS",
                f"scorers['steps'] names {missing}, which the workflow does not run for its "
                f"final variables {list(self.final_vars)}; the nodes that run: {sorted(ran)}",
                details={"steps": missing},
            )

    def __call__(self, input: Any) -> TargetRun | TargetFailure:
        """One execution: the final variables (one value, or a dict of several), every node's
        record and the trajectory."""
        if isinstance(input, Mapping):
            given = dict(input)
        elif self.input_name is not None:
            given = {self.input_name: input}
        else:
            raise EvalDagError(
                "INVALID_WORKFLOW_INPUT",
                "the item's input is not a dict of the dataflow's inputs, and the dataflow has "
                "no single required input to give it to; pass input_name= to evaldag.workflow",
            )
        _running.item = True
        try:
            values = self.driver.execute(list(self.final_vars), inputs={**self.inputs, **given})
        except Exception as error:
            steps = self.recorder.recorded()
            failed = [name for name, step in steps.items() if step.status == "failed"]
            message, kind = error_message(error), type(error).__name__
            if not failed:  # refused before any node ran: nothing to score
                return TargetFailure(f"the dataflow failed: {message}", kind)
            return TargetFailure(
                f"node '{failed[0]}' failed: {message}",
                kind,
                steps=steps,
                trajectory=workflow_trajectory(steps),
            )
        finally:
            _running.item = False
        steps = self.recorder.recorded()
        if len(self.final_vars) > 1:
            return TargetRun(dict(values), steps=steps, trajectory=workflow_trajectory(steps))
        output = values[self.final_vars[0]]
        if output is None:  # a node without its return: no output, which every check would pass
            return TargetFailure(
                f"node '{self.final_vars[0]}' returned None; the final variable is the item's "
                "output, a text or a transcript (did the function forget its return?)",
                "TypeError",
                steps=steps,
                trajectory=workflow_trajectory(steps),
            )
        return TargetRun(output, steps=steps, trajectory=workflow_trajectory(steps))


def workflow_trajectory(steps: Mapping[str, StepRun]) -> dict[str, Any]:
    """The execution as Mastra's ``extractWorkflowTrajectory`` gives it: a ``workflow_step`` per
    node in execution order, and ``totalDurationMs`` from the first start to the last end."""
    trajectory_steps = []
    for name, step in steps.items():
        entry: dict[str, Any] = {
            "stepType": "workflow_step",
            "name": name,
            "stepId": name,
            "status": step.status,
        }
        if step.output is not None:
            entry["output"] = (
                step.output if isinstance(step.output, dict) else {"value": step.output}
            )
        entry["durationMs"] = step.duration_ms
        trajectory_steps.append(entry)
    trajectory: dict[str, Any] = {"steps": trajectory_steps}
    if steps:
        start = min(s.started_at for s in steps.values())
        end = max(s.started_at + s.duration_ms / 1000 for s in steps.values())
        trajectory["totalDurationMs"] = (end - start) * 1000
    return trajectory


def _modules(dataflow: Any) -> tuple[tuple[ModuleType, ...], dict[str, Any], list[Any]]:
    """The modules, config and adapters of a driver, a module or a list of modules."""
    if isinstance(dataflow, driver.Driver):
        adapters = [a for a in dataflow.adapter.adapters if not isinstance(a, base.ResultMixin)]
        return tuple(dataflow.graph_modules), dict(dataflow.graph.config), adapters
    if isinstance(dataflow, ModuleType):
        return (dataflow,), {}, []
    if (
        isinstance(dataflow, Sequence)
        and dataflow
        and all(isinstance(m, ModuleType) for m in dataflow)
    ):
        return tuple(dataflow), {}, []
    raise EvalDagError(
        "INVALID_WORKFLOW",
        "evaldag.workflow needs a Hamilton driver, a module of Hamilton functions or a list of "
        f"them, got {type(dataflow).__name__}",
    )


@contextlib.contextmanager
def _registered(modules: Sequence[ModuleType]) -> Iterator[None]:
    """``modules`` in ``sys.modules`` while a driver is built, then as they were.

    Hamilton takes a module's functions to be those whose ``__module__`` names a module in
    ``sys.modules``; one loaded from a path (``importlib.util.spec_from_file_location``, as
    notebooks and plugin loaders do) without being registered would build an empty graph.
    """
    with _registering:
        added = [m for m in modules if m.__name__ not in sys.modules]
        for module in added:
            sys.modules[module.__name__] = module
        try:
            yield
        finally:
            for module in added:
                if sys.modules.get(module.__name__) is module:
                    del sys.modules[module.__name__]


def workflow(
    dataflow: Any,
    final_vars: Sequence[str] | None = None,
    *,
    config: Mapping[str, Any] | None = None,
    inputs: Mapping[str, Any] | None = None,
    input_name: str | None = None,
) -> Workflow:
    """A Hamilton dataflow as a target: ``run_evals(data, target=evaldag.workflow(...))``.

    :param dataflow: a ``hamilton.driver.Driver`` (rebuilt with its modules, config and
        lifecycle adapters plus evaldag's recorder; its result builder and executors are not
        used), a module of Hamilton functions, or a list of modules; a module need not be in
        ``sys.modules`` (one loaded from a path by ``importlib``).
    :param final_vars: the nodes to request; default: the dataflow's last nodes (those no other
        node depends on). The output is their value, or a dict of them when there are several.
    :param config: the Hamilton config, for modules (a driver has its own).
    :param inputs: inputs every execution gets (model names, ``top_k``, ...).
    :param input_name: the input that gets each item's ``input`` when it is not a dict of
        inputs; default: the dataflow's only required input not in ``inputs``.
    """
    modules, own_config, adapters = _modules(dataflow)
    if config is not None and isinstance(dataflow, driver.Driver):
        raise EvalDagError(
            "INVALID_WORKFLOW",
            "config= is for modules; a driver was built with its own config",
        )
    fixed = dict(inputs or {})
    built = _built(modules, {**own_config, **(config or {})}, adapters, (), fixed, input_name)
    nodes = built.driver.graph.nodes
    if final_vars is None:
        final_vars = sorted(
            n.name for n in nodes.values() if not n.user_defined and not n.depended_on_by
        )
    unknown = [name for name in final_vars if name not in nodes]
    if isinstance(final_vars, str) or not final_vars or unknown:
        raise EvalDagError(
            "INVALID_WORKFLOW",
            f"final_vars must name nodes of the dataflow, got {final_vars!r}"
            + (f" ({unknown} are not nodes)" if unknown else ""),
        )
    if input_name is None:
        required = _required_inputs(built.driver, list(final_vars)) - set(fixed)
        input_name = next(iter(required)) if len(required) == 1 else None
    return Workflow(built.driver, tuple(final_vars), fixed, input_name, built.recorder)


def _built(
    modules: tuple[ModuleType, ...],
    config: dict[str, Any],
    adapters: list[Any],
    final_vars: tuple[str, ...],
    inputs: Mapping[str, Any],
    input_name: str | None = None,
) -> Workflow:
    """The workflow of a dataflow's modules, config and adapters, with a recorder of its own."""
    for name in _FAILURE_LOGGERS:
        if _UNLOGGED not in logging.getLogger(name).filters:
            logging.getLogger(name).addFilter(_UNLOGGED)
    recorder = _ExecutionRecorder()
    with _registered(modules):
        built = (
            driver.Builder()
            .with_modules(*modules)
            .with_config(config)
            .with_adapters(*adapters, recorder)
            .build()
        )
    return Workflow(built, final_vars, inputs, input_name, recorder)


def _required_inputs(dr: driver.Driver, final_vars: list[str]) -> set[str]:
    """The inputs the final variables need that have no default and are not config."""
    upstream, _ = dr.graph.get_upstream_nodes(final_vars)
    inputs = {n.name for n in upstream if n.user_defined} - set(dr.graph.config)
    return {
        name
        for n in upstream
        if not n.user_defined
        for name, (_, dependency) in n.input_types.items()
        if name in inputs and dependency == DependencyType.REQUIRED
    }


def as_workflow(target: Any) -> Workflow | None:
    """``target`` as a workflow if it is one (a Workflow, a Hamilton driver or a module)."""
    if isinstance(target, Workflow):
        return target
    if isinstance(target, driver.Driver | ModuleType):
        return workflow(target)
    return None
