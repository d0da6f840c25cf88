"""Traces the receiver could not score before it stopped, written where ``read_traces`` (and
``evaldag run --traces``) reads them: OTLP JSON lines, a trace request and its log records'
request each, appended to the spool file."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from pathlib import Path

import orjson

from evaldag._receiver.calls import FinishedTrace
from evaldag._receiver.pending import PendingTrace
from evaldag._traces.otlp import json_logs_request, json_trace_request

logger = logging.getLogger("evaldag.receiver")


def spooled(path: Path, traces: Iterable[PendingTrace | FinishedTrace]) -> int:
    """Append each trace's spans and log records to ``path``; the traces written (0 when the
    file cannot be written: the error is logged with the count lost)."""
    lines, written = [], 0
    for trace in traces:
        spans, logs = trace.spans, trace.logs
        if not spans and not logs:
            continue
        if spans:
            lines.append(orjson.dumps(json_trace_request(spans)))
        if logs:
            lines.append(orjson.dumps(json_logs_request(logs)))
        written += 1
    if not lines:
        return 0
    try:
        with path.open("ab") as file:
            file.write(b"\n".join(lines) + b"\n")
            file.flush()
            os.fsync(file.fileno())
    except OSError as error:
        logger.error(
            "evaldag receiver: %d unscored traces could not be saved to %s: %s",
            written,
            path,
            error,
        )
        return 0
    return written
