"""Where a judge is called and how: its endpoint, transport, structured-output style and prices.

A judge's ``transport`` names one in the registry (:mod:`evaldag._judge.transports`): ``http``
posts chat-completions JSON to an OpenAI-compatible ``api_base`` itself
(:mod:`evaldag._judge.via_http`); ``litellm`` goes through ``litellm.acompletion`` and reaches
every provider litellm knows (:mod:`evaldag._judge.via_litellm`); a registered one goes its own
way. ``Judge(transport="auto")`` picks ``http`` for ``openai/<name>`` and ``hosted_vllm/<name>``
with an ``api_base`` (and so for the local judge, which reports such an endpoint) unless the
judge carries a setting only litellm understands, and ``litellm`` for everything else.

Prices come from litellm's price table, read once per model through the transport's
``price_entry``. The http transport reads the table from the file litellm ships instead of
importing litellm, whose import costs ~5 s of CPU.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from dataclasses import dataclass, field
from typing import Any

from evaldag._judge.errors import JudgeError
from evaldag._judge.redaction import judge_secrets
from evaldag._judge.settings import LOCAL_MODEL, MAX_REPLY_BYTES, Judge, call_limit
from evaldag._judge.transports import AUTO, named_transport
from evaldag._util.credentials import url_without_credentials

#: Providers whose endpoints speak OpenAI's chat-completions API, and the variable litellm reads
#: their key from when the judge gives none.
OPENAI_COMPATIBLE = {"openai": "OPENAI_API_KEY", "hosted_vllm": "HOSTED_VLLM_API_KEY"}
OPENAI_URL = "https://api.openai.com/v1"
#: Judge settings the http transport can send: OpenAI chat-completions parameters (in the JSON
#: body), ``extra_headers`` and ``extra_body``. A judge with any other setting stays on litellm
#: under ``transport="auto"``.
HTTP_SETTINGS = frozenset(
    {
        "extra_body",
        "extra_headers",
        "frequency_penalty",
        "logit_bias",
        "logprobs",
        "max_completion_tokens",
        "metadata",
        "n",
        "parallel_tool_calls",
        "presence_penalty",
        "reasoning_effort",
        "seed",
        "service_tier",
        "stop",
        "store",
        "tool_choice",
        "tools",
        "top_logprobs",
        "top_p",
        "user",
    }
)
#: Judges whose endpoints are kept (by the judge's identity; a scorer's judge is one object).
KNOWN_ENDPOINTS = 256
_known_endpoints: dict[int, tuple[Judge, Endpoint]] = {}
_known_lock = threading.Lock()


@dataclass(frozen=True)
class Endpoint:
    """A judge resolved to what is called, where, through which transport."""

    model: str
    api_base: str | None
    api_key: str | None = field(repr=False)
    model_name: str
    provider: str | None
    transport: str
    first_style: str
    max_concurrency: int
    free: bool = False
    max_tokens: int | None = None
    #: The largest reply body a call reads (the judge's ``max_reply_bytes``).
    max_reply_bytes: int = MAX_REPLY_BYTES
    #: The judge's own prices (USD per input and output token), over litellm's table.
    prices: tuple[float, float] | None = None
    #: The judge's credentials, masked in every error and log (``redaction.judge_secrets``).
    secrets: tuple[str, ...] = field(default=(), repr=False)

    @property
    def where(self) -> str:
        """Where calls go, credentials in the URL masked."""
        shown = url_without_credentials(self.api_base)
        return shown or f"the default {self.provider or 'provider'} URL"


async def judge_endpoint(judge: Judge) -> Endpoint:
    """Where and how ``judge`` is called; the local judge starts here on first use.

    A judge's endpoint is worked out at its first call in the process and kept with it (keys
    from the environment included); the local judge's is asked for on every call, since it
    restarts a server that stopped.
    """
    if judge.model == LOCAL_MODEL:
        return await _local_endpoint(judge)
    known = _known_endpoints.get(id(judge))
    if known is not None and known[0] is judge:
        return known[1]
    endpoint = _endpoint(judge)
    with _known_lock:
        if len(_known_endpoints) >= KNOWN_ENDPOINTS:
            del _known_endpoints[next(iter(_known_endpoints))]
        _known_endpoints[id(judge)] = (judge, endpoint)  # the judge kept: its id stays its own
    return endpoint


def require_endpoint(judge: Judge) -> Endpoint | None:
    """Route ``judge`` unless it is the local judge (which starts at its first call): a judge
    its transport cannot call (a model ``http`` does not serve, credentials given twice, an
    unknown provider) raises here, before any item runs, rather than on every item."""
    return None if judge.model == LOCAL_MODEL else _endpoint(judge)


def _endpoint(judge: Judge) -> Endpoint:
    if judge.model is None:  # the steps refuse a judge without a model before they call it
        raise JudgeError(
            "EVALDAG_INVALID_JUDGE", "the judge has no model: give one", category="USER"
        )
    transport = _transport(judge.model, judge.api_base, judge.transport, judge.litellm_kwargs)
    route = named_transport(transport).route(judge)
    style: str = judge.structured_output
    if style == "auto":
        style = _default_style(route.model_name, route.provider, transport)
    return Endpoint(
        judge.model,
        route.api_base,
        route.api_key,
        route.model_name,
        route.provider,
        transport,
        style,
        judge.max_concurrency,
        max_reply_bytes=judge.max_reply_bytes,
        prices=judge.prices,
        secrets=judge_secrets(judge, route.api_key, route.api_base),
    )


def _transport(model: str, api_base: str | None, setting: str, extras: dict[str, Any]) -> str:
    """The name of the transport a judge's ``transport`` setting stands for (``auto``: ``http``
    or ``litellm``); an unregistered name is an error."""
    if setting == AUTO:
        provider = model.split("/", 1)[0] if "/" in model else None
        compatible = provider in OPENAI_COMPATIBLE and api_base is not None
        return "http" if compatible and HTTP_SETTINGS.issuperset(extras) else "litellm"
    named_transport(setting)
    return setting


async def _local_endpoint(judge: Judge) -> Endpoint:
    # The local judge (llama.cpp) takes JSON requests as json_object plus a schema, answers one
    # request at a time (see call_limit) and costs nothing; a cut-off answer is not JSON, hence
    # max_tokens.
    from evaldag.local_judge import local_judge_endpoint

    local = await asyncio.to_thread(local_judge_endpoint)
    transport = _transport(local.model, local.api_base, judge.transport, judge.litellm_kwargs)
    style = "json_object" if judge.structured_output == "auto" else judge.structured_output
    return Endpoint(
        local.model,
        local.api_base,
        local.api_key,
        local.model.split("/", 1)[-1],
        "local",
        transport,
        style,
        call_limit(judge),
        free=True,
        max_tokens=judge.max_tokens or 512,
        max_reply_bytes=judge.max_reply_bytes,
        secrets=judge_secrets(judge, local.api_key, local.api_base),
    )


@functools.lru_cache(maxsize=256)
def _price_entry(model_name: str, provider: str | None, transport: str) -> dict[str, Any] | None:
    """The model's entry in litellm's price table, as ``transport`` reads it, or None."""
    return named_transport(transport).price_entry(model_name, provider)


def _default_style(model_name: str, provider: str | None, transport: str) -> str:
    """json_schema unless litellm's table says the model cannot take it."""
    info = _price_entry(model_name, provider, transport)
    if info is None:  # not in the table: OpenAI-compatible servers mostly take json_schema
        return "json_schema"
    return "json_schema" if info.get("supports_response_schema") else "prompt"


def rates(endpoint: Endpoint) -> tuple[float, float, float] | None:
    """USD per input, output and cache-read input token: the judge's own prices (cache reads
    at the input price), else litellm's table's, if it has them."""
    if endpoint.prices is not None:
        return (*endpoint.prices, endpoint.prices[0])
    info = _price_entry(endpoint.model_name, endpoint.provider, endpoint.transport)
    if info is None:
        return None
    input_rate = info.get("input_cost_per_token")
    output_rate = info.get("output_cost_per_token")
    if input_rate is None or output_rate is None:
        return None
    return input_rate, output_rate, info.get("cache_read_input_token_cost") or input_rate
