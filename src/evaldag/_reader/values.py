"""Values as Python data: numpy arrays and Arrow values (a Parquet file's read-back) as lists and
dicts, library objects (pydantic models, dataclasses) as their JSON-ready data."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel
from pydantic_core import to_jsonable_python

#: Values that are never transcripts nor hold one.
SCALARS = frozenset({str, int, float, bool, type(None)})


def python_data(value: Any) -> Any:
    """``value``, or when numpy arrays or Arrow values sit in it, its :func:`plain_data`."""
    if type(value) in SCALARS or not arrow_derived(value):
        return value
    return plain_data(value)


def plain_data(value: Any) -> Any:
    """``value`` with numpy arrays and Arrow values as lists, dicts and Python scalars.

    Keys whose value is missing (None or NaN) are left out of dicts: Arrow gives every struct in
    a column the keys of all of them, so a Parquet file reads back ``{"city": None}`` for a tool
    call that had no ``city`` argument.
    """
    # every live row's input and output comes through here: exact types first, no ABC checks
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if kind is dict:
        return {
            key: item if type(item) is str else plain_data(item)
            for key, item in value.items()
            if not (item is None or (isinstance(item, float) and item != item))
        }
    if kind is list or kind is tuple:
        return [item if type(item) is str else plain_data(item) for item in value]
    if isinstance(value, Mapping):
        return {key: plain_data(item) for key, item in value.items() if not missing(item)}
    if isinstance(value, list | tuple):
        return [plain_data(item) for item in value]
    module = kind.__module__
    if module.startswith("numpy"):
        if not getattr(value, "ndim", 0):
            return value.item()
        if value.dtype != object:
            return value.tolist()
        return [plain_data(item) for item in value]
    if module.startswith("pyarrow"):
        return plain_data(value.as_py() if hasattr(value, "as_py") else value.to_pylist())
    return value


def is_message_model(value: Any) -> bool:
    """Whether ``value`` is one of ``evaldag.messages``' models.

    Their module is imported only once a pydantic model is read, so a run of plain data (strings,
    dicts) never builds its classes (~12 ms of a first run's CPU).
    """
    if not isinstance(value, BaseModel):
        return False
    from evaldag.messages import MastraModel

    return isinstance(value, MastraModel)


def object_data(value: Any) -> Any:
    """A library's message object (a pydantic model, a dataclass) as its JSON-ready data, with
    the keys its own JSON has (aliases: Gemini's ``functionCall``); other values as they are."""
    if isinstance(value, BaseModel) or (
        dataclasses.is_dataclass(value) and not isinstance(value, type)
    ):
        return to_jsonable_python(value, by_alias=True)
    return value


def is_foreign(value: Any) -> bool:
    """Whether ``value`` is a numpy or Arrow value."""
    return type(value).__module__.startswith(("numpy", "pyarrow"))


def arrow_derived(value: Any) -> bool:
    """Whether a numpy or Arrow value sits anywhere in ``value``."""
    kind = type(value)
    if kind in SCALARS:
        return False
    if kind is dict or isinstance(value, Mapping):
        value = value.values()
    elif not (kind is list or kind is tuple):
        return is_foreign(value)
    for item in value:
        if type(item) not in SCALARS and arrow_derived(item):
            return True
    return False


def missing(value: Any) -> bool:
    """Whether ``value`` stands for no value: None or NaN."""
    return value is None or (isinstance(value, float) and math.isnan(value))


def empty(value: Any) -> bool:
    """Whether ``value`` holds nothing: None, NaN, an empty string, list or dict."""
    return missing(value) or (isinstance(value, str | list | tuple | dict) and not value)
