"""What a function reaches: its code, and the code and values it uses from the user's modules.

A step's scores depend on more than its own code: on the helpers it calls, the module constants
it reads, the values its closure and default arguments hold, and on theirs in turn. A
:class:`Reach` follows those through the user's modules (the names in ``co_names`` looked up in
the function's globals) and stops at the standard library and installed packages, whose versions
decide them, and at evaldag's own functions, which count by name and the options they hold
(evaldag's version covers their code). Each part it finds is named for a person to read
(``helper 'normalize' (my_evals)``, ``module constant THRESHOLD in my_evals``) and holds
JSON-ready data without addresses, ids or set order, so the same code gives the same parts in
every process. Values under secret names (``api_key``, ``password``, a pydantic ``SecretStr``)
count by presence only: a rotated key is the same configuration.
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import dis
import enum
import fractions
import functools
import hashlib
import pathlib
import re
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import BuiltinFunctionType, CodeType, FunctionType, MethodType, ModuleType
from typing import Any

import numpy as np
import pandas as pd
from pydantic import BaseModel, SecretBytes, SecretStr

from evaldag._compat.js import json_text
from evaldag._judge.settings import Judge, reply_settings

#: Where a module comes from: the user's code is followed, the rest counts by name.
USER, EVALDAG, INSTALLED = "user", "evaldag", "installed"
#: Values whose repr is their content: no address, no state beyond the value.
_BY_REPR = (
    datetime.date,
    datetime.time,
    datetime.timedelta,
    decimal.Decimal,
    fractions.Fraction,
    uuid.UUID,
    pathlib.PurePath,
    range,
    slice,
    complex,
    bytes,
)
#: Words of a name that say its text is a credential (``api_key``, ``authToken``, ``DB_PASSWORD``).
_SECRET_WORDS = frozenset(
    {"secret", "password", "passwd", "credential", "credentials", "token", "apikey", "auth"}
)
#: Words before ``key`` that make it a credential's name: ``api_key``, not ``sort_key``.
_KEY_KINDS = frozenset({"api", "private", "access", "secret", "signing", "encryption", "master"})
_WORDS = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
#: Containers deeper than this count by their type: a bound on pathological nesting.
_DEEPEST = 40
SECRET = "<secret>"


def masked(name: Any, value: Any) -> bool:
    """Whether ``value``, held under ``name``, is likely a credential: a text named
    ``api_key``, ``authToken`` or ``DB_PASSWORD``; not ``keywords``, ``sort_key`` or a number
    named ``max_tokens``."""
    if not isinstance(name, str) or not isinstance(value, str | bytes):
        return False
    words = [w.lower() for w in _WORDS.findall(name)]
    keyed = any(w == "key" and words[i - 1] in _KEY_KINDS for i, w in enumerate(words) if i)
    return keyed or bool(_SECRET_WORDS.intersection(words))


@functools.cache
def _origin_of_file(module: str, file: str | None) -> str:
    top = module.partition(".")[0]
    if top == "evaldag":
        return EVALDAG
    if top in sys.stdlib_module_names or top == "builtins":
        return INSTALLED
    if file is not None and {"site-packages", "dist-packages"} & set(Path(file).parts):
        return INSTALLED
    return USER


def origin(module: str | None) -> str:
    """Whether the module named ``module`` is the user's (followed), evaldag's or installed (the
    standard library, or a package under site-packages): a function made by ``exec`` without a
    module, and ``__main__``, are the user's."""
    if not module:
        return USER
    return _origin_of_file(module, getattr(sys.modules.get(module), "__file__", None))


def module_label(module: str | None) -> str:
    """A module as a person knows it: an eval file loaded by path by its file name."""
    loaded = sys.modules.get(module or "")
    file = getattr(loaded, "__file__", None)
    if module and module.startswith("evaldag_eval_") and file:  # see evaldag._eval.eval_file
        return Path(file).name
    return module or "<no module>"


