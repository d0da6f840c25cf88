"""Values the databases cannot hold as they are, and how the store keeps them.

- **Non-finite numbers in JSON.** JSON has no NaN or infinity (``json_text`` would write
  ``null``), so in the store's JSON columns they are written as MongoDB's Extended JSON writes
  them, ``{"$numberDouble": "NaN"}``, ``"Infinity"`` or ``"-Infinity"``, and read back as the
  float. (A dict whose only key is ``$numberDouble`` with one of those texts reads back as the
  float too.) The ``score`` column is a float column: an infinity stays one, a NaN is a missing
  score.
- **NUL characters on PostgreSQL.** PostgreSQL's text and JSONB cannot hold U+0000: there each
  one, in any text, JSON value or key of a row, is stored as U+FFFD (the replacement character),
  and the row's ``metadata["nulReplaced"]`` lists the fields where that happened. SQLite keeps
  NUL as it is.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import date, datetime, time, timedelta
from typing import Any

import orjson

from evaldag._compat.js import json_text

_NUMBER = "$numberDouble"
_NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
_NUL, _REPLACEMENT = "\x00", "\ufffd"
#: What JSON text holds where a non-finite number was.
_MAY_HOLD_NON_FINITE = re.compile("null|NaN|Infinity")
#: The row metadata key listing the fields whose NUL characters were replaced.
NUL_REPLACED = "nulReplaced"
#: Values that hold no text to look into.
_SCALARS = (int, float, bool, type(None), datetime, date, time, timedelta)


#: The JSON text of each dict and list written in one ``json_memo``, by id (with the value, so
#: that its id stays its own).
_MEMO: ContextVar[dict[int, tuple[Any, str | None]] | None] = ContextVar(
    "evaldag_store_json_memo", default=None
)


@contextmanager
def json_memo() -> Iterator[None]:
    """Within it, ``stored_json`` writes a dict or list once however many rows hold it (a
    call's input and output are in a row per scorer); its values must not change meanwhile."""
    token = _MEMO.set({})
    try:
        yield
    finally:
        _MEMO.reset(token)


def stored_json(value: Any) -> str | None:
    """``value`` as the store's JSON text: non-finite numbers as ``{"$numberDouble": ...}``."""
    if value is None:  # most of a row's JSON columns
        return None
    kind = type(value)
    if kind is dict or kind is list:
        memo = _MEMO.get()
        if memo is not None:
            known = memo.get(id(value))
            if known is None:
                known = memo[id(value)] = (value, _json_text(value))
            return known[1]
    return _json_text(value)


def _json_text(value: Any) -> str | None:
    text = json_text(value)
    # JSON text writes a non-finite number as null (orjson) or NaN and Infinity (the json
    # module, for what orjson cannot write): text without these holds none to tag (most values;
    # the walk over every value was 4% of a live row's cost)
    if text is None or not _MAY_HOLD_NON_FINITE.search(text) or not _has_non_finite(value):
        return text
    return json_text(_tagged(value))


def loaded_json(text: str | bytes | None) -> Any:
    """A value ``stored_json`` wrote: the tagged numbers back as floats."""
    if text is None:
        return None
    value = orjson.loads(text)
    found = _NUMBER in text if isinstance(text, str) else _NUMBER.encode() in text
    return _untagged(value) if found else value


def nul_free(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` (a score row's fields) with every NUL character replaced, and the fields that
    had one listed in its ``metadata["nulReplaced"]``; ``record`` itself when it has none."""
    changed: dict[str, Any] = {}
    for name, value in record.items():
        if type(value) is str:
            if _NUL in value:
                changed[name] = value.replace(_NUL, _REPLACEMENT)
        elif not isinstance(value, _SCALARS) and "\\u0000" in (text := json_text(value) or ""):
            # JSON text escapes NUL, in keys as in values (and models, arrays as the store writes
            # them); rare, so only then is the value walked
            changed[name] = _nul_replaced(orjson.loads(text))
    if not changed:
        return record
    metadata = {**(changed.get("metadata") or record.get("metadata") or {})}
    metadata[NUL_REPLACED] = sorted(changed)
    return {**record, **changed, "metadata": metadata}


def _has_non_finite(value: Any) -> bool:
    """Whether a NaN or an infinity is in ``value``: runs over every JSON value a row stores,
    so exact types are tested first and loops are plain."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return False
    if kind is float:
        return value - value != 0  # inf - inf and NaN - NaN are NaN
    if kind is dict or isinstance(value, Mapping):
        items = value.values()
    elif kind is list or kind is tuple:
        items = value
    else:
        return isinstance(value, float) and not math.isfinite(value)
    for item in items:
        kind = type(item)
        if kind is str or kind is int or kind is bool or item is None:
            continue
        if _has_non_finite(item):
            return True
    return False


def _tagged(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return {_NUMBER: "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")}
    if isinstance(value, Mapping):
        return {key: _tagged(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_tagged(item) for item in value]
    return value


def _untagged(value: Any) -> Any:
    if isinstance(value, dict):
        tag = value.get(_NUMBER)
        if len(value) == 1 and isinstance(tag, str) and tag in _NON_FINITE:
            return _NON_FINITE[tag]
        return {key: _untagged(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_untagged(item) for item in value]
    return value


def _nul_replaced(value: Any) -> Any:
    """JSON data with NUL replaced in every text and key."""
    if isinstance(value, str):
        return value.replace(_NUL, _REPLACEMENT)
    if isinstance(value, dict):
        return {_nul_replaced(key): _nul_replaced(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_nul_replaced(item) for item in value]
    return value
