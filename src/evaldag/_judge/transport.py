"""Where judge calls happen: a prompt step's prompt goes to an LLM judge and its reply comes back.

One execution of a prompt step makes up to two **attempts**: the first asks for structured
output (``response_format`` where the model takes it), and if the reply cannot be parsed or does
not validate, a fallback attempt puts the schema in the system prompt and extracts JSON from the
text (see :mod:`evaldag._judge.contracts`). ``generate_reason`` makes one plain-text attempt. Each
attempt gets one reply, from the judge's cache or from a model **call**, tried again after
transport faults (429, 5xx, timeouts, lost connections) with exponential backoff and jitter,
honouring ``Retry-After`` (a 429 that carries one is retried up to 3 × ``max_retries`` times:
the server is pacing calls); 400/401/403/404 are not retried. Calls in flight are bounded per
(model, api_base, max_concurrency) by a :class:`~evaldag._judge.limiter.SharedLimit`, which
halves on 429 and grows back as calls succeed (AIMD), never above ``max_concurrency``.

A call goes through the transport the judge names (:mod:`evaldag._judge.transports`, chosen in
:mod:`evaldag._judge.endpoints`): ``http`` (:mod:`evaldag._judge.via_http`), ``litellm``
(:mod:`evaldag._judge.via_litellm`) or a registered one. Everything here, from retries to
records, is the same for all of them.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import time
from collections.abc import Callable, Iterable
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any

import orjson

from evaldag._judge.cache import judge_cache, opened_cache, request_key
from evaldag._judge.contracts import (
    OBJECT_UNDEFINED,
    TRUNCATED,
    Contract,
    StructuredOutputError,
    reply_json,
    response_format,
    schema_instructions,
    step_contract,
    stopped_early,
)
from evaldag._judge.endpoints import Endpoint, judge_endpoint, rates
from evaldag._judge.errors import CallFault, ExecutionFailure, JudgeCallError, JudgeError
from evaldag._judge.limiter import shared_limit
from evaldag._judge.records import JudgeExecution, Tally, call_cost
from evaldag._judge.redaction import clipped, reply_redacted
from evaldag._judge.settings import Judge, cache_location, resolved_judge
from evaldag._judge.transports import named_transport
from evaldag._util.credentials import url_without_credentials
from evaldag.errors import EvalDagError, error_message

_logger = logging.getLogger(__name__)

#: Backoff before retry n (0-based) without Retry-After: base * 2**n, capped, with full jitter
#: over its upper half.
BACKOFF_BASE_SECONDS = 0.5
BACKOFF_CAP_SECONDS = 20.0
#: The longest Retry-After honoured; a longer one fails the call instead of stalling the run.
RETRY_AFTER_CAP_SECONDS = 120.0
#: 429s with Retry-After are retried up to this many times max_retries (12 by default).
PACED_RETRIES_PER_RETRY = 3
#: A call's bound past the judge's timeout: a transport's own timeout fires first; this one
#: holds a transport that has none.
TIMEOUT_SLACK_SECONDS = 1.0


async def judged_value(
    prompt: str,
    stage: str,
    *,
    step_judge: Any,
    scorer_judge: Any,
    output_schema: Any = None,
    description: str = "",
    run_cache: bool | str | Path | None = None,
    max_score: float,
    score_check: Callable[[float], float],
) -> tuple[Any, JudgeExecution]:
    """The judge's answer to ``prompt`` for a prompt step of ``stage`` and the record of how it
    was obtained.

    :param step_judge: the step's judge settings, which override ``scorer_judge`` field by field.
    :param output_schema: what a preprocess or analyze reply must be (see ``step_contract``).
    :param description: the step's description, naming it in errors.
    :param run_cache: the run's reply cache setting (``run_evals(cache=...)``), used when the
        judge sets none.
    :param max_score: the scorer's scale, and ``score_check`` its check of a score (raising an
        ``EvalDagError`` naming the scorer): a generate_score reply off the scale is refused
        (asked again, never cached).

    preprocess/analyze give the object validated against ``output_schema`` as plain JSON data,
    as Mastra stores it: for a pydantic model its dict by alias, with unknown keys dropped and the
    fields the judge left out left out (defaults are not filled in);
    generate_score gives the number of the judge's ``{"score": number}``; generate_reason gives
    the judge's text.
    """
    try:
        judge = resolved_judge(step_judge, scorer_judge, stage)
    except EvalDagError as error:
        raise JudgeError(error.id, error.message, category="USER", details=error.details) from None
    if not isinstance(prompt, str):
        raise JudgeError(
            "EVALDAG_INVALID_PROMPT",
            f'create_prompt of step "{stage}" returned {type(prompt).__name__}; it must return '
            "the prompt text (a str)",
            category="USER",
        )
    contract = step_contract(
        stage, output_schema, description, max_score=max_score, score_check=score_check
    )
    try:
        endpoint = await judge_endpoint(judge)
        cache = judge_cache(cache_location(run_cache if judge.cache is None else judge.cache))
    except JudgeError:
        raise
    except EvalDagError as error:  # the local judge is not installed
        raise _before_calling(error) from error
    # The clock starts with the calls: not with the one-off litellm import or local judge start.
    started = time.perf_counter()
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
    raise _call_failed(
        failure,
        f'step "{stage}"',
        tally.record(prompt, started, failure=failure),
        endpoint,
        step=stage,
    )


def require_caches(
    judges: Iterable[Judge], run_cache: bool | str | os.PathLike[str] | None
) -> None:
    """Open the reply cache of every one of ``judges`` (``run_cache`` for those that set none):
    a file that is not a cache, or a database URL that does not open, is an error here, before
    any judge is called."""
    for judge in judges:
        location = cache_location(run_cache if judge.cache is None else judge.cache)
        if location is not None:
            opened_cache(location)


async def _attempted(
    judge: Judge, endpoint: Endpoint, contract: Contract, prompt: str, tally: Tally
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
            if not text or stopped_early(reply.get("finish_reason")):
                # a reason cut short or refused is kept for this run, not replayed by the next
                tally.pending = [(key, kept) for key, kept in tally.pending if kept is not reply]
            return text or ""
        try:
            return contract.stored(reply_json(text, reply.get("finish_reason")))
        except StructuredOutputError as error:
            fault = error
    assert fault is not None
    what = _FAULTS.get(fault.code, "does not match the schema")
    how = " then ".join(_STYLE_NAMES[style] for style in styles)
    raise ExecutionFailure(
        fault.code,
        f"the judge's reply {what} after {len(styles)} attempts ({how}): {fault}",
        name=StructuredOutputError.__name__,
    )


_FAULTS = {OBJECT_UNDEFINED: "is not JSON", TRUNCATED: "was cut off"}
_STYLE_NAMES = {
    "json_schema": "response_format json_schema",
    "json_object": "response_format json_object",
    "prompt": "the schema in the prompt",
}


# --- calls ---------------------------------------------------------------------------------------


async def _reply(
    judge: Judge,
    endpoint: Endpoint,
    messages: list[dict[str, str]],
    response_format: dict[str, Any] | None,
    tally: Tally,
) -> dict[str, Any]:
    """The model's reply to ``messages``: from the cache, else from a model call."""
    asked = {} if response_format is None else {"response_format": response_format}
    request = _request(judge, endpoint, messages, asked)
    key = None
    if tally.cache is not None:
        key = request_key(
            {
                **request,
                "model": judge.model,
                "api_base": None if endpoint.free else judge.api_base,
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


def _request(
    judge: Judge, endpoint: Endpoint, messages: list[dict[str, Any]], asked: dict[str, Any]
) -> dict[str, Any]:
    """A call's arguments (litellm's names): the messages, where they go, what the caller
    ``asked`` for (a response format, tools) and the judge's settings, which win."""
    request: dict[str, Any] = {"model": endpoint.model, "messages": messages}
    if endpoint.api_base is not None:
        request["api_base"] = endpoint.api_base
    if judge.temperature is not None:
        request["temperature"] = judge.temperature
    max_tokens = endpoint.max_tokens or judge.max_tokens
    if max_tokens is not None:
        request["max_tokens"] = max_tokens
    request.update(asked)
    request.update(judge.litellm_kwargs)
    return request


async def chat_reply(
    judge: Judge, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
) -> tuple[dict[str, Any], JudgeExecution]:
    """One model call of an agent's step and its record: the reply's ``content`` and
    ``tool_calls`` (``id``, ``name``, ``arguments`` as JSON text), through the judge's transport
    with its retries, shared limit, prices and redacted errors, as a judge call. No cache: the
    agent's tools may answer differently from run to run. A failed call raises JudgeError.

    :param messages: chat-completions messages: assistant ``tool_calls`` and ``role: "tool"``
        results pass through as they are, like ``tools`` and a ``tool_choice`` set on the judge.
    """
    try:
        endpoint = await judge_endpoint(judge)
    except JudgeError:
        raise
    except EvalDagError as error:  # the local judge is not installed
        raise _before_calling(error) from error
    request = _request(judge, endpoint, messages, {"tools": tools} if tools else {})
    if not tools:
        request.pop("tool_choice", None)  # providers refuse a tool choice without tools
    prompt = orjson.dumps(messages).decode()
    started = time.perf_counter()
    tally = Tally(endpoint.model_name, endpoint.provider, None, attempts=1)
    try:
        reply = await _called(judge, endpoint, request, subject="model")
    except ExecutionFailure as failure:
        raise _call_failed(
            failure,
            "the agent's model call",
            tally.record(prompt, started, failure=failure),
            endpoint,
        ) from None
    tally.free = endpoint.free
    tally.replied(reply, cached=False)
    reply.setdefault("tool_calls", [])
    output = {"content": reply.get("content"), "toolCalls": reply["tool_calls"]}
    return reply, tally.record(prompt, started, value=output)


def _before_calling(error: EvalDagError) -> JudgeError:
    """An error met before any call (the local judge not installed, the cache not opening) as
    the JudgeError a step or an agent raises."""
    return JudgeError(
        error.id, error.message, category=error.category, details=error.details, cause=error
    )


def _call_failed(
    failure: ExecutionFailure,
    where: str,
    record: JudgeExecution,
    endpoint: Endpoint,
    **details: Any,
) -> JudgeError:
    """A failed model call as the JudgeError that carries its record: ``where`` starts the
    message; the details name the model and its URL (credentials left out)."""
    return JudgeError(
        failure.code,
        f"{where}: {failure.message}",
        execution=record,
        category=failure.category,
        details={
            **details,
            "model": endpoint.model,
            "apiBase": url_without_credentials(endpoint.api_base),
        },
        cause=failure.cause,
    )


async def _called(
    judge: Judge, endpoint: Endpoint, request: dict[str, Any], subject: str = "judge model"
) -> dict[str, Any]:
    """One model call, retried after transport faults; its reply with the call's cost.

    :param subject: what the model is called in a failure's message (an agent's is a "model").
    """
    call = named_transport(endpoint.transport).reply
    hold = judge.timeout + TIMEOUT_SLACK_SECONDS
    limit = shared_limit((judge.model, judge.api_base), endpoint.max_concurrency, hold)
    retry = paced_retries = 0
    while True:
        async with limit as started:
            try:
                async with asyncio.timeout(judge.timeout + TIMEOUT_SLACK_SECONDS):
                    reply = await call(endpoint, request, judge.timeout)
                if not isinstance(reply, dict):
                    raise TypeError(f"the transport replied {type(reply).__name__}, not a dict")
            except CallFault as fault:
                failure = fault
                if fault.status == 429:
                    limit.throttled(started, _retry_after(fault))
            except TimeoutError:
                detail = f"no reply within {judge.timeout:g} s"
                failure = CallFault("Timeout", None, detail, "transient")
            except Exception as error:  # a registered transport's own error: not retried
                failure = CallFault(type(error).__name__, None, error_message(error), "failed")
            else:
                limit.succeeded()
                reply = reply_redacted(reply, endpoint.secrets)
                reply.setdefault("usage", {})
                if not endpoint.free:
                    reply["cost"] = call_cost(reply["usage"], rates(endpoint))
                return reply
        # A 429 that says when to come back is the server pacing calls, not a fault: it has a
        # budget of its own, so that a rate-limited run loses no item.
        paced = failure.status == 429 and _retry_after(failure) is not None
        budget = judge.max_retries * (PACED_RETRIES_PER_RETRY if paced else 1)
        tries = paced_retries if paced else retry - paced_retries
        delay = _retry_delay(failure, retry - paced_retries) if tries < budget else None
        if delay is None:
            raise _call_failure(failure, endpoint, judge, retry + 1, subject)
        _logger.info(
            "judge call to %s at %s failed (%s); retry %d of %d in %.2f s",
            endpoint.model,
            endpoint.where,
            failure.name,
            tries + 1,
            budget,
            delay,
            extra={"judge_retry": retry + 1, "judge_retry_delay": delay},
        )
        await asyncio.sleep(delay)
        retry += 1
        paced_retries += paced


def _retry_delay(fault: CallFault, retry: int) -> float | None:
    """Seconds to wait before retry ``retry`` (0-based) after ``fault``; None: do not retry."""
    if fault.kind != "transient":
        return None
    retry_after = _retry_after(fault)
    if retry_after is not None:
        if retry_after > RETRY_AFTER_CAP_SECONDS:
            return None
        return retry_after * random.uniform(1.0, 1.1)
    ceiling = min(BACKOFF_CAP_SECONDS, BACKOFF_BASE_SECONDS * 2**retry)
    return random.uniform(ceiling / 2, ceiling)


def _retry_after(fault: CallFault) -> float | None:
    """The server's ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date), if any."""
    millis, value = fault.retry_after
    try:
        if millis is not None:
            return max(0.0, float(millis) / 1000)
    except ValueError:
        pass
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
    fault: CallFault, endpoint: Endpoint, judge: Judge, tries: int, subject: str
) -> ExecutionFailure:
    status, name = fault.status, fault.name
    detail = clipped(fault.detail, endpoint.secrets)
    cause = JudgeCallError(name, status, detail)
    label = f"{status} {name}" if status is not None else name
    if fault.kind == "missing_key":
        return ExecutionFailure(
            "EVALDAG_JUDGE_MISSING_KEY",
            f"{subject} {endpoint.model!r} at {endpoint.where} was not called: the client has "
            "no API key. Give the judge api_key=... (for a local server that checks none, any "
            "text, e.g. Judge(..., api_key='none')) or set the provider's key variable "
            "(OPENAI_API_KEY for openai/ models)",
            name=name,
            category="USER",
            cause=cause,
        )
    if fault.kind == "refused":
        hint = _REFUSAL_HINTS.get(status or 0, "the request is not retried")
        return ExecutionFailure(
            "EVALDAG_JUDGE_REFUSED",
            f"{subject} {endpoint.model!r} at {endpoint.where} refused the request ({label}): "
            f"{detail}. {hint}",
            name=name,
            cause=cause,
        )
    if fault.kind == "failed":
        return ExecutionFailure(
            "EVALDAG_JUDGE_CALL_FAILED",
            f"calling {subject} {endpoint.model!r} at {endpoint.where} through "
            f"{endpoint.transport} failed ({label}): {detail}",
            name=name,
            cause=cause,
        )
    return ExecutionFailure(
        "EVALDAG_JUDGE_UNAVAILABLE",
        f"{subject} {endpoint.model!r} at {endpoint.where} failed {tries} time(s) ({label}; "
        f"timeout {judge.timeout:g} s, max_retries {judge.max_retries}): {detail}",
        name=name,
        cause=cause,
    )
