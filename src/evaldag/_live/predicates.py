"""Scoring filters: Mastra's predicate DSL (``@mastra/core/predicate``) over a scoring context.

A filter is JSON data, e.g. ``{"op": "eq", "left": {"path": "requestContext.user.tier"},
"right": {"literal": "pro"}}``, checked when it is given (an unknown op or a path outside
``SCORING_ROOTS`` is an error then) and compiled once into a function. Evaluation never
raises: a path that does not resolve makes comparisons, ``in`` and ``exists`` false and
``notIn`` and ``notExists`` true. Values compare as JavaScript compares them (``===``; ``<`` on
two numbers or two strings only, strings by UTF-16 code units; JavaScript's truthiness).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    TypeAdapter,
    ValidationError,
)

from evaldag.errors import EvalDagError

#: What a scoring filter's paths may start with (Mastra's ``SCORING_PREDICATE_ROOTS``).
SCORING_ROOTS = (
    "requestContext",
    "entity",
    "entityType",
    "source",
    "threadId",
    "resourceId",
    "projectId",
)
_TEMPLATE = re.compile(r"^\$\{([^}]+)\}$")
_MISSING = object()
Scalar = StrictStr | StrictInt | StrictFloat | StrictBool | None
Check = Callable[[Mapping[str, Any]], bool]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class PathRef(_Model):
    """A value read from the scoring context by a dotted path (or ``${path}``)."""

    path: str = Field(min_length=1)


class LiteralRef(_Model):
    """A constant."""

    literal: Scalar


Ref = PathRef | LiteralRef


class Comparison(_Model):
    op: Literal["eq", "ne", "lt", "lte", "gt", "gte"]
    left: Ref
    right: Ref


class Membership(_Model):
    op: Literal["in", "notIn"]
    value: Ref
    set: list[Scalar] = Field(min_length=1)


class Existence(_Model):
    op: Literal["exists", "notExists"]
    path: str = Field(min_length=1)


class Truthiness(_Model):
    op: Literal["truthy", "falsy"]
    value: Ref


class Junction(_Model):
    op: Literal["and", "or"]
    args: list[Predicate] = Field(min_length=1)


class Negation(_Model):
    op: Literal["not"]
    arg: Predicate


Predicate = Annotated[
    Comparison | Membership | Existence | Truthiness | Junction | Negation,
    Field(discriminator="op"),
]
Junction.model_rebuild()
Negation.model_rebuild()
_PREDICATE = TypeAdapter(Predicate)


def scoring_filter(filter: Any) -> Check | None:
    """A filter option as a function of the scoring context: a predicate (checked and compiled
    here) or a Python callable as it is; None for no filter."""
    if filter is None or callable(filter):
        return filter
    try:
        predicate = _PREDICATE.validate_python(filter)
    except ValidationError as error:
        problem = error.errors()[0]
        where = ".".join(str(part) for part in problem["loc"])
        raise EvalDagError(
            "EVALDAG_LIVE_INVALID_FILTER",
            f"Invalid scoring filter: {problem['msg']} at '{where or 'the top'}'; a filter is a "
            "predicate such as {'op': 'eq', 'left': {'path': 'requestContext.tier'}, "
            "'right': {'literal': 'pro'}} or a function of the scoring context",
            details={"filter": repr(filter)},
        ) from error
    invalid = [path for path in _paths(predicate) if _root(path) not in SCORING_ROOTS]
    if invalid:
        raise EvalDagError(
            "EVALDAG_LIVE_INVALID_FILTER",
            f"Invalid scoring filter: path(s) {', '.join(repr(p) for p in invalid)} must start "
            f"with one of: {', '.join(SCORING_ROOTS)}",
            details={"paths": invalid},
        )
    return _compiled(predicate)


def _paths(predicate: Any) -> list[str]:
    if isinstance(predicate, Junction):
        return [path for arg in predicate.args for path in _paths(arg)]
    if isinstance(predicate, Negation):
        return _paths(predicate.arg)
    if isinstance(predicate, Existence):
        return [predicate.path]
    refs = (
        [predicate.left, predicate.right]
        if isinstance(predicate, Comparison)
        else [predicate.value]
    )
    return [ref.path for ref in refs if isinstance(ref, PathRef)]


def _normalized(path: str) -> str:
    template = _TEMPLATE.match(path.strip())
    return template.group(1).strip() if template else path.strip()


def _root(path: str) -> str:
    return _normalized(path).partition(".")[0]


def _compiled(predicate: Any) -> Check:
    """The predicate as a function of the scoring context."""
    if isinstance(predicate, Junction):
        checks = [_compiled(arg) for arg in predicate.args]
        if predicate.op == "and":
            return lambda context: all(check(context) for check in checks)
        return lambda context: any(check(context) for check in checks)
    if isinstance(predicate, Negation):
        inner = _compiled(predicate.arg)
        return lambda context: not inner(context)
    if isinstance(predicate, Existence):
        path = _normalized(predicate.path)
        found = predicate.op == "exists"
        return lambda context: (_resolved(path, context) is not _MISSING) == found
    if isinstance(predicate, Truthiness):
        value = _reader(predicate.value)
        wanted = predicate.op == "truthy"
        return lambda context: _truthy(value(context)) == wanted
    if isinstance(predicate, Membership):
        value = _reader(predicate.value)
        members = predicate.set
        negated = predicate.op == "notIn"

        def member(context: Mapping[str, Any]) -> bool:
            found = value(context)
            if found is _MISSING:
                return negated
            return any(_strict_equal(m, found) for m in members) != negated

        return member
    left, right, op = _reader(predicate.left), _reader(predicate.right), predicate.op

    def compared(context: Mapping[str, Any]) -> bool:
        a, b = left(context), right(context)
        return a is not _MISSING and b is not _MISSING and _compare(op, a, b)

    return compared


def _reader(ref: PathRef | LiteralRef) -> Callable[[Mapping[str, Any]], Any]:
    if isinstance(ref, LiteralRef):
        constant = ref.literal
        return lambda context: constant
    path = _normalized(ref.path)
    return lambda context: _resolved(path, context)


def _resolved(path: str, context: Mapping[str, Any]) -> Any:
    """Mastra's ``resolveScoringPath``: the value at ``path``, or ``_MISSING``."""
    if not path:
        return _MISSING
    scope, _, rest = path.partition(".")
    if scope == "requestContext":
        snapshot = context.get("requestContext")
        if snapshot is None:
            return _MISSING
        if not rest:
            return snapshot
        if isinstance(snapshot, Mapping) and rest in snapshot:  # the snapshot's dotted keys
            return snapshot[rest]
        return _walked(snapshot, rest)
    if scope == "entity":
        entity = context.get("entity")
        return _MISSING if entity is None else _walked(entity, rest)
    if scope in SCORING_ROOTS and not rest:
        value = context.get(scope)
        return _MISSING if value is None else value
    return _MISSING


