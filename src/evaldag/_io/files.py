"""Every file evaldag writes is written whole or not at all.

A file is written to a temporary name beside it and renamed into place, so a kill or a full
disk never leaves half a file; the temporary file is removed on every way out. A temporary
name is ``.<the file's name>.<8 hex digits>.evaldag-tmp`` (the file's name cut to keep it within
the file system's limit on names), so one a killed writer left (``kill -9``, a lost machine)
is recognised: the next write of the same file removes those not written to for
``STALE_AFTER_SECONDS``. An existing target that is not a regular file (a device such as
``/dev/null``, a FIFO, a directory) is refused: renaming over it would replace the machine's
device node when run as root.
"""

from __future__ import annotations

import os
import re
import secrets
import stat
import time
from collections.abc import Callable
from pathlib import Path

from evaldag.errors import EvalDagError

#: How a temporary file's name ends.
TEMPORARY_SUFFIX = ".evaldag-tmp"
#: A temporary file not written to for this long was left by a writer that died: one still
#: writing touches it as it goes.
STALE_AFTER_SECONDS = 15 * 60
#: The longest file name, in bytes, where the file system does not say (most say 255).
_NAME_MAX = 255
_TOKEN = re.compile(r"[0-9a-f]{8}")


def _path_error(path: Path, problem: str, cause: BaseException | None = None) -> EvalDagError:
    return EvalDagError(
        "INVALID_OUTPUT_PATH",
        f"Cannot write '{path}': {problem}",
        category="SYSTEM" if isinstance(cause, OSError) else "USER",
        details={"path": str(path)},
        cause=cause,
    )


def file_kind(path: Path) -> str:
    """What ``path`` is, in words: ``"a regular file"``, ``"a directory"``, ``"a FIFO (named
    pipe)"``, ...; ``"missing"`` when nothing is there (a dangling symlink included)."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return "a symlink to a missing file" if path.is_symlink() else "missing"
    for test, kind in (
        (stat.S_ISREG, "a regular file"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    ):
        if test(mode):
            return kind
    return "not a regular file"


def name_limit(path: Path) -> int:
    """The longest file name, in bytes, the file system under ``path`` takes."""
    folder = next((p for p in path.absolute().parents if p.is_dir()), None)
    try:
        return os.pathconf(folder or ".", "PC_NAME_MAX")
    except (OSError, ValueError):
        return _NAME_MAX


def name_problem(path: Path, longer_by: int = 0) -> str | None:
    """Why the file system would refuse ``path``'s name (and names up to ``longer_by`` bytes
    longer, which a writer puts beside it), or None."""
    size = len(os.fsencode(path.name)) + longer_by
    limit = name_limit(path)
    if size <= limit:
        return None
    beside = f" (with the {longer_by} bytes added to names beside it)" if longer_by else ""
    return f"its name is {size} bytes{beside}, longer than the {limit} this file system takes"


def writable_target(path: str | os.PathLike[str]) -> Path:
    """``path`` as a file evaldag may write: new, or an existing regular file."""
    target = Path(path)
    if not str(path).strip():
        raise _path_error(target, "the path is empty")
    problem = name_problem(target)
    if problem:  # first: stat() fails on such a name
        raise _path_error(target, f"{problem}; give a shorter name")
    if target.is_dir():
        raise _path_error(target, "it is a directory; give the path of a file")
    if target.exists() and not target.is_file():
        raise _path_error(
            target, "it exists and is not a regular file (a device, a FIFO or a socket)"
        )
    return target


def _name_start(target: Path) -> str:
    """The start of ``target``'s temporary names: ``.`` and as much of its name as fits."""
    room = name_limit(target) - len(f"..{'0' * 8}{TEMPORARY_SUFFIX}".encode())
    return f".{os.fsencode(target.name)[:room].decode('utf-8', 'ignore')}."  # no cut character


def removed_leftovers(target: Path) -> None:
    """Remove every temporary file of ``target``, whatever its age: for a caller that knows
    no writer of it is left (a run that finished with ``target`` written)."""
    _removed_stale(target, _name_start(target), older_than=None)


def _removed_stale(
    target: Path, start: str, older_than: float | None = STALE_AFTER_SECONDS
) -> None:
    """Remove the temporary files of ``target`` that killed writers left: those not written to
    for ``older_than`` seconds (all of them with None)."""
    now = time.time()
    try:
        entries = list(os.scandir(target.parent))
    except OSError:
        return
    for entry in entries:
        name = entry.name
        if not (name.startswith(start) and name.endswith(TEMPORARY_SUFFIX)):
            continue
        if not _TOKEN.fullmatch(name[len(start) : -len(TEMPORARY_SUFFIX)]):
            continue
        try:
            age = now - entry.stat(follow_symlinks=False).st_mtime
            if older_than is None or age > older_than:
                os.unlink(entry.path)
        except OSError:
            pass  # gone already, or not ours to remove: the write goes on


def atomic_write(path: str | os.PathLike[str], write: Callable[[Path], None]) -> Path:
    """Call ``write(temporary)``, then rename the temporary file to ``path``.

    The folders of ``path`` are created; an OS error (disk full, no permission) is an
    ``EvalDagError`` naming the file.
    """
    target = writable_target(path)
    start = _name_start(target)
    temporary = target.with_name(f"{start}{secrets.token_hex(4)}{TEMPORARY_SUFFIX}")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        _removed_stale(target, start)
        # Created here with the usual mode (0o666 less the umask), then filled by ``write``.
        os.close(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        write(temporary)
        os.replace(temporary, target)
    except OSError as error:
        # os.strerror: pyarrow's own wording of errno 28 buries "No space left on device"
        problem = os.strerror(error.errno) if error.errno else error.strerror or str(error)
        raise _path_error(target, problem, error) from error
    finally:
        temporary.unlink(missing_ok=True)
    return target


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` whole or not at all."""

    def written(temporary: Path) -> None:
        temporary.write_bytes(data)

    return atomic_write(path, written)


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` whole or not at all."""
    return atomic_write_bytes(path, text.encode("utf-8"))
