"""Every file evaldag writes is written whole or not at all.

A file is written to a temporary name beside it and renamed into place, so a kill or a full
disk never leaves half a file; the temporary file is removed on every way out. An existing
target that is not a regular file (a device such as ``/dev/null``, a FIFO, a directory) is
refused: renaming over it would replace the machine's device node when run as root.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable
from pathlib import Path

from evaldag.errors import EvalDagError


def _path_error(path: Path, problem: str, cause: BaseException | None = None) -> EvalDagError:
    return EvalDagError(
        "INVALID_OUTPUT_PATH",
        f"Cannot write '{path}': {problem}",
        category="SYSTEM" if isinstance(cause, OSError) else "USER",
        details={"path": str(path)},
        cause=cause,
    )


def writable_target(path: str | os.PathLike[str]) -> Path:
    """``path`` as a file evaldag may write: new, or an existing regular file."""
    target = Path(path)
    if not str(path).strip():
        raise _path_error(target, "the path is empty")
    if target.is_dir():
        raise _path_error(target, "it is a directory; give the path of a file")
    if target.exists() and not target.is_file():
        raise _path_error(
            target, "it exists and is not a regular file (a device, a FIFO or a socket)"
        )
    return target


def atomic_write(path: str | os.PathLike[str], write: Callable[[Path], None]) -> Path:
    """Call ``write(temporary)``, then rename the temporary file to ``path``.

    The folders of ``path`` are created; an OS error (disk full, no permission) is an
    ``EvalDagError`` naming the file.
    """
    target = writable_target(path)
    temporary = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        # Created here with the usual mode (0o666 less the umask), then filled by ``write``.
        os.close(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        write(temporary)
        os.replace(temporary, target)
    except OSError as error:
        raise _path_error(target, error.strerror or str(error), error) from error
    finally:
        temporary.unlink(missing_ok=True)
    return target


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` whole or not at all."""
    return atomic_write(path, lambda temporary: temporary.write_bytes(data))


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` whole or not at all."""
    return atomic_write_bytes(path, text.encode("utf-8"))
