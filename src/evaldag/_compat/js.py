"""JavaScript's semantics, where Python's differ and Mastra's numbers depend on them.

One place for what a scorer ported from Mastra needs to match it to the last bit: left-to-right
sums, ``Math.round`` to two decimals, ``JSON.stringify`` text, ``\\s`` and ``trim()``, UTF-16
lengths, truthiness, and camelCase names.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Iterable, Mapping
from typing import Any

import orjson
from pydantic_core import to_jsonable_python

# --- numbers ---------------------------------------------------------------------------------


def js_total(values: Iterable[float]) -> float:
    """The values added one by one from the left, as JavaScript's ``reduce`` adds them.

    ``sum()`` compensates rounding errors of floats from Python 3.12 on, so a total such as
    0.7 + 0.3 + 0.3 could differ from Mastra's in the last bit, and a score compared with a
    threshold or rounded at a half could come out differently.
    """
    total = 0.0
    for value in values:
        total += value
    return total


def round_to_two_decimals(value: float) -> float:
    """``value`` rounded to two decimals as Mastra does: halves up, after adding machine epsilon."""
    return math_round_2(value + sys.float_info.epsilon)


def math_round_2(value: float) -> float:
    """``Math.round(value * 100) / 100``: halves round up."""
    scaled = value * 100
    if not math.isfinite(scaled):
        return scaled
    whole = math.floor(scaled)
    if scaled - whole >= 0.5:
        whole += 1
    return whole / 100


def js_number(value: Any) -> str:
    """A number as JavaScript's template literals write it (1, not 1.0)."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def js_truthy(value: Any) -> bool:
    """JavaScript's truthiness of a JSON value: empty dicts and lists are true, 0 and '' false."""
    if value is None or isinstance(value, bool):
        return bool(value)
    if isinstance(value, str):
        return value != ""
    if isinstance(value, int | float):
        return value != 0 and not math.isnan(value)
    return True


# --- JSON text -------------------------------------------------------------------------------

#: Marks a missing value for :func:`js_json` (``JSON.stringify(undefined)``).
MISSING = object()


def js_json(value: Any) -> str | None:
    """``JSON.stringify(value)``: None for a missing value, key order kept, 1.0 written as 1."""
    if value is MISSING:
        return None
    return json.dumps(_js_value(value), separators=(",", ":"), ensure_ascii=False)


def _js_value(value: Any) -> Any:
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        return int(value) if value.is_integer() and abs(value) < 2**53 else value
    if isinstance(value, Mapping):
        return {str(key): _js_value(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_js_value(item) for item in value]
    return value


def json_text(value: Any) -> str | None:
    """``value`` as JSON text (pydantic models, bytes and odd objects included); None stays None.

    NaN and infinities become ``null``, as ``JSON.stringify`` writes them; numpy arrays and
    Arrow values (a Parquet file's lists and structs) their lists and objects. Every step result
    of every row goes through here, so it uses orjson (about 7x faster than the json module).
    """
    if value is None:
        return None
    try:
        return orjson.dumps(value, default=_jsonable, option=_ORJSON_OPTIONS).decode()
    except orjson.JSONEncodeError:  # e.g. an integer beyond 64 bits, a circular reference
        return json.dumps(_jsonable(value), default=repr)


_ORJSON_OPTIONS = orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY


#: pandas' missing values, which pydantic writes as their repr ("<NA>") or cannot write (NaT).
_PANDAS_MISSING = frozenset({"NAType", "NaTType"})


def _jsonable(value: Any) -> Any:
    module = type(value).__module__
    if module.startswith("pandas") and type(value).__name__ in _PANDAS_MISSING:
        return None  # a missing cell, as NaN is
    if module.startswith("numpy"):  # those orjson leaves: arrays of objects, of strings
        return value.tolist()
    if module.startswith("pyarrow"):
        return value.as_py() if hasattr(value, "as_py") else value.to_pylist()
    return to_jsonable_python(value, fallback=repr, bytes_mode="base64")


# --- strings ---------------------------------------------------------------------------------

#: JavaScript's ``\s``: what ``/\s+/`` and ``trim()`` treat as whitespace.
JS_WHITESPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)
#: Runs of JavaScript whitespace (``/\s+/g``).
JS_SPACES = re.compile(f"[{JS_WHITESPACE}]+")
#: Characters on which Python's ``str.split()`` and JavaScript's ``\s`` disagree.
_SPLIT_DISAGREES = re.compile("[\x1c-\x1f\x85\ufeff]")


def js_words(text: str) -> list[str]:
    r"""``text.split(/\s+/)`` without empty pieces."""
    if _SPLIT_DISAGREES.search(text) is None:
        return text.split()
    return [word for word in JS_SPACES.split(text) if word]


def js_trim(text: str) -> str:
    """``text.trim()`` in JavaScript."""
    return text.strip(JS_WHITESPACE)


def collapsed_whitespace(text: str) -> str:
    """Whitespace runs as one space, trimmed (``replace(/\\s+/g, ' ').trim()``)."""
    if _SPLIT_DISAGREES.search(text) is None:
        return " ".join(text.split())
    return js_trim(JS_SPACES.sub(" ", text))


def without_whitespace(text: str) -> str:
    """``text`` with its whitespace removed (``replace(/\\s+/g, '')``)."""
    if _SPLIT_DISAGREES.search(text) is None:
        return "".join(text.split())
    return JS_SPACES.sub("", text)


def js_length(text: str) -> int:
    """``text.length`` in JavaScript: UTF-16 code units."""
    if is_bmp(text):
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def is_bmp(text: str) -> bool:
    """Whether every character of ``text`` is one UTF-16 code unit (as JavaScript counts)."""
    return text.isascii() or max(text) <= "\uffff"


def utf16_units(text: str) -> tuple[int, ...]:
    """``text`` as UTF-16 code units: what JavaScript indexes and counts."""
    encoded = text.encode("utf-16-le", "surrogatepass")
    return tuple(int.from_bytes(encoded[i : i + 2], "little") for i in range(0, len(encoded), 2))


def camel(name: str) -> str:
    """``generate_score`` → ``generateScore``: Mastra's spelling of a snake_case name."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)
