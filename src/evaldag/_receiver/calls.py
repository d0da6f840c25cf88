"""A finished trace, as the receiver hands it to a scoring worker, and the calls it gives there:
one per item (as ``read_traces`` makes them), or an error call naming the trace when it cannot
be scored, so that every trace the receiver took ends as rows.

``TraceCalls`` runs in the worker (a scoring process: it is pickled), off the receiver's thread:
reading a trace's conversation costs more than receiving its spans.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from evaldag._live.worker import Call
from evaldag._scorer.run import run_field
from evaldag._traces.items import otel_items
from evaldag._traces.spans import LogEvent, Span
from evaldag.errors import EvalDagError


class ItemToScore(NamedTuple):
    """An item of a finished trace: its row fields (``thread_id`` ...), its request context,
    and why it cannot be scored (None when it can)."""

    fields: dict[str, Any]
    snapshot: dict[str, Any]
    problem: str | None = None


class FinishedTrace(NamedTuple):
    """A trace released for scoring: its spans and log events, and its items by root span id;
    ``problem`` says why the trace as a whole cannot be scored (no root span arrived)."""

    trace_id: str
    spans: list[Span]
    logs: list[LogEvent]
    items: dict[str, ItemToScore]
    problem: str | None = None


class TraceCalls:
    """The calls of a batch of finished traces: one per item.

    :param content_required: whether a model call without message content is an error
        (``read_traces(content=...)``).
    :param fields: run field → item column (``input`` → ``input`` unless mapped otherwise).
    :param columns: the item columns the scorers read besides the run's fields (``spans``).
    """

    def __init__(
        self, content_required: bool, fields: Mapping[str, str], columns: Sequence[str]
    ) -> None:
        self.content_required = content_required
        self.fields = dict(fields)
        self.columns = tuple(columns)
        self._read = frozenset((*self.fields.values(), *self.columns))

    def __call__(self, traces: Sequence[FinishedTrace]) -> list[Call]:
        calls = []
        for trace in traces:
            if trace.problem is not None:
                calls.append(_error_call(trace.trace_id, None, {}, {}, trace.problem))
                continue
            for span_id, item in trace.items.items():
                calls.append(self._call(trace, span_id, item))
        return calls

    def _call(self, trace: FinishedTrace, span_id: str, item: ItemToScore) -> Call:
        """The call of one item; an error call when it cannot be read. Never raises."""
        if item.problem is not None:
            return _error_call(trace.trace_id, span_id, item.fields, item.snapshot, item.problem)
        try:
            (read,) = otel_items(
                trace.spans,
                trace.logs,
                lambda span: span.span_id == span_id,
                self.content_required,
                self._read,
            )
        except EvalDagError as error:
            problem = error.message
        except Exception as error:  # a bug reading it: still the trace's row, not a lost trace
            problem = f"evaldag could not read the trace ({type(error).__name__}: {error})"
        else:
            # the item's columns are evaldag's own plain data: only the run fields need reading
            run = {field: run_field(field, read[column]) for field, column in self.fields.items()}
            fields = {
                **item.fields,
                "input": run.pop("input", None),
                "trace_id": trace.trace_id,
                "span_id": span_id,
                "run_id": None,
            }
            output = run.pop("output", None)
            columns = {column: read[column] for column in self.columns} | run
            return Call(fields, output, item.snapshot, None, columns, read=True)
        return _error_call(trace.trace_id, span_id, item.fields, item.snapshot, problem)


def _error_call(
    trace_id: str,
    span_id: str | None,
    fields: dict[str, Any],
    snapshot: dict[str, Any],
    problem: str,
) -> Call:
    """The call of an item (or trace) that cannot be scored: each scorer's row is an error
    naming it."""
    where = f"trace {trace_id}" + (f", span {span_id}" if span_id else "")
    return Call(
        {**fields, "input": None, "trace_id": trace_id, "span_id": span_id, "run_id": None},
        None,
        snapshot,
        f"{where} cannot be scored: {problem}",
    )
