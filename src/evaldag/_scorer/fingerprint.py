"""What makes two scorers the same scorer, and two datasets the same data.

A scorer's fingerprint covers its id, the dataset columns it reads, its judge settings (without
credentials), and each step's and ``prepare_run``'s code, with the values its closures and
defaults hold: a prebuilt scorer built with other options, or a step whose code was edited, is
another scorer. A checkpointed run resumes only when the scorers and the rows match.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
from collections.abc import Callable
from types import CodeType, FunctionType, MethodType
from typing import Any

import pandas as pd

from evaldag._compat.js import json_text
from evaldag._judge.settings import Judge, is_secret_setting
from evaldag._reader import python_data
from evaldag._scorer.steps import PromptStep, ScorerSpec


def _digest(value: Any) -> str:
    return hashlib.sha256((json_text(value) or "null").encode()).hexdigest()


def _code(code: CodeType) -> list[Any]:
    constants = [_code(c) if isinstance(c, CodeType) else repr(c) for c in code.co_consts]
    return [code.co_code.hex(), constants, list(code.co_names)]


def _value(value: Any, seen: set[int]) -> Any:
    if callable(value) and not isinstance(value, type):
        return code_fingerprint(value, seen)
    if isinstance(value, Judge):
        return judge_settings(value)
    if isinstance(value, list | tuple):
        return [_value(item, seen) for item in value]
    if isinstance(value, dict):
        return {str(key): _value(item, seen) for key, item in value.items()}
    if isinstance(value, set | frozenset):  # iteration order varies between processes
        return sorted(json_text(_value(item, seen)) or "" for item in value)
    text = repr(value)
    if " at 0x" in text and hasattr(value, "__dict__"):  # the default repr names an address
        return [type(value).__qualname__, _value(dict(vars(value)), seen)]
    return text


def code_fingerprint(fn: Callable[..., Any], seen: set[int] | None = None) -> Any:
    """``fn``'s code and the values it closes over, as JSON-ready data (recursive, cycle-safe)."""
    seen = set() if seen is None else seen
    if id(fn) in seen:
        return "<recursive>"
    seen.add(id(fn))
    if isinstance(fn, MethodType):
        return [code_fingerprint(fn.__func__, seen), _value(fn.__self__, seen)]
    if isinstance(fn, functools.partial):  # the function and the values bound to it
        bound = [_value(list(fn.args), seen), _value(dict(fn.keywords), seen)]
        return ["partial", code_fingerprint(fn.func, seen), bound]
    if not isinstance(fn, FunctionType):
        call = getattr(type(fn), "__call__", None)  # noqa: B004 - a callable object
        state = getattr(fn, "__dict__", {})
        inner = code_fingerprint(call, seen) if isinstance(call, FunctionType) else None
        return [type(fn).__qualname__, inner, _value(dict(state), seen)]
    cells = [cell.cell_contents for cell in fn.__closure__ or () if _filled(cell)]
    return [  # not the name: the same lambda written in two places is the same step
        _code(fn.__code__),
        _value(list(fn.__defaults__ or ()), seen),
        _value(dict(fn.__kwdefaults__ or {}), seen),
        _value(cells, seen),
    ]


def _filled(cell: Any) -> bool:
    try:
        cell.cell_contents  # noqa: B018 - an empty cell raises
    except ValueError:
        return False
    return True


#: Judge settings that say how a call travels, not what the judge answers: a checkpoint made
#: with one transport, time limit, retry count, concurrency or cache resumes with another.
_HOW_CALLED = frozenset(
    {"transport", "timeout", "max_retries", "num_retries", "max_concurrency", "cache"}
)


def judge_settings(judge: Judge | None) -> dict[str, Any] | None:
    """The settings that decide a judge's replies: no keys, header values or URL credentials,
    nor how calls travel (``http`` and ``litellm`` ask the same endpoint the same question, and
    a lower ``max_concurrency`` after a storm of 429s asks it the same questions more slowly)."""
    if judge is None:
        return None
    settings = judge.model_dump(exclude_none=True)
    kept = {k: v for k, v in settings.items() if k not in _HOW_CALLED and not is_secret_setting(k)}
    if isinstance(kept.get("extra_headers"), dict):
        kept["extra_headers"] = sorted(kept["extra_headers"])
    return kept


def scorer_fingerprint(scorer: ScorerSpec) -> str:
    """A digest of everything that decides the scorer's scores."""
    steps = []
    for step in scorer.steps:
        definition = step.definition
        if isinstance(definition, PromptStep):
            schema = definition.output_schema
            steps.append(
                {
                    "stage": step.stage,
                    "description": definition.description,
                    "prompt": code_fingerprint(definition.create_prompt),
                    "schema": schema.model_json_schema()
                    if inspect.isclass(schema) and hasattr(schema, "model_json_schema")
                    else repr(schema),
                    "judge": judge_settings(definition.judge),
                }
            )
        else:
            steps.append({"stage": step.stage, "code": code_fingerprint(definition.fn)})
    return _digest(
        {
            "id": scorer.id,
            "columns": list(scorer.columns),
            "judge": judge_settings(scorer.judge),
            "prepare_run": None
            if scorer.prepare_run is None
            else code_fingerprint(scorer.prepare_run),
            "steps": steps,
        }
    )


def rows_fingerprint(rows: pd.DataFrame) -> str:
    """A digest of the rows' content, every column, in order (numpy and Arrow values as data)."""
    cells = [[python_data(cell) for cell in row] for row in rows.itertuples(index=False)]
    return _digest({"columns": [str(c) for c in rows.columns], "rows": cells})
