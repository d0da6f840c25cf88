"""How the reader says what it cannot read: an ``EvalDagError`` naming the place (``output[3].
content[1].type``), what is there and what would be read instead."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from evaldag._reader.values import empty
from evaldag.errors import EvalDagError

DOCS = "see docs/transcripts.md for the shapes evaldag reads"


def malformed(path: str, problem: str) -> EvalDagError:
    """The error of a transcript that cannot be read at ``path``."""
    return EvalDagError(
        "EVALDAG_INVALID_TRANSCRIPT", f"{path} {problem}; {DOCS}", details={"field": path}
    )


def brief(value: Any) -> str:
    """What ``value`` is, for an error message: its type, and a dict's first keys."""
    if isinstance(value, Mapping):
        keys = list(value)[:5]
        return f"a dict with keys {keys}" if keys else "an empty dict"
    if isinstance(value, list | tuple):
        return f"a {type(value).__name__} of {len(value)} items"
    return type(value).__name__


def require_known_keys(
    value: Mapping[str, Any], known: Iterable[str] | frozenset[str], path: str, what: str
) -> None:
    """An error for the first key of ``value`` that is not ``known`` and holds something.

    Closed world: a key the reader does not know could hold text, a tool call or its result,
    which would then go unread; empty values (``None``, ``""``, ``[]``, ``{}``) hold nothing.
    """
    for key, item in value.items():
        if key not in known and not empty(item):
            raise malformed(
                f"{path}.{key}",
                f"is a key evaldag does not read in {what} (it could hold text, a tool call or "
                f"a result that would go unscored): got {brief(item)}; remove it from the "
                "messages (keep it in a column of its own)",
            )


def text_of(value: Any, path: str) -> str:
    """``value`` when it is a string; an error naming ``path`` otherwise."""
    if isinstance(value, str):
        return value
    raise malformed(path, f"must be a string, got {brief(value)}")
