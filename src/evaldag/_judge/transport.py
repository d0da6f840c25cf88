"""Where judge calls happen: a prompt step's prompt goes to an LLM through litellm.

One execution of a prompt step makes up to two **attempts**: the first asks for structured
output (``response_format`` where the model takes it), and if the reply cannot be parsed or does
not validate, a fallback attempt puts the schema in the system prompt and extracts JSON from the
text (see :mod:`evaldag._judge.contracts`). ``generate_reason`` makes one plain-text attempt. Each
attempt gets one reply, from the judge's cache or from a model **call**, tried again after
transport faults (429, 5xx, timeouts, lost connections) with exponential backoff and jitter,
honouring ``Retry-After``; 400/401/403/404 are not retried. Calls in flight are bounded per
(model, api_base, max_concurrency) by a :class:`~evaldag._judge.limiter.SharedLimit`.

A call costs 7-10 ms of CPU on the 2-core build machine, almost all of it inside
``litellm.acompletion`` (evaldag's share is ~0.3 ms), and since it all holds the GIL that bounds
judge throughput at roughly 100-130 calls/s per process whatever the concurrency.
``benchmarks/judge_throughput.py`` measures it and breaks it down; why no litellm setting is
changed to cut it is in :func:`configured_litellm`.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import random
import time
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any

from evaldag._judge.cache import judge_cache, request_key
from evaldag._judge.contracts import (
    OBJECT_UNDEFINED,
    Contract,
    StructuredOutputError,
    json_in_reply,
    response_format,
    schema_instructions,
    step_contract,
)
from evaldag._judge.errors import ExecutionFailure, JudgeCallError, JudgeError
from evaldag._judge.limiter import shared_limit
from evaldag._judge.records import Tally, call_cost, token_usage
from evaldag._judge.settings import (
    LOCAL_MODEL,
    Judge,
    cache_directory,
    is_secret_setting,
    resolved_judge,
)
from evaldag._results.scorer_result import JudgeExecution
from evaldag._scorer.steps import PromptStep, StageName
from evaldag.errors import EvalDagError, error_message

_logger = logging.getLogger(__name__)

#: Backoff before retry n (0-based) without Retry-After: base * 2**n, capped, with full jitter
#: over its upper half.
BACKOFF_BASE_SECONDS = 0.5
BACKOFF_CAP_SECONDS = 20.0
#: The longest Retry-After honoured; a longer one fails the call instead of stalling the run.
RETRY_AFTER_CAP_SECONDS = 120.0


async def judged_value(
    step: PromptStep,
    stage: StageName,
    scorer_judge: Any,
    prompt: str,
    run_cache: bool | str | Path | None = None,
) -> tuple[Any, JudgeExecution]:
    """The judge's answer to ``prompt`` for ``stage`` and the record of how it was obtained.

    ``run_cache`` is the run's reply cache setting (``run_evals(cache=...)``), used when the
    judge sets none.

    preprocess/analyze give the object validated against ``output_schema`` as plain JSON data,
    as Mastra stores it: for a pydantic model its dict by alias, with unknown keys dropped and the
    fields the judge left out left out (defaults are not filled in);
    generate_score gives the number of the judge's ``{"score": number}``; generate_reason gives
    the judge's text.
    """
    configured_litellm()  # imported before the clock starts: a one-off cost, not this step's
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
    contract = step_contract(step, stage)
    try:
        endpoint = await _endpoint(judge)
        cache = judge_cache(cache_directory(run_cache if judge.cache is None else judge.cache))
    except JudgeError:
        raise
    except EvalDagError as error:  # the local judge is not installed, the cache cannot open
        raise JudgeError(
            error.id, error.message, category=error.category, details=error.details, cause=error
        ) from error
    tally = Tally(endpoint.model_name, endpoint.provider, cache)
    try:
        value = await _attempted(judge, endpoint, contract, prompt, tally)
    except ExecutionFailure as caught:
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


async def _attempted(
    judge: Judge, endpoint: _Endpoint, contract: Contract, prompt: str, tally: Tally
) -> Any:
    """The stored value of the first attempt whose reply meets ``contract``."""
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
            system = f"{system}\n\n{schema_instructions(contract.schema or {})}"
        messages = [{"role": "system", "content": system}, {"role": "user", "content": prompt}]
        tally.attempts += 1
        reply = await _reply(judge, endpoint, messages, response_format(style, contract), tally)
        text = reply.get("content")
        if contract.schema is None:
            return text or ""
        try:
            return contract.stored(json_in_reply(text))
        except StructuredOutputError as error:
            fault = error
    assert fault is not None
    what = "is not JSON" if fault.code == OBJECT_UNDEFINED else "does not match the schema"
    how = " then ".join(_STYLE_NAMES[style] for style in styles)
    raise ExecutionFailure(
        fault.code,
        f"the judge's reply {what} after {len(styles)} attempts ({how}): {fault}",
        name=StructuredOutputError.__name__,
    )


_STYLE_NAMES = {
    "json_schema": "response_format json_schema",
    "json_object": "response_format json_object",
    "prompt": "the schema in the prompt",
}


# --- litellm and endpoints ----------------------------------------------------------------------


@functools.cache
def configured_litellm() -> Any:
    """litellm, imported and configured on first use; nothing is set at import time."""
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
    """Where and how ``judge`` is called; the local judge starts here on first use."""
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
    model_name, provider, _, _ = configured_litellm().get_llm_provider(model, api_base=api_base)
    return model_name, provider


@functools.lru_cache(maxsize=256)
def _default_style(model_name: str, provider: str | None) -> str:
    """json_schema unless litellm's model table says the model cannot take it."""
    try:
        info = configured_litellm().get_model_info(model=model_name, custom_llm_provider=provider)
    except Exception:  # not in the table: OpenAI-compatible servers mostly take json_schema
        return "json_schema"
    return "json_schema" if info.get("supports_response_schema") else "prompt"


