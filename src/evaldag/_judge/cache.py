"""The judge's reply cache: one sqlite file of model replies keyed by what was asked.

A key hashes the model, the api_base, the messages, the response format and the sampling
settings, and the trial of ``run_evals(trials=N)`` past the first, so that each trial is a call
of its own (the first keeps the key it had before trials existed: a cache filled then still
serves it); credentials never enter it (see :func:`request_key`). Replies are written only for
judge executions that succeeded, so a bad reply is asked again next time instead of replayed;
a reply read back is checked as a fresh one is (the score checks included).

The cache is an optimisation: nothing the judges answered is lost to it. A cache file that is
not one (not a database, or a ``replies`` table of other columns) is refused by ``run_evals``
before it scores anything. A cache that cannot open for writing (a folder it cannot write, a
full disk), or fails later (a full disk, an I/O error, a lock held past the wait), is left out,
said once (a warning, and a note in the run's ``summary.judge_cache_problems``), and the calls
go on without it; so is a file that is not a cache where nothing opened it before the calls
(``scorer.run``, live scoring).
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import threading
import time
from collections.abc import Iterable, Mapping
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from evaldag._judge.settings import is_secret_setting
from evaldag.errors import EvalDagError

logger = logging.getLogger(__name__)

FILE_NAME = "judge-cache.sqlite3"

# Transport settings: how the judge is asked, not what.
_TRANSPORT = frozenset({"timeout", "max_retries", "num_retries", "metadata"})

#: The trial (``run_evals(trials=N)``, from 0) the judge calls made in this context belong to:
#: set around a trial's execution, and carried with the context into the engine loop's tasks.
judge_trial: ContextVar[int] = ContextVar("evaldag_judge_trial", default=0)


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
    trial = judge_trial.get()
    if trial:
        kept["trial"] = trial
    text = json.dumps(kept, sort_keys=True, default=repr, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


#: The cache's table: its columns and their declared types.
_TABLE = "replies"
_COLUMNS = {"key": "TEXT", "reply": "TEXT", "created": "REAL"}
#: Seconds a cache write waits for another process's.
_LOCK_WAIT = 30
_NOT_A_CACHE = "EVALDAG_JUDGE_CACHE_FOREIGN"


class JudgeCache:
    """Model replies on disk, safe to share between threads and processes."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / FILE_NAME
        try:
            directory.mkdir(parents=True, exist_ok=True)
            self._connection = sqlite3.connect(
                self.path, timeout=_LOCK_WAIT, check_same_thread=False, isolation_level=None
            )
            self._connection.execute("PRAGMA journal_mode=WAL")
            self._connection.execute("PRAGMA synchronous=NORMAL")
            self._connection.execute(
                f"CREATE TABLE IF NOT EXISTS {_TABLE} "
                "(key TEXT PRIMARY KEY, reply TEXT NOT NULL, created REAL NOT NULL)"
            )
            columns = {
                name: kind.upper()
                for _, name, kind, *_ in self._connection.execute(f"PRAGMA table_info({_TABLE})")
            }
        except (OSError, sqlite3.Error) as error:
            if getattr(error, "sqlite_errorcode", None) == sqlite3.SQLITE_NOTADB:
                raise _not_a_cache(self.path, "is not a SQLite database") from error
            raise EvalDagError(
                "EVALDAG_JUDGE_CACHE_UNAVAILABLE",
                f"cannot open the judge cache at {self.path}: {error}. Point cache= (or "
                "EVALDAG_CACHE_DIR) at a writable directory, or pass cache=False",
                category="SYSTEM",
                details={"path": str(self.path)},
                cause=error,
            ) from error
        if columns != _COLUMNS:
            self._connection.close()
            raise _not_a_cache(
                self.path,
                f"has a table '{_TABLE}' evaldag did not make (columns {columns}, not {_COLUMNS})",
            )
        self._lock = threading.Lock()
        #: Rows dropped because they held no reply (see ``get``).
        self.dropped = 0
        #: Why the cache stopped being used, once it could not read or write.
        self.problem: str | None = None

    def get(self, key: str) -> dict[str, Any] | None:
        """The reply stored under ``key``, or None; a row that is not a stored reply (corrupt
        or written by something else) is dropped and counted, and the call is made again."""
        with self._lock:
            if self.problem is not None:
                return None
            try:
                row = self._connection.execute(
                    f"SELECT reply FROM {_TABLE} WHERE key = ?", (key,)
                ).fetchone()
                if row is None:
                    return None
                reply = _stored_reply(row[0])
                if reply is None:
                    self._connection.execute(f"DELETE FROM {_TABLE} WHERE key = ?", (key,))
                    self.dropped += 1
                    logger.warning("judge cache %s: dropped a row that is not a reply", self.path)
            except sqlite3.Error as error:
                self._failed("read", error)
                return None
        return reply

    def put(self, replies: Iterable[tuple[str, Mapping[str, Any]]]) -> None:
        """Store ``(key, reply)`` pairs, replacing older replies under the same keys; a cache
        that cannot take them is left out from then on (see the module's docstring)."""
        now = time.time()
        rows = [(key, json.dumps(reply), now) for key, reply in replies]
        if not rows:
            return
        with self._lock:
            if self.problem is not None:
                return
            try:
                self._connection.executemany(
                    f"INSERT OR REPLACE INTO {_TABLE} (key, reply, created) VALUES (?, ?, ?)", rows
                )
            except sqlite3.Error as error:
                self._failed("write", error)

    def _failed(self, action: str, error: sqlite3.Error) -> None:
        """Leave the cache out from now on, and say so once (the lock is held)."""
        self.problem = (
            f"the judge cache {self.path} could not {action} ({error}); the run went on "
            "without it, and replies from then on were not cached"
        )
        logger.warning("%s", self.problem)
        with _caches_lock:
            _problems.append(self.problem)

    def __len__(self) -> int:
        with self._lock:
            return self._connection.execute(f"SELECT COUNT(*) FROM {_TABLE}").fetchone()[0]


