"""Where judge calls happen: a prompt step's prompt goes to an LLM through litellm.

One execution of a prompt step makes up to two **attempts**: the first asks for structured
output (``response_format`` where the model takes it), and if the reply cannot be parsed or does
not validate, a fallback attempt puts the schema in the system prompt and extracts JSON from the
text. ``generate_reason`` makes one plain-text attempt. Each attempt is one model **call**, tried
again after transport faults (429, 5xx, timeouts, lost connections) with exponential backoff and
jitter, honouring ``Retry-After``; 400/401/403/404 are not retried.

Calls in flight are bounded per (model, api_base, max_concurrency) by a limiter that works across
event loops and threads: every stage node runs its rows on a fresh event loop (``run_sync``), and
scorers may run in parallel threads, so an ``asyncio.Semaphore`` (bound to one loop) cannot be
shared. See :class:`SharedLimit`.

A call costs 7-10 ms of CPU on the 2-core build machine, almost all of it inside
``litellm.acompletion`` (evaldag's share is ~0.3 ms), and since it all holds the GIL that bounds
judge throughput at roughly 100-130 calls/s per process whatever the concurrency.
``benchmarks/judge_throughput.py`` measures it and breaks it down; why no litellm setting is
changed to cut it is in :func:`_litellm`.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import os
import random
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any

from evaldag._judge.cache import JudgeCache, judge_cache, request_key
from evaldag._judge.settings import (
    LOCAL_MODEL,
    Judge,
    cache_directory,
    is_secret_setting,
    resolved_judge,
)
from evaldag._results.scorer_result import JudgeCost, JudgeErrorInfo, JudgeExecution, JudgeUsage
from evaldag._scorer.steps import PromptStep, StageName
from evaldag.errors import Category, EvalDagError, error_message

_logger = logging.getLogger(__name__)

#: Backoff before retry n (0-based) without Retry-After: base * 2**n, capped, with full jitter
#: over its upper half.
BACKOFF_BASE_SECONDS = 0.5
BACKOFF_CAP_SECONDS = 20.0
#: The longest Retry-After honoured; a longer one fails the call instead of stalling the run.
RETRY_AFTER_CAP_SECONDS = 120.0

PRICE_SOURCE = "litellm-price-table"

_OBJECT_UNDEFINED = "STRUCTURED_OUTPUT_OBJECT_UNDEFINED"
_SCHEMA_INVALID = "STRUCTURED_OUTPUT_SCHEMA_VALIDATION_FAILED"


class JudgeError(EvalDagError):
    """A prompt step's judge call failed.

    ``execution`` is the failed judge record, or None when no attempt started (bad settings,
    a missing model or instructions, a prompt that is not text).
    """

    def __init__(
        self,
        id: str,
        message: str,
        *,
        execution: JudgeExecution | None = None,
        category: Category = "THIRD_PARTY",
        details: dict[str, Any] | None = None,
        cause: BaseException | None = None,
    ) -> None:
        super().__init__(id, message, category=category, details=details, cause=cause)
        self.execution = execution


class JudgeCallError(Exception):
    """A failed model call as litellm reported it: class name, HTTP status and message.

    It stands in for litellm's exception as a ``JudgeError``'s ``cause`` because litellm's
    exceptions cannot be unpickled, and results (errors included) must survive pickling; the
    original stays chained as ``__cause__`` for tracebacks.
    """

    def __init__(self, name: str, status: int | None, message: str) -> None:
        super().__init__(f"{name}: {message}")
        self.name = name
        self.status = status
        self.detail = message

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.name, self.status, self.detail))


async def judged_value(
    step: PromptStep, stage: StageName, scorer_judge: Any, prompt: str
) -> tuple[Any, JudgeExecution]:
    """The judge's answer to ``prompt`` for ``stage`` and the record of how it was obtained.

    preprocess/analyze give the object validated against ``output_schema`` as plain JSON data,
    as Mastra stores it: for a pydantic model its dict by alias, with unknown keys dropped and the
    fields the judge left out left out (defaults are not filled in);
    generate_score gives the number of the judge's ``{"score": number}``; generate_reason gives
    the judge's text.
    """
    _litellm()  # imported before the clock starts: a one-off cost, not this step's
    started = time.perf_counter()
    try:
        judge = resolved_judge(step.judge, scorer_judge, stage)
    except EvalDagError as error:
        raise JudgeError(error.id, error.message, category="USER", details=error.details) from None
    if not isinstance(prompt, str):
        raise JudgeError(
            "EVALDAG_INVALID_PROMPT",
            f'create_prompt of step "{stage}" returned {type(prompt).__name__}; it must return '
            "the prompt text (a str)",
            category="USER",
        )
    contract = _contract(step, stage)
    try:
        endpoint = await _endpoint(judge)
        cache = judge_cache(cache_directory(judge.cache))
    except JudgeError:
        raise
    except EvalDagError as error:  # the local judge is not installed, the cache cannot open
        raise JudgeError(
            error.id, error.message, category=error.category, details=error.details, cause=error
        ) from error
    tally = _Tally(endpoint.model_name, endpoint.provider, cache)
    try:
        value = await _attempted(judge, endpoint, contract, prompt, tally)
    except _Failure as caught:
        failure = caught
    else:
        tally.commit()
        return value, tally.record(prompt, started, value=value)
    # Raised outside the except block and from the picklable stand-in: results and errors must
    # pickle, and tblib (installed by dask) pickles the whole cause and context chain.
    raise JudgeError(
        failure.code,
        f'step "{stage}": {failure.message}',
        execution=tally.record(prompt, started, failure=failure),
        category=failure.category,
        details={"step": stage, "model": endpoint.model, "apiBase": endpoint.api_base},
        cause=failure.cause,
    )


# --- what a step asks for ------------------------------------------------------------------------


@dataclass(frozen=True)
class _Contract:
    """What the reply must be: a schema and how to turn parsed JSON into the stored value."""

    name: str
    schema: dict[str, Any] | None  # None: plain text
    stored: Callable[[Any], Any] = lambda value: value


class StructuredOutputError(Exception):
    """A judge reply that is not the JSON the step asks for; ``code`` is Mastra's error id."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def _contract(step: PromptStep, stage: StageName) -> _Contract:
    if stage == "generate_reason":
        return _Contract("reason", None)
    if stage == "generate_score":
        return _SCORE_CONTRACT
    if step.output_schema is None:
        raise JudgeError(
            "EVALDAG_MISSING_OUTPUT_SCHEMA",
            f'PromptStep "{step.description}" of step "{stage}" has no output_schema; a '
            f"{stage} prompt step must say what JSON the judge returns: pass a pydantic model "
            "or a JSON-schema dict as output_schema=",
            category="USER",
        )
    try:
        if isinstance(step.output_schema, dict):
            return _dict_contract(json.dumps(step.output_schema, sort_keys=True), stage)
        return _typed_contract(step.output_schema, stage)
    except Exception as error:
        problem = error_message(error)
    raise JudgeError(  # outside the except block: see _endpoint
        "EVALDAG_INVALID_OUTPUT_SCHEMA",
        f'output_schema of step "{stage}" is not usable: {problem}. Pass a pydantic model class '
        "(or another type pydantic can validate) or a JSON-schema dict",
        category="USER",
    )


