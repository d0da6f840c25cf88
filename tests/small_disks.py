"""A full disk for tests, real: a 1 MB tmpfs mounted for the test (as root) and filled.

``full_disk`` is the folder of a file system of its own, empty; ``filled(folder)`` fills it to
its last byte (into a file named ``filler``). Without root (no ``mount``), the tests skip and
say why. Register the fixture in a test module (``tests/conftest.py`` does for all)::

    from small_disks import full_disk  # noqa: F401 (registers the fixture)
"""

from __future__ import annotations

import errno
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def full_disk(tmp_path: Path) -> Iterator[Path]:
    """A folder on a 1 MB file system of its own (a tmpfs: needs root), for the test to fill."""
    folder = tmp_path / "small"
    folder.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(folder)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs (needs root): {mounted.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def filled(folder: Path) -> None:
    """Fill ``folder``'s file system to its last byte."""
    with (folder / "filler").open("wb", buffering=0) as filler:
        try:
            while True:
                filler.write(b"\0" * 4096)
        except OSError as error:
            assert error.errno == errno.ENOSPC
