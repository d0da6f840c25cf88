"""What a scorer run returns: the result and the judge record of each prompt step."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from evaldag._compat.js import camel
from evaldag._scorer.run import ScorerRun


class _CamelModel(BaseModel):
    model_config = ConfigDict(populate_by_name=True, alias_generator=to_camel, frozen=True)

    def to_dict(self) -> dict[str, Any]:
        """Mastra's camelCase shape, without the fields that are ``None``."""
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")


class JudgeUsage(_CamelModel):
    """Token usage of a judge call, summed over its attempts."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    reasoning_tokens: int | None = None
    cached_input_tokens: int | None = None
    cache_creation_input_tokens: int | None = None


class JudgeCost(_CamelModel):
    """What the judge calls of one step cost, in US dollars."""

    total_usd: float = Field(description="Input plus output cost.")
    input_usd: float | None = None
    output_usd: float | None = None
    source: str = Field(description="Where the prices came from, e.g. 'litellm-price-table'.")


class JudgeErrorInfo(_CamelModel):
    """Why a judge execution failed."""

    name: str
    message: str
    code: str | None = None


class JudgeExecution(_CamelModel):
    """One execution of a prompt step: the judge record Mastra calls an execution."""

    status: Literal["success", "failed"]
    prompt: str
    output: Any = None
    raw_output: str | None = None
    judge_model_id: str
    judge_provider: str | None = None
    usage: JudgeUsage | None = Field(
        default_factory=JudgeUsage, description="Summed over attempts; None if a failure had none."
    )
    attempt_count: int = Field(
        ge=0, description="Structured-output attempts (1, or 2 with the fallback)."
    )
    model_call_count: int = Field(ge=0, description="Completed model calls, retries included.")
    duration_ms: int = Field(ge=0)
    finish_reason: str | None = None
    error: JudgeErrorInfo | None = None
    cost: JudgeCost | None = Field(
        default=None, description="From litellm's price table; absent when the model is unpriced."
    )
    cache_hit: bool | None = Field(
        default=None,
        description="True when every reply came from the judge cache (no model call, no cost); "
        "None when the judge has no cache.",
    )


class JudgeStepRecord(_CamelModel):
    """The executions of one prompt step."""

    executions: list[JudgeExecution] = Field(default_factory=list)


class NotScorableInfo(_CamelModel):
    """Which step declared the run not scorable, and why."""

    step: str
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        data = super().to_dict()
        data["step"] = camel(self.step)
        return data


class ScorerResult(ScorerRun):
    """The outcome of ``scorer.run``: the run's fields echoed, the score and every step's output.

    ``score`` is ``None`` only when a step declared the run not scorable (see ``not_scorable``).
    """

    score: float | None = None
    reason: Any = None
    preprocess_step_result: Any = None
    analyze_step_result: Any = None
    preprocess_prompt: str | None = None
    analyze_prompt: str | None = None
    generate_score_prompt: str | None = None
    generate_reason_prompt: str | None = None
    judge: dict[str, JudgeStepRecord] | None = Field(
        default=None, description="Judge record per prompt step that ran, keyed by step name."
    )
    not_scorable: NotScorableInfo | None = None

    def to_dict(self) -> dict[str, Any]:
        """Mastra's result shape: camelCase keys, fields that are ``None`` left out."""
        data = self.model_dump(by_alias=True, exclude={"judge", "not_scorable"})
        data = {key: value for key, value in data.items() if value is not None}
        if self.not_scorable is not None:
            data["notScorable"] = self.not_scorable.to_dict()
        if self.judge:
            data["judge"] = {camel(step): record.to_dict() for step, record in self.judge.items()}
        return data
