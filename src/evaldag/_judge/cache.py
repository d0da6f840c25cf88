"""The judge's reply cache: model replies keyed by what was asked, in a SQLite file (a
directory's, which the processes of one machine share) or in a database by URL
(``postgresql://...``, which several machines share: ``evaldag._judge.sql_cache``).

A key hashes the model, the api_base, the messages, the response format and the sampling
settings, and the trial of ``run_evals(trials=N)`` past the first, so that each trial is a call
of its own (the first keeps the key it had before trials existed: a cache filled then still
serves it); credentials never enter it (see :func:`request_key`). Replies are written only for
judge executions that succeeded, so a bad reply is asked again next time instead of replayed;
a reply read back is checked as a fresh one is (the score checks included).

The cache is an optimisation: nothing the judges answered is lost to it. A cache file that is
not one (not a database, or a ``replies`` table of other columns) is refused by ``run_evals``
before it scores anything, and so is a database URL that does not open (a bad URL, no driver,
no server). A directory whose cache cannot open for writing (a folder it cannot write, a full
disk), or a cache that fails later (a full disk, an I/O error, a lock held past the wait, a
database gone), is left out, said once (a warning, and a note in the run's
``summary.judge_cache_problems``), and the calls go on without it; so is a cache that does not
open where nothing opened it before the calls (``scorer.run``, live scoring, a cluster's
worker).
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

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


#: The cache's table in its SQLite file: its columns and their declared types.
_TABLE = "replies"
_COLUMNS = {"key": "TEXT", "reply": "TEXT", "created": "REAL"}
#: Seconds a cache write waits for another process's.
_LOCK_WAIT = 30
_NOT_A_CACHE = "EVALDAG_JUDGE_CACHE_FOREIGN"
#: A cache's location: a directory (its SQLite file in it), or a database URL (a str).
Location = Path | str


class Replies(Protocol):
    """Where a cache keeps its replies: rows of a key, a reply (JSON text) and the time it was
    written, in a SQLite file (:class:`SqliteReplies`) or a database by URL
    (``evaldag._judge.sql_cache``)."""

    #: Where the replies are, as output may show it (no password).
    location: str
    #: What reading or writing raises when it fails.
    errors: tuple[type[Exception], ...]

    def read(self, key: str) -> str | None: ...
    def delete(self, key: str) -> None: ...
    def write(self, rows: list[tuple[str, str, float]]) -> None: ...
    def count(self) -> int: ...
    def in_place(self) -> bool:
        """Whether the replies are still where they were opened (a removed file is not)."""
        ...

    def described(self, error: Exception) -> str:
        """``error`` in a line output may show."""
        ...


class SqliteReplies:
    """Replies in a SQLite file in WAL mode, which the processes of one machine share."""

    errors: tuple[type[Exception], ...] = (sqlite3.Error,)

    def __init__(self, path: Path) -> None:
        self.path = path
        self.location = str(path)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._connection = sqlite3.connect(
                path, timeout=_LOCK_WAIT, check_same_thread=False, isolation_level=None
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
                raise _not_a_cache(path, "is not a SQLite database") from error
            raise EvalDagError(
                "EVALDAG_JUDGE_CACHE_UNAVAILABLE",
                f"cannot open the judge cache at {path}: {error}. Point cache= (or "
                "EVALDAG_CACHE_DIR) at a writable directory, or pass cache=False",
                category="SYSTEM",
                details={"path": str(path)},
                cause=error,
            ) from error
        if columns != _COLUMNS:
            self._connection.close()
            raise _not_a_cache(
                path,
                f"has a table '{_TABLE}' evaldag did not make (columns {columns}, not {_COLUMNS})",
            )

    def read(self, key: str) -> str | None:
        row = self._connection.execute(f"SELECT reply FROM {_TABLE} WHERE key = ?", (key,))
        found = row.fetchone()
        return None if found is None else found[0]

    def delete(self, key: str) -> None:
        self._connection.execute(f"DELETE FROM {_TABLE} WHERE key = ?", (key,))

    def write(self, rows: list[tuple[str, str, float]]) -> None:
        self._connection.executemany(
            f"INSERT OR REPLACE INTO {_TABLE} (key, reply, created) VALUES (?, ?, ?)", rows
        )

    def count(self) -> int:
        return self._connection.execute(f"SELECT COUNT(*) FROM {_TABLE}").fetchone()[0]

    def in_place(self) -> bool:
        return self.path.exists()

    def described(self, error: Exception) -> str:
        return str(error)


class JudgeCache:
    """Model replies, safe to share between threads and processes: in a SQLite file (a
    directory's, or a ``sqlite:///`` URL's), or in a database by URL (``postgresql://...``),
    which processes on several machines share.

    :param location: a directory, or a database URL (``evaldag._judge.settings.cache_location``
        tells them apart).
    """

    def __init__(self, location: Location) -> None:
        self.replies = _replies(location)
        self.location = self.replies.location
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
                text = self.replies.read(key)
                if text is None:
                    return None
                reply = _stored_reply(text)
                if reply is None:
                    self.replies.delete(key)
                    self.dropped += 1
                    _noted(dropped=1)
                    logger.warning(
                        "judge cache %s: dropped a row that is not a reply", self.location
                    )
            except self.replies.errors as error:
                self._failed("read", error)
                return None
        return reply

    def put(self, replies: Iterable[tuple[str, Mapping[str, Any]]]) -> None:
        """Store ``(key, reply)`` pairs (a key already stored keeps an equal reply, or takes
        the new one); a cache that cannot take them is left out from then on (see the module's
        docstring)."""
        now = time.time()
        rows = [(key, json.dumps(reply), now) for key, reply in replies]
        if not rows:
            return
        with self._lock:
            if self.problem is not None:
                return
            try:
                self.replies.write(rows)
            except self.replies.errors as error:
                self._failed("write", error)

    def _failed(self, action: str, error: Exception) -> None:
        """Leave the cache out from now on, and say so once (the lock is held)."""
        self.problem = (
            f"the judge cache {self.location} could not {action} "
            f"({self.replies.described(error)}); the run went on without it, and replies from "
            "then on were not cached"
        )
        logger.warning("%s", self.problem)
        with _caches_lock:
            _problems.append(self.problem)
        _noted(problem=self.problem)

    def __len__(self) -> int:
        with self._lock:
            return self.replies.count()


def _replies(location: Location) -> Replies:
    """The replies at ``location``: the SQLite file of a directory or of a ``sqlite:///`` URL,
    or the table of a database URL; a URL that names none is an error."""
    if isinstance(location, Path):
        return SqliteReplies(location / FILE_NAME)
    # SQLAlchemy loads only when a cache is a database URL.
    from evaldag._judge.sql_cache import DatabaseReplies, cache_url

    url = cache_url(location)
    if url.get_backend_name() == "sqlite":
        return SqliteReplies(Path(str(url.database)).expanduser())
    return DatabaseReplies(url)


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


@dataclass
class CacheNotes:
    """What the judge caches dropped, and why they stopped, during one task's calls (a row
    batch on a cluster's worker): its own figures, whatever else runs in the process."""

    dropped: int = 0
    problems: list[str] = field(default_factory=list)


#: The notes of the task whose calls run in this context (carried into the engine loop's tasks
#: with it): two row batches running at once in one worker (a Dask worker of several threads)
#: keep their figures apart.
_notes: ContextVar[CacheNotes | None] = ContextVar("evaldag_cache_notes", default=None)


@contextmanager
def cache_notes() -> Iterator[CacheNotes]:
    """Notes of what the caches drop, and why they stop, in calls made in this context."""
    notes = CacheNotes()
    token = _notes.set(notes)
    try:
        yield notes
    finally:
        _notes.reset(token)


def _noted(*, dropped: int = 0, problem: str | None = None) -> None:
    notes = _notes.get()
    if notes is None:
        return
    notes.dropped += dropped
    if problem is not None:
        notes.problems.append(problem)


#: The process's caches by location (a resolved directory, or a URL); None for one that could
#: not open (not tried again).
_caches: dict[Location, JudgeCache | None] = {}
_problems: list[str] = []
_dropped_elsewhere = [0]
_caches_lock = threading.Lock()


def opened_cache(location: Location) -> JudgeCache | None:
    """The process-wide cache at ``location``, opened anew unless it is open and in use:
    ``run_evals`` opens its caches so before it runs. A file that is not a cache is an error,
    and so is a database URL that does not open (a bad URL, no driver, no server); a directory
    whose cache cannot open (a folder it cannot write, a full disk) is left out, said once."""
    key = _key(location)
    with _caches_lock:
        cache = _caches.get(key)
        if cache is not None and cache.problem is None and cache.replies.in_place():
            return cache
        return _opened(key, strict=True)


def judge_cache(location: Location | None) -> JudgeCache | None:
    """The process-wide cache at ``location`` (opened on first use), or None for no cache,
    or when it cannot open: the calls go on without it, and that is said once."""
    if location is None:
        return None
    key = _key(location)
    with _caches_lock:
        if key in _caches:
            cache = _caches[key]
            # One whose file was removed since (a finished run's journal) would write nowhere.
            if cache is None or cache.replies.in_place():
                return cache
        return _opened(key, strict=False)


def _key(location: Location) -> Location:
    return location if isinstance(location, str) else location.resolve()


def _opened(location: Location, *, strict: bool) -> JudgeCache | None:
    """The cache at ``location``, kept for the process; None, said once, when it cannot open
    (``_caches_lock`` is held). With ``strict``, a file that is not a cache and a database URL
    that does not open are errors."""
    try:
        cache = JudgeCache(location)
    except EvalDagError as error:
        if strict and (error.id == _NOT_A_CACHE or isinstance(location, str)):
            raise
        cache = None
        problem = f"{error.message}; the calls went on without a cache"
        logger.warning("%s", problem)
        _problems.append(problem)
        _noted(problem=problem)
    _caches[location] = cache
    return cache
