"""What a scorer scores: one run (input, output and what it is judged against)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationInfo, model_validator
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
    #: Whether every field holds what reading it gives: set by validation, unset by a copy that
    #: changes fields (``model_copy(update=...)`` skips validation).
    _fields_read: bool = PrivateAttr(default=False)

    @model_validator(mode="before")
    @classmethod
    def _read_once(cls, data: Any, info: ValidationInfo) -> Any:
        """Transcripts in Mastra's shape, Parquet's numpy and Arrow values as Python data (in
        every field, extra keys too), JSON text of transcripts and structured fields as their
        JSON (``json_text``); fields :func:`read_run` is given are read already.

        One validator for every field: a run of plain strings pays for one Python call.
        """
        if not isinstance(data, dict) or info.context is _FIELDS_READ:
            return data
        read = {}
        for key, item in data.items():
            kind = type(item)
            if kind in _UNTOUCHED and (kind is not str or not looks_like_json(item)):
                continue  # the common case, without a call
            value = run_field(key, item)
            if value is not item:
                read[key] = value
        return {**data, **read} if read else data

    @model_validator(mode="after")
    def _read(self) -> ScorerRun:
        self._fields_read = True
        return self

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        copied = super().model_copy(update=update, deep=deep)
        if update:
            copied._fields_read = False
        return copied

    def to_dict(self) -> dict[str, Any]:
        """Mastra's camelCase shape, without the fields that are ``None``."""
        return self.model_dump(by_alias=True, exclude_none=True)


#: The run's own fields, by name and by Mastra's key; other keys are extra.
_OWN_FIELDS = frozenset(
    {*ScorerRun.model_fields, *(f.alias for f in ScorerRun.model_fields.values() if f.alias)}
)


RunModel = TypeVar("RunModel", bound=ScorerRun)
#: The validation context of a run whose fields are read already (:func:`read_run`).
_FIELDS_READ = {"fields": "read"}


def run_field(key: str, item: Any) -> Any:
    """A field of a run as the run holds it (``item`` itself when reading leaves it): a
    transcript (``input``, ``output``) in Mastra's shape, JSON text of a structured field as
    its JSON, numpy and Arrow values as Python data; an ``EvalDagError`` naming the field (and
    the place in it) for a value that reads as none of these."""
    kind = type(item)
    if kind in _UNTOUCHED and (kind is not str or not looks_like_json(item)):
        return item
    if key in _TRANSCRIPTS:  # JSON text too: of messages, it is read as them
        return read_transcript(item, key)
    if key in _DATA_FIELDS:
        return structured_json(item, key) if kind is str else python_data(item)
    if key in _OWN_FIELDS or kind is str:
        return item
    return python_data(item)  # a column a scorer reads, or a key a prepare_run added


def read_run(fields: dict[str, Any]) -> ScorerRun:
    """The run of ``fields`` that :func:`run_field` read already: validated, not read again
    (``run_evals`` reads every item's fields once, before the run: ``preflight``)."""
    return ScorerRun.model_validate(fields, context=_FIELDS_READ)


def echoed(model: type[RunModel], run: ScorerRun, produced: dict[str, Any]) -> RunModel:
    """``model`` (a run's result) of ``run``'s fields and what its steps ``produced``: only
    those read, when ``run``'s fields were read already."""
    fields = dict(run)
    if not run._fields_read:
        return model(**{**fields, **produced})
    fields.update((key, run_field(key, item)) for key, item in produced.items())
    return model.model_validate(fields, context=_FIELDS_READ)