def _identity(value: Any) -> str:
    """A function, class or module by name: what counts of the ones not followed."""
    if isinstance(value, ModuleType):
        return f"module {value.__name__}"
    module = getattr(value, "__module__", None) or ""
    return f"{module}.{getattr(value, '__qualname__', type(value).__qualname__)}"


def _is_module_level(fn: Any) -> bool:
    """Whether ``fn`` is what its module holds under its name (a ``def`` at module level)."""
    module = sys.modules.get(getattr(fn, "__module__", None) or "")
    return module is not None and getattr(module, fn.__name__, None) is fn


def _names(code: CodeType) -> set[str]:
    """The global and attribute names ``code`` and the code nested in it (lambdas,
    comprehensions, inner functions) use."""
    found = set(code.co_names)
    for constant in code.co_consts:
        if isinstance(constant, CodeType):
            found |= _names(constant)
    return found


#: Methods that change the container they are called on.
_MUTATORS = frozenset(
    {"append", "extend", "insert", "add", "update", "setdefault", "pop", "popitem", "remove",
     "discard", "clear", "appendleft", "extendleft", "put", "put_nowait", "write"}
)  # fmt: skip
#: What may compute a subscript's key between a global and the item stored into it.
_KEY_LOADS = frozenset({"LOAD_FAST", "LOAD_CONST", "LOAD_GLOBAL", "LOAD_DEREF", "LOAD_ATTR"})


def _changed_names(code: CodeType) -> set[str]:
    """The globals ``code`` (and the code nested in it) changes: ``X.append(...)``,
    ``X[k] = v``, ``X[k] += v``, ``del X[k]``, ``X.a = v``, or ``global X`` and an assignment."""
    found = set()
    instructions = list(dis.get_instructions(code))
    for i, instruction in enumerate(instructions):
        if instruction.opname in ("STORE_GLOBAL", "DELETE_GLOBAL"):
            found.add(instruction.argval)
        if instruction.opname != "LOAD_GLOBAL" or i + 1 == len(instructions):
            continue
        after = instructions[i + 1]
        end = next(
            (
                j
                for j in range(i + 1, len(instructions))
                if instructions[j].opname not in _KEY_LOADS
            ),
            len(instructions) - 1,
        )
        if (
            (after.opname in ("LOAD_METHOD", "LOAD_ATTR") and after.argval in _MUTATORS)
            or after.opname == "STORE_ATTR"
            or (
                end > i + 1
                and instructions[end].opname in ("STORE_SUBSCR", "DELETE_SUBSCR", "COPY")
            )
        ):
            found.add(instruction.argval)
    for constant in code.co_consts:
        if isinstance(constant, CodeType):
            found |= _changed_names(constant)
    return found


def _functions_of(scope: dict[str, Any]) -> Iterator[FunctionType]:
    """The functions a module defines, its classes' methods included."""
    for value in scope.values():
        members = vars(value).values() if isinstance(value, type) else [value]
        for member in members:
            member = getattr(member, "__func__", member)  # a static or class method
            if isinstance(member, FunctionType) and member.__globals__ is scope:
                yield member


@dataclass
class Memo:
    """What the walks of one fingerprint share, by id() with the object itself (which keeps the
    id from being reused): the values described that hold no part (a word list, a table read
    by many steps is read once), and the globals each user module's code changes."""

    plain: dict[int, tuple[Any, Any]] = field(default_factory=dict)
    changed: dict[int, tuple[dict[str, Any], frozenset[str]]] = field(default_factory=dict)

    def changed_in(self, scope: dict[str, Any]) -> frozenset[str]:
        """The globals of the module ``scope`` its own functions change: state the run
        accumulates (a call log, a cache), not configuration."""
        known = self.changed.get(id(scope))
        if known is None or known[0] is not scope:
            names = frozenset().union(*(_changed_names(f.__code__) for f in _functions_of(scope)))
            known = self.changed[id(scope)] = (scope, names)
        return known[1]


