"""Where scores are read from: a score store (a ``ScoreStore``, a database URL, a store file)
or a results Parquet file, told apart by what the location is (``_store.stores``)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pandas as pd

from evaldag._results.eval_result import EvalResult
from evaldag._store.results import entity_name, result_rows
from evaldag._store.rows import ROW_FIELDS, Source
from evaldag._store.stores import ScoreStore, opened_store, store_file_scheme, url_scheme
from evaldag._util.credentials import location_without_credentials
from evaldag.errors import EvalDagError

Location = ScoreStore | str | os.PathLike[str]


def is_store(location: Any) -> bool:
    """Whether ``location`` names a score store rather than a results file: a ``ScoreStore``,
    a URL, or a store file (a SQLite file, or one of a kind ``register_store`` added)."""
    if isinstance(location, ScoreStore):
        return True
    if not isinstance(location, str | os.PathLike):
        return False
    return url_scheme(os.fspath(location)) is not None or store_file_scheme(location) is not None


def shown_location(location: Location) -> str:
    """Where a store is, as output may show it: a URL without its credentials."""
    if isinstance(location, ScoreStore):
        return location.location
    return location_without_credentials(os.fspath(location))


@contextmanager
def open_store(location: Location) -> Iterator[ScoreStore]:
    """The store ``location`` names, closed on leaving unless it was given open."""
    if isinstance(location, ScoreStore):
        yield location
        return
    store = opened_store(location)
    try:
        yield store
    finally:
        store.close()


def read_scores(
    location: Location,
    *,
    experiment_id: str | None = None,
    scorer_id: str | None = None,
    source: Source | None = None,
) -> pd.DataFrame:
    """Score rows as a DataFrame, one column per ``ScoreRow`` field, from a score store or from a
    results Parquet file (its items as the TEST rows a store would hold).

    :param location: a ``ScoreStore``, a database URL, a SQLite file or a ``.parquet`` file.
    :param experiment_id: only this ``run_evals`` run's rows.
    :param scorer_id: only this scorer's rows.
    :param source: only ``"LIVE"`` or only ``"TEST"`` rows.
    """
    if isinstance(location, ScoreStore) or is_store(location):
        with open_store(location) as store:
            return store.scores(experiment_id=experiment_id, scorer_id=scorer_id, source=source)
    result = EvalResult.read_parquet(location)
    frame = pd.DataFrame([dict(row) for row in result_rows(result)], columns=ROW_FIELDS)
    for column, value in (
        ("experiment_id", experiment_id),
        ("scorer_id", scorer_id),
        ("source", source),
    ):
        if value is not None:
            frame = frame[frame[column] == value]
    return frame.reset_index(drop=True)


def read_result(location: Location, experiment: str | None = None) -> EvalResult:
    """An ``EvalResult`` from a results Parquet file, or a store's run ``experiment`` (an id or a
    name; default: its latest)."""
    if isinstance(location, ScoreStore) or is_store(location):
        with open_store(location) as store:
            return store.result(experiment)
    result = EvalResult.read_parquet(location)
    if experiment is not None and experiment not in (result.experiment_id, result.name):
        named = f" named {result.name!r}" if result.name else ""
        raise EvalDagError(
            "EVALDAG_STORE_NO_EXPERIMENT",
            f"'{location}' holds experiment {result.experiment_id!r}{named}, not {experiment!r}",
            domain="STORAGE",
            details={"path": str(location), "experiment": experiment},
        )
    return result


def require_store(location: Location) -> None:
    """Open the store ``location`` names (creating or migrating its schema), so that a bad URL
    or an unreachable database fails before an eval spends anything."""
    with open_store(location):
        pass


def save_result(location: Location, result: EvalResult, *, target: Any = None) -> None:
    """Store ``result``'s experiment and TEST rows in the store ``location`` names.

    :param target: the eval's target, which names the rows' entity.
    """
    with open_store(location) as store:
        store.save_result(result, entity=entity_name(target))
