"""Resumable runs: each finished batch of items is saved as it completes, with what made it.

``run_evals(..., checkpoint="run.parquet")`` keeps finished batches in ``run.parquet.partial/``
(one Parquet file per batch, each written atomically, so a killed process leaves only whole
files; with conversations, the batch's turn rows in a ``turns-`` file beside it, written first,
so a batch whose items are saved has its turns saved too), and every judge reply as it arrives
(a reply cache in ``judge-replies/``, for judges that set no cache of their own). ``run.json``
there says what made the run: the scorers' definitions, the batch size and the run's
fingerprint (evaldag's and Python's versions, and the named parts of the target and of each
scorer: ``evaldag._targets.fingerprint``, ``evaldag._scorer.fingerprint``; with conversations,
the gates, scorers and thresholds of their turns); each batch file keeps the digests of its
rows, of the target and of each scorer it was scored with. At the end the results are written
to ``run.parquet`` (the fingerprint in its metadata) and the folder is removed.

A second run with the same data, target and scorers (``resume=True``) loads the finished
batches instead of scoring them again and takes the journaled replies of the unfinished one, so
no judge call that had completed is made again. When anything that decides a result changed,
it is refused, naming each part that changed. ``resume="refresh"`` recomputes what is stale
instead: the items of changed or new scorers are scored again on the saved outputs, and a batch
whose rows or target changed is run again whole, as is every batch when a turn's gates,
scorers or thresholds changed (a turn is scored with the target's run of the conversation, which
is not saved). ``resume=False`` starts afresh.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import pandas as pd

from evaldag._io.files import atomic_write_text, removed_leftovers
from evaldag._io.parquet import (
    SUMMARY_FILE,
    json_ready,
    parquet_results,
    part_name,
    results_metadata,
    write_results,
)
from evaldag._results.eval_result import EvalResult, result_metadata
from evaldag._results.item_columns import ScorerColumns
from evaldag._scorer.fingerprint import Parts, digest, rows_fingerprint, scorer_parts
from evaldag._targets.fingerprint import target_parts
from evaldag._version import __version__
from evaldag.errors import EvalDagError

if TYPE_CHECKING:
    from evaldag._graph.plan import EvalPlan

#: ``run_evals(resume=...)``: go on from a checkpoint, refuse a stale one (True); recompute what
#: is stale ("refresh"); or start afresh (False).
Resume = bool | Literal["refresh"]
#: The key of a finished run's manifest in its results file's metadata.
_MANIFEST = "checkpoint"


def checked_resume(resume: Any, checkpoint: Any) -> Resume:
    """``resume`` checked: True, False or "refresh" (which needs a checkpoint)."""
    if resume not in (True, False, "refresh") or not isinstance(resume, bool | str):
        raise EvalDagError(
            "INVALID_RESUME", f"resume must be True, False or 'refresh', got {resume!r}"
        )
    if resume == "refresh" and checkpoint is None:
        raise EvalDagError(
            "INVALID_RESUME", "resume='refresh' needs checkpoint=: the checkpoint to refresh"
        )
    return "refresh" if resume == "refresh" else bool(resume)


def run_fingerprint(plan: EvalPlan) -> dict[str, Any]:
    """What decides the run's results, in named parts: ``run`` (evaldag's and Python's
    versions: a step's bytecode is Python's), ``target``, ``scorers`` (by id) and, with
    conversations, ``turns`` (:func:`turn_parts`)."""
    python = ".".join(platform.python_version_tuple()[:2])
    fingerprint = {
        "run": {"the run": {"evaldag version": digest(__version__), "Python": digest(python)}},
        "target": target_parts(plan.target),
        "scorers": plan.fingerprints,
    }
    if plan.turn_specs:
        fingerprint["turns"] = turn_parts(plan)
    return fingerprint


def turn_parts(plan: EvalPlan) -> Parts:
    """What decides the conversations' turn rows beside their data (the ``inputs`` column holds
    the turns' inputs): each turn's gates, scorers and thresholds, as one digest (a part per
    turn would make the manifest as long as the data)."""
    fingerprints: dict[int, str] = {}  # a scorer object many turns hold is described once
    layout = []
    for label, turns in plan.turn_specs.items():
        for number, turn in enumerate(turns):
            for role, group in (("scorer", turn.scorers), ("gate", turn.gates)):
                for scorer in group:
                    if id(scorer) not in fingerprints:
                        fingerprints[id(scorer)] = digest(scorer_parts(scorer))
                    held = [role, scorer.id, turn.thresholds.get(scorer.id)]
                    layout.append([str(label), number, *held, fingerprints[id(scorer)]])
    return {"the conversations' turns": {"their gates, scorers and thresholds": digest(layout)}}


def _changes(before: Parts, after: Parts) -> list[str]:
    """The parts that differ, in words: ``step 'x' of scorer 'y': helper 'f' (m) changed``."""
    found = []
    for where in [*after, *(w for w in before if w not in after)]:
        old, new = before.get(where), after.get(where)
        if old is None or new is None:
            found.append(f"{where} is {'new' if old is None else 'gone'}")
            continue
        for label in [*new, *(p for p in old if p not in new)]:
            if old.get(label) != new.get(label):
                change = "is new" if label not in old else "is gone" if label not in new else None
                found.append(f"{where}: {label} {change or 'changed'}")
    return found


#: What of a scorer's definition decides a verdict besides its steps (its fingerprint): its
#: name, description or direction (``better``, which an earlier evaldag did not record) do not.
_DECIDING = ("role", "threshold", "trials")


def _differences(saved: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """What differs between the run that saved a checkpoint and this one, in words."""
    if "fingerprint" not in saved:
        return ["it was made by an earlier evaldag, which did not record what its steps reach"]
    before, after = saved["fingerprint"], now["fingerprint"]
    found = _changes(before["run"], after["run"]) + _changes(before["target"], after["target"])
    found += _changes(before.get("turns", {}), after.get("turns", {}))
    definitions = {d["id"]: d for d in saved.get("scorers", [])}
    for sid, parts in after["scorers"].items():
        if sid not in before["scorers"]:
            found.append(f"scorer '{sid}' is new")
        else:
            found += _changes(before["scorers"][sid], parts)
    found += [
        f"scorer '{sid}' is no longer given"
        for sid in before["scorers"]
        if sid not in after["scorers"]
    ]
    for definition in now["scorers"]:
        old = definitions.get(definition["id"])
        if (
            old is not None
            and old["fingerprint"] == definition["fingerprint"]
            and any(old.get(key) != definition.get(key) for key in _DECIDING)
        ):
            found.append(f"scorer '{definition['id']}' has another threshold or role")
    if saved.get("columns", {}) != now.get("columns", {}):
        found.append(
            f"the data's columns were mapped otherwise: {saved.get('columns', {})}, now "
            f"{now.get('columns', {})} (columns=)"
        )
    if saved.get("batch_size") != now["batch_size"]:
        found.append(
            f"the batch size was {saved.get('batch_size')}, now {now['batch_size']} "
            "(run with the same batch_size=, or the same concurrency when it is not set)"
        )
    return found


def _mismatch(where: Path, made: str, differences: list[str]) -> EvalDagError:
    return EvalDagError(
        "CHECKPOINT_MISMATCH",
        f"The checkpoint '{where}' {made}: {'; '.join(differences)}. Resume with "
        "resume='refresh' to recompute what changed (the items of changed scorers; everything "
        "when the target or a conversation's turn changed), or start afresh with resume=False",
        details={"checkpoint": str(where), "differences": differences},
    )


def _manifest(path: Path) -> dict[str, Any]:
    """The saved run's definition, or an error naming the file when it cannot be read."""
    try:
        saved = json.loads(path.read_text())
        if isinstance(saved, dict) and "batch_size" in saved:
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


