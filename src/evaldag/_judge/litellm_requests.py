"""The HTTP requests litellm makes for a judge call, held to the call's rules.

litellm builds its HTTP clients itself, each on a transport from
``AsyncHTTPHandler.create_async_transport`` (the OpenAI SDK's client and litellm's own handler
alike). :func:`guarded_transports` wraps the requests of those transports: a request made
within :func:`call_rules` (one judge call, in its task's context) gets the call's rules, any
other request (the app's own litellm calls) goes as it would. The rules: the ``api_base``'s
query goes with the request to it (litellm would append its path after the query), and once a
redirect leaves the call's origin no request carries a credential header; a reply's body is read
up to the judge's ``max_reply_bytes`` (as it arrives: compressed, if the server compressed it).
httpx follows the redirects (litellm's aiohttp transport does not), so each hop is a request
seen here.
"""

from __future__ import annotations

import contextvars
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlsplit, urlunsplit

import httpx

from evaldag._judge.redaction import credential_headers_dropped, origin
from evaldag._judge.settings import MAX_REPLY_BYTES

#: The rules of the judge call this context makes, if any.
_rules: contextvars.ContextVar[CallRules | None] = contextvars.ContextVar(
    "evaldag_litellm_call", default=None
)


@dataclass
class CallRules:
    """What a judge call's requests must keep to."""

    #: The ``api_base`` without its query: requests under it get the query.
    base: str | None
    #: The ``api_base``'s query, as (name, value) pairs.
    query: tuple[tuple[str, str], ...] = ()
    #: The origin of the call: its ``api_base``'s, or its first request's.
    start: tuple[str, str, int | None] | None = None
    #: Whether a request of the call went to another origin (a redirect).
    left: bool = False
    #: The largest reply body the call reads.
    max_reply_bytes: int = MAX_REPLY_BYTES
    #: Whether a reply of the call was cut at ``max_reply_bytes``.
    oversized: bool = False

    def __post_init__(self) -> None:
        if self.base and self.start is None:
            self.start = origin(self.base)

    def prepared(self, request: Any) -> Any:
        """``request`` (an ``httpx.Request``) made to the rules: the query of ``api_base`` added
        to a request under it; once the call has left its origin, a copy without credential
        headers (httpx drops only Authorization on a redirect, not ``X-Api-Key`` and the like).
        A copy, since the OpenAI SDK reads its own headers back from the response's request."""
        if self.query and self.base and str(request.url).startswith(self.base):
            request.url = request.url.copy_merge_params(list(self.query))
        target = origin(str(request.url))
        self.start = self.start or target
        self.left = self.left or target != self.start
        if not self.left:
            return request
        headers = request.headers.copy()
        credential_headers_dropped(headers)
        return type(request)(
            request.method,
            request.url,
            headers=headers,
            stream=request.stream,
            extensions=request.extensions,
        )

    def capped(self, response: Any) -> Any:
        """``response`` (an ``httpx.Response``) whose body stops at ``max_reply_bytes``."""
        response.stream = _CappedBody(response, self)
        return response


class ReplyTooLargeError(Exception):
    """A reply body past the call's ``max_reply_bytes``: what the call's client sees (the
    OpenAI SDK and litellm rename it; the call's rules remember it)."""


class _CappedBody(httpx.AsyncByteStream):
    """A response's body as it arrives, up to the call's ``max_reply_bytes``."""

    def __init__(self, response: Any, rules: CallRules) -> None:
        self._stream = response.stream
        self._length = response.headers.get("content-length")
        self._rules = rules

    async def __aiter__(self) -> AsyncIterator[bytes]:
        limit, size = self._rules.max_reply_bytes, 0
        if self._length is not None and self._length.isdigit() and int(self._length) > limit:
            self._too_large()
        async for chunk in self._stream:
            size += len(chunk)
            if size > limit:
                self._too_large()
            yield chunk

    def _too_large(self) -> None:
        self._rules.oversized = True
        raise ReplyTooLargeError(f"the reply is larger than {self._rules.max_reply_bytes} bytes")

    async def aclose(self) -> None:
        await self._stream.aclose()


def base_without_query(api_base: str | None) -> tuple[str | None, tuple[tuple[str, str], ...]]:
    """``api_base`` without its query (and fragment), and the query's pairs."""
    if not api_base:
        return api_base, ()
    parts = urlsplit(api_base)
    base = urlunsplit(parts._replace(query="", fragment=""))
    return base, tuple(parse_qsl(parts.query, keep_blank_values=True))


@contextmanager
def call_rules(rules: CallRules) -> Iterator[None]:
    """Hold the requests litellm makes in this context to ``rules``."""
    token = _rules.set(rules)
    try:
        yield
    finally:
        _rules.reset(token)


def guarded_transports(handler: Any) -> None:
    """Make the transports litellm's ``AsyncHTTPHandler`` creates keep to the call's rules."""
    create = handler.create_async_transport
    if getattr(create, "_evaldag_guarded", False):
        return

    def guarded_transport(*args: Any, **kwargs: Any) -> Any:
        transport = create(*args, **kwargs)
        if transport is not None:
            _guarded(transport)
        return transport

    guarded_transport._evaldag_guarded = True  # type: ignore[attr-defined]
    handler.create_async_transport = staticmethod(guarded_transport)
    handler._create_async_transport = staticmethod(guarded_transport)


def _guarded(transport: Any) -> None:
    """``transport``'s requests, on this instance (its class stays litellm's, which litellm
    checks), made to the rules of the call they belong to."""
    handle = transport.handle_async_request

    async def handle_async_request(request: Any) -> Any:
        rules = _rules.get()
        if rules is None:
            return await handle(request)
        return rules.capped(await handle(rules.prepared(request)))

    transport.handle_async_request = handle_async_request
