"""A score row: Mastra's saved score (``scoreRowDataSchema``) in snake_case, plus evaldag's fields.

Mastra saves one row per scorer and run; so does evaldag, for ``run_evals`` (``source="TEST"``)
and for live scoring (``source="LIVE"``). evaldag adds the experiment id, the error of a failed
run, the step it failed at, a not-scorable verdict and the judge records, so that a row says
everything an item column says. Mastra's camelCase keys are accepted as aliases.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

Source = Literal["LIVE", "TEST"]
#: Mastra never stores the framework's bearer token with a score.
_AUTH_TOKEN_KEY = "mastra__authToken"
_SNAPSHOT_DEPTH = 8


class ScoreRow(BaseModel):
    """One scorer's score of one run, as a score store holds it."""

    model_config = ConfigDict(populate_by_name=True, alias_generator=to_camel, frozen=True)

    id: str = Field(description="Unique; saving a row with an existing id replaces that row.")
    scorer_id: str
    entity_id: str = Field(description="What produced the output: the target or app function.")
    run_id: str
    input: Any = None
    output: Any = None
    additional_context: dict[str, Any] | None = Field(
        default=None, description="``{'groundTruth': ...}`` when the item had a ground truth."
    )
    request_context: dict[str, Any] | None = Field(
        default=None, description="The request context's snapshot: primitives, dotted keys."
    )
    score: float | None = Field(
        description="The score; None when the run was not scorable or the scorer failed."
    )
    reason: str | None = None
    preprocess_step_result: Any = None
    preprocess_prompt: str | None = None
    analyze_step_result: Any = None
    analyze_prompt: str | None = None
    generate_score_prompt: str | None = None
    generate_reason_prompt: str | None = None
    extract_step_result: Any = Field(default=None, description="Mastra's legacy field; unused.")
    extract_prompt: str | None = Field(default=None, description="Mastra's legacy field; unused.")
    reason_prompt: str | None = Field(default=None, description="Mastra's legacy field; unused.")
    scorer: dict[str, Any] = Field(description="``{id, name, description, type, hasJudge}``.")
    metadata: dict[str, Any] | None = None
    source: Source
    entity: dict[str, Any] = Field(description="``{id, name}`` of what produced the output.")
    entity_type: str | None = None
    structured_output: bool | None = None
    trace_id: str | None = None
    span_id: str | None = None
    resource_id: str | None = None
    thread_id: str | None = None
    organization_id: str | None = None
    project_id: str | None = None
    batch_id: str | None = None
    dataset_id: str | None = None
    dataset_item_id: str | None = None
    created_at: datetime | None = Field(default=None, description="Set by the store.")
    updated_at: datetime | None = Field(default=None, description="Set by the store.")
    experiment_id: str | None = Field(default=None, description="evaldag: the run_evals run.")
    error: str | None = Field(default=None, description="evaldag: why the scorer failed.")
    failed_step: str | None = Field(default=None, description="evaldag: the step that failed.")
    completed_steps: list[str] | None = Field(
        default=None, description="evaldag: the steps that completed, in order."
    )
    not_scorable: dict[str, Any] | None = Field(
        default=None, description="evaldag: ``{step, reason}`` when the run was not scorable."
    )
    judge: dict[str, Any] | None = Field(
        default=None, description="evaldag: the judge records of the prompt steps."
    )


#: The value types a snapshot keeps, beyond the exact ones it tests first.
_TEXT, _NUMBER = (str, bool), (int, float)
#: The row's fields in order: the store's columns and ``read_scores``' DataFrame columns.
ROW_FIELDS = tuple(ScoreRow.model_fields)


def request_context_snapshot(context: Any) -> dict[str, Any]:
    """Mastra's ``snapshotRequestContextForScore``: the strings, booleans and finite numbers of a
    request context, nested mappings flattened into dotted keys (8 levels at most); lists,
    bytes and the auth token left out."""
    snapshot: dict[str, Any] = {}
    if isinstance(context, Mapping):
        _flatten(context, "", 0, snapshot, set())
    return snapshot


def _flatten(
    mapping: Mapping, prefix: str, depth: int, snapshot: dict[str, Any], seen: set[int]
) -> None:
    # This runs on every live call scored, after the app waited: little code, exact types first.
    if depth > _SNAPSHOT_DEPTH or id(mapping) in seen:
        return
    seen.add(id(mapping))
    for key, value in mapping.items():
        if key == _AUTH_TOKEN_KEY:
            continue
        kind = type(value)
        if kind is str or kind is bool:
            snapshot[prefix + str(key)] = value
        elif kind is int or kind is float:
            if value - value == 0:  # finite: inf - inf and NaN - NaN are NaN
                snapshot[prefix + str(key)] = value
        elif kind is dict:
            _flatten(value, f"{prefix}{key}.", depth + 1, snapshot, seen)
        elif isinstance(value, _TEXT):
            snapshot[prefix + str(key)] = value
        elif isinstance(value, _NUMBER):
            if math.isfinite(value):
                snapshot[prefix + str(key)] = value
        elif isinstance(value, Mapping):
            _flatten(value, f"{prefix}{key}.", depth + 1, snapshot, seen)
