"""What a scorer scores: one run (input, output and what it is judged against)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

from evaldag._reader import looks_like_json, python_data, read_transcript, structured_json

_UNTOUCHED = frozenset({str, type(None), int, float, bool})
_TRANSCRIPTS = frozenset({"input", "output"})
#: The other data fields, by name and by Mastra's key: read back from Parquet, they hold numpy.
_DATA_FIELDS = frozenset(
    {
        "ground_truth",
        "groundTruth",
        "request_context",
        "requestContext",
        "expected_trajectory",
        "expectedTrajectory",
    }
)


class ScorerRun(BaseModel):
    """One item to score. Accepts Mastra's camelCase keys (``runId``, ``groundTruth``) as well.

    ``input`` and ``output`` are plain strings, Mastra's agent-run shapes
    (``{"inputMessages": [...], ...}`` and a list of messages) or any other transcript shape
    ``evaldag._reader`` reads (the AI SDK's, OpenAI's, Anthropic's, Gemini's, LangChain's,
    pydantic-ai's, LlamaIndex's, as objects, JSON text or from a Parquet file), read once into
    Mastra's shape here (``docs/transcripts.md``). Extra keys set by a ``prepare_run`` are kept
    and echoed in the result.
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

    @model_validator(mode="before")
    @classmethod
    def _read_once(cls, data: Any) -> Any:
        """Transcripts in Mastra's shape, Parquet's numpy and Arrow values as Python data (in
        every field, extra keys too), JSON text of transcripts and structured fields as their
        JSON (``json_text``).

        One validator for every field: a run of plain strings pays for one Python call.
        """
        if not isinstance(data, dict):
            return data
        read = {}
        for key, item in data.items():
            kind = type(item)
            if kind in _UNTOUCHED and (kind is not str or not looks_like_json(item)):
                continue
            if key in _TRANSCRIPTS:  # JSON text too: of messages, it is read as them
                value = read_transcript(item, key)
            elif key in _DATA_FIELDS:
                value = structured_json(item, key) if kind is str else python_data(item)
            elif key in _OWN_FIELDS or kind is str:
                continue
            else:  # a column a scorer reads, or a key a prepare_run added
                value = python_data(item)
            if value is not item:
                read[key] = value
        return {**data, **read} if read else data

    def to_dict(self) -> dict[str, Any]:
        """Mastra's camelCase shape, without the fields that are ``None``."""
        return self.model_dump(by_alias=True, exclude_none=True)


#: The run's own fields, by name and by Mastra's key; other keys are extra.
_OWN_FIELDS = frozenset(
    {*ScorerRun.model_fields, *(f.alias for f in ScorerRun.model_fields.values() if f.alias)}
)
