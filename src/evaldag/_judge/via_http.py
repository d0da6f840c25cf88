"""The http transport (``TRANSPORT``): chat-completions JSON posted to an OpenAI-compatible
endpoint.

Each ``api_base`` gets one aiohttp session, a keep-alive connection pool, on the engine loop
(:func:`evaldag._util.event_loop.engine_loop`), where the engine runs every judge call:
connections outlive stages, batches and runs. Bodies are written and read with orjson, and a
call costs a fraction of a millisecond of CPU against litellm's 7-10 ms. A call awaited on
another event loop gets a session of its own for that call. Statuses become the same
:class:`~evaldag._judge.errors.CallFault` kinds as litellm's errors, named as the OpenAI SDK
names them; retries, limits, the cache and records do not depend on the transport
(:mod:`evaldag._judge.transport`).
"""

from __future__ import annotations

import asyncio
import atexit
import functools
import os
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urlsplit, urlunsplit

import aiohttp
import orjson
from aiohttp.helpers import get_env_proxy_for_url
from yarl import URL

from evaldag._judge.endpoints import OPENAI_COMPATIBLE, OPENAI_URL
from evaldag._judge.errors import CallFault, JudgeError, reply_too_large
from evaldag._judge.records import token_usage, tool_calls
from evaldag._judge.redaction import PLAIN_HEADERS, credential_headers_dropped, origin
from evaldag._judge.transports import Route, Transport
from evaldag._util.credentials import url_without_credentials
from evaldag._util.event_loop import engine_loop, in_engine_thread

if TYPE_CHECKING:
    from evaldag._judge.endpoints import Endpoint
    from evaldag._judge.settings import Judge

#: How long an idle connection is kept: under the 5 s of uvicorn (vLLM) and httpx, so that a
#: server rarely closes a connection the client is about to reuse.
KEEPALIVE_SECONDS = 4.0
_NAMES = {
    400: "BadRequestError",
    401: "AuthenticationError",
    403: "PermissionDeniedError",
    404: "NotFoundError",
    408: "Timeout",
    409: "ConflictError",
    422: "UnprocessableEntityError",
    429: "RateLimitError",
}
#: Request keys that are not body fields: where the call goes and what rides beside the body.
_NOT_BODY = frozenset({"model", "api_base", "extra_headers", "extra_body"})
#: Request headers a redirect to another origin may carry, or that aiohttp drops on one.
_HOME_ONLY = PLAIN_HEADERS | {"authorization"}

_sessions: dict[str, aiohttp.ClientSession] = {}
_sessions_pid = os.getpid()


class HttpTransport(Transport):
    """Calls to OpenAI-compatible endpoints: models named ``openai/<name>`` (``api_base``
    defaults to OpenAI's) or ``hosted_vllm/<name>`` with ``api_base``."""

    def route(self, judge: Judge) -> Route:
        provider, _, model_name = (judge.model or "").partition("/")
        if not model_name or provider not in OPENAI_COMPATIBLE:
            raise JudgeError(
                "EVALDAG_INVALID_JUDGE",
                f"transport='http' calls OpenAI-compatible endpoints, named 'openai/<name>' or "
                f"'hosted_vllm/<name>' with api_base=, not {judge.model!r}; use "
                "transport='litellm' (or 'auto') for other providers",
                category="USER",
            )
        api_base = judge.api_base or (OPENAI_URL if provider == "openai" else None)
        if api_base is None:
            raise JudgeError(
                "EVALDAG_INVALID_JUDGE",
                f"transport='http' needs the api_base of the server for {judge.model!r}",
                category="USER",
            )
        api_key = judge.api_key.get_secret_value() if judge.api_key is not None else None
        if api_key is None:
            api_key = os.environ.get(OPENAI_COMPATIBLE[provider]) or None
        headers = judge.litellm_kwargs.get("extra_headers") or {}
        if URL(api_base).user is not None and (
            api_key or any(str(name).lower() == "authorization" for name in headers)
        ):
            raise _credentials_twice(api_base)
        return Route(model_name, provider, api_base, api_key)

    async def reply(self, endpoint: Endpoint, request: dict[str, Any], timeout: float) -> dict:
        return await http_reply(endpoint, request, timeout)


