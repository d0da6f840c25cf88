"""Resumable runs: each finished batch of items is saved as it completes.

``run_evals(..., checkpoint="run.parquet")`` keeps finished batches in ``run.parquet.partial/``
(one Parquet file per batch, each written atomically, so a killed process leaves only whole
files). A second run with the same data and scorers loads those batches instead of scoring them
again — no judge call is repeated for a finished item — and at the end writes ``run.parquet``
and removes the folder.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pandas as pd

from evaldag._io.parquet import read_results, write_results
from evaldag.errors import EvalDagError


def _fingerprint(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=repr).encode()).hexdigest()


class Checkpoint:
    """The saved batches of one eval run.

    :param path: where the finished run's results go; batches wait in ``<path>.partial/``.
    :param definition: what makes two runs the same run (scorers, thresholds, batch size).
    """

    def __init__(self, path: str | Path, definition: dict[str, Any]) -> None:
        self.path = Path(path)
        self.parts = self.path.with_name(self.path.name + ".partial")
        self.definition = _fingerprint(definition)
        manifest = self.parts / "run.json"
        if manifest.exists():
            saved = json.loads(manifest.read_text())
            if saved["definition"] != self.definition:
                raise EvalDagError(
                    "CHECKPOINT_MISMATCH",
                    f"The checkpoint in '{self.parts}' was made by a run with other scorers, "
                    "thresholds or batch size; delete it or use another checkpoint path",
                    details={"checkpoint": str(self.path)},
                )
        else:
            self.parts.mkdir(parents=True, exist_ok=True)
            manifest.write_text(json.dumps({"definition": self.definition}))

    def _part(self, start: int) -> Path:
        return self.parts / f"batch-{start:012d}.parquet"

    def saved_items(self, start: int, batch: pd.DataFrame) -> pd.DataFrame | None:
        """The items of the batch at ``start`` if a previous run finished it, else None."""
        part = self._part(start)
        if not part.exists():
            return None
        items, metadata = read_results(part)
        if metadata["data"] != _batch_fingerprint(batch):
            raise EvalDagError(
                "CHECKPOINT_MISMATCH",
                f"The data of rows {start}–{start + len(batch) - 1} differs from the checkpoint "
                f"'{self.parts}'; delete it or use another checkpoint path",
                details={"checkpoint": str(self.path), "row": start},
            )
        return items

    def save(self, start: int, batch: pd.DataFrame, items: pd.DataFrame) -> None:
        """Keep a finished batch's items."""
        write_results(items, {"data": _batch_fingerprint(batch)}, self._part(start))

    def finish(self) -> None:
        """The run is written in full: the saved batches are no longer needed."""
        shutil.rmtree(self.parts, ignore_errors=True)


def _batch_fingerprint(batch: pd.DataFrame) -> str:
    return _fingerprint(
        [batch[column].tolist() for column in ("input", "output") if column in batch.columns]
    )
