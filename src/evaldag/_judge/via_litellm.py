"""The litellm transport (``TRANSPORT``): one model call through ``litellm.acompletion``, for
every provider.

A call costs 7-10 ms of CPU on the 2-core build machine, almost all of it inside
``litellm.acompletion``, so this transport tops out at roughly 100-130 calls/s per process;
OpenAI-compatible endpoints take the http transport instead (see
:mod:`evaldag._judge.endpoints`). ``benchmarks/judge_throughput.py`` measures both; why no
litellm setting is changed to cut the cost is in :func:`configured_litellm`.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
from typing import TYPE_CHECKING, Any

from evaldag._judge.errors import CallFault, JudgeError, reply_too_large
from evaldag._judge.litellm_requests import (
    CallRules,
    base_without_query,
    call_rules,
    guarded_transports,
)
from evaldag._judge.records import token_usage, tool_calls
from evaldag._judge.transports import Route, Transport
from evaldag._util.credentials import redacting
from evaldag.errors import error_message

if TYPE_CHECKING:
    from evaldag._judge.endpoints import Endpoint
    from evaldag._judge.settings import Judge


@functools.cache
def configured_litellm() -> Any:
    """litellm, imported and configured on first use; nothing is set at import time."""
    # The price table bundled with litellm: no download (and no retries when offline) at import.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm
    from litellm.llms.custom_httpx.http_handler import AsyncHTTPHandler

    guarded_transports(AsyncHTTPHandler)
    # litellm prints a "Give Feedback / Get Help" banner before raising; evaldag's errors say
    # what went wrong instead.
    litellm.suppress_debug_info = True
    # Its DEBUG logs print request headers: credentials are masked in them.
    for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy"):
        redacting(logging.getLogger(name))
    # No setting is changed for speed: each was measured against the judge test server by the
    # exact count of Python calls per acompletion (6,360 with litellm 1.110's defaults, an
    # unpriced model, our parameters) and none cuts the cost. turn_off_message_logging adds 19 %
    # (it redacts every call), disable_aiohttp_transport (plain httpx) 14 % and more CPU, a
    # caller's OpenAI client 9 %; a shared aiohttp session, no-log (it only skips callbacks, and
    # none is registered), disable_token_counter, drop_params, custom_llm_provider and our own
    # parameters (response_format, timeout, temperature, max_retries) change it by under 2 %;
    # set_verbose is off and the callback lists are empty by default. litellm prices every reply
    # and builds a logging payload with no switch to skip either (~25 % of a call, ~40 % for a
    # model its table lacks); we price from its table ourselves (``endpoints.rates``, cached),
    # and passing our rates as input/output_cost_per_token does not make its pricing cheaper.
    # Its native chat-completions route is Python-only in litellm 1.110 whatever LITELLM_RUST
    # says.
    return litellm


class LitellmTransport(Transport):
    """Calls through litellm, to every provider it knows; it names the model's provider and
    reads its prices."""

    def route(self, judge: Judge) -> Route:
        model_name, provider = _litellm_provider(judge.model, judge.api_base)
        api_key = judge.api_key.get_secret_value() if judge.api_key is not None else None
        return Route(model_name, provider, judge.api_base, api_key)

    def price_entry(self, model_name: str, provider: str | None) -> dict[str, Any] | None:
        try:
            return configured_litellm().get_model_info(
                model=model_name, custom_llm_provider=provider
            )
        except Exception:
            return None

    async def reply(self, endpoint: Endpoint, request: dict[str, Any], timeout: float) -> dict:
        return await litellm_reply(endpoint, request, timeout)


TRANSPORT = LitellmTransport()


def _litellm_provider(model: str | None, api_base: str | None) -> tuple[str, str | None]:
    # Raised outside the except block: tblib (installed by dask) pickles the context chain, and
    # litellm's exceptions do not unpickle.
    try:
        if model is not None:
            return _provider(model, api_base)
    except Exception:
        pass
    raise JudgeError(
        "EVALDAG_INVALID_JUDGE",
        f"litellm does not know the provider of model {model!r}: prefix it with one, "
        "e.g. 'openai/gpt-4o-mini', 'anthropic/claude-3-5-haiku-latest', 'ollama/qwen2.5' "
        "or 'openai/<name>' with api_base= for an OpenAI-compatible server",
        category="USER",
    )


@functools.lru_cache(maxsize=256)
def _provider(model: str, api_base: str | None) -> tuple[str, str | None]:
    """litellm's model name and provider for ``model`` (its key is not kept)."""
    model_name, provider, _, _ = configured_litellm().get_llm_provider(model, api_base=api_base)
    return model_name, provider


async def litellm_reply(endpoint: Endpoint, request: dict[str, Any], timeout: float) -> dict:
    """The reply to ``request`` (litellm's arguments) through litellm, or a CallFault."""
    litellm = configured_litellm()
    base, query = base_without_query(endpoint.api_base)
    if query:  # litellm would put its path after the query; the rules add it to the request
        request = {**request, "api_base": base}
    rules = CallRules(base, query, max_reply_bytes=endpoint.max_reply_bytes)
    try:
        # litellm's timeout bounds each read: a server trickling bytes would hold the call.
        async with asyncio.timeout(timeout):
            with call_rules(rules):
                response = await litellm.acompletion(
                    **request, api_key=endpoint.api_key, timeout=timeout, max_retries=0
                )
    except TimeoutError:
        fault = CallFault("Timeout", None, f"no reply within {timeout:g} s", "transient")
    except Exception as error:
        # The SDK reports the cut body as a lost connection, which would be retried.
        fault = (
            reply_too_large(rules.max_reply_bytes) if rules.oversized else _fault(error, litellm)
        )
    else:
        choices = getattr(response, "choices", None) or []
        message = getattr(choices[0], "message", None) if choices else None
        reply = {
            "content": getattr(message, "content", None),
            "finish_reason": getattr(choices[0], "finish_reason", None) if choices else None,
            "model": getattr(response, "model", None),
            "usage": token_usage(getattr(response, "usage", None)),
        }
        calls = tool_calls(message)
        if calls:
            reply["tool_calls"] = calls
        return reply
    # Raised outside the except block: litellm's exceptions do not unpickle (see JudgeCallError).
    raise fault


def _fault(error: Exception, litellm: Any) -> CallFault:
    status = getattr(error, "status_code", None)
    status = status if isinstance(status, int) else None
    text = str(error)
    if "Missing credentials" in text or "api_key client option must be set" in text:
        kind = "missing_key"  # the OpenAI client refused to call; litellm reports it as a 500
    elif isinstance(error, litellm.Timeout | litellm.APIConnectionError) or (
        status is not None and (status in (408, 429) or status >= 500)
    ):
        kind = "transient"
    else:
        kind = "failed" if status is None else "refused"
    headers = getattr(error, "headers", None) or getattr(
        getattr(error, "response", None), "headers", None
    )
    if not headers:
        headers = getattr(error, "litellm_response_headers", None) or {}
    retry_after = (headers.get("retry-after-ms"), headers.get("retry-after"))
    return CallFault(type(error).__name__, status, error_message(error), kind, retry_after)
