"""Score stores: what evaldag asks of one (the ``ScoreStore`` protocol), and which store a
location opens.

A location is a store, a URL or a file path. A URL opens with the factory registered for its
scheme (``postgresql+psycopg://...`` with ``postgresql``'s); a file opens with the factory of
the file kind its first bytes name, and a path to no file yet (or a file of no registered kind)
with SQLite's. The SQL store (:class:`~evaldag._store.sql.SqlScoreStore`) is registered for
``sqlite`` (and SQLite files) and ``postgresql``; :func:`register_store` adds a kind.
"""

from __future__ import annotations

import os
import re
from abc import abstractmethod
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from evaldag._util.credentials import url_without_credentials
from evaldag.errors import EvalDagError

if TYPE_CHECKING:
    import pandas as pd

    from evaldag._results.eval_result import EvalResult
    from evaldag._store.rows import ScoreRow, Source

#: The scheme whose factory opens file paths that are no store file of another kind.
FILE_SCHEME = "sqlite"
#: The first bytes of a SQLite database file.
SQLITE_HEADER = b"SQLite format 3\x00"
_SCHEME = re.compile(r"[a-z][a-z0-9.-]*")


class _OpensStores(type(Protocol)):  # type: ignore[misc]
    """Calling the protocol opens the store at a location, as ``evaldag.ScoreStore(...)`` did
    before it became the protocol's name."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        if cls is ScoreStore:
            if kwargs or len(args) != 1:
                raise EvalDagError(
                    "EVALDAG_STORE_INVALID_URL",
                    "evaldag.ScoreStore(location) opens the store at one location: a database "
                    "URL or a file path",
                    domain="STORAGE",
                )
            return opened_store(args[0])
        return super().__call__(*args, **kwargs)


@runtime_checkable
class ScoreStore(Protocol, metaclass=_OpensStores):
    """What evaldag asks of a score store: ``run_evals(store=...)`` saves results in it,
    ``evaldag.live`` saves rows, and ``read_scores``, ``evaldag compare`` and ``evaldag report``
    read them back. ``SqlScoreStore`` is evaldag's.

    ``evaldag.ScoreStore(location)`` opens the store at a location (``"scores.db"``,
    ``"postgresql://..."``, a registered scheme). A store of your own subclasses it, sets
    ``location`` and writes ``save`` and ``scores``
    (rows in, rows out); ``save_result``, ``result`` and ``close`` have defaults it inherits.
    ``evaldag.register_store`` then opens it for its URL scheme. A store given to
    ``evaldag.live(..., worker="process")`` is pickled to the scoring process, where it must
    open connections of its own (``SqlScoreStore`` pickles as its URL).
    """

    #: Where the store is, as output may show it (no password).
    location: str

    @abstractmethod
    def save(self, rows: Iterable[ScoreRow | Mapping[str, Any]]) -> int:
        """Save ``rows`` (``ScoreRow``s or dicts of their fields), replacing any row of the same
        id; how many were written."""
        ...

    @abstractmethod
    def scores(
        self,
        *,
        experiment_id: str | None = None,
        scorer_id: str | None = None,
        source: Source | None = None,
    ) -> pd.DataFrame:
        """The saved rows matching every filter given, oldest first: one column per
        ``ScoreRow`` field."""
        ...

    def save_result(self, result: EvalResult, *, entity: str | None = None) -> int:
        """Save a ``run_evals`` result; how many rows were written. The default saves its rows
        (one TEST row per item and scorer) and not the run: a store that keeps runs (for
        ``result``) saves both.

        :param entity: what produced the outputs (default ``"dataset"``).
        """
        from evaldag._store.results import result_rows

        return self.save(result_rows(result, entity=entity))

    def result(self, experiment: str | None = None) -> EvalResult:
        """The saved run ``experiment`` (an id or a name; default: the latest) as an
        ``EvalResult``. The default refuses: the store keeps rows, not runs."""
        raise EvalDagError(
            "EVALDAG_STORE_NO_RUNS",
            f"The score store {self.location} keeps score rows, not runs: read a run from its "
            "results file (run_evals(out=...)) or from a SqlScoreStore",
            domain="STORAGE",
            details={"store": self.location},
        )

    def close(self) -> None:
        """Let go of the store's connections; the default has none."""


