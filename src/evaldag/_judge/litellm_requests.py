"""The HTTP requests litellm makes for a judge call, held to the call's rules.

litellm builds its HTTP clients itself, each on a transport from
``AsyncHTTPHandler.create_async_transport`` (the OpenAI SDK's client and litellm's own handler
alike). :func:`guarded_transports` wraps the requests of those transports: a request made
within :func:`call_rules` (one judge call, in its task's context) gets the call's rules, any
other request (the app's own litellm calls) goes as it would. The rules: the ``api_base``'s
query goes with the request to it (litellm would append its path after the query).
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlsplit, urlunsplit

#: The rules of the judge call this context makes, if any.
_rules: contextvars.ContextVar[CallRules | None] = contextvars.ContextVar(
    "evaldag_litellm_call", default=None
)


@dataclass(frozen=True)
class CallRules:
    """What a judge call's requests must keep to."""

    #: The ``api_base`` without its query: requests under it get the query.
    base: str | None
    #: The ``api_base``'s query, as (name, value) pairs.
    query: tuple[tuple[str, str], ...] = ()

    def prepared(self, request: Any) -> None:
        """``request`` (an ``httpx.Request``) made to the rules: the query of ``api_base`` added
        to a request under it."""
        if self.query and self.base and str(request.url).startswith(self.base):
            request.url = request.url.copy_merge_params(list(self.query))


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
        if rules is not None:
            rules.prepared(request)
        return await handle(request)

    transport.handle_async_request = handle_async_request
