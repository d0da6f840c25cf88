"""URLs and text without their credentials: a URL as output may show it (user-info, query
values and fragment masked, whatever their names), the credentials a URL holds, text with known
secrets masked, and the log records of the libraries that log them (litellm, fsspec) with every
secret remembered masked. The judge's redaction (``_judge.redaction``) builds on these."""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterable
from typing import overload
from urllib.parse import quote, quote_plus, unquote, unquote_plus, urlsplit, urlunsplit

MASK = "**********"
#: Shortest text treated as a secret: shorter values ("on", a port) would mask ordinary words.
SHORTEST = 8
_PERCENT_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")
_known: set[str] = set()
_known_lock = threading.Lock()


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


def location_without_credentials(location: str) -> str:
    """A location (data, a store, a cluster) as output shows it: a URL without its
    credentials (:func:`url_without_credentials`), a path as it is."""
    return url_without_credentials(location) if "://" in location else location


def url_secrets(url: str | None) -> tuple[str, ...]:
    """The credentials of ``url`` (its user, password, query values and fragment, in every form
    a server may echo them), longest first, to redact text with."""
    return longest_first(url_secret_forms(url))


def longest_first(found: set[str]) -> tuple[str, ...]:
    """The texts of ``found`` long enough to be secrets, longest first (so a secret is masked
    before a part of it)."""
    return tuple(sorted((s for s in found if len(s) >= SHORTEST), key=len, reverse=True))


def url_secret_forms(url: str | None) -> set[str]:
    """The credentials of ``url``, each in every form a server may echo it."""
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


def redacted(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret masked."""
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, MASK)
    return text


def remembered(secrets: tuple[str, ...]) -> tuple[str, ...]:
    """``secrets``, remembered for the log filter of :func:`redacting`."""
    with _known_lock:
        _known.update(secrets)
    return secrets


class _RedactingFilter(logging.Filter):
    """Masks every credential remembered (:func:`remembered`) in the records of a library's
    logger."""

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
