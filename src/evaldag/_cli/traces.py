"""``evaldag run --traces``: recorded traces as the items to score (``docs/traces.md``)."""

from __future__ import annotations

import argparse
from typing import Any

from evaldag.errors import EvalDagError


def add_trace_options(run: argparse.ArgumentParser) -> None:
    """``--traces``, ``--root`` and ``--since`` on ``evaldag run``."""
    run.add_argument(
        "--traces",
        metavar="FILE",
        action="append",
        help="score recorded traces instead of --data: OTLP JSON (.jsonl) or protobuf (.pb), a "
        "spans table (.parquet, .csv), Mastra's span records (.json), or a folder or glob of "
        "them (repeatable); one item per trace (docs/traces.md)",
    )
    run.add_argument(
        "--root",
        metavar="NAME",
        help="with --traces: the spans that are items, a glob of span names (default: each "
        "trace's root span)",
    )
    run.add_argument(
        "--since",
        metavar="TIME",
        help="with --traces: only items that started at or after TIME (ISO 8601)",
    )


def traced_items(args: argparse.Namespace) -> Any:
    """The items of ``--traces`` (``--root``, ``--since``), refusing ``--data`` beside them."""
    from evaldag._traces.table import read_traces

    if args.data is not None:
        raise EvalDagError(
            "INVALID_CLI_OPTIONS", "give --data or --traces, not both: each is the items to score"
        )
    items = read_traces(args.traces, root=args.root, since=args.since)
    items.attrs["evaldag_source"] = ", ".join(args.traces)
    return items
