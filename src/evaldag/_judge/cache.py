"""The judge's reply cache: one sqlite file of model replies keyed by what was asked.

A key hashes the model, the api_base, the messages, the response format and the sampling
settings; credentials never enter it (see :func:`request_key`). Replies are written only for
judge executions that succeeded, so a bad reply is asked again next time instead of replayed.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import threading
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from evaldag._judge.settings import is_secret_setting
from evaldag.errors import EvalDagError

logger = logging.getLogger(__name__)

FILE_NAME = "judge-cache.sqlite3"

# Transport settings: how the judge is asked, not what.
_TRANSPORT = frozenset({"timeout", "max_retries", "num_retries", "metadata"})


def request_key(request: Mapping[str, Any]) -> str:
    """The cache key of a model call: a SHA-256 over the request without credentials.

    Extra headers can route a call (to another deployment, another model version), so they
    count, as a hash of their values: the cache never holds them.
    """
    kept = {
        name: value
        for name, value in request.items()
        if name not in _TRANSPORT and not is_secret_setting(name)
    }
    headers = request.get("extra_headers")
    if headers:
        text = json.dumps(headers, sort_keys=True, default=repr)
        kept["extra_headers_sha256"] = hashlib.sha256(text.encode()).hexdigest()
    text = json.dumps(kept, sort_keys=True, default=repr, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


class JudgeCache:
    """Model replies on disk, safe to share between threads and processes."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / FILE_NAME
        try:
            directory.mkdir(parents=True, exist_ok=True)
            self._connection = sqlite3.connect(
                self.path, timeout=30, check_same_thread=False, isolation_level=None
            )
            self._connection.execute("PRAGMA journal_mode=WAL")
            self._connection.execute("PRAGMA synchronous=NORMAL")
            self._connection.execute(
                "CREATE TABLE IF NOT EXISTS replies "
                "(key TEXT PRIMARY KEY, reply TEXT NOT NULL, created REAL NOT NULL)"
            )
        except (OSError, sqlite3.Error) as error:
            raise EvalDagError(
                "EVALDAG_JUDGE_CACHE_UNAVAILABLE",
                f"cannot open the judge cache at {self.path}: {error}. Point cache= (or "
                "EVALDAG_CACHE_DIR) at a writable directory, or pass cache=False",
                category="SYSTEM",
                details={"path": str(self.path)},
                cause=error,
            ) from error
        self._lock = threading.Lock()
        #: Rows dropped because they held no reply (see ``get``).
        self.dropped = 0

    def get(self, key: str) -> dict[str, Any] | None:
        """The reply stored under ``key``, or None; a row that is not a stored reply (corrupt
        or written by something else) is dropped and counted, and the call is made again."""
        with self._lock:
            row = self._connection.execute(
                "SELECT reply FROM replies WHERE key = ?", (key,)
            ).fetchone()
            if row is None:
                return None
            reply = _stored_reply(row[0])
            if reply is None:
                self._connection.execute("DELETE FROM replies WHERE key = ?", (key,))
                self.dropped += 1
                logger.warning("judge cache %s: dropped a row that is not a reply", self.path)
        return reply

    def put(self, replies: Iterable[tuple[str, Mapping[str, Any]]]) -> None:
        """Store ``(key, reply)`` pairs, replacing older replies under the same keys."""
        now = time.time()
        rows = [(key, json.dumps(reply), now) for key, reply in replies]
        if not rows:
            return
        with self._lock:
            self._connection.executemany(
                "INSERT OR REPLACE INTO replies (key, reply, created) VALUES (?, ?, ?)", rows
            )

    def __len__(self) -> int:
        with self._lock:
            return self._connection.execute("SELECT COUNT(*) FROM replies").fetchone()[0]


def _stored_reply(text: str) -> dict[str, Any] | None:
    """A stored reply, or None when ``text`` is not one (not JSON, or the wrong shape)."""
    try:
        reply = json.loads(text)
    except (TypeError, ValueError):
        return None
    if not (
        isinstance(reply, dict)
        and isinstance(reply.get("content"), str | None)
        and isinstance(reply.get("usage", {}), dict)
        and all(isinstance(count, int) for count in reply.get("usage", {}).values())
    ):
        return None
    return reply


def dropped_rows() -> int:
    """Rows dropped so far by every cache this process opened."""
    with _caches_lock:
        return sum(cache.dropped for cache in _caches.values())


_caches: dict[Path, JudgeCache] = {}
_caches_lock = threading.Lock()


def judge_cache(directory: Path | None) -> JudgeCache | None:
    """The process-wide cache for ``directory`` (opened on first use), or None for no cache."""
    if directory is None:
        return None
    resolved = directory.resolve()
    with _caches_lock:
        cache = _caches.get(resolved)
        if cache is None:
            cache = _caches[resolved] = JudgeCache(resolved)
        return cache
