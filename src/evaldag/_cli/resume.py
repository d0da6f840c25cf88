"""``evaldag run``'s checkpoint: where it lives, and how an interrupted run goes on.

Every run keeps one (unless ``--no-checkpoint``) in a ``.evaldag/`` folder beside ``--out``, or
in the working directory without it, so ``--resume`` always has something to go on from. Ctrl-C
(SIGINT) and SIGTERM stop the run as Ctrl-C always did (the batches already scored are in the
checkpoint) and print the command that goes on from it.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import shlex
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, Literal

from evaldag._util.credentials import location_without_credentials
from evaldag.errors import EvalDagError

if TYPE_CHECKING:
    from evaldag._eval.checkpoint import Resume
    from evaldag._results.eval_result import EvalResult

#: The folder of ``evaldag run``'s checkpoints, beside ``--out``.
CHECKPOINTS = ".evaldag"
#: The longest name a checkpoint is named after: 255 bytes, a file system's usual limit, less
#: ".checkpoint.parquet.partial" and room for the temporary names of atomic writes.
_LONGEST_NAME = 180
#: The shell's codes for a process stopped by SIGINT and by SIGTERM (128 + the signal).
EXIT_INTERRUPTED = 128 + signal.SIGINT
EXIT_TERMINATED = 128 + signal.SIGTERM


def add_resume_options(run: argparse.ArgumentParser) -> None:
    """``--resume`` and ``--no-checkpoint`` on ``evaldag run``."""
    run.add_argument(
        "--resume",
        nargs="?",
        const=True,
        default=False,
        type=_resume_mode,
        metavar="refresh",
        help="go on from the checkpoint of an interrupted run: score only what is missing. "
        "Refused when the eval's code, the target or the data changed since, naming what "
        "changed; --resume=refresh recomputes what changed instead (the items of changed "
        "scorers; everything when the target or a conversation's turns changed)",
    )
    run.add_argument(
        "--no-checkpoint",
        action="store_true",
        help=f"keep no checkpoint; by default each run keeps one in {CHECKPOINTS}/ beside "
        "--out (here without --out): the batches scored so far, for --resume",
    )


def _resume_mode(text: str) -> Literal["refresh"]:
    if text != "refresh":
        raise argparse.ArgumentTypeError(
            "takes no value, or 'refresh' (--resume=refresh), got "
            f"{location_without_credentials(text)!r}; put --resume "
            "after EVAL"
        )
    return "refresh"


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C raises KeyboardInterrupt: the run stops the same way, and
    no ``except Exception`` in a step or a target takes it for that item's error."""


