"""A released trace made ready to score: its items (the spans that are items' roots) with their
request context, kept or left out by the scoring filter; an item whose spans are not all there
(a span inside its time names a parent that never arrived) cannot be scored, and says so.

The request context of an item, which the filter reads and its rows keep, is its resource's and
its root span's attributes (a span's win), without those holding the conversation (messages, tool
arguments and results: the item's input and output) and without texts over
``_LONGEST_CONTEXT_TEXT`` characters (payloads, not context).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable
from typing import Any

from evaldag._receiver.calls import FinishedTrace, ItemToScore
from evaldag._receiver.pending import PendingTrace
from evaldag._store.rows import request_context_snapshot
from evaldag._traces.conventions import carries_conversation
from evaldag._traces.spans import Span

_LONGEST_CONTEXT_TEXT = 1_000
#: Row fields read from a root span's attributes: the first attribute present gives each.
_ATTRIBUTE_FIELDS = {
    "thread_id": ("gen_ai.conversation.id", "session.id"),
    "resource_id": ("user.id",),
}


def root_test(root: str | None) -> Callable[[Span], bool]:
    """Whether a span is an item's root: a span without a parent, or one named by the glob."""
    if root is None:
        return lambda span: not span.parent_span_id
    return lambda span: fnmatch.fnmatchcase(span.name, root)


class Finishing:
    """Released traces as finished traces, their items filtered.

    :param root: the glob of the names of the spans that are items, or None: spans without a
        parent.
    :param scoring_filter: the compiled filter (``scoring_filter``) or None.
    :param entity: the rows' entity, which the filter can read.
    """

    def __init__(
        self,
        root: str | None,
        scoring_filter: Callable[[dict[str, Any]], bool] | None,
        entity: dict[str, str],
        max_wait: float,
    ) -> None:
        self.is_root = root_test(root)
        self._root = root
        self._filter = scoring_filter
        self._entity = entity
        self._max_wait = max_wait
        #: What the filter and the release did: items left out, filters that raised, traces
        #: without an item (released by max_wait with no span matching the root glob).
        self.counts = {"filtered": 0, "filter_errors": 0, "without_items": 0}

    def finished(self, trace: PendingTrace) -> FinishedTrace | None:
        """The trace to score; None when it holds no item to score."""
        if trace.due is None:
            if self._root is not None:
                self.counts["without_items"] += 1
                return None
            return FinishedTrace(trace.trace_id, [], [], {}, self._rootless(trace))
        ids = {span.span_id for span in trace.spans}
        orphans = [s for s in trace.spans if s.parent_span_id and s.parent_span_id not in ids]
        items = {}
        for root in (span for span in trace.spans if self.is_root(span)):
            fields, snapshot = _context(root)
            if not self._kept(fields, snapshot):
                continue
            items[root.span_id] = ItemToScore(fields, snapshot, _missing_parents(root, orphans))
        if not items:
            return None
        return FinishedTrace(trace.trace_id, trace.spans, trace.logs, items)

    def _kept(self, fields: dict[str, Any], snapshot: dict[str, Any]) -> bool:
        if self._filter is None:
            return True
        try:
            kept = self._filter(
                {
                    "requestContext": snapshot,
                    "entity": self._entity,
                    "entityType": None,
                    "source": "LIVE",
                    "threadId": fields.get("thread_id"),
                    "resourceId": fields.get("resource_id"),
                    "projectId": None,
                }
            )
        except Exception:  # a filter function that raises skips the item, as live scoring does
            self.counts["filter_errors"] += 1
            return False
        if not kept:
            self.counts["filtered"] += 1
        return bool(kept)

    def _rootless(self, trace: PendingTrace) -> str:
        names = sorted({span.name for span in trace.spans})
        shown = ", ".join(repr(name) for name in names[:5]) + (" ..." if len(names) > 5 else "")
        held = f"{len(trace.spans)} spans ({shown})" if trace.spans else "log records only"
        return (
            f"no root span (a span without a parent) arrived within max_wait "
            f"({self._max_wait:g} s) of its first span; {held} arrived. If the root span is "
            "recorded by another service, name the spans that are items with root= "
            "(--root 'invoke_agent *')"
        )


def _context(root: Span) -> tuple[dict[str, Any], dict[str, Any]]:
    """An item's row fields read from its root's attributes, and its request context."""
    attributes = {**root.resource, **root.attributes}
    fields = {}
    for field, keys in _ATTRIBUTE_FIELDS.items():
        value = next((attributes[key] for key in keys if key in attributes), None)
        if value is not None:
            fields[field] = str(value)
    kept = {
        key: value
        for key, value in attributes.items()
        if not carries_conversation(key)
        and not (isinstance(value, str) and len(value) > _LONGEST_CONTEXT_TEXT)
    }
    return fields, request_context_snapshot(kept)


def _missing_parents(root: Span, orphans: list[Span]) -> str | None:
    """Why the item of ``root`` is incomplete (a span that started within it names a parent
    that did not arrive), or None."""
    inside = [
        span
        for span in orphans
        if span is not root and root.start_ns <= span.start_ns <= root.end_ns
    ]
    if not inside:
        return None
    span = inside[0]
    return (
        f"it is incomplete: span {span.span_id} {span.name!r}, which started within it, names "
        f"the parent {span.parent_span_id}, which did not arrive"
        f"{f' (and {len(inside) - 1} more such spans)' if len(inside) > 1 else ''}; a span "
        "missing from a trace could change its scores, so it is not scored (a longer grace "
        "waits for late spans)"
    )