@dataclass(frozen=True)
class SavedBatch:
    """A batch's saved items (without the columns of scorers no longer given), the scorers
    whose columns in them are stale: changed or new since it was saved, and its turn rows (the
    ``turn_items`` of its conversations; None without conversations)."""

    items: pd.DataFrame
    stale: tuple[str, ...]
    turns: pd.DataFrame | None = None


def turns_part(part: Path) -> Path:
    """The file of a saved batch's turn rows, beside the file of its items."""
    return part.with_name(f"turns-{part.name}")


def _made_by(manifest: dict[str, Any]) -> dict[str, Any]:
    """What a batch file keeps of what made it: the target's digest (with the run's: evaldag's
    and Python's versions) and each scorer's."""
    fingerprint = manifest["fingerprint"]
    return {
        "target": digest([fingerprint["run"], fingerprint["target"]]),
        "scorers": {d["id"]: d["fingerprint"] for d in manifest["scorers"]},
    }


class Checkpoint:
    """The saved batches of one eval run.

    :param path: where the finished run's results go; batches wait in ``<path>.partial/``.
    :param definition: what makes two runs the same run: ``scorers`` (their definitions, with
        thresholds and fingerprint digests), ``batch_size``, ``fingerprint`` (its parts:
        :func:`run_fingerprint`) and, when the data names run fields otherwise, ``columns``
        (run field → data column).
    :param resume: go on from a checkpoint there, refusing a stale one (True); recompute what is
        stale ("refresh"); or start afresh (False).
    """

    def __init__(
        self, path: str | os.PathLike[str], definition: dict[str, Any], resume: Resume
    ) -> None:
        self.path = Path(path)
        self.parts = self._folder()
        self.manifest = definition
        self.refresh = resume == "refresh"
        self._made_by = _made_by(definition)
        manifest = self.parts / "run.json"
        if resume is False:
            self._cleared()
        elif manifest.exists():
            saved = _manifest(manifest)
            differences = _differences(saved, definition)
            if not differences:
                return
            if not self.refresh:
                raise _mismatch(self.parts, "was made by another run", differences)
            turns = saved.get("fingerprint", {}).get("turns")
            turns_changed = turns != definition["fingerprint"].get("turns")
            if saved.get("batch_size") != definition["batch_size"] or turns_changed:
                # batches of another size: their rows are not these; turns scored otherwise:
                # their scorers run on the target's run of the turn, which is not saved
                self._removed_parts()
        # What each batch holds is in its own file: a refresh stopped halfway goes on later.
        atomic_write_text(manifest, json.dumps(definition))

    #: The names of the saved batches' files.
    _parts_glob = "batch-*.parquet"

    def _folder(self) -> Path:
        """Where the saved batches are."""
        return self.path.with_name(self.path.name + PARTS_SUFFIX)

    def _cleared(self) -> None:
        """Remove what an earlier run saved."""
        shutil.rmtree(self.parts, ignore_errors=True)

    def _removed_parts(self) -> None:
        """Remove the saved batches (their items and turn rows)."""
        for glob in (self._parts_glob, f"turns-{self._parts_glob}"):
            for part in self.parts.glob(glob):
                part.unlink()

    @property
    def replies(self) -> Path:
        """The journal of judge replies (a reply cache) for judges that keep none of their own."""
        return self.parts / "judge-replies"

    def _part(self, start: int) -> Path:
        return self.parts / f"batch-{start:012d}.parquet"

    def saved_batch(self, start: int, batch: pd.DataFrame) -> SavedBatch | None:
        """The items (and turn rows) of the batch at ``start`` if a previous run finished it,
        with the scorers whose columns are stale; None when it is to be run whole: not saved,
        or its target changed (or its rows, with ``refresh``)."""
        return self._saved(self._part(start), start, batch)

    def _saved(self, part: Path, start: int, batch: pd.DataFrame) -> SavedBatch | None:
        if not part.exists():
            return None
        items, metadata = parquet_results(part)
        items = self._read_names(items)
        if metadata["data"] != rows_fingerprint(batch):
            if self.refresh:
                return None
            end = start + len(batch) - 1
            raise EvalDagError(
                "CHECKPOINT_MISMATCH",
                f"The data of rows {start}–{end} (some column of them) differs from the "
                f"checkpoint '{self.parts}'; run with the data it was made with, resume with "
                "resume='refresh' to score the rows that changed again, or start afresh with "
                "resume=False",
                details={
                    "checkpoint": str(self.path),
                    "row": start,
                    "differences": [f"the data of rows {start}–{end} differs"],
                },
            )
        if metadata.get("target") != self._made_by["target"]:
            return None
        scored = metadata["scorers"]
        now = self._made_by["scorers"]
        gone = [
            c
            for sid in scored
            if sid not in now
            for c in (*ScorerColumns(sid).all, *ScorerColumns(sid).trials)
        ]
        stale = tuple(sid for sid, fingerprint in now.items() if scored.get(sid) != fingerprint)
        turns = None
        if "turns" in self.manifest["fingerprint"]:
            if not turns_part(part).exists():  # its turn rows are gone: it runs again whole
                return None
            turns = parquet_results(turns_part(part))[0]
        kept = items.drop(columns=[c for c in gone if c in items.columns])
        return SavedBatch(kept, stale, turns)

    def save(
        self, start: int, batch: pd.DataFrame, items: pd.DataFrame, turns: pd.DataFrame | None
    ) -> None:
        """Keep a finished batch's items and turn rows (None without conversations), with
        what made them."""
        self._save(self._part(start), batch, items, turns)

    def _save(
        self, part: Path, batch: pd.DataFrame, items: pd.DataFrame, turns: pd.DataFrame | None
    ) -> None:
        metadata = {"data": rows_fingerprint(batch), **self._made_by}
        if turns is not None:  # first: a batch whose items are saved is saved whole
            write_results(turns, {}, turns_part(part))
        write_results(self._written_names(items), metadata, part)

    def _written_names(self, items: pd.DataFrame) -> pd.DataFrame:
        """A batch's items as its file keeps them."""
        return items

    def _read_names(self, items: pd.DataFrame) -> pd.DataFrame:
        """A batch's items as its file kept them, as the run names them."""
        return items

    def finish(self, result: EvalResult) -> None:
        """The run is written in full, what made it kept with it; the saved batches are no
        longer needed."""
        result.to_parquet(self.path, extra={_MANIFEST: self.manifest})
        shutil.rmtree(self.parts, ignore_errors=True)


