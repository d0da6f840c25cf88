"""Structured output: what a prompt step's reply must be, how to ask for it, how to read it.

A :class:`Contract` pairs a JSON schema with the function that turns the parsed reply into the
stored value (or raises :class:`StructuredOutputError` with Mastra's error id).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from evaldag._judge.errors import JudgeError
from evaldag.errors import EvalDagError, error_message

OBJECT_UNDEFINED = "STRUCTURED_OUTPUT_OBJECT_UNDEFINED"
TRUNCATED = "STRUCTURED_OUTPUT_TRUNCATED"
_SCHEMA_INVALID = "STRUCTURED_OUTPUT_SCHEMA_VALIDATION_FAILED"


@dataclass(frozen=True)
class Contract:
    """What the reply must be: a schema and how to turn parsed JSON into the stored value."""

    name: str
    schema: dict[str, Any] | None  # None: plain text
    stored: Callable[[Any], Any] = lambda value: value


class StructuredOutputError(Exception):
    """A judge reply that is not the JSON the step asks for; ``code`` is Mastra's error id."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def step_contract(
    stage: str,
    output_schema: Any,
    description: str,
    *,
    max_score: float,
    score_check: Callable[[float], float],
) -> Contract:
    """What the judge's reply to a prompt step must be: text for ``generate_reason``,
    ``{"score": number}`` from 0 to ``max_score`` for ``generate_score``, else
    ``output_schema`` (a pydantic model or a JSON-schema dict).

    :param description: the step's description, naming it in errors.
    :param score_check: the scorer's check of a score on its scale, raising an
        ``EvalDagError`` that names the scorer for one off it.
    """
    if stage == "generate_reason":
        return Contract("reason", None)
    if stage == "generate_score":
        return _score_contract(max_score, score_check)
    if output_schema is None:
        raise JudgeError(
            "EVALDAG_MISSING_OUTPUT_SCHEMA",
            f'PromptStep "{description}" of step "{stage}" has no output_schema; a '
            f"{stage} prompt step must say what JSON the judge returns: pass a pydantic model "
            "or a JSON-schema dict as output_schema=",
            category="USER",
        )
    try:
        if isinstance(output_schema, dict):
            return _dict_contract(json.dumps(output_schema, sort_keys=True), stage)
        return _typed_contract(output_schema, stage)
    except Exception as error:
        problem = error_message(error)
    # Raised outside the except block: tblib (installed by dask) pickles the context chain.
    raise JudgeError(
        "EVALDAG_INVALID_OUTPUT_SCHEMA",
        f'output_schema of step "{stage}" is not usable: {problem}. Pass a pydantic model class '
        "(or another type pydantic can validate) or a JSON-schema dict",
        category="USER",
    )


@functools.lru_cache(maxsize=256)
def _typed_contract(schema_type: Any, stage: str) -> Contract:
    from pydantic import TypeAdapter, ValidationError

    adapter = TypeAdapter(schema_type)

    def stored(value: Any) -> Any:
        try:
            validated = adapter.validate_python(value)
        except ValidationError as error:
            raise StructuredOutputError(_SCHEMA_INVALID, _pydantic_problems(error)) from None
        return adapter.dump_python(validated, mode="json", by_alias=True, exclude_unset=True)

    name = getattr(schema_type, "__name__", None) or stage
    return Contract(name, adapter.json_schema(by_alias=True), stored)


@functools.lru_cache(maxsize=256)
def _dict_contract(schema_text: str, stage: str) -> Contract:
    from jsonschema import validators

    schema = json.loads(schema_text)
    validator_class = validators.validator_for(schema)
    validator_class.check_schema(schema)
    validator = validator_class(schema)

    def stored(value: Any) -> Any:
        problems = sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
        if problems:
            raise StructuredOutputError(
                _SCHEMA_INVALID,
                "; ".join(
                    f"{'/'.join(str(p) for p in e.absolute_path) or 'root'}: {e.message}"
                    for e in problems[:5]
                ),
            )
        return value

    return Contract(str(schema.get("title") or stage), schema, stored)


def _score_of(value: Any) -> float:
    if (
        isinstance(value, dict)
        and isinstance(value.get("score"), int | float)
        and not isinstance(value.get("score"), bool)
    ):
        return value["score"]
    raise StructuredOutputError(
        _SCHEMA_INVALID, f'expected an object {{"score": number}}, got {_preview(value)}'
    )


def _score_contract(max_score: float, score_check: Callable[[float], float]) -> Contract:
    """A score on the scorer's scale: one off it (7 for a 0-1 scorer) fails the reply, which is
    asked for again and is never cached, rather than failing the item at once."""

    def stored(value: Any) -> float:
        try:
            return score_check(_score_of(value))
        except EvalDagError as error:
            raise StructuredOutputError(_SCHEMA_INVALID, error.message) from None

    score = {"type": "number", "minimum": 0, "maximum": max_score}
    schema = {
        "type": "object",
        "properties": {"score": score},
        "required": ["score"],
        "additionalProperties": False,
    }
    return Contract("score", schema, stored)


def _pydantic_problems(error: Any) -> str:
    return "; ".join(
        f"{'/'.join(str(part) for part in item['loc']) or 'root'}: {item['msg']}"
        for item in error.errors()[:5]
    )


def _preview(value: Any, limit: int = 120) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=repr)
    return repr(text if len(text) <= limit else text[:limit] + "…")


# --- asking for JSON -----------------------------------------------------------------------------


def schema_instructions(schema: Mapping[str, Any]) -> str:
    """The system-prompt paragraph that asks for JSON valid against ``schema``."""
    return (
        "Answer with a single JSON value and nothing else: no prose, no code fences. The JSON "
        "must be valid against this JSON Schema:\n" + json.dumps(schema, ensure_ascii=False)
    )


