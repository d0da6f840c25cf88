"""Resumable runs: each finished batch of items is saved as it completes.

``run_evals(..., checkpoint="run.parquet")`` keeps finished batches in ``run.parquet.partial/``
(one Parquet file per batch, each written atomically, so a killed process leaves only whole
files), and every judge reply as it arrives (a reply cache in ``judge-replies/``, for judges that
set no cache of their own). A second run with the same data and scorers loads the finished
batches instead of scoring them again and takes the journaled replies of the unfinished one, so
no judge call that had completed is made again; at the end it writes ``run.parquet`` and removes
the folder.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pandas as pd

from evaldag._io.files import atomic_write_text
from evaldag._io.parquet import parquet_results, write_results
from evaldag._results.eval_result import EvalResult
from evaldag._scorer.fingerprint import rows_fingerprint
from evaldag.errors import EvalDagError


def _fingerprint(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=repr).encode()).hexdigest()


def _differences(saved: dict[str, Any], definition: dict[str, Any]) -> list[str]:
    """What differs between the run that saved a checkpoint and this one, in words."""
    before = {d["id"]: d for d in saved.get("scorers", [])}
    now = {d["id"]: d for d in definition["scorers"]}
    found = [f"scorer '{sid}' is new" for sid in now if sid not in before]
    found += [f"scorer '{sid}' is no longer given" for sid in before if sid not in now]
    for sid in now.keys() & before.keys():
        old, new = before[sid], now[sid]
        if old.get("fingerprint") != new.get("fingerprint"):
            found.append(f"scorer '{sid}' changed (its options, judge settings or step code)")
        elif old != new:
            found.append(f"scorer '{sid}' has another threshold or role")
    if saved.get("columns", {}) != definition.get("columns", {}):
        found.append(
            f"the data's columns were mapped as {saved.get('columns', {})}, now "
            f"{definition.get('columns', {})} (columns=)"
        )
    if saved.get("batch_size") != definition["batch_size"]:
        found.append(
            f"the batch size was {saved.get('batch_size')}, now {definition['batch_size']} "
            "(run with the same batch_size=, or the same concurrency when it is not set)"
        )
    return found or ["its definition"]


def _manifest(path: Path) -> dict[str, Any]:
    """The saved run's definition, or an error naming the file when it cannot be read."""
    try:
        saved = json.loads(path.read_text())
        if isinstance(saved, dict) and "definition" in saved:
            return saved
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        pass
    raise EvalDagError(
        "CHECKPOINT_UNREADABLE",
        f"The checkpoint's '{path}' is empty or not what evaldag wrote; delete its folder "
        f"'{path.parent}' to start the run again",
        details={"checkpoint": str(path)},
    )


#: What the folder of a checkpoint's saved batches adds to its name.
PARTS_SUFFIX = ".partial"


class Checkpoint:
    """The saved batches of one eval run.

    :param path: where the finished run's results go; batches wait in ``<path>.partial/``.
    :param definition: what makes two runs the same run: ``scorers`` (their definitions, with
        thresholds and fingerprints), ``batch_size`` and, when the data names run fields
        otherwise, ``columns`` (run field → data column).
    """

    def __init__(self, path: str | Path, definition: dict[str, Any]) -> None:
        self.path = Path(path)
        self.parts = self.path.with_name(self.path.name + PARTS_SUFFIX)
        self.definition = _fingerprint(definition)
        manifest = self.parts / "run.json"
        if manifest.exists():
            saved = _manifest(manifest)
            if saved["definition"] != self.definition:
                differences = _differences(saved, definition)
                raise EvalDagError(
                    "CHECKPOINT_MISMATCH",
                    f"The checkpoint in '{self.parts}' was made by another run: "
                    f"{'; '.join(differences)}. Run it as it was, or delete it or use another "
                    "checkpoint path to start again",
                    details={"checkpoint": str(self.path), "differences": differences},
                )
        else:
            atomic_write_text(manifest, json.dumps({"definition": self.definition, **definition}))

    @property
    def replies(self) -> Path:
        """The journal of judge replies (a reply cache) for judges that keep none of their own."""
        return self.parts / "judge-replies"

    def _part(self, start: int) -> Path:
        return self.parts / f"batch-{start:012d}.parquet"

    def saved_items(self, start: int, batch: pd.DataFrame) -> pd.DataFrame | None:
        """The items of the batch at ``start`` if a previous run finished it, else None."""
        part = self._part(start)
        if not part.exists():
            return None
        items, metadata = parquet_results(part)
        if metadata["data"] != rows_fingerprint(batch):
            raise EvalDagError(
                "CHECKPOINT_MISMATCH",
                f"The data of rows {start}–{start + len(batch) - 1} (some column of them) "
                f"differs from the checkpoint '{self.parts}'; run with the data it was made "
                "with, or delete it or use another checkpoint path to start again",
                details={"checkpoint": str(self.path), "row": start},
            )
        return items

    def save(self, start: int, batch: pd.DataFrame, items: pd.DataFrame) -> None:
        """Keep a finished batch's items."""
        write_results(items, {"data": rows_fingerprint(batch)}, self._part(start))

    def finish(self) -> None:
        """The run is written in full: the saved batches are no longer needed."""
        shutil.rmtree(self.parts, ignore_errors=True)


def finished_run(
    path: str | Path, definition: dict[str, Any], dataset: pd.DataFrame
) -> EvalResult | None:
    """The results at ``path`` if an earlier run with this data and these scorers finished;
    None when there are none yet (or the run is still partial)."""
    target = Path(path)
    if not target.exists() or target.with_name(target.name + PARTS_SUFFIX).exists():
        return None
    result = EvalResult.read_parquet(target)
    differences = []
    if result.scorers != definition["scorers"]:
        differences = [
            d for d in _differences({"scorers": result.scorers}, definition) if "batch" not in d
        ]
    mapping = definition.get("columns", {})
    if result.columns != mapping:
        differences.append("the data's columns were mapped otherwise (columns=)")
    data = dataset.rename(columns=mapping)  # the results keep the data's names
    columns = [c for c in data.columns if c in result.items.columns]
    if columns != list(data.columns) or rows_fingerprint(
        result.items[columns].reset_index(drop=True)
    ) != rows_fingerprint(data.reset_index(drop=True)):
        differences.append("the data differs")
    if differences:
        raise EvalDagError(
            "CHECKPOINT_MISMATCH",
            f"'{target}' holds the finished results of another run: {'; '.join(differences)}; "
            "delete it or use another checkpoint path to run again",
            details={"checkpoint": str(target), "differences": differences},
        )
    return result
