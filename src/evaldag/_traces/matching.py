"""Which spans of an item match a query: a glob of span names, attribute values, a parent's or a
child's name. What the span checks (``evaldag.checks.has_span`` ...) count."""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evaldag.errors import EvalDagError


@dataclass(frozen=True, slots=True)
class SpanQuery:
    """Spans named like ``name`` (a glob), whose ``attributes`` hold these values (or pass these
    functions), under a span named like ``parent`` and over one named like ``child``."""

    name: str = "*"
    attributes: Mapping[str, Any] | None = None
    parent: str | None = None
    child: str | None = None

    def matches(self, span: Mapping[str, Any], by_id: Mapping[str, Mapping[str, Any]]) -> bool:
        """Whether ``span`` (one of an item's spans, ``by_id``) matches."""
        if self.name != "*" and not fnmatch.fnmatchcase(str(span.get("name", "")), self.name):
            return False
        given = span.get("attributes") or {}
        for key, wanted in (self.attributes or {}).items():
            if key not in given:
                return False
            value = given[key]
            if not (wanted(value) if callable(wanted) else value == wanted):
                return False
        if self.parent is not None:
            parent = by_id.get(span.get("parent_span_id") or "")
            if parent is None or not fnmatch.fnmatchcase(str(parent.get("name", "")), self.parent):
                return False
        if self.child is not None:
            own = span.get("span_id")
            if not any(
                other.get("parent_span_id") == own
                and fnmatch.fnmatchcase(str(other.get("name", "")), self.child)
                for other in by_id.values()
            ):
                return False
        return True

    def describe(self) -> str:
        """The query in words, for a check's description."""
        words = f"spans named {self.name!r}"
        if self.attributes:
            words += f" with {dict(self.attributes)!r}"
        if self.parent is not None:
            words += f" under {self.parent!r}"
        if self.child is not None:
            words += f" over {self.child!r}"
        return words


def matching_spans(spans: Any, query: SpanQuery, check: str) -> list[Mapping[str, Any]]:
    """The spans of an item (``run.spans``, as ``read_traces`` gives them) ``query`` matches."""
    if isinstance(spans, str):
        spans = json.loads(spans)  # a CSV cell
    if not isinstance(spans, list) or not all(isinstance(s, Mapping) for s in spans):
        raise EvalDagError(
            "EVALDAG_INVALID_SPANS",
            f"{check} reads the item's spans, the 'spans' column read_traces gives: a list of "
            f"spans, got {type(spans).__name__}",
            details={"field": "run.spans"},
        )
    # a parent or child is found by id; without one (most queries) the index is not needed
    related = query.parent is not None or query.child is not None
    by_id = {str(span.get("span_id")): span for span in spans} if related else {}
    return [span for span in spans if query.matches(span, by_id)]


def checked_query(check: str, name: Any, attributes: Any, parent: Any, child: Any) -> SpanQuery:
    """A query from a check's arguments; bad ones are an error naming the argument."""
    for argument, value in (("name", name), ("parent", parent), ("child", child)):
        if value is not None and not isinstance(value, str):
            raise EvalDagError(
                "EVALDAG_INVALID_CHECK_ARGUMENT",
                f"{check}: {argument} must be a glob of span names, got {type(value).__name__}",
                details={"check": check, "argument": argument},
            )
    if attributes is not None and not isinstance(attributes, Mapping):
        raise EvalDagError(
            "EVALDAG_INVALID_CHECK_ARGUMENT",
            f"{check}: attributes must be a dict of attribute values (or functions of the "
            f"value), got {type(attributes).__name__}",
            details={"check": check, "argument": "attributes"},
        )
    return SpanQuery(name or "*", attributes, parent, child)