StoreFactory = Callable[[str], ScoreStore]


def _sql_store(location: str) -> ScoreStore:
    from evaldag._store.sql import SqlScoreStore  # SQLAlchemy loads when a store opens

    return SqlScoreStore(location)


_BUILT_IN = {"sqlite": _sql_store, "postgresql": _sql_store}
_factories: dict[str, StoreFactory] = dict(_BUILT_IN)
#: Store files by their first bytes, and the scheme whose factory opens them.
_file_kinds: dict[bytes, str] = {SQLITE_HEADER: "sqlite"}


def register_store(
    scheme: str, factory: Callable[[str], ScoreStore], *, file_header: bytes | None = None
) -> None:
    """Open the locations ``<scheme>://...`` (and ``<scheme>+<driver>://...``) with
    ``factory(location)``, wherever evaldag takes a store: ``run_evals(store=...)``,
    ``evaldag.live``, ``read_scores``, ``evaldag run --store``, ``compare`` and ``report``.

    Register it where the store is defined, at import. Registering a scheme again replaces its
    factory; ``sqlite`` and ``postgresql`` are evaldag's own.

    :param factory: takes the location as given (a URL, or a file path) and returns an open
        ``ScoreStore``; its errors are the caller's.
    :param file_header: the first bytes of this kind's files: a path to such a file opens with
        ``factory`` too, and ``read_scores`` and ``evaldag report`` read it as a store.
    """
    if not isinstance(scheme, str) or not _SCHEME.fullmatch(scheme):
        raise _invalid(
            f"a store's scheme is what a URL starts with before '://' (lower case, no '+'), "
            f"such as 'duckdb', got {scheme!r}"
        )
    if scheme in _BUILT_IN:
        raise _invalid(f"{scheme!r} is one of evaldag's stores; register yours under another name")
    if not callable(factory):
        raise _invalid(f"the factory of store {scheme!r} must be callable, got {factory!r}")
    if file_header is not None and (not isinstance(file_header, bytes) or not file_header):
        raise _invalid(f"file_header of store {scheme!r} must be non-empty bytes")
    if file_header is not None and _file_kinds.get(file_header, scheme) != scheme:
        raise _invalid(f"files starting {file_header!r} are {_file_kinds[file_header]!r} stores")
    _factories[scheme] = factory
    if file_header is not None:
        _file_kinds[file_header] = scheme


def opened_store(location: ScoreStore | str | os.PathLike[str]) -> ScoreStore:
    """The store ``location`` names, opened; a store is itself."""
    if isinstance(location, ScoreStore):
        return location
    if not isinstance(location, str | os.PathLike):
        raise EvalDagError(
            "EVALDAG_STORE_INVALID_URL",
            f"store= must be a score store, a database URL or a file path, got "
            f"{type(location).__name__}",
            domain="STORAGE",
        )
    text = os.fspath(location)
    scheme = url_scheme(text)
    if scheme is None:
        scheme = store_file_scheme(text) or FILE_SCHEME
    factory = _factories.get(scheme)
    if factory is None:
        shown = url_without_credentials(text)
        raise EvalDagError(
            "EVALDAG_STORE_UNSUPPORTED_DATABASE",
            f"The score store {shown} is on '{scheme}'; evaldag stores scores in "
            f"{' or '.join(sorted(_factories))}: register a store for '{scheme}' with "
            "evaldag.register_store",
            domain="STORAGE",
            details={"store": shown, "scheme": scheme},
        )
    return factory(text)


def url_scheme(location: str) -> str | None:
    """The store scheme of a URL (``postgresql`` for ``postgresql+psycopg://...``); None for a
    path."""
    if "://" not in location:
        return None
    return location.split("://", 1)[0].split("+", 1)[0].lower()


def store_file_scheme(path: str | os.PathLike[str]) -> str | None:
    """The scheme of the store file at ``path``, by its first bytes; None for no file, or a
    file of no registered kind (a results Parquet file)."""
    path = Path(path)
    if not path.is_file():
        return None
    with path.open("rb") as file:
        start = file.read(max(len(header) for header in _file_kinds))
    return next((s for header, s in _file_kinds.items() if start.startswith(header)), None)


def _invalid(message: str) -> EvalDagError:
    return EvalDagError("EVALDAG_INVALID_STORE", message, domain="STORAGE")