class Reach:
    """The parts one or more functions reach, each found once: ``parts`` maps a part's name to
    its JSON-ready data. A part refers to another by its name, which makes cycles safe."""

    def __init__(self, memo: Memo | None = None) -> None:
        """:param memo: share it between the walks of one fingerprint."""
        self.parts: dict[str, Any] = {}
        self._named: dict[int, str] = {}  # the objects given a part during this walk, by id()
        self._held: list[Any] = []  # keeps those objects, so no id() is reused meanwhile
        self._open: set[int] = set()  # the values being described: a cycle among them
        self._memo = Memo() if memo is None else memo
        self._references = 0  # parts met or made: a value's data then depends on this walk

    def add(self, fn: Any, prefix: str = "") -> None:
        """Add what ``fn`` reaches: its own parts are named ``<prefix>its code``,
        ``<prefix>closure value 'x'``, ``<prefix>default argument 'y'``; what it reaches in the
        user's modules by its own name (``helper 'f' (m)``, ``module constant X in m``)."""
        while isinstance(fn, functools.partial):
            bound = [list(fn.args), dict(fn.keywords)]
            self.parts[f"{prefix}its bound arguments"] = self.value(bound, prefix)
            fn = fn.func
        if isinstance(fn, MethodType):
            self.parts[f"{prefix}its object"] = self.value(fn.__self__, prefix)
            fn = fn.__func__
        if not isinstance(fn, FunctionType):  # a callable object: its class and its state
            self.parts[f"{prefix}its code"] = self.value(fn, prefix)
            return
        self._named[id(fn)] = f"{prefix}its code"
        self._held.append(fn)
        self.parts[f"{prefix}its code"] = self._function(fn, prefix, split=True)

    def _function(self, fn: FunctionType, prefix: str, *, split: bool = False) -> Any:
        """A function's data: the user's by its code and the globals it reads, the others by
        name; and the values its defaults and closure hold (with ``split``, parts of their own
        named after ``prefix``)."""
        kind = origin(fn.__module__)
        if kind == INSTALLED:
            return self.value(fn, prefix)
        data: dict[str, Any] = (
            {"code": self._code(fn.__code__), "globals": self._globals(fn)}
            if kind == USER
            else {"function": _identity(fn)}  # evaldag's: its version covers the code
        )
        for label, name, value in _held_values(fn):
            held = SECRET if masked(name, value) else self.value(value, f"{prefix}{label}")
            if split:
                self.parts[f"{prefix}{label}"] = held
            else:
                data[label] = held
        return data

    def _code(self, code: CodeType) -> list[Any]:
        constants = [
            self._code(c) if isinstance(c, CodeType) else self.value(c, "") for c in code.co_consts
        ]
        return [code.co_code.hex(), constants, list(code.co_names), list(code.co_varnames)]

    def _globals(self, fn: FunctionType) -> dict[str, Any]:
        """The globals ``fn`` reads, by name: a part's name, or what counts of the rest."""
        names = _names(fn.__code__)
        return self._read(fn.__globals__, names)

    def _read(self, scope: dict[str, Any], names: set[str]) -> dict[str, Any]:
        """What ``names`` are in ``scope`` (a module's globals), leaving out builtins and the
        names of attributes."""
        return {
            name: self._global(scope, name, names)
            for name in sorted(names)
            if name in scope and not (name.startswith("__") and name.endswith("__"))
        }

    def _global(self, scope: dict[str, Any], name: str, names: set[str]) -> Any:
        value = scope[name]
        if isinstance(value, ModuleType):
            if origin(value.__name__) != USER or id(value) in self._open:
                return _identity(value)
            self._open.add(id(value))  # two modules that import each other
            try:  # the names this code uses from it: helpers.normalize
                return {"module": value.__name__, "reads": self._read(vars(value), names)}
            finally:
                self._open.discard(id(value))
        label = f"module constant {name} in {module_label(scope.get('__name__'))}"
        if isinstance(value, FunctionType | type):
            return self.value(value, "" if _is_module_level(value) else label)
        if isinstance(value, BuiltinFunctionType):
            return _identity(value)
        if masked(name, value):
            return SECRET
        if name in self._memo.changed_in(scope):  # a call log, a cache: its type, not content
            return f"<state: {_identity(type(value))}>"
        return self._part(value, label, lambda: self.value(value, label, own=True))

    def _part(self, value: Any, label: str, data: Callable[[], Any]) -> str:
        """The name of ``value``'s part, described once: a second visit, or a cycle, meets the
        name."""
        self._references += 1
        known = self._named.get(id(value))
        if known is not None:
            return known
        while label in self.parts:  # two objects of one name: a decorator's wrapper and its own
            label += " [2]"
        self._named[id(value)] = label
        self._held.append(value)
        self.parts[label] = None  # taken while the data is found: a cycle back here meets it
        self.parts[label] = data()
        return label

    def _callable(self, value: FunctionType | type, label: str) -> Any:
        """A function or class: a part of its own when it is the user's (or holds options),
        else its name."""
        kind = origin(value.__module__)
        if isinstance(value, type):
            if kind != USER:
                return _identity(value)
            named = f"class '{value.__qualname__}' ({module_label(value.__module__)})"
            return self._part(value, named, lambda: self._class(value, named))
        holds = value.__closure__ or value.__defaults__ or value.__kwdefaults__
        if kind == INSTALLED or (kind == EVALDAG and not holds):
            wrapped = getattr(value, "__wrapped__", None)  # a decorator's: what it wraps counts
            return (
                _identity(value)
                if wrapped is None
                else [_identity(value), self.value(wrapped, label)]
            )
        where = module_label(value.__module__)
        if kind == USER and "<locals>" not in value.__qualname__ and value.__name__ != "<lambda>":
            label = f"helper '{value.__qualname__}' ({where})"
        elif not label:
            label = f"function '{value.__qualname__}' ({where})"
        return self._part(value, label, lambda: self._function(value, f"{label}: "))

    def _class(self, cls: type, label: str) -> Any:
        """A class of the user's: its bases, annotations, methods and class attributes."""
        attributes: dict[str, Any] = {}
        for name, member in vars(cls).items():
            if isinstance(member, staticmethod | classmethod):
                member = member.__func__
            if isinstance(member, property):
                member = [member.fget, member.fset]
            elif name.startswith(("__pydantic", "_abc_")) or (
                name.startswith("__") and not isinstance(member, FunctionType)
            ):
                continue  # the class's machinery: its dict, slots, module, docstring
            attributes[name] = self.value(member, f"{label}.{name}")
        data: dict[str, Any] = {
            "bases": [self.value(base, "") for base in cls.__bases__ if base is not object],
            "annotations": {k: repr(v) for k, v in vars(cls).get("__annotations__", {}).items()},
            "attributes": attributes,
        }
        if issubclass(cls, BaseModel):
            data["fields"] = {
                name: [repr(field.annotation), self.value(field.default, label)]
                for name, field in cls.model_fields.items()
            }
        return data

    def value(self, value: Any, label: str, *, own: bool = False) -> Any:
        """``value`` as JSON-ready data; a function or class of the user's is a part of its own
        (named after ``label`` unless it has a name of its own) and is referred to by name."""
        if value is None or isinstance(value, bool | int | str):
            return value
        if isinstance(value, float):
            return repr(value)
        if isinstance(value, SecretStr | SecretBytes):
            return SECRET
        if isinstance(value, enum.Enum):
            return f"{_identity(type(value))}.{value.name}"
        if isinstance(value, FunctionType | type):
            return self._callable(value, label)
        if not own and (known := self._named.get(id(value))) is not None:
            self._references += 1
            return known
        plain = self._memo.plain.get(id(value))
        if plain is not None and plain[0] is value:
            return plain[1]
        if id(value) in self._open or len(self._open) > _DEEPEST:
            self._references += 1
            return f"<cycle: {type(value).__qualname__}>"
        references = self._references
        self._open.add(id(value))
        try:
            data = self._content(value, label)
        finally:
            self._open.discard(id(value))
        if self._references == references:
            self._memo.plain[id(value)] = (value, data)
        return data

    def _content(self, value: Any, label: str) -> Any:
        if isinstance(value, list | tuple):
            return [type(value).__name__, [self.value(item, label) for item in value]]
        if isinstance(value, dict):
            return [
                [self.value(k, label), SECRET if masked(k, v) else self.value(v, label)]
                for k, v in value.items()
            ]
        if isinstance(value, set | frozenset):  # iteration order varies between processes
            return sorted(json_text(self.value(item, label)) or "" for item in value)
        if isinstance(value, _BY_REPR):
            return repr(value)
        if isinstance(value, re.Pattern):
            return ["re.Pattern", value.pattern, value.flags]
        if isinstance(value, MethodType):
            return [self.value(value.__func__, label), self.value(value.__self__, label)]
        if isinstance(value, functools.partial):
            bound = [list(value.args), dict(value.keywords)]
            return ["partial", self.value(value.func, label), self.value(bound, label)]
        if isinstance(value, Judge):
            return reply_settings(value)
        if isinstance(value, np.ndarray):
            if value.dtype.hasobject:
                return ["ndarray", self.value(value.tolist(), label)]
            digest = hashlib.sha256(np.ascontiguousarray(value).tobytes()).hexdigest()
            return ["ndarray", str(value.dtype), list(value.shape), digest]
        if isinstance(value, pd.DataFrame | pd.Series):
            return ["pandas", type(value).__name__, _frame_digest(value)]
        if isinstance(value, BaseModel):
            fields = {name: getattr(value, name) for name in type(value).model_fields}
            return [self.value(type(value), label), self._attributes(fields, label)]
        if dataclasses.is_dataclass(value):
            fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
            return [self.value(type(value), label), self._attributes(fields, label)]
        kind = origin(type(value).__module__)
        if kind == INSTALLED:
            wrapped = getattr(value, "__wrapped__", None)  # functools.lru_cache and the like
            if wrapped is not None:
                return [_identity(value), self.value(wrapped, label)]
            # a builtin function, a client, a lock, a model: counts by what it is
            return _identity(value) if callable(value) else _identity(type(value))
        return [self.value(type(value), label), self._attributes(_state(value), label)]

    def _attributes(self, state: dict[str, Any], label: str) -> dict[str, Any]:
        return {
            name: SECRET if masked(name, item) else self.value(item, label)
            for name, item in state.items()
        }


def _held_values(fn: FunctionType) -> list[tuple[str, str, Any]]:
    """The values ``fn``'s default arguments and closure hold: each with a label for a person
    to read, and its name."""
    code = fn.__code__
    defaults = fn.__defaults__ or ()
    positional = code.co_varnames[: code.co_argcount]
    named = [
        *zip(positional[len(positional) - len(defaults) :], defaults, strict=True),
        *(fn.__kwdefaults__ or {}).items(),
    ]
    held = [(f"default argument '{name}'", name, value) for name, value in named]
    for name, cell in zip(code.co_freevars, fn.__closure__ or (), strict=True):
        try:
            held.append((f"closure value '{name}'", name, cell.cell_contents))
        except ValueError:  # a cell not filled yet
            continue
    return held


def _state(value: Any) -> dict[str, Any]:
    """An object's attributes, without what ``functools.cached_property`` keeps (there or not
    depending on what ran before)."""
    cls = type(value)
    state = {
        name: item
        for name, item in getattr(value, "__dict__", {}).items()
        if not isinstance(getattr(cls, name, None), functools.cached_property)
    }
    for name in getattr(cls, "__slots__", ()):
        if hasattr(value, name):
            state[name] = getattr(value, name)
    return state


def _frame_digest(frame: pd.DataFrame | pd.Series) -> str:
    try:
        hashed = pd.util.hash_pandas_object(frame, index=True).to_numpy().tobytes()
    except TypeError:  # cells pandas cannot hash: dicts, lists
        hashed = (json_text(frame.to_dict()) or "").encode()
    names = frame.columns if isinstance(frame, pd.DataFrame) else [frame.name]
    columns = json_text([str(c) for c in names]) or ""
    return hashlib.sha256(hashed + columns.encode()).hexdigest()
