"""Credentials never leave in what evaldag writes: errors, records, results, reports or logs.

Every URL evaldag shows or stores (a judge's ``api_base``, a score store's URL, an endpoint
named in a record) goes through :func:`url_without_credentials`: its user-info and every query
value are masked, whatever their names (Azure's ``?code=`` and ``?sig=`` are keys too). Every
header goes through :func:`headers_without_credentials`: only the values of a short list of
headers that never carry one are kept. Text (a provider's error body, a log record) is redacted
by value: :func:`judge_secrets` gathers a judge's API key, the user, password and query values
of its ``api_base`` (as written and percent-decoded or re-encoded, since a server may echo either
form), its header values and the provider keys a transport may take from the environment
(``OPENAI_API_KEY`` …). Providers echo a refused key in their error bodies, so text is redacted
before it is cut, and a secret's first characters left at the cut are masked too.

A request a redirect sends to another origin keeps only the plain headers
(:func:`credential_headers_dropped`), on both transports; the clients drop only
``Authorization`` (and cookies).
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Iterable, Mapping, MutableMapping
from typing import TYPE_CHECKING, Any, overload
from urllib.parse import quote, quote_plus, unquote, unquote_plus, urlsplit, urlunsplit

if TYPE_CHECKING:
    from evaldag._judge.settings import Judge

MASK = "**********"
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
#: Shortest text treated as a secret: shorter values ("on", a port) would mask ordinary words.
_SHORTEST = 8
# Settings that are credentials or carry them (headers), by name.
_SECRET_PARTS = ("key", "secret", "password", "credential", "auth", "token", "header")
_TOKEN_COUNTS = frozenset({"max_tokens", "max_completion_tokens", "max_output_tokens"})
_DEFAULT_PORTS = {"http": 80, "https": 443}
_PERCENT_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")
_known: set[str] = set()
_known_lock = threading.Lock()


def is_secret_setting(name: str) -> bool:
    """Whether a judge setting named ``name`` may hold a credential (``api_key``,
    ``aws_secret_access_key``, ``extra_headers``, ...); ``max_tokens`` and the like do not."""
    lowered = name.lower()
    return lowered not in _TOKEN_COUNTS and any(part in lowered for part in _SECRET_PARTS)


@overload
def url_without_credentials(url: str) -> str: ...
@overload
def url_without_credentials(url: None) -> None: ...
def url_without_credentials(url: str | None) -> str | None:
    """``url`` as evaldag shows and stores it: its user-info and every query value masked
    (``http://**********@host/v1?api-key=**********``), the names of the query kept."""
    if not url:
        return url
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{MASK}@{netloc.rsplit('@', 1)[1]}"
    query = "&".join(
        f"{pair.split('=', 1)[0]}={MASK}" if "=" in pair else MASK
        for pair in parts.query.split("&")
        if pair
    )
    fragment = MASK if parts.fragment else ""
    return urlunsplit((parts.scheme, netloc, parts.path, query, fragment))


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


def url_secrets(url: str | None) -> tuple[str, ...]:
    """The credentials of ``url`` (its user, password, query values and fragment, in every form
    a server may echo them), longest first, to redact text with."""
    return _longest_first(_url_secrets(url))


def _longest_first(found: set[str]) -> tuple[str, ...]:
    return tuple(sorted((s for s in found if len(s) >= _SHORTEST), key=len, reverse=True))


def _url_secrets(url: str | None) -> set[str]:
    if not url:
        return set()
    parts = urlsplit(url)
    userinfo = parts.netloc.rsplit("@", 1)[0] if "@" in parts.netloc else ""
    raw = {*userinfo.split(":", 1), parts.fragment}
    raw |= {pair.split("=", 1)[-1] for pair in parts.query.split("&")}
    return {form for value in raw if value for form in _forms(value)}


def _forms(value: str) -> set[str]:
    """``value`` as written, percent-decoded and percent-encoded (upper and lower case
    escapes)."""
    forms = {value, unquote(value), unquote_plus(value)}
    forms |= {
        encode(form, safe=safe)
        for form in set(forms)
        for encode in (quote, quote_plus)
        for safe in ("", "/", "/:@")
    }
    forms |= {_PERCENT_ESCAPE.sub(lambda m: m[0].lower(), form) for form in set(forms)}
    return forms


def _header_secrets(headers: Any) -> set[str]:
    found: set[str] = set()
    if not isinstance(headers, Mapping):
        return found
    for name, value in headers.items():
        if str(name).lower() in PLAIN_HEADERS:
            continue
        text = str(value)
        found |= {text, *text.split()}  # "Bearer <token>": the token alone too
    return found


def judge_secrets(judge: Judge, api_key: str | None, api_base: str | None) -> tuple[str, ...]:
    """Every credential of ``judge``, longest first, remembered for the log filter."""
    found = {api_key or ""} | _url_secrets(judge.api_base) | _url_secrets(api_base)
    found |= _header_secrets(judge.litellm_kwargs.get("extra_headers"))
    found |= {v for name, v in os.environ.items() if is_secret_setting(name)}
    secrets = _longest_first(found)
    with _known_lock:
        _known.update(secrets)
    return secrets


def redacted(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret masked."""
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, MASK)
    return text


def clipped(text: str, secrets: tuple[str, ...], limit: int = 500) -> str:
    """``text`` redacted, then cut to ``limit`` characters; a secret's start left at the cut
    (8 characters or more) is masked."""
    text = redacted(text, secrets)
    if len(text) <= limit:
        return text
    cut = text[:limit]
    for secret in secrets:
        for size in range(min(len(secret), len(cut)), _SHORTEST - 1, -1):
            if cut.endswith(secret[:size]):
                return cut[:-size] + MASK + "…"
    return cut + "…"


class _RedactingFilter(logging.Filter):
    """Masks every credential a judge has used in the records of a library's logger."""

    def filter(self, record: logging.LogRecord) -> bool:
        with _known_lock:
            secrets = sorted(_known, key=len, reverse=True)
        if secrets:
            message = record.getMessage()
            masked = redacted(message, secrets)
            if masked != message:
                record.msg, record.args = masked, None
        return True


_FILTER = _RedactingFilter()


def redacting(logger: logging.Logger) -> logging.Logger:
    """``logger`` with the credential filter on it (once)."""
    if _FILTER not in logger.filters:
        logger.addFilter(_FILTER)
    return logger