TRANSPORT = HttpTransport()


async def http_reply(endpoint: Endpoint, request: dict[str, Any], timeout: float) -> dict:
    """The reply to ``request`` (litellm's arguments) from ``endpoint``, or a CallFault."""
    headers = {"Content-Type": "application/json"}
    if endpoint.api_key:
        headers["Authorization"] = f"Bearer {endpoint.api_key}"
    elif endpoint.provider == "openai":
        raise CallFault("AuthenticationError", None, "no API key", "missing_key")
    headers.update(request.get("extra_headers") or {})
    body = {"model": endpoint.model_name}
    body.update((key, value) for key, value in request.items() if key not in _NOT_BODY)
    body.update(request.get("extra_body") or {})
    api_base = cast(str, endpoint.api_base)  # route() gives the http transport one
    url = completions_url(api_base)
    proxy, proxy_auth = _proxy(url)
    pooled = _pooled_session(api_base)
    session = pooled if pooled is not None else aiohttp.ClientSession()
    fault = None
    try:
        async with session.post(
            url,
            data=orjson.dumps(body),
            headers=headers,
            timeout=_timeout(timeout),
            proxy=proxy,
            proxy_auth=proxy_auth,
            middlewares=_credentials_kept_home(url, headers),
        ) as response:
            status = response.status
            raw = await _body(response, endpoint.max_reply_bytes)
            answered = response.headers
            retry_after = (answered.get("retry-after-ms"), answered.get("retry-after"))
    except TimeoutError:
        fault = CallFault("Timeout", None, f"no reply within {timeout:g} s", "transient")
    except (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError) as error:
        fault = CallFault("APIConnectionError", None, _described(error), "transient")
    except aiohttp.ClientError as error:  # an invalid URL, too many redirects...
        fault = CallFault("APIError", None, _described(error), "failed")
    finally:
        if pooled is None:
            await session.close()
    if fault is not None:  # raised outside the except blocks: aiohttp's errors need not pickle
        raise fault
    if status != 200:
        raise _status_fault(status, raw, retry_after)
    return _reply(raw)


async def _body(response: aiohttp.ClientResponse, limit: int) -> bytes:
    """``response``'s body (decompressed), or the ReplyTooLarge fault past ``limit`` bytes."""
    size = response.content_length
    if size is not None and size > limit:
        raise reply_too_large(limit)
    if size is not None and not response.headers.get("Content-Encoding"):
        return await response.read()  # its length is known and allowed
    body = bytearray()
    async for chunk in response.content.iter_chunked(65_536):
        body += chunk
        if len(body) > limit:
            raise reply_too_large(limit)
    return bytes(body)


def completions_url(api_base: str) -> str:
    """The chat-completions URL of ``api_base``: ``/chat/completions`` after its path, before its
    query (``https://host/v1?api-version=1`` gives ``https://host/v1/chat/completions?api-version=1``)."""
    parts = urlsplit(api_base)
    path = f"{parts.path.rstrip('/')}/chat/completions"
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


def _credentials_kept_home(
    url: str, headers: dict[str, str]
) -> tuple[aiohttp.ClientMiddlewareType, ...]:
    """The middlewares keeping ``headers``' credentials at ``url``'s origin: none when the only
    credential is the Authorization header (or a user in the URL), which aiohttp itself drops on
    a redirect to another origin; a call's worth of CPU spared on the common call."""
    if all(str(name).lower() in _HOME_ONLY for name in headers):
        return ()
    return (_same_origin_credentials(url),)


def _same_origin_credentials(url: str) -> aiohttp.ClientMiddlewareType:
    """A middleware keeping credential headers off every request of the call once a redirect
    has left ``url``'s origin: aiohttp drops only Authorization, not ``X-Api-Key`` and the like
    from ``extra_headers``."""
    start = origin(url)
    left = False

    async def middleware(
        request: aiohttp.ClientRequest, handler: aiohttp.ClientHandlerType
    ) -> aiohttp.ClientResponse:
        nonlocal left
        left = left or origin(str(request.url)) != start
        if left:
            credential_headers_dropped(request.headers)
        return await handler(request)

    return middleware


