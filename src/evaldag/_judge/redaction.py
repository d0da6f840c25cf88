"""Credentials never leave in what evaldag writes: errors, records, results, reports or logs.

A judge's credentials are its API key, the values of its extra headers, the user and password
in its ``api_base`` and query values such as ``?api-key=…``, and the provider keys a transport
may take from the environment (``OPENAI_API_KEY`` …). Providers echo a refused key in their
error bodies, so text is redacted before it is cut, and a secret's first characters left at the
cut are masked too.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterable
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from evaldag._judge.settings import MASK, Judge, is_secret_setting

#: Shortest text treated as a secret: shorter values ("on", a port) would mask ordinary words.
_SHORTEST = 8
_known: set[str] = set()
_known_lock = threading.Lock()


def _url_secrets(url: str | None) -> set[str]:
    if not url:
        return set()
    parts = urlsplit(url)
    found = {parts.username or "", parts.password or ""}
    found |= {value for key, value in parse_qsl(parts.query) if is_secret_setting(key)}
    return found


def url_without_credentials(url: str | None) -> str | None:
    """``url`` with its user, password and secret query values masked."""
    if not url:
        return url
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{MASK}@{netloc.rsplit('@', 1)[1]}"
    query = "&".join(
        f"{key}={MASK if is_secret_setting(key) else value}"
        for key, value in parse_qsl(parts.query, keep_blank_values=True)
    )
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def judge_secrets(judge: Judge, api_key: str | None, api_base: str | None) -> tuple[str, ...]:
    """Every credential of ``judge``, longest first, remembered for the log filter."""
    found = {api_key or ""} | _url_secrets(judge.api_base) | _url_secrets(api_base)
    headers = judge.litellm_kwargs.get("extra_headers") or {}
    for value in headers.values() if isinstance(headers, dict) else ():
        text = str(value)
        found |= {text, *text.split()}  # "Bearer <token>": the token alone too
    found |= {v for name, v in os.environ.items() if is_secret_setting(name)}
    secrets = tuple(sorted((s for s in found if len(s) >= _SHORTEST), key=len, reverse=True))
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