@functools.lru_cache(maxsize=256)
def _rates(model_name: str, provider: str | None) -> tuple[float, float, float] | None:
    """USD per input, output and cache-read input token from litellm's table, if it has them."""
    try:
        info = configured_litellm().get_model_info(model=model_name, custom_llm_provider=provider)
    except Exception:
        return None
    input_rate = info.get("input_cost_per_token")
    output_rate = info.get("output_cost_per_token")
    if input_rate is None or output_rate is None:
        return None
    return input_rate, output_rate, info.get("cache_read_input_token_cost") or input_rate


# --- calls ---------------------------------------------------------------------------------------


async def _reply(
    judge: Judge,
    endpoint: _Endpoint,
    messages: list[dict[str, str]],
    response_format: dict[str, Any] | None,
    tally: Tally,
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
    litellm = configured_litellm()
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
    usage = token_usage(getattr(response, "usage", None))
    cost = None
    if not endpoint.free:
        cost = call_cost(usage, _rates(endpoint.model_name, endpoint.provider))
    return {
        "content": getattr(message, "content", None),
        "finish_reason": getattr(choices[0], "finish_reason", None) if choices else None,
        "model": getattr(response, "model", None),
        "usage": usage,
        "cost": cost,
    }


def _status(error: BaseException) -> int | None:
    status = getattr(error, "status_code", None)
    return status if isinstance(status, int) else None


def _missing_key(error: BaseException) -> bool:
    """Whether the OpenAI client refused to call for want of a key (litellm reports it as 500)."""
    text = str(error)
    return "Missing credentials" in text or "api_key client option must be set" in text


def _transient(error: BaseException) -> bool:
    """Whether ``error`` is a transport fault worth retrying: 408, 429, 5xx, timeouts, no route."""
    litellm = configured_litellm()
    if _missing_key(error):
        return False
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


def _call_failure(
    error: BaseException, endpoint: _Endpoint, judge: Judge, tries: int
) -> ExecutionFailure:
    status = _status(error)
    detail = _redacted(error_message(error), endpoint.api_key)
    name = type(error).__name__
    cause = JudgeCallError(name, status, detail)
    label = f"{status} {name}" if status is not None else name
    if _missing_key(error):
        return ExecutionFailure(
            "EVALDAG_JUDGE_MISSING_KEY",
            f"judge model {endpoint.model!r} at {endpoint.where} was not called: the client has "
            "no API key. Give the judge api_key=... (for a local server that checks none, any "
            "text, e.g. Judge(..., api_key='none')) or set the provider's key variable "
            "(OPENAI_API_KEY for openai/ models)",
            name=name,
            category="USER",
            cause=cause,
        )
    if status is not None and not _transient(error):
        hint = _REFUSAL_HINTS.get(status, "the request is not retried")
        return ExecutionFailure(
            "EVALDAG_JUDGE_REFUSED",
            f"judge model {endpoint.model!r} at {endpoint.where} refused the request ({label}): "
            f"{detail}. {hint}",
            name=name,
            cause=cause,
        )
    if not _transient(error):
        return ExecutionFailure(
            "EVALDAG_JUDGE_CALL_FAILED",
            f"calling judge model {endpoint.model!r} at {endpoint.where} through litellm failed "
            f"({label}): {detail}",
            name=name,
            cause=cause,
        )
    return ExecutionFailure(
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