def _walked(root: Any, path: str) -> Any:
    value = root
    for part in path.split(".") if path else ():
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        elif isinstance(value, list | tuple) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return _MISSING
    return value


_KINDS = {str: "string", bool: "boolean", int: "number", float: "number", type(None): "null"}


def _kind(value: Any) -> str:
    """JavaScript's ``typeof`` for JSON values (``null`` its own kind)."""
    kind = _KINDS.get(type(value))
    if kind is not None:
        return kind
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return "string" if isinstance(value, str) else "object"


def _strict_equal(a: Any, b: Any) -> bool:
    """JavaScript's ``===``: same kind and value; objects only when the same object."""
    kind = _kind(a)
    if kind != _kind(b):
        return False
    return a is b if kind == "object" else a == b


def _compare(op: str, a: Any, b: Any) -> bool:
    if op == "eq":
        return _strict_equal(a, b)
    if op == "ne":
        return not _strict_equal(a, b)
    kind = _kind(a)
    if kind != _kind(b) or kind not in ("number", "string"):
        return False
    if kind == "string":  # JavaScript orders strings by UTF-16 code units
        a, b = a.encode("utf-16-be"), b.encode("utf-16-be")
    if op == "lt":
        return a < b
    if op == "lte":
        return a <= b
    return a > b if op == "gt" else a >= b


def _truthy(value: Any) -> bool:
    """JavaScript's ``Boolean(value)``: objects (even empty ones) are true, NaN is false."""
    if value is _MISSING or value is None or value is False:
        return False
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value != 0 and not math.isnan(value)
    return value != "" if isinstance(value, str) else True