def _credentials_twice(api_base: str) -> JudgeError:
    """A user in ``api_base`` (sent as Basic auth) beside an Authorization header (the API
    key's, or one in ``extra_headers``), which aiohttp would refuse on each call with a
    ValueError ("Cannot combine AUTHORIZATION header with AUTH argument or credentials encoded
    in URL") that names neither the setting nor the fix."""
    return JudgeError(
        "EVALDAG_INVALID_JUDGE",
        f"api_base {url_without_credentials(api_base)!r} holds a user and password, which the "
        "http transport sends as an Authorization header, and the request has one already "
        "(from the judge's api_key, the provider's key variable or its extra_headers); give the "
        "credentials once: remove user:password@ from api_base, or the api_key and any "
        "Authorization in extra_headers",
        category="USER",
        details={"apiBase": url_without_credentials(api_base)},
    )


def _reply(raw: bytes) -> dict[str, Any]:
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        data = None
    if not isinstance(data, dict):  # a broken proxy, not a bad answer: worth another try
        detail = f"the response is not a JSON object: {_text(raw)}"
        raise CallFault("APIError", 200, detail, "transient")
    choices = data.get("choices")
    choice = choices[0] if isinstance(choices, list) and choices else None
    choice = choice if isinstance(choice, dict) else {}
    message = choice.get("message")
    message = message if isinstance(message, dict) else {}
    reply = {
        "content": message.get("content"),
        "finish_reason": choice.get("finish_reason"),
        "model": data.get("model"),
        "usage": token_usage(data.get("usage")),
    }
    calls = tool_calls(message)
    if calls:
        reply["tool_calls"] = calls
    return reply


def _status_fault(status: int, raw: bytes, retry_after: tuple[str | None, str | None]) -> CallFault:
    transient = status in (408, 429) or status >= 500
    name = _NAMES.get(status) or ("InternalServerError" if status >= 500 else "APIStatusError")
    try:
        detail = orjson.loads(raw)["error"]["message"]
    except (orjson.JSONDecodeError, KeyError, TypeError):
        detail = _text(raw)
    kind = "transient" if transient else "refused"
    return CallFault(name, status, str(detail) or name, kind, retry_after)


def _text(raw: bytes) -> str:
    # Cut long after the 500 characters an error shows: the cut there comes after redaction.
    return repr(raw[:65_536].decode("utf-8", "replace"))


def _described(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


@functools.lru_cache(maxsize=64)
def _timeout(seconds: float) -> aiohttp.ClientTimeout:
    return aiohttp.ClientTimeout(total=seconds)


@functools.lru_cache(maxsize=64)
def _proxy(url: str) -> tuple[URL | None, aiohttp.BasicAuth | None]:
    """The proxy the environment (``HTTPS_PROXY``, ``NO_PROXY``...) sets for ``url``, read once:
    aiohttp's ``trust_env`` reads it, and ``~/.netrc``, in a worker thread on every request."""
    try:
        return get_env_proxy_for_url(URL(url))
    except LookupError:
        return None, None


def _pooled_session(api_base: str) -> aiohttp.ClientSession | None:
    """The engine loop's session for ``api_base``; None on any other loop."""
    global _sessions_pid
    if not in_engine_thread():
        return None
    if _sessions_pid != os.getpid():  # a forked child: the parent's sessions are not ours
        _sessions.clear()
        _sessions_pid = os.getpid()
    session = _sessions.get(api_base)
    if session is None or session.closed:
        if not _sessions:
            atexit.register(_closed_sessions)
        connector = aiohttp.TCPConnector(limit=0, keepalive_timeout=KEEPALIVE_SECONDS)
        session = _sessions[api_base] = aiohttp.ClientSession(connector=connector)
    return session


def _closed_sessions() -> None:
    """Close the pooled sessions at exit (before the engine loop stops)."""
    if _sessions_pid != os.getpid() or not _sessions:
        return
    sessions = list(_sessions.values())
    _sessions.clear()

    async def closed() -> None:
        await asyncio.gather(*(session.close() for session in sessions), return_exceptions=True)

    try:
        asyncio.run_coroutine_threadsafe(closed(), engine_loop()).result(5)
    except Exception:  # at exit, a session that cannot close is not worth a traceback
        pass