@functools.lru_cache(maxsize=256)
def _typed_contract(schema_type: Any, stage: str) -> _Contract:
    from pydantic import TypeAdapter, ValidationError

    adapter = TypeAdapter(schema_type)

    def stored(value: Any) -> Any:
        try:
            validated = adapter.validate_python(value)
        except ValidationError as error:
            raise StructuredOutputError(_SCHEMA_INVALID, _pydantic_problems(error)) from None
        return adapter.dump_python(validated, mode="json", by_alias=True, exclude_unset=True)

    name = getattr(schema_type, "__name__", None) or stage
    return _Contract(name, adapter.json_schema(by_alias=True), stored)


@functools.lru_cache(maxsize=256)
def _dict_contract(schema_text: str, stage: str) -> _Contract:
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

    return _Contract(str(schema.get("title") or stage), schema, stored)


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


_SCORE_CONTRACT = _Contract(
    "score",
    {
        "type": "object",
        "properties": {"score": {"type": "number"}},
        "required": ["score"],
        "additionalProperties": False,
    },
    _score_of,
)


def _pydantic_problems(error: Any) -> str:
    return "; ".join(
        f"{'/'.join(str(part) for part in item['loc']) or 'root'}: {item['msg']}"
        for item in error.errors()[:5]
    )


