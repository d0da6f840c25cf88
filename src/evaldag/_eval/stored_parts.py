"""A streamed run's score rows saved part by part (``out=`` a directory and ``store=``).

The client holds none of a streamed run's items, so it cannot save the run at its end as a local
run does. Instead, once a batch is handed on (its part is in the directory: written by whoever
scored it, or taken from an earlier run), the client reads that one part back, saves its rows in
the store and drops them; once the run is finished, it saves the run's record. The store then
holds what ``store.save_result(EvalResult.read_parquet(out))`` saves: the same rows (a row's id
is the experiment id, the item's position in the run and the scorer's id, so saving a part
again replaces its rows) and the same record; in a SQL store, the rows of an earlier run into
the same directory that this one did not save again (a scorer dropped on resume) are deleted
with the record's save.

A store that fails mid-run takes no further part and the run goes on: every item is in the
directory, and ``run_evals`` raises ``ResultNotSavedError`` at the end, as it does when a local
run's store fails, saying how to save the run from the directory.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from evaldag._io.parquet import parquet_results, part_name
from evaldag._results.eval_result import EvalResult
from evaldag._store.results import item_rows

if TYPE_CHECKING:
    from evaldag._store.stores import ScoreStore


class StoredParts:
    """The parts of one streamed run saved in a score store as its batches are handed on.

    :param store: the open store.
    :param directory: the run's results directory (``out=``).
    :param experiment_id: the run's experiment id.
    :param scorers: the run's scorer and gate definitions (``EvalPlan.definitions``).
    :param columns: run field → the data's column holding it (``columns=``).
    :param entity: what produced the outputs (``entity_name`` of the target).
    """

    def __init__(
        self,
        store: ScoreStore,
        directory: str | os.PathLike[str],
        *,
        experiment_id: str,
        scorers: list[dict[str, Any]],
        columns: dict[str, str],
        entity: str,
    ) -> None:
        self.store, self.directory = store, Path(directory)
        self.experiment_id, self.scorers, self.entity = experiment_id, scorers, entity
        self._fields = {column: field for field, column in columns.items()}
        #: Why the store stopped taking parts, if it did.
        self.error: Exception | None = None
        #: The item columns of the parts read, in order: those of the whole run's items.
        self._item_columns: list[Any] = []
        #: Every part is saved after this: the experiment's rows saved before are an earlier
        #: run's.
        self._started = datetime.now(UTC)

    def save(self, number: int, start: int) -> None:
        """Save the rows of part ``number`` (its first item the run's ``start``), unless the
        store failed before."""
        if self.error is not None:
            return
        try:
            items, _ = parquet_results(self.directory / part_name(number))
            self._item_columns += [c for c in items.columns if c not in self._item_columns]
            rows = item_rows(
                items.rename(columns=self._fields),
                self.scorers,
                self.experiment_id,
                self.entity,
                first=start,
            )
            self.store.save(rows)
        except Exception as error:  # every item is in the directory: the run goes on
            self.error = error

    def finish(self, result: EvalResult) -> Exception | None:
        """Save the run's record (``result``'s, with the whole run's item columns), its rows all
        saved; why the store does not hold the whole run, if it does not."""
        from evaldag._store.sql import SqlScoreStore  # SQLAlchemy: loaded for a store only

        if self.error is None:
            record = result.model_copy(update={"items": pd.DataFrame(columns=self._item_columns)})
            try:
                if isinstance(self.store, SqlScoreStore):
                    self.store.save_result(
                        record, entity=self.entity, rows_saved_since=self._started
                    )
                else:
                    self.store.save_result(record, entity=self.entity)
            except Exception as error:
                self.error = error
        return self.error
