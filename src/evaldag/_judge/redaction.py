"""Credentials never leave in what evaldag writes: errors, records, results, reports or logs.

Every URL evaldag shows or stores (a judge's ``api_base``, a score store's URL, data or a
cluster's address, an endpoint named in a record) goes through
``_util.credentials.url_without_credentials``: its user-info and every query value are masked,
whatever their names (Azure's ``?code=`` and ``?sig=`` are keys too). Every
header goes through :func:`headers_without_credentials`: only the values of a short list of
headers that never carry one are kept. Text (a provider's error body, a log record) is redacted
by value: :func:`judge_secrets` gathers a judge's API key, the user, password and query values
of its ``api_base`` (as written and percent-decoded or re-encoded, since a server may echo either
form), its header values, every text under a credential's name among its other settings (also
within a dict: ``extra_body={'api_key': ...}``) and the provider keys a transport may take from
the environment (``OPENAI_API_KEY`` …). Providers echo a refused key in their error bodies, so
text is redacted before it is cut, and a secret's first characters left at the cut are masked
too; a proxy may echo it in a reply it sends as a success, so replies are redacted as they
arrive.

A request a redirect sends to another origin keeps only the plain headers
(:func:`credential_headers_dropped`), on both transports; the clients drop only
``Authorization`` (and cookies).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, MutableMapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from evaldag._util.credentials import (
    MASK,
    SHORTEST,
    longest_first,
    redacted,
    remembered,
    url_secret_forms,
    url_without_credentials,
)

if TYPE_CHECKING:
    from evaldag._judge.settings import Judge

#: Headers that never carry a credential: the only ones whose values are shown, and the only
#: ones a request keeps on a redirect to another origin.
PLAIN_HEADERS = frozenset(
    {
        "accept",
        "accept-encoding",
        "accept-language",
        "cache-control",
        "connection",
        "content-length",
        "content-type",
        "host",
        "user-agent",
    }
)
# Settings that are credentials or carry them (headers), by name.
_SECRET_PARTS = ("key", "secret", "password", "credential", "auth", "token", "header")
_TOKEN_COUNTS = frozenset({"max_tokens", "max_completion_tokens", "max_output_tokens"})
_DEFAULT_PORTS = {"http": 80, "https": 443}


def is_secret_setting(name: str) -> bool:
    """Whether a judge setting named ``name`` may hold a credential (``api_key``,
    ``aws_secret_access_key``, ``extra_headers``, ...); ``max_tokens`` and the like do not."""
    lowered = name.lower()
    return lowered not in _TOKEN_COUNTS and any(part in lowered for part in _SECRET_PARTS)


def endpoint_name(model: str | None, api_base: str | None) -> str:
    """How a record names where a judge's calls go: ``model at api_base`` (credentials masked),
    or the model alone."""
    return f"{model} at {url_without_credentials(api_base)}" if api_base else str(model)


def headers_without_credentials(headers: Mapping[str, Any]) -> dict[str, Any]:
    """``headers`` with every value masked but those of :data:`PLAIN_HEADERS`."""
    return {
        name: value if str(name).lower() in PLAIN_HEADERS else MASK
        for name, value in headers.items()
    }


def origin(url: str) -> tuple[str, str, int | None]:
    """``url``'s origin: scheme, host and port (the scheme's default port when none is given)."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    return scheme, (parts.hostname or "").lower(), parts.port or _DEFAULT_PORTS.get(scheme)


def credential_headers_dropped(headers: MutableMapping[str, Any]) -> None:
    """Remove from ``headers`` (a request's, case-insensitive) every header not in
    :data:`PLAIN_HEADERS`: what a request to another origin than the call's may carry."""
    for name in {str(name).lower() for name in headers} - PLAIN_HEADERS:
        del headers[name]


def _header_secrets(headers: Mapping[Any, Any]) -> set[str]:
    return {
        text
        for name, value in headers.items()
        if str(name).lower() not in PLAIN_HEADERS
        for text in _texts(value)
    }


def _setting_secrets(name: str, value: Any) -> set[str]:
    """The credentials a judge setting holds: every text under a credential's name
    (``azure_ad_token``, ``extra_body={'api_key': ...}``), header values but the plain ones."""
    if isinstance(value, Mapping) and name.lower().endswith("headers"):
        return _header_secrets(value)
    if is_secret_setting(name):
        return _texts(value)
    if isinstance(value, Mapping):
        return {s for key, item in value.items() for s in _setting_secrets(str(key), item)}
    return set()


def _texts(value: Any) -> set[str]:
    """The texts in ``value``, and their parts a server may echo alone: the token of
    "Bearer <token>", each value of a cookie ("a=<value>; b=<value>")."""
    if isinstance(value, Mapping):
        value = list(value.values())
    if isinstance(value, list | tuple | set):
        return {text for item in value for text in _texts(item)}
    if value is None:
        return set()
    text = value.get_secret_value() if hasattr(value, "get_secret_value") else str(value)
    words = text.split()
    # Only these parts: any word of a header that is no credential ("X-Title: Support
    # evaluation bot") would mask that word in every reply and error.
    found = {text, words[-1]} if len(words) == 2 else {text}
    return found | {pair.partition("=")[2].strip() for pair in text.split(";") if "=" in pair}


def judge_secrets(judge: Judge, api_key: str | None, api_base: str | None) -> tuple[str, ...]:
    """Every credential of ``judge``, longest first, remembered for the log filter."""
    found = {api_key or ""} | url_secret_forms(judge.api_base) | url_secret_forms(api_base)
    found |= _setting_secrets("settings", judge.litellm_kwargs)
    found |= {v for name, v in os.environ.items() if is_secret_setting(name)}
    return remembered(longest_first(found))


def reply_redacted(reply: dict[str, Any], secrets: Iterable[str]) -> dict[str, Any]:
    """A model's ``reply`` with every secret masked in its text and its tool calls' arguments:
    a proxy may echo a key in a reply it sends as a success."""
    if isinstance(reply.get("content"), str):
        reply["content"] = redacted(reply["content"], secrets)
    for call in reply.get("tool_calls") or ():
        if isinstance(call, dict) and isinstance(call.get("arguments"), str):
            call["arguments"] = redacted(call["arguments"], secrets)
    return reply


def clipped(text: str, secrets: tuple[str, ...], limit: int = 500) -> str:
    """``text`` redacted, then cut to ``limit`` characters; a secret's start left at the cut
    (8 characters or more) is masked."""
    text = redacted(text, secrets)
    if len(text) <= limit:
        return text
    cut = text[:limit]
    for secret in secrets:
        for size in range(min(len(secret), len(cut)), SHORTEST - 1, -1):
            if cut.endswith(secret[:size]):
                return cut[:-size] + MASK + "…"
    return cut + "…"
