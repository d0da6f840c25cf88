"""Structured options of prebuilt LLM scorers: Mastra's nested option objects as pydantic models.

Mastra passes some options as nested objects (``penalties``, ``scoring``,
``includeConversationHistory``) and merges each key over its default. evaldag takes such an
option as a dict (snake_case or Mastra's camelCase keys) or as its model; the keys left out keep
their defaults, unknown keys and non-numbers are errors that name the option.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.alias_generators import to_camel

from evaldag.errors import EvalDagError

Options = TypeVar("Options", bound="ScorerOptions")


class ScorerOptions(BaseModel):
    """A nested scorer option: strict types, finite numbers, snake_case or camelCase keys."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        strict=True,
        allow_inf_nan=False,
        frozen=True,
    )


def options_model(model: type[Options], value: Any, name: str, factory: str) -> Options:
    """``value`` as ``model``: None gives the defaults, a dict is validated over them."""
    if value is None:
        return model()
    if isinstance(value, model):
        return value
    if not isinstance(value, Mapping):
        raise EvalDagError(
            "EVALDAG_INVALID_SCORER_OPTION",
            f"{name} of {factory}(...) must be a dict of {', '.join(model.model_fields)}, got "
            f"{type(value).__name__}",
            details={"option": name},
        )
    try:
        return model.model_validate(dict(value))
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in item['loc'])}: {item['msg']}"
            for item in error.errors()[:5]
        )
        raise EvalDagError(
            "EVALDAG_INVALID_SCORER_OPTION",
            f"{name} of {factory}(...) is not valid: {problems}. Its keys are "
            f"{', '.join(model.model_fields)}",
            details={"option": name},
        ) from None