@contextmanager
def terminated_as_interrupted() -> Iterator[None]:
    """While the block runs, SIGTERM raises :class:`Terminated` (in the main thread, where
    Python handles signals; elsewhere nothing changes)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: FrameType | None) -> None:
        raise Terminated

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def run_checkpoint(args: argparse.Namespace, data: Any) -> Path | None:
    """``evaldag run``'s checkpoint file, or None: with ``--no-checkpoint``; with ``--out`` a
    directory, which is the run's checkpoint itself; with streamed data (Parquet read batch by
    batch), which keeps no other (said on stderr)."""
    from evaldag._eval.streamed_batches import streams
    from evaldag._io.parquet import is_results_directory

    if args.no_checkpoint or (args.out is not None and is_results_directory(args.out)):
        return None
    if streams(data, args.executor, args.out):
        print(
            "evaldag: Parquet data read batch by batch keeps no checkpoint file; give --out a "
            "directory to make the run resumable",
            file=sys.stderr,
        )
        return None
    return checkpoint_path(args.out, args.eval, data)


def checkpoint_path(out: str | None, eval_spec: str, data: Any) -> Path:
    """Where ``evaldag run`` keeps its checkpoint: ``.evaldag/<out's name>.checkpoint.parquet``
    beside ``--out``, or ``.evaldag/<eval>-<data file's name>.checkpoint.parquet`` here without
    it (the checkpoint's batches wait in the ``.partial`` folder beside it). A name too long for
    a file system with the suffixes is cut, a digest of it keeping it apart from others."""
    if out:
        folder, name = Path(out).parent / CHECKPOINTS, Path(out).name
    else:
        named = isinstance(data, str | os.PathLike)  # else a list or a table in the eval file
        folder, name = (
            Path(CHECKPOINTS),
            f"{Path(eval_spec).name}-{Path(data).name if named else 'data'}",
        )
    if len(name.encode()) > _LONGEST_NAME:
        digest = hashlib.sha256(name.encode()).hexdigest()[:12]
        name = f"{name.encode()[: _LONGEST_NAME - 13].decode(errors='ignore')}-{digest}"
    return folder / f"{name}.checkpoint.parquet"


def _ignored_by_git(folder: Path) -> None:
    """A ``.gitignore`` in the checkpoints' folder, if the run made it, keeping it out of git
    (left out where it cannot be written: it only saves a line in yours)."""
    from evaldag._io.files import atomic_write_text

    if folder.is_dir() and not (folder / ".gitignore").exists():
        with contextlib.suppress(OSError, EvalDagError):
            atomic_write_text(folder / ".gitignore", "# evaldag run's checkpoints\n*\n")


def _partial(checkpoint: Path) -> Path:
    """The folder of a checkpoint's batches while its run is unfinished."""
    return checkpoint.with_name(checkpoint.name + ".partial")


def _saved_items(checkpoint: Path) -> int:
    """How many items the checkpoint's finished batches hold."""
    import pyarrow.parquet as pq

    return sum(pq.read_metadata(p).num_rows for p in _partial(checkpoint).glob("batch-*.parquet"))


def _say_what_becomes_of(checkpoint: Path, resume: Resume) -> None:
    """A note on stderr when a run replaces an unfinished one, or has nothing to resume."""
    if not resume and _partial(checkpoint).exists():
        print(
            f"evaldag: starting afresh; the unfinished run saved in {_partial(checkpoint)} is "
            "replaced (--resume goes on from one)",
            file=sys.stderr,
        )
    elif resume and not checkpoint.exists() and not _partial(checkpoint).exists():
        print(
            f"evaldag: no checkpoint in {checkpoint.parent} to resume; scoring every item",
            file=sys.stderr,
        )


def checkpointed_run(
    data: Any, checkpoint: Path | None, resume: Resume, **options: Any
) -> EvalResult:
    """``run_evals(data, **options)`` keeping ``checkpoint`` (None for none) and going on from
    it as ``resume`` says; errors worded for the command line. A run whose checkpoint is
    refused before anything ran (a read-only or full disk) goes on without one, saying so."""
    from evaldag._eval.run_evals import run_evals

    if checkpoint is None:  # none, or --out a directory: resume= is the directory's
        return run_evals(data, resume=resume, **options)
    finished = checkpoint.exists() and not _partial(checkpoint).exists()
    _say_what_becomes_of(checkpoint, resume)
    try:
        result = run_evals(data, checkpoint=checkpoint, resume=resume, **options)
    except EvalDagError as error:
        problem = _without_checkpoint(error, checkpoint)
        if problem is not None:
            if resume:
                raise EvalDagError(
                    "INVALID_CLI_OPTIONS", f"{problem}: run without --resume"
                ) from error
            print(f"evaldag: {problem}; this run keeps no checkpoint", file=sys.stderr)
            return run_evals(data, **options)
        if error.id == "CHECKPOINT_MISMATCH":
            raise EvalDagError(
                "CHECKPOINT_MISMATCH",
                f"the checkpoint {checkpoint} was made by another run: "
                f"{'; '.join(error.details['differences'])}. Run with --resume=refresh to "
                "recompute what changed (the items of changed scorers; everything when the "
                "target or a conversation's turn changed), or without --resume to start afresh",
                details=error.details,
            ) from error
        raise
    finally:
        _ignored_by_git(checkpoint.parent)
    if finished and resume is True:
        print(
            f"evaldag: the run had finished; its results were read back from {checkpoint}",
            file=sys.stderr,
        )
    return result


def _without_checkpoint(error: EvalDagError, checkpoint: Path) -> str | None:
    """Why the run goes on without its checkpoint, when ``error`` refused the checkpoint before
    anything ran: a disk that cannot take its first file (read-only, full); None for any other
    error."""
    first_files = (str(checkpoint), str(_partial(checkpoint) / "run.json"))
    if error.id == "INVALID_OUTPUT_PATH" and error.details.get("path") in first_files:
        return error.message
    return None


def how_to_go_on(checkpoint: Path | None, no_checkpoint: bool, argv: Sequence[str]) -> str:
    """What an interrupted run left, and the command that goes on from it."""
    if no_checkpoint:
        return "; no checkpoint was kept (--no-checkpoint): run it again to start over"
    if checkpoint is None:  # stopped before its run began
        return f"; to start it again:\n  {resume_command(argv)}"
    count = _saved_items(checkpoint)
    kept = f"{count} item{'s' * (count != 1)} scored so far {'are' if count != 1 else 'is'} kept"
    return f"; {kept} in {_partial(checkpoint)}. To go on from there:\n  {resume_command(argv)}"


def resume_command(argv: Sequence[str]) -> str:
    """The command line that goes on from a run started with ``argv``: the same, with
    ``--resume`` (any ``--resume`` option it had replaced), URLs shown without their
    credentials (``--cache``'s and ``--store``'s passwords stay out of logs)."""
    kept: list[str] = []
    tokens = iter(argv)
    for token in tokens:
        option = token.partition("=")[0]
        if len(option) >= 3 and "--resume".startswith(option):  # argparse takes --res too
            if "=" not in token and (following := next(tokens, None)) not in (None, "refresh"):
                kept.append(following)
            continue
        kept.append(token)
    return shlex.join(["evaldag", *map(_shown_token, kept), "--resume"])


def _shown_token(token: str) -> str:
    """A command line's word as output shows it: a URL's (``--cache=URL``'s) credentials
    masked."""
    option, equals, value = token.partition("=") if token.startswith("--") else ("", "", token)
    return option + equals + location_without_credentials(value)