def response_format(style: str, contract: Contract) -> dict[str, Any] | None:
    """litellm's ``response_format`` for a structured-output ``style``; None for the others."""
    if style == "json_schema":
        name = re.sub(r"[^A-Za-z0-9_-]", "_", contract.name)[:64] or "output"
        return {"type": "json_schema", "json_schema": {"name": name, "schema": contract.schema}}
    if style == "json_object":
        return {"type": "json_object", "schema": contract.schema}
    return None


# --- JSON in a reply -----------------------------------------------------------------------------

_FENCE = re.compile(r"```[ \t]*(?:json5?|jsonc)?[ \t]*\r?\n?(.*?)```", re.DOTALL | re.IGNORECASE)


def _no_constant(name: str) -> Any:
    # NaN and Infinity are not JSON numbers; a reply holding one is refused, not read as a float
    raise json.JSONDecodeError(f"{name} is not a JSON number", name, 0)


_DECODER = json.JSONDecoder(parse_constant=_no_constant)
_NOTHING = object()


#: Finish reasons that say the model stopped before its answer was complete, and what to do.
_CUT_SHORT = {
    "length": "give the judge more tokens (Judge(max_tokens=...))",
    "max_tokens": "give the judge more tokens (Judge(max_tokens=...))",
    "content_filter": "the provider's content filter stopped the reply",
}


def stopped_early(finish_reason: str | None) -> bool:
    """Whether the model says it stopped before its answer was complete (out of tokens, or its
    provider's content filter)."""
    return finish_reason in _CUT_SHORT


def reply_json(text: str | None, finish_reason: str | None) -> Any:
    """The JSON value in a judge's reply (:func:`json_in_reply`), unless the model says it
    stopped before the end (finish reason ``length`` or ``content_filter``): the JSON there is
    part of an answer, and closing it would score the part (Mastra's
    ``STRUCTURED_OUTPUT_TRUNCATED``)."""
    if finish_reason in _CUT_SHORT and (text or "").strip():
        raise StructuredOutputError(
            TRUNCATED,
            f'the model stopped with finish reason "{finish_reason}" before its answer was '
            f"complete: {_CUT_SHORT[finish_reason]}",
        )
    return json_in_reply(text)


def json_in_reply(text: str | None) -> Any:
    """The JSON value in a judge's reply.

    Tolerates what small models often write and Mastra reads too: prose around the JSON, code
    fences, a byte-order mark, trailing commas (``["a", "b",]``), a second value after the first
    (the first is read), and a reply cut off after its last complete element (closed as the
    model would have; :func:`reply_json` refuses one the model says it did not finish).
    Anything else that is not JSON is an error: single quotes, comments, ``NaN`` or
    ``Infinity``, hexadecimal or ``+`` numbers, ``,,``.
    """
    stripped = (text or "").strip().lstrip("\ufeff").strip()
    if not stripped:
        raise StructuredOutputError(OBJECT_UNDEFINED, "the reply is empty")
    candidates = [stripped, *(m.group(1).strip() for m in _FENCE.finditer(stripped))]
    # after prose, the JSON starts at the first bracket; a bracket inside broken JSON does not
    start = min((i for i in (stripped.find("{"), stripped.find("[")) if i >= 0), default=0)
    if start > 0:
        candidates.append(stripped[start:])
    for candidate in candidates:
        value = _decoded(candidate)
        if value is not _NOTHING:
            return value
    raise StructuredOutputError(
        OBJECT_UNDEFINED, f"no JSON value found in the reply {_preview(stripped)}"
    )


def _decoded(text: str, commas_removed: bool = False) -> Any:
    try:
        return _DECODER.raw_decode(text)[0]
    except json.JSONDecodeError as error:
        truncated = error.pos >= len(text) or error.msg.startswith("Unterminated string")
        if truncated and text[:1] in "{[":
            return _closed(text)
        if commas_removed:
            return _NOTHING
        return _decoded(_without_trailing_commas(text), commas_removed=True)


_TRAILING_COMMA = re.compile(r",(\s*[\]}])")


def _outside_strings(text: str) -> tuple[list[tuple[int, int]], bool]:
    """The spans of ``text`` outside JSON strings, and whether it ends inside a string."""
    spans, start, in_string, escaped = [], 0, False, False
    for index, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                start, in_string = index + 1, False
        elif char == '"':
            spans.append((start, index))
            in_string = True
    if not in_string:
        spans.append((start, len(text)))
    return spans, in_string


def _without_trailing_commas(text: str) -> str:
    """``text`` without the commas that stand right before a closing bracket, outside strings."""
    pieces, kept = [], 0
    for start, end in _outside_strings(text)[0]:
        pieces += [text[kept:start], _TRAILING_COMMA.sub(r"\1", text[start:end])]
        kept = end
    return "".join([*pieces, text[kept:]])


def _closed(text: str) -> Any:
    """A cut-off JSON text completed: back to its last complete element, brackets closed."""
    stack: list[str] = []
    cut_points: list[tuple[int, str]] = []
    spans, in_string = _outside_strings(text)
    for start, end in spans:
        for index in range(start, end):
            char = text[index]
            if char in "{[":
                stack.append("}" if char == "{" else "]")
            elif char in "}]":
                if not stack or stack.pop() != char:
                    return _NOTHING
                if stack:
                    cut_points.append((index + 1, "".join(reversed(stack))))
    if not in_string and stack:
        cut_points.append((len(text), "".join(reversed(stack))))
    for end, closers in reversed(cut_points[-20:]):
        try:
            return json.loads(text[:end].rstrip().rstrip(",") + closers)
        except json.JSONDecodeError:
            continue
    return _NOTHING