def finished_run(
    path: str | os.PathLike[str], definition: dict[str, Any], dataset: pd.DataFrame, resume: Resume
) -> EvalResult | None:
    """The results at ``path`` if an earlier run with this data, target and scorers finished;
    None when there are none yet (or the run is still partial). A finished run that is stale
    is refused, or with ``refresh`` reopened: its items become saved batches again, so that
    only what is stale is computed."""
    target = Path(path)
    if (
        resume is False
        or not target.exists()
        or target.with_name(target.name + PARTS_SUFFIX).exists()
    ):
        return None
    manifest = results_metadata(target).get(_MANIFEST) or {}
    # every item is scored: the batches it was scored in do not matter any more
    differences = _differences({**manifest, "batch_size": definition["batch_size"]}, definition)
    result = EvalResult.read_parquet(target)
    mapping = definition.get("columns", {})
    items = result.items.rename(columns={c: f for f, c in mapping.items()})  # the run's names
    has_columns = result.columns == mapping and all(c in items.columns for c in dataset.columns)
    rows = items[list(dataset.columns)] if has_columns else None
    if rows is None or rows_fingerprint(rows) != rows_fingerprint(dataset):
        differences.append("the data differs")
    if not differences:
        return result
    if resume is True:
        raise _mismatch(target, "holds the finished results of another run", differences)
    if manifest:
        _reopened(target, manifest, rows, items, definition["batch_size"], result.turns)
    return None


