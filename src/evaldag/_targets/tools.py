"""An agent's tools: Python functions described to the model from their signatures and docstrings.

The parameters become a pydantic model (annotations, defaults, ``Annotated[..., Field(...)]``
and the docstring's ``:param name:`` lines as descriptions), whose JSON schema is the tool's
``parameters``; the model's arguments are validated by it before the function is called. A
failed call (bad arguments, the function raising) is an outcome, not an exception: the agent
records it in the transcript, where ``checks.no_tool_errors()`` sees it.

A sync tool runs in a daemon thread of its own, not in the event loop's shared pool: a tool
that hangs is abandoned when the target's call is (``target_timeout``), and neither holds a
thread another item's tools wait for nor the run at its end.
"""

from __future__ import annotations

import inspect
import json
import re
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field, ValidationError, create_model
from pydantic_core import to_json, to_jsonable_python

from evaldag._engine.time_limits import in_daemon_thread
from evaldag._scorer.steps import is_async_callable
from evaldag.errors import EvalDagError, error_message

_PARAM_LINE = re.compile(r"^\s*:param\s+(\w+):\s*(.*)$")
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """What one tool call gave: a result, or the error text the model and the checks see."""

    result: Any = None
    error: str | None = None


@dataclass(frozen=True)
class Tool:
    """A function the agent may call, with the schema of its arguments."""

    name: str
    description: str
    arguments: type[BaseModel]
    function: Callable[..., Any]

    @property
    def schema(self) -> dict[str, Any]:
        """The tool as OpenAI's chat-completions API describes one."""
        parameters = self.arguments.model_json_schema()
        parameters.pop("title", None)
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": parameters,
            },
        }

    async def outcome(self, arguments: str | None) -> ToolOutcome:
        """Call the function with the model's arguments (JSON text), validated first."""
        try:
            given = json.loads(arguments or "{}")
            validated = self.arguments.model_validate(given)
        except (ValueError, ValidationError) as error:
            return ToolOutcome(error=f"invalid arguments for {self.name}: {error_message(error)}")
        kwargs = {name: getattr(validated, name) for name in type(validated).model_fields}
        try:
            if is_async_callable(self.function):
                result = await self.function(**kwargs)
            else:
                result = await in_daemon_thread(self.function, (), kwargs)
        except Exception as error:
            return ToolOutcome(error=error_message(error))
        return ToolOutcome(result=tool_result(result))


def tool_result(result: Any) -> Any:
    """A tool's return value as JSON data: bytes as their UTF-8 text; a result holding bytes
    that are not UTF-8 (an image, a zip) as ``{"result": <bytes as URL-safe base64>, "note":
    ...}``, so that the model is told, and the call does not fail on them."""
    try:
        return to_jsonable_python(result, fallback=str)
    except UnicodeDecodeError:
        pass
    return {
        "result": to_jsonable_python(result, fallback=str, bytes_mode="base64"),
        "note": "the tool returned bytes that are not UTF-8 text; every bytes value in result "
        "is URL-safe base64",
    }


def tool_message_text(value: Any) -> str:
    """``value`` (a tool's result or error) as the JSON text of a tool message: NaN and the
    infinities as the strings "NaN", "Infinity" and "-Infinity", which JSON has no numbers for
    (json.dumps would write bare NaN, which is not JSON)."""
    return to_json(value, inf_nan_mode="strings", fallback=str).decode()


def _docstring_parts(function: Callable[..., Any]) -> tuple[str, dict[str, str]]:
    """The docstring's description (before the ``:param`` lines) and each parameter's text."""
    lines = inspect.cleandoc(function.__doc__ or "").splitlines()
    described: dict[str, str] = {}
    text: list[str] = []
    current: str | None = None
    for line in lines:
        found = _PARAM_LINE.match(line)
        if found:
            current = found[1]
            described[current] = found[2].strip()
        elif current is not None and line.strip() and not line.lstrip().startswith(":"):
            described[current] = f"{described[current]} {line.strip()}"
        elif line.lstrip().startswith(":"):
            current = None
        elif current is None:
            text.append(line)
    return "\n".join(text).strip(), described


def tool(function: Callable[..., Any]) -> Tool:
    """``function`` as a tool: named after it, described by its docstring and signature."""
    if isinstance(function, Tool):
        return function
    name = getattr(function, "__name__", None)
    if not callable(function) or not isinstance(name, str) or not _NAME.match(name):
        raise EvalDagError(
            "INVALID_AGENT_TOOL",
            f"a tool must be a named Python function (letters, digits, '_' or '-'), got "
            f"{function!r}",
        )
    description, parameter_texts = _docstring_parts(function)
    try:
        hints = typing.get_type_hints(function, include_extras=True)
    except Exception as error:
        raise EvalDagError(
            "INVALID_AGENT_TOOL",
            f"cannot read the type annotations of tool {name}: {error_message(error)}",
        ) from error
    fields: dict[str, Any] = {}
    for parameter in inspect.signature(function).parameters.values():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            raise EvalDagError(
                "INVALID_AGENT_TOOL",
                f"tool {name} takes *{parameter.name}; a tool's parameters must be named, "
                "so that the model can be told what to pass",
            )
        default = ... if parameter.default is parameter.empty else parameter.default
        text = parameter_texts.get(parameter.name)
        info = Field(default, description=text) if text else Field(default)
        fields[parameter.name] = (hints.get(parameter.name, Any), info)
    arguments = create_model(f"{name}_arguments", **fields)
    if not description:
        description = f"The function {name}."
    return Tool(name, description, arguments, function)
