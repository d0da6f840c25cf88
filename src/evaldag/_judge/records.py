"""Judge records: one execution of a prompt step as Mastra records it, and the tally of what its
calls added up to, in tokens, USD and replies."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import Field

from evaldag._compat.records import CamelRecord
from evaldag._judge.cache import JudgeCache
from evaldag._judge.errors import ExecutionFailure

PRICE_SOURCE = "litellm-price-table"


class JudgeUsage(CamelRecord):
    """Token usage of a judge call, summed over its attempts."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    reasoning_tokens: int | None = None
    cached_input_tokens: int | None = None
    cache_creation_input_tokens: int | None = None


class JudgeCost(CamelRecord):
    """What the judge calls of one step cost, in US dollars."""

    total_usd: float = Field(description="Input plus output cost.")
    input_usd: float | None = None
    output_usd: float | None = None
    source: str = Field(description="Where the prices came from, e.g. 'litellm-price-table'.")


class JudgeErrorInfo(CamelRecord):
    """Why a judge execution failed."""

    name: str
    message: str
    code: str | None = None


class JudgeExecution(CamelRecord):
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


class JudgeStepRecord(CamelRecord):
    """The executions of one prompt step."""

    executions: list[JudgeExecution] = Field(default_factory=list)


@dataclass
class Tally:
    """What an execution's calls added up to, for its judge record."""

    model_id: str
    provider: str | None
    cache: JudgeCache | None
    attempts: int = 0
    calls: int = 0
    cached_calls: int = 0
    usage: dict[str, int] = field(default_factory=dict)
    cost: tuple[float, float] | None = (0.0, 0.0)  # input, output USD; None: a call is unpriced
    free: bool = False
    raw_output: str | None = None
    finish_reason: str | None = None
    pending: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def replied(self, reply: Mapping[str, Any], *, cached: bool) -> None:
        self.raw_output = reply.get("content")
        self.finish_reason = reply.get("finish_reason")
        self.model_id = reply.get("model") or self.model_id
        if cached:
            self.cached_calls += 1
            return
        self.calls += 1
        for name, count in reply.get("usage", {}).items():
            self.usage[name] = self.usage.get(name, 0) + count
        prices = reply.get("cost")
        if self.cost is not None:
            self.cost = (
                None if prices is None else (self.cost[0] + prices[0], self.cost[1] + prices[1])
            )

    def commit(self) -> None:
        """Store the replies of a successful execution in the cache."""
        if self.cache is not None and self.pending:
            self.cache.put(self.pending)

    def _cost(self) -> JudgeCost | None:
        if self.calls == 0 and self.cached_calls > 0:
            return JudgeCost(total_usd=0.0, input_usd=0.0, output_usd=0.0, source="cache")
        if self.free:
            return JudgeCost(total_usd=0.0, input_usd=0.0, output_usd=0.0, source="local-judge")
        if self.cost is None or self.calls == 0:
            return None
        input_usd, output_usd = self.cost
        return JudgeCost(
            total_usd=input_usd + output_usd,
            input_usd=input_usd,
            output_usd=output_usd,
            source=PRICE_SOURCE,
        )

    def record(
        self,
        prompt: str,
        started: float,
        *,
        value: Any = None,
        failure: ExecutionFailure | None = None,
    ) -> JudgeExecution:
        """The judge record of this execution: a success with ``value``, or ``failure``."""
        usage = JudgeUsage(**self.usage)
        common: dict[str, Any] = {
            "prompt": prompt,
            "judge_model_id": self.model_id,
            "judge_provider": self.provider,
            "attempt_count": self.attempts,
            "model_call_count": self.calls,
            "duration_ms": round((time.perf_counter() - started) * 1000),
            "cost": self._cost(),
            "cache_hit": None if self.cache is None else self.calls == 0,
        }
        if failure is None:
            return JudgeExecution(status="success", output=value, usage=usage, **common)
        return JudgeExecution(
            status="failed",
            usage=usage if self.usage else None,
            raw_output=self.raw_output,
            finish_reason=self.finish_reason,
            error=JudgeErrorInfo(name=failure.name, message=failure.message, code=failure.code),
            **common,
        )


def _field_of(owner: Any, name: str) -> Any:
    """``owner``'s field ``name``: a key of OpenAI's JSON, an attribute of litellm's objects."""
    return owner.get(name) if isinstance(owner, dict) else getattr(owner, name, None)


def token_usage(usage: Any) -> dict[str, int]:
    """Mastra's normalised usage from an OpenAI-style usage object (numeric fields only)."""

    def number(owner: Any, name: str) -> int | None:
        value = _field_of(owner, name)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    if usage is None:
        return {}
    found = {
        "input_tokens": number(usage, "prompt_tokens"),
        "output_tokens": number(usage, "completion_tokens"),
        "total_tokens": number(usage, "total_tokens"),
        "reasoning_tokens": number(
            _field_of(usage, "completion_tokens_details"), "reasoning_tokens"
        ),
        "cached_input_tokens": number(_field_of(usage, "prompt_tokens_details"), "cached_tokens"),
        "cache_creation_input_tokens": number(usage, "cache_creation_input_tokens"),
    }
    # litellm fills total_tokens with 0 when the provider leaves it out: count it as missing.
    if not found["total_tokens"] and (
        found["input_tokens"] is not None or found["output_tokens"] is not None
    ):
        found["total_tokens"] = (found["input_tokens"] or 0) + (found["output_tokens"] or 0)
    return {name: count for name, count in found.items() if count is not None}


def tool_calls(message: Any) -> list[dict[str, Any]]:
    """The tool calls of a reply's message (OpenAI's JSON or litellm's object): ``id``, ``name``
    and ``arguments`` (JSON text) each."""
    calls = _field_of(message, "tool_calls")
    found = []
    for call in calls if isinstance(calls, list | tuple) else ():
        function = _field_of(call, "function")
        found.append(
            {
                "id": _field_of(call, "id"),
                "name": _field_of(function, "name"),
                "arguments": _field_of(function, "arguments"),
            }
        )
    return found


def call_cost(
    usage: Mapping[str, int], rates: tuple[float, float, float] | None
) -> tuple[float, float] | None:
    """Input and output USD of one call at ``rates`` (USD per input, output and cache-read input
    token), or None if unpriced."""
    if rates is None:
        return None
    input_rate, output_rate, cached_rate = rates
    cached = usage.get("cached_input_tokens", 0)
    input_usd = (usage.get("input_tokens", 0) - cached) * input_rate + cached * cached_rate
    return input_usd, usage.get("output_tokens", 0) * output_rate