def _reopened(
    path: Path,
    manifest: dict[str, Any],
    rows: pd.DataFrame | None,
    items: pd.DataFrame,
    size: int,
    turns: pd.DataFrame | None,
) -> None:
    """A finished run's items (and ``turns``, its turn rows) as the saved batches of ``size``
    items of an unfinished one, each with the digest of its ``rows`` (the data columns of its
    items; None when the data has other columns)."""
    made_by = _made_by(manifest)
    manifest = {**manifest, "batch_size": size}
    parts = path.with_name(path.name + PARTS_SUFFIX)
    for start in range(0, len(items), size):
        data = "" if rows is None else rows_fingerprint(rows.iloc[start : start + size])
        part = parts / f"batch-{start:012d}.parquet"
        batch = items.iloc[start : start + size]
        if turns is not None:
            write_results(turns[turns["item"].isin(batch.index)], {}, turns_part(part))
        write_results(batch, {"data": data, **made_by}, part)
    atomic_write_text(parts / "run.json", json.dumps(manifest))


def run_experiment_id(path: str | os.PathLike[str]) -> str | None:
    """The experiment id of the run a results directory holds (kept in its ``run.json``), which
    a run resumed from it keeps: the directory holds one run however often it is resumed, and a
    store its parts were saved in holds them under that id. None for a new directory, or one
    an evaldag that kept no id wrote."""
    try:
        saved = json.loads((Path(path) / "run.json").read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    found = saved.get("experiment_id") if isinstance(saved, dict) else None
    return found if isinstance(found, str) else None


class ResultsDirectory(Checkpoint):
    """A run's results written to a directory (``run_evals(out="results/")``) as its batches
    finish: batch ``n`` in ``part-NNNNN.parquet`` (its items, named as the data names them; what
    made it in its metadata; with conversations, its turn rows in ``turns-part-NNNNN.parquet``),
    then ``summary.json`` (everything but the items, the turn rows too) once all are written.
    It is the run's checkpoint: ``run.json`` says what made the run, ``judge-replies/`` journals
    the judge's replies until the run finishes, and a run again with the same out takes each
    part that is still what this run would write instead of scoring it again (the rules of
    :class:`Checkpoint`).

    :param path: the directory: a new one, an empty one or one an earlier run wrote.
    """

    _parts_glob = "part-*.parquet"

    def __init__(
        self, path: str | os.PathLike[str], definition: dict[str, Any], resume: Resume
    ) -> None:
        folder = Path(path)
        if folder.is_dir() and not (folder / "run.json").exists() and any(folder.iterdir()):
            raise EvalDagError(
                "INVALID_OUTPUT_PATH",
                f"out='{path}' is a directory holding other files than an evaldag run's "
                "results; give a new or empty directory",
                details={"option": "out", "path": str(path)},
            )
        super().__init__(path, definition, resume)
        # Until this run finishes, the parts are not those an earlier summary summed up.
        (self.path / SUMMARY_FILE).unlink(missing_ok=True)

    def _folder(self) -> Path:
        return self.path

    def _cleared(self) -> None:
        self._removed_parts()
        for name in (SUMMARY_FILE, "run.json"):
            (self.path / name).unlink(missing_ok=True)
        shutil.rmtree(self.replies, ignore_errors=True)

    def _part(self, start: int) -> Path:
        return self.path / part_name(start // self.manifest["batch_size"])

    def saved_part(self, number: int, start: int, batch: pd.DataFrame) -> SavedBatch | None:
        """The items of batch ``number`` (first row ``start``, rows ``batch``) as
        :meth:`saved_batch` gives a batch's, for batches that are not all of one size (a
        streamed run's end at each file's end)."""
        return self._saved(self.path / part_name(number), start, batch)

    def save_part(self, number: int, batch: pd.DataFrame, items: pd.DataFrame) -> None:
        """Keep batch ``number``'s items, with what made them (streamed data, which holds no
        conversations)."""
        self._save(self.path / part_name(number), batch, items, None)

    def _written_names(self, items: pd.DataFrame) -> pd.DataFrame:
        return items.rename(columns=self.manifest.get("columns", {}))

    def _read_names(self, items: pd.DataFrame) -> pd.DataFrame:
        return items.rename(columns={c: f for f, c in self.manifest.get("columns", {}).items()})

    def finish(self, result: EvalResult) -> None:
        """Write the summary: the run is complete; the journal of replies is no longer needed,
        nor a part's temporary file that a worker killed while writing it left (the part was
        written again whole)."""
        metadata = {**result_metadata(result), _MANIFEST: self.manifest}
        atomic_write_text(self.path / SUMMARY_FILE, json.dumps(metadata, default=json_ready))
        shutil.rmtree(self.replies, ignore_errors=True)
        for part in self.path.glob(self._parts_glob):
            removed_leftovers(part)
            removed_leftovers(turns_part(part))