def _preview(value: Any, limit: int = 120) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=repr)
    return repr(text if len(text) <= limit else text[:limit] + "…")


# --- JSON in a reply -----------------------------------------------------------------------------

_FENCE = re.compile(r"```[ \t]*(?:json5?|jsonc)?[ \t]*\r?\n?(.*?)```", re.DOTALL | re.IGNORECASE)
_DECODER = json.JSONDecoder()
_NOTHING = object()


def json_in_reply(text: str | None) -> Any:
    """The JSON value in a judge's reply.

    Tolerates prose around the JSON, code fences and a reply cut off after its last complete
    element (closed as the model would have); anything else that is not JSON is an error.
    """
    stripped = (text or "").strip()
    if not stripped:
        raise StructuredOutputError(_OBJECT_UNDEFINED, "the reply is empty")
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
        _OBJECT_UNDEFINED, f"no JSON value found in the reply {_preview(stripped)}"
    )


def _decoded(text: str) -> Any:
    try:
        return _DECODER.raw_decode(text)[0]
    except json.JSONDecodeError as error:
        truncated = error.pos >= len(text) or error.msg.startswith("Unterminated string")
        return _closed(text) if truncated and text[:1] in "{[" else _NOTHING


def _closed(text: str) -> Any:
    """A cut-off JSON text completed: back to its last complete element, brackets closed."""
    stack: list[str] = []
    cut_points: list[tuple[int, str]] = []
    in_string = escaped = False
    for index, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "{[":
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


def _schema_instructions(schema: Mapping[str, Any]) -> str:
    return (
        "Answer with a single JSON value and nothing else: no prose, no code fences. The JSON "
        "must be valid against this JSON Schema:\n" + json.dumps(schema, ensure_ascii=False)
    )


def _response_format(style: str, contract: _Contract) -> dict[str, Any] | None:
    if style == "json_schema":
        name = re.sub(r"[^A-Za-z0-9_-]", "_", contract.name)[:64] or "output"
        return {"type": "json_schema", "json_schema": {"name": name, "schema": contract.schema}}
    if style == "json_object":
        return {"type": "json_object", "schema": contract.schema}
    return None


# --- the attempts --------------------------------------------------------------------------------


