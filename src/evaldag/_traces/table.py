"""``read_traces``: traces as a DataFrame for ``run_evals``, one item per trace (or per chosen root
span), with ``input`` and ``output`` transcripts every check and scorer reads and the trace's
``trajectory``."""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Callable, Iterable
from typing import Any, Literal

import pandas as pd

from evaldag._traces.items import mastra_items, otel_items
from evaldag._traces.otlp import unreadable
from evaldag._traces.sources import trace_data
from evaldag._traces.spans import Span
from evaldag._util.gc_pause import gc_paused

__all__ = ["read_traces"]

#: The columns of ``read_traces``' DataFrame, in order.
TRACE_COLUMNS = (
    "id",
    "trace_id",
    "span_id",
    "name",
    "service",
    "started_at",
    "duration_ms",
    "status",
    "error",
    "input",
    "output",
    "trajectory",
    "input_tokens",
    "output_tokens",
    "cost_usd",
    "model",
    "spans",
)


def read_traces(
    source: str | os.PathLike[str] | pd.DataFrame | Iterable[Any],
    *,
    root: str | Callable[[Any], bool] | None = None,
    since: Any = None,
    until: Any = None,
    content: Literal["required", "optional"] = "required",
) -> pd.DataFrame:
    """One item per trace, ready for ``run_evals``.

    :param source: OTLP JSON (``.jsonl``: the Collector's file exporter, one request a line;
        ``.json``), OTLP protobuf (``.pb``), a table of spans (a DataFrame, ``.parquet``,
        ``.csv``: one row a span), Mastra's span records (``.json``, or a list of dicts), a
        folder or glob of files, or a list of any of these.
    :param root: which spans are items: None, each trace's root span; a glob of span names
        (``"invoke_agent *"``); or a function of a span (a :class:`Span`, or Mastra's record)
        returning whether it is one. An item holds its root and every span below it.
    :param since: keep items that started at or after this time (a datetime or ISO text).
    :param until: keep items that started before this time.
    :param content: ``"required"``: an item whose model calls recorded no message content is an
        error (instrumentations leave content out unless told to keep it); ``"optional"``: its
        output holds its tool runs alone, with no text.
    :returns: a DataFrame with ``id`` (the trace id, or ``<trace id>:<span id>`` where a trace
        holds several items: results and reports name items by it), ``trace_id``, ``span_id``
        (the root's), ``name``, ``service``,
        ``started_at``, ``duration_ms``, ``status``, ``error``, ``input`` and ``output`` (the
        conversation as transcripts), ``trajectory`` (tool spans as steps), ``input_tokens``,
        ``output_tokens``, ``cost_usd``, ``model`` and ``spans`` (the item's spans: ``span_id``,
        ``parent_span_id``, ``name``, ``kind``, ``status``, ``status_message``, ``start_ns``,
        ``duration_ms``, ``attributes``; what the span checks read).
    """
    with gc_paused():  # many small objects, no cycles: the collector's scans cost most
        return _items(source, root, since, until, content)


def _items(source: Any, root: Any, since: Any, until: Any, content: str) -> pd.DataFrame:
    data = trace_data(source)
    if not (data.spans or data.mastra):
        raise unreadable(
            "source",
            "holds no spans (OTLP 'resourceSpans', rows of a spans table or Mastra "
            "span records); log records alone carry no trace",
        )
    chosen = _chooser(root)
    if content not in ("required", "optional"):
        raise unreadable("content", f"is {content!r}; give 'required' or 'optional'")
    items = otel_items(data.spans, data.logs, chosen, content == "required")
    items += mastra_items(data.mastra, chosen)
    table = pd.DataFrame(items, columns=list(TRACE_COLUMNS[1:]))
    shared = table["trace_id"].duplicated(keep=False)
    table.insert(
        0, "id", table["trace_id"].where(~shared, table["trace_id"] + ":" + table["span_id"])
    )
    if since is not None:
        table = table[table["started_at"] >= _time(since, "since")]
    if until is not None:
        table = table[table["started_at"] < _time(until, "until")]
    if table.empty:
        raise unreadable(
            "source",
            f"has spans but no item{' named ' + repr(root) if isinstance(root, str) else ''}"
            f"{' in the time range' if since is not None or until is not None else ''}",
        )
    return table.sort_values("started_at", kind="stable").reset_index(drop=True)


def _chooser(root: str | Callable[[Any], bool] | None) -> Callable[[Any], bool] | None:
    if root is None or callable(root):
        return root
    if isinstance(root, str):
        return lambda span: fnmatch.fnmatchcase(
            span.name if isinstance(span, Span) else str(span.get("name") or ""), root
        )
    raise unreadable("root", f"is a {type(root).__name__}; give a span name glob or a function")


def _time(value: Any, name: str) -> pd.Timestamp:
    """``since`` or ``until`` as a UTC time; text that is none is an error naming it."""
    try:
        stamp = pd.Timestamp(value)
    except (ValueError, TypeError):
        stamp = pd.NaT
    if stamp is pd.NaT:
        raise unreadable(
            name, f"is {value!r}, which is no time; give a datetime or ISO 8601 text (2026-12-01)"
        )
    return stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp
