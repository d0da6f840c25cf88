"""Regenerate the reference parts of the docs from the code.

- ``docs/api.md``: every public name of ``evaldag``, ``evaldag.scorers``, ``evaldag.checks``,
  ``evaldag.messages``, ``evaldag.transcripts`` and ``evaldag.testing``, from their signatures
  and docstrings;
- ``docs/cli.md``: the ``--help`` text of each ``evaldag`` command, between the
  ``<!-- help: ... -->`` markers (the prose around them is written by hand).

Run ``python docs/gen_reference.py`` after changing a public signature, a docstring or a CLI
option; ``tests/project/test_docs.py`` fails while either file is stale (``--check`` exits 1 then).
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import inspect
import io
import operator
import os
import re
import sys
from pathlib import Path
from types import ModuleType, UnionType
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel

API_FILE = Path(__file__).with_name("api.md")
CLI_FILE = Path(__file__).with_name("cli.md")
MODULES = (
    "evaldag",
    "evaldag.scorers",
    "evaldag.checks",
    "evaldag.messages",
    "evaldag.transcripts",
    "evaldag.testing",
)
HEADER = """\
# API reference

Generated from the code's signatures and docstrings by `docs/gen_reference.py`; do not edit
by hand.
Everything listed here is imported from the package (`evaldag`, `evaldag.scorers`,
`evaldag.checks`, `evaldag.messages`, `evaldag.transcripts`, `evaldag.testing`), never from a
private module.
See `concepts.md` for how the parts fit together.
"""
_ROLE = re.compile(r":\w+:`~?([\w.]+)`")
_FIELD = re.compile(r"^:(param|return|raises?)\s*([^:]*):\s*(.*)$")


def public_names(module: ModuleType) -> list[str]:
    """The names a module exports: ``__all__``, else its own public classes and functions."""
    names = getattr(module, "__all__", None)
    if names is None:
        names = [
            name
            for name, value in vars(module).items()
            if not name.startswith("_")
            and (inspect.isfunction(value) or inspect.isclass(value))
            and value.__module__ == module.__name__
        ]
    return sorted(names, key=lambda name: (not name[0].isupper(), name.lower()))


def docstring_markdown(obj: Any) -> str:
    """A reST-flavoured docstring as Markdown: ``:param x:`` lines become a list."""
    text = inspect.getdoc(obj) or ""
    lines: list[str] = []
    for line in text.splitlines():
        match = _FIELD.match(line.strip())
        if match and not line.startswith(" "):
            kind, name, rest = match.groups()
            label = f"`{name.strip()}`" if kind == "param" else f"*{kind}*"
            lines.append(f"- {label}: {rest}".rstrip())
        elif line.startswith("    ") and lines and lines[-1].startswith("- "):
            lines[-1] += f" {line.strip()}"
        else:
            lines.append(line)
    text = "\n".join(lines).replace(".. code-block:: python", "").strip()
    text = _ROLE.sub(lambda m: f"`{m.group(1).split('.')[-1]}`", text)
    return text.replace("``", "`")


class _Annotation(str):
    """An annotation's source text, shown without the quotes postponed annotations get."""

    def __repr__(self) -> str:
        return str(self)


def _signature(obj: Any, name: str) -> str:
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        return f"{name}(...)"
    parameters = [
        p.replace(annotation=_Annotation(p.annotation)) if isinstance(p.annotation, str) else p
        for p in signature.parameters.values()
        if p.name not in ("self", "cls")
    ]
    returned = signature.return_annotation
    if isinstance(returned, str):
        returned = _Annotation(returned)
    return f"{name}{signature.replace(parameters=parameters, return_annotation=returned)}"


def _model_fields(model: type[BaseModel]) -> list[str]:
    lines = ["| field | type | default | description |", "| --- | --- | --- | --- |"]
    for name, info in model.model_fields.items():
        annotation = _type_text(info.annotation)
        if info.is_required():
            default = "required"
        elif info.default_factory is not None:
            default = f"`{info.default_factory.__name__}()`"
        else:
            default = f"`{info.default!r}`"
        description = (info.description or "").replace("|", "\\|").replace("\n", " ")
        lines.append(f"| `{name}` | `{annotation}` | {default} | {description} |")
    for name, computed in model.model_computed_fields.items():
        annotation = _type_text(computed.return_type)
        description = (computed.description or "").replace("|", "\\|").replace("\n", " ")
        lines.append(f"| `{name}` | `{annotation}` | computed | {description} |")
    return lines


def _type_text(annotation: Any) -> str:
    annotation = _without_metadata(annotation)
    text = getattr(annotation, "__name__", None) if isinstance(annotation, type) else None
    text = text or str(annotation)
    text = re.sub(r"\b(?:typing|collections\.abc|evaldag(?:\.\w+)*|pydantic(?:\.\w+)*)\.", "", text)
    return text.replace("NoneType", "None").replace("|", "\\|")


def _without_metadata(annotation: Any) -> Any:
    """``annotation`` without ``Annotated`` metadata: pydantic's tags and discriminators are
    long, and a discriminator's function would print its memory address."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return _without_metadata(args[0])
    plain = tuple(_without_metadata(arg) for arg in args)
    if plain == args:
        return annotation
    if origin in (Union, UnionType):
        return functools.reduce(operator.or_, plain)
    return origin[plain if len(plain) > 1 else plain[0]]


def _members(cls: type) -> list[tuple[str, Any]]:
    """Public methods and properties defined by ``cls`` itself (not inherited from a base)."""
    members = []
    for name, value in vars(cls).items():
        # pydantic's hooks (model_config, model_post_init ...) are not the class's own API
        if name.startswith(("_", "model_")):
            continue
        if isinstance(value, property | staticmethod | classmethod) or inspect.isfunction(value):
            members.append((name, value))
    return members


def class_section(name: str, cls: type) -> list[str]:
    """A class: its constructor, docstring, fields and public members."""
    kind = "exception" if issubclass(cls, BaseException) else "class"
    if issubclass(cls, BaseModel):  # constructed from the fields listed below
        heading = f"### {kind} `{name}`"
    else:
        heading = f"### {kind} `{_signature(cls, name)}`"
    lines = [heading, "", docstring_markdown(cls), ""]
    if issubclass(cls, BaseModel):
        base = next(b.__name__ for b in cls.__mro__[1:] if issubclass(b, BaseModel))
        if base not in ("BaseModel", "_Model", "CamelRecord", "MastraModel"):
            lines += [f"A `{base}` with these fields as well.", ""]
        if cls.model_fields:
            lines += [*_model_fields(cls), ""]
    for member, value in _members(cls):
        if isinstance(value, property):
            lines += [f"#### `{name}.{member}` (property)", "", docstring_markdown(value), ""]
            continue
        function = value.__func__ if isinstance(value, staticmethod | classmethod) else value
        lines += [f"#### `{name}.{_signature(function, member)}`", ""]
        lines += [docstring_markdown(function), ""]
    return lines


def function_section(name: str, function: Any) -> list[str]:
    """A function: its signature and docstring."""
    return [f"### `{_signature(function, name)}`", "", docstring_markdown(function), ""]


def module_section(module_name: str) -> list[str]:
    """Every public name of one module, classes first."""
    module = importlib.import_module(module_name)
    lines = [f"## `{module_name}`", "", docstring_markdown(module), ""]
    for name in public_names(module):
        value = getattr(module, name)
        if isinstance(value, ModuleType):
            lines += [
                f"### module `{name}`",
                "",
                f"See [`{value.__name__}`](#{_anchor(value)}).",
                "",
            ]
        elif inspect.isclass(value):
            lines += class_section(name, value)
        else:
            lines += function_section(name, value)
    return lines


def _anchor(module: ModuleType) -> str:
    return re.sub(r"[^a-z0-9-]", "", module.__name__.lower())


def api_markdown() -> str:
    """The whole of docs/api.md."""
    lines = [HEADER]
    lines += ["Contents: " + ", ".join(f"[`{m}`](#{m.replace('.', '')})" for m in MODULES), ""]
    for module_name in MODULES:
        lines += module_section(module_name)
    text = "\n".join(lines)
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.rstrip() + "\n"


_HELP_BLOCK = re.compile(r"(<!-- help: evaldag([\w -]*) -->\n)(.*?)(<!-- /help -->)", re.DOTALL)


def command_help(arguments: str) -> str:
    """What ``evaldag <arguments> --help`` prints, 100 columns wide."""
    from evaldag._cli.main import main

    buffer = io.StringIO()
    previous = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "100"
    try:
        with contextlib.redirect_stdout(buffer), contextlib.suppress(SystemExit):
            main([*arguments.split(), "--help"])
    finally:
        if previous is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = previous
    return buffer.getvalue()


def cli_markdown(text: str) -> str:
    """``text`` (docs/cli.md) with every help block filled in from the CLI."""

    def filled(match: re.Match[str]) -> str:
        opening, arguments, _, closing = match.groups()
        return f"{opening}```text\n{command_help(arguments.strip())}```\n{closing}"

    return _HELP_BLOCK.sub(filled, text)


def main(argv: list[str]) -> int:
    expected = {API_FILE: api_markdown(), CLI_FILE: cli_markdown(CLI_FILE.read_text())}
    stale = [path for path, text in expected.items() if path.read_text() != text]
    if "--check" in argv:
        for path in stale:
            print(f"{path} is stale: run python docs/gen_reference.py", file=sys.stderr)
        return 1 if stale else 0
    for path in stale:
        path.write_text(expected[path])
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
