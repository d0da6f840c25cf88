"""What a scorer scores: one run (input, output and what it is judged against)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel


class ScorerRun(BaseModel):
    """One item to score. Accepts Mastra's camelCase keys (``runId``, ``groundTruth``) as well.

    ``input`` and ``output`` are plain strings or Mastra's agent-run shapes
    (``{"inputMessages": [...], ...}`` and a list of messages). Extra keys set by a
    ``prepare_run`` are kept and echoed in the result.
    """

    model_config = ConfigDict(
        extra="allow", populate_by_name=True, alias_generator=to_camel, frozen=True
    )

    input: Any = Field(default=None, description="What the system under test was given.")
    output: Any = Field(description="What the system under test produced.")
    run_id: str | None = Field(default=None, description="Identifies this scoring run.")
    ground_truth: Any = Field(default=None, description="The reference answer, if any.")
    request_context: Any = Field(default=None, description="Request-scoped values, if any.")
    expected_trajectory: Any = Field(default=None, description="The expected agent trajectory.")

    def to_dict(self) -> dict[str, Any]:
        """Mastra's camelCase shape, without the fields that are ``None``."""
        return self.model_dump(by_alias=True, exclude_none=True)
