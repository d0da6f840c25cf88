"""Records in Mastra's shape: snake_case attributes, camelCase keys, no ``None`` fields."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class CamelRecord(BaseModel):
    """A frozen record read from either spelling of its keys and written as Mastra writes it."""

    model_config = ConfigDict(populate_by_name=True, alias_generator=to_camel, frozen=True)

    def to_dict(self) -> dict[str, Any]:
        """Mastra's camelCase shape, without the fields that are ``None``."""
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")