def _not_a_cache(path: Path, problem: str) -> EvalDagError:
    return EvalDagError(
        _NOT_A_CACHE,
        f"the judge cache file {path} {problem}: point cache= (or EVALDAG_CACHE_DIR) at another "
        "directory, move that file away, or pass cache=False",
        details={"path": str(path)},
    )


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
    """Rows dropped so far by every cache this process opened (and by the caches of the
    processes that ran its tasks: see :func:`noted_elsewhere`)."""
    with _caches_lock:
        here = sum(cache.dropped for cache in _caches.values() if cache is not None)
        return here + _dropped_elsewhere[0]


def noted_elsewhere(problems: Iterable[str], dropped: int) -> None:
    """Count what the caches of another process (a cluster's worker running this process's
    row batches) dropped and why they stopped, each problem said once."""
    with _caches_lock:
        _dropped_elsewhere[0] += dropped
        _problems.extend(p for p in dict.fromkeys(problems) if p not in _problems)


def cache_problems() -> list[str]:
    """Why caches this process opened stopped being used, in order (each said once)."""
    with _caches_lock:
        return list(_problems)


#: The process's caches by directory; None for one that could not open (not tried again).
_caches: dict[Path, JudgeCache | None] = {}
_problems: list[str] = []
_dropped_elsewhere = [0]
_caches_lock = threading.Lock()


def opened_cache(directory: Path) -> JudgeCache | None:
    """The process-wide cache for ``directory``, opened anew unless it is open and in use:
    ``run_evals`` opens its caches so before it runs. A file that is not a cache is an error;
    a cache that cannot open (a folder it cannot write, a full disk) is left out, said once."""
    resolved = directory.resolve()
    with _caches_lock:
        cache = _caches.get(resolved)
        if cache is not None and cache.problem is None and cache.path.exists():
            return cache
        return _opened(resolved, refuse_foreign=True)


def judge_cache(directory: Path | None) -> JudgeCache | None:
    """The process-wide cache for ``directory`` (opened on first use), or None for no cache,
    or when it cannot open: the calls go on without it, and that is said once."""
    if directory is None:
        return None
    resolved = directory.resolve()
    with _caches_lock:
        if resolved in _caches:
            cache = _caches[resolved]
            # One whose file was removed since (a finished run's journal) would write nowhere.
            if cache is None or cache.path.exists():
                return cache
        return _opened(resolved, refuse_foreign=False)


def _opened(directory: Path, *, refuse_foreign: bool) -> JudgeCache | None:
    """The cache in ``directory``, kept for the process; None, said once, when it cannot open
    (``_caches_lock`` is held)."""
    try:
        cache = JudgeCache(directory)
    except EvalDagError as error:
        if refuse_foreign and error.id == _NOT_A_CACHE:
            raise
        cache = None
        problem = f"{error.message}; the calls went on without a cache"
        logger.warning("%s", problem)
        _problems.append(problem)
    _caches[directory] = cache
    return cache