class _Failure(Exception):
    def __init__(
        self,
        code: str,
        message: str,
        *,
        name: str,
        category: str = "THIRD_PARTY",
        cause: JudgeCallError | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.name = name
        self.category = category
        self.cause = cause


async def _attempted(
    judge: Judge, endpoint: _Endpoint, contract: _Contract, prompt: str, tally: _Tally
) -> Any:
    if contract.schema is None:
        styles = ["text"]
    else:
        first = endpoint.first_style
        if first != "prompt" and contract.schema.get("type") != "object":
            first = "prompt"  # response_format wants an object at the root
        styles = [first, "prompt"]
    fault: StructuredOutputError | None = None
    for style in styles:
        system = judge.instructions or ""
        if style == "prompt":
            system = f"{system}\n\n{_schema_instructions(contract.schema or {})}"
        messages = [{"role": "system", "content": system}, {"role": "user", "content": prompt}]
        tally.attempts += 1
        reply = await _reply(judge, endpoint, messages, _response_format(style, contract), tally)
        text = reply.get("content")
        if contract.schema is None:
            return text or ""
        try:
            return contract.stored(json_in_reply(text))
        except StructuredOutputError as error:
            fault = error
    assert fault is not None
    what = "is not JSON" if fault.code == _OBJECT_UNDEFINED else "does not match the schema"
    how = " then ".join(_STYLE_NAMES[style] for style in styles)
    raise _Failure(
        fault.code,
        f"the judge's reply {what} after {len(styles)} attempts ({how}): {fault}",
        name=StructuredOutputError.__name__,
    )


_STYLE_NAMES = {
    "json_schema": "response_format json_schema",
    "json_object": "response_format json_object",
    "prompt": "the schema in the prompt",
}


# --- records -------------------------------------------------------------------------------------


@dataclass
class _Tally:
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
        failure: _Failure | None = None,
    ) -> JudgeExecution:
        """The judge record of this execution: a success with ``value``, or ``failure``."""
        usage = JudgeUsage(**self.usage)
        common = {
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


def _usage(usage: Any) -> dict[str, int]:
    """Mastra's normalised usage from an OpenAI-style usage object (numeric fields only)."""

    def part(owner: Any, name: str) -> Any:
        return owner.get(name) if isinstance(owner, dict) else getattr(owner, name, None)

    def number(owner: Any, name: str) -> int | None:
        value = part(owner, name)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    if usage is None:
        return {}
    found = {
        "input_tokens": number(usage, "prompt_tokens"),
        "output_tokens": number(usage, "completion_tokens"),
        "total_tokens": number(usage, "total_tokens"),
        "reasoning_tokens": number(part(usage, "completion_tokens_details"), "reasoning_tokens"),
        "cached_input_tokens": number(part(usage, "prompt_tokens_details"), "cached_tokens"),
        "cache_creation_input_tokens": number(usage, "cache_creation_input_tokens"),
    }
    # litellm fills total_tokens with 0 when the provider leaves it out: count it as missing.
    if not found["total_tokens"] and (
        found["input_tokens"] is not None or found["output_tokens"] is not None
    ):
        found["total_tokens"] = (found["input_tokens"] or 0) + (found["output_tokens"] or 0)
    return {name: count for name, count in found.items() if count is not None}


# --- endpoints -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Endpoint:
    """A judge resolved to what litellm is called with."""

    model: str
    api_base: str | None
    api_key: str | None = field(repr=False)
    model_name: str
    provider: str | None
    first_style: str
    max_concurrency: int
    free: bool = False
    max_tokens: int | None = None

    @property
    def where(self) -> str:
        return self.api_base or f"the default {self.provider or 'provider'} URL"


async def _endpoint(judge: Judge) -> _Endpoint:
    api_key = judge.api_key.get_secret_value() if judge.api_key is not None else None
    if judge.model == LOCAL_MODEL:
        return await _local_endpoint(judge)
    # Errors are raised outside ``except`` blocks here and below: tblib (installed by dask)
    # pickles the context chain, and litellm's exceptions do not unpickle.
    try:
        model_name, provider = _provider(judge.model, judge.api_base)
    except Exception:
        model_name = provider = None
    if model_name is None:
        raise JudgeError(
            "EVALDAG_INVALID_JUDGE",
            f"litellm does not know the provider of model {judge.model!r}: prefix it with one, "
            "e.g. 'openai/gpt-4o-mini', 'anthropic/claude-3-5-haiku-latest', 'ollama/qwen2.5' "
            "or 'openai/<name>' with api_base= for an OpenAI-compatible server",
            category="USER",
        )
    style = judge.structured_output
    if style == "auto":
        style = _default_style(model_name, provider)
    return _Endpoint(
        judge.model, judge.api_base, api_key, model_name, provider, style, judge.max_concurrency
    )


async def _local_endpoint(judge: Judge) -> _Endpoint:
    # The local judge (llama.cpp) takes JSON requests as json_object plus a schema, answers one
    # request at a time (more in flight would only queue into timeouts, unless the judge asks
    # for more) and costs nothing; a cut-off answer is not JSON, hence max_tokens.
    from evaldag.local_judge import local_judge_endpoint

    local = await asyncio.to_thread(local_judge_endpoint)
    style = "json_object" if judge.structured_output == "auto" else judge.structured_output
    explicit = "max_concurrency" in judge.model_fields_set
    return _Endpoint(
        local.model,
        local.api_base,
        local.api_key,
        local.model.split("/", 1)[-1],
        "local",
        style,
        judge.max_concurrency if explicit else 1,
        free=True,
        max_tokens=judge.max_tokens or 512,
    )


@functools.lru_cache(maxsize=256)
def _provider(model: str, api_base: str | None) -> tuple[str, str | None]:
    """litellm's model name and provider for ``model`` (its key is not kept)."""
    model_name, provider, _, _ = _litellm().get_llm_provider(model, api_base=api_base)
    return model_name, provider


@functools.lru_cache(maxsize=256)
def _default_style(model_name: str, provider: str | None) -> str:
    """json_schema unless litellm's model table says the model cannot take it."""
    try:
        info = _litellm().get_model_info(model=model_name, custom_llm_provider=provider)
    except Exception:  # not in the table: OpenAI-compatible servers mostly take json_schema
        return "json_schema"
    return "json_schema" if info.get("supports_response_schema") else "prompt"


@functools.lru_cache(maxsize=256)
def _rates(model_name: str, provider: str | None) -> tuple[float, float, float] | None:
    """USD per input, output and cache-read input token from litellm's table, if it has them."""
    try:
        info = _litellm().get_model_info(model=model_name, custom_llm_provider=provider)
    except Exception:
        return None
    input_rate = info.get("input_cost_per_token")
    output_rate = info.get("output_cost_per_token")
    if input_rate is None or output_rate is None:
        return None
    return input_rate, output_rate, info.get("cache_read_input_token_cost") or input_rate


@functools.cache
def _litellm() -> Any:
    # The price table bundled with litellm: no download (and no retries when offline) at import.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    # litellm prints a "Give Feedback / Get Help" banner before raising; evaldag's errors say
    # what went wrong instead.
    litellm.suppress_debug_info = True
    # No setting is changed for speed: each was measured against the judge test server by the
    # exact count of Python calls per acompletion (6,360 with litellm 1.110's defaults, an
    # unpriced model, our parameters) and none cuts the cost. turn_off_message_logging adds 19 %
    # (it redacts every call), disable_aiohttp_transport (plain httpx) 14 % and more CPU, a
    # caller's OpenAI client 9 %; a shared aiohttp session, no-log (it only skips callbacks, and
    # none is registered), disable_token_counter, drop_params, custom_llm_provider and our own
    # parameters (response_format, timeout, temperature, max_retries) change it by under 2 %;
    # set_verbose is off and the callback lists are empty by default. litellm prices every reply
    # and builds a logging payload with no switch to skip either (~25 % of a call, ~40 % for a
    # model its table lacks); we price from its table ourselves (``_rates``, cached), and
    # passing our rates as input/output_cost_per_token does not make its pricing cheaper. Its
    # native chat-completions route is Python-only in litellm 1.110 whatever LITELLM_RUST says.
    return litellm


# --- calls ---------------------------------------------------------------------------------------


async def _reply(
    judge: Judge,
    endpoint: _Endpoint,
    messages: list[dict[str, str]],
    response_format: dict[str, Any] | None,
    tally: _Tally,
) -> dict[str, Any]:
    """The model's reply to ``messages``: from the cache, else from a model call."""
    request: dict[str, Any] = {"model": endpoint.model, "messages": messages}
    if endpoint.api_base is not None:
        request["api_base"] = endpoint.api_base
    if judge.temperature is not None:
        request["temperature"] = judge.temperature
    max_tokens = endpoint.max_tokens or judge.max_tokens
    if max_tokens is not None:
        request["max_tokens"] = max_tokens
    if response_format is not None:
        request["response_format"] = response_format
    request.update(judge.litellm_kwargs)
    key = None
    if tally.cache is not None:
        key = request_key(
            {
                **request,
                "model": judge.model,
                "api_base": None if endpoint.free else endpoint.api_base,
            }
        )
        cached = tally.cache.get(key)
        if cached is not None:
            tally.replied(cached, cached=True)
            return cached
    reply = await _called(judge, endpoint, request)
    tally.free = endpoint.free
    tally.replied(reply, cached=False)
    if key is not None:
        tally.pending.append((key, reply))
    return reply


async def _called(judge: Judge, endpoint: _Endpoint, request: dict[str, Any]) -> dict[str, Any]:
    """One model call through litellm, retried after transport faults."""
    litellm = _litellm()
    limit = shared_limit((endpoint.model, endpoint.api_base), endpoint.max_concurrency)
    retry = 0
    while True:
        async with limit:
            try:
                response = await litellm.acompletion(
                    **request, api_key=endpoint.api_key, timeout=judge.timeout, max_retries=0
                )
            except Exception as error:
                failure = error
            else:
                return _reply_of(response, endpoint)
        delay = _retry_delay(failure, retry) if retry < judge.max_retries else None
        if delay is None:
            raise _call_failure(failure, endpoint, judge, retry + 1)
        _logger.info(
            "judge call to %s at %s failed (%s); retry %d of %d in %.2f s",
            endpoint.model,
            endpoint.where,
            type(failure).__name__,
            retry + 1,
            judge.max_retries,
            delay,
            extra={"judge_retry": retry + 1, "judge_retry_delay": delay},
        )
        await asyncio.sleep(delay)
        retry += 1


def _reply_of(response: Any, endpoint: _Endpoint) -> dict[str, Any]:
    """What the cache keeps of a response; a response without choices has no content."""
    choices = getattr(response, "choices", None) or []
    message = getattr(choices[0], "message", None) if choices else None
    usage = _usage(getattr(response, "usage", None))
    return {
        "content": getattr(message, "content", None),
        "finish_reason": getattr(choices[0], "finish_reason", None) if choices else None,
        "model": getattr(response, "model", None),
        "usage": usage,
        "cost": None if endpoint.free else _cost(usage, endpoint),
    }


def _cost(usage: Mapping[str, int], endpoint: _Endpoint) -> tuple[float, float] | None:
    """Input and output USD of one call from litellm's price table, or None if unpriced."""
    rates = _rates(endpoint.model_name, endpoint.provider)
    if rates is None:
        return None
    input_rate, output_rate, cached_rate = rates
    cached = usage.get("cached_input_tokens", 0)
    input_usd = (usage.get("input_tokens", 0) - cached) * input_rate + cached * cached_rate
    return input_usd, usage.get("output_tokens", 0) * output_rate


def _status(error: BaseException) -> int | None:
    status = getattr(error, "status_code", None)
    return status if isinstance(status, int) else None


def _transient(error: BaseException) -> bool:
    """Whether ``error`` is a transport fault worth retrying: 408, 429, 5xx, timeouts, no route."""
    litellm = _litellm()
    status = _status(error)
    return isinstance(error, litellm.Timeout | litellm.APIConnectionError) or (
        status is not None and (status in (408, 429) or status >= 500)
    )


def _retry_delay(error: BaseException, retry: int) -> float | None:
    """Seconds to wait before retry ``retry`` (0-based) after ``error``; None: do not retry."""
    if not _transient(error):
        return None
    retry_after = _retry_after(error)
    if retry_after is not None:
        if retry_after > RETRY_AFTER_CAP_SECONDS:
            return None
        return retry_after * random.uniform(1.0, 1.1)
    ceiling = min(BACKOFF_CAP_SECONDS, BACKOFF_BASE_SECONDS * 2**retry)
    return random.uniform(ceiling / 2, ceiling)


def _retry_after(error: BaseException) -> float | None:
    """The server's ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date), if any."""
    headers = getattr(error, "headers", None) or getattr(
        getattr(error, "response", None), "headers", None
    )
    if not headers:
        headers = getattr(error, "litellm_response_headers", None)
    if not headers:
        return None
    millis = headers.get("retry-after-ms")
    try:
        if millis is not None:
            return max(0.0, float(millis) / 1000)
    except ValueError:
        pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


_REFUSAL_HINTS = {
    400: "the provider rejected the request; check the model name and the judge's settings",
    401: "check the judge's api_key (or the provider's key variable, e.g. OPENAI_API_KEY)",
    403: "the key is not allowed to use this model",
    404: "check the model name and api_base",
}


def _call_failure(error: BaseException, endpoint: _Endpoint, judge: Judge, tries: int) -> _Failure:
    status = _status(error)
    detail = _redacted(error_message(error), endpoint.api_key)
    name = type(error).__name__
    cause = JudgeCallError(name, status, detail)
    label = f"{status} {name}" if status is not None else name
    if status is not None and not _transient(error):
        hint = _REFUSAL_HINTS.get(status, "the request is not retried")
        return _Failure(
            "EVALDAG_JUDGE_REFUSED",
            f"judge model {endpoint.model!r} at {endpoint.where} refused the request ({label}): "
            f"{detail}. {hint}",
            name=name,
            cause=cause,
        )
    if not _transient(error):
        return _Failure(
            "EVALDAG_JUDGE_CALL_FAILED",
            f"calling judge model {endpoint.model!r} at {endpoint.where} through litellm failed "
            f"({label}): {detail}",
            name=name,
            cause=cause,
        )
    return _Failure(
        "EVALDAG_JUDGE_UNAVAILABLE",
        f"judge model {endpoint.model!r} at {endpoint.where} failed {tries} time(s) ({label}; "
        f"timeout {judge.timeout:g} s, max_retries {judge.max_retries}): {detail}",
        name=name,
        cause=cause,
    )


def _redacted(text: str, secret: str | None) -> str:
    """``text`` without the judge's key, nor any credential litellm may have taken from the
    environment (``OPENAI_API_KEY`` …): providers echo a refused key in their error bodies."""
    text = text if len(text) <= 500 else text[:500] + "…"
    secrets = {secret} | {
        value for name, value in os.environ.items() if is_secret_setting(name) and len(value) >= 8
    }
    for known in sorted(secrets - {None, ""}, key=len, reverse=True):
        text = text.replace(known, "**********")
    return text


# --- the limiter ---------------------------------------------------------------------------------


class SharedLimit:
    """A counting semaphore that coroutines on any event loop, in any thread, can await.

    ``asyncio.Semaphore`` binds to one loop; evaldag runs each stage node's rows on a fresh loop
    and may run scorers in threads, so waiters here are futures on their own loops, woken with
    ``call_soon_threadsafe``. A released slot passes straight to the oldest waiter (FIFO).
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self._held = 0
        self._waiters: deque[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = deque()
        self._lock = threading.Lock()

    @property
    def held(self) -> int:
        """Slots in use."""
        return self._held

    async def acquire(self) -> None:
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._held < self.size and not self._waiters:
                self._held += 1
                return
            waiter = (loop, loop.create_future())
            self._waiters.append(waiter)
        try:
            await waiter[1]
        except asyncio.CancelledError:
            with self._lock:
                granted = waiter not in self._waiters
                if not granted:
                    self._waiters.remove(waiter)
            if granted:  # the slot was handed over as we were cancelled: pass it on
                self.release()
            raise

    def release(self) -> None:
        with self._lock:
            while self._waiters:
                loop, future = self._waiters.popleft()
                if not loop.is_closed():
                    loop.call_soon_threadsafe(_wake, future)
                    return
            self._held -= 1

    async def __aenter__(self) -> None:
        await self.acquire()

    async def __aexit__(self, *exc: object) -> None:
        self.release()


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


_limits: dict[tuple[Any, ...], SharedLimit] = {}
_limits_lock = threading.Lock()


def shared_limit(endpoint: tuple[Any, ...], size: int) -> SharedLimit:
    """The process-wide limiter of ``endpoint`` for a given ``max_concurrency``."""
    key = (*endpoint, size)
    with _limits_lock:
        limit = _limits.get(key)
        if limit is None:
            limit = _limits[key] = SharedLimit(size)
        return limit
