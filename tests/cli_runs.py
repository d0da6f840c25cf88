"""``evaldag`` run as a command in this process: ``main()`` with the working directory and the
output captured, giving what ``subprocess.run(..., capture_output=True, text=True)`` gives.

For the tests whose subject is what a command reads, writes and says, not the process: each
``evaldag`` process pays about a second of imports. A test whose subject is the process itself
(its exit status, a signal, a console script's ``sys.path``, a real stderr) starts one.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest


def evaldag_here(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *args: object, cwd: Path
) -> subprocess.CompletedProcess[str]:
    """``evaldag *args`` run by ``main()`` in ``cwd``: its exit code, stdout and stderr."""
    from evaldag._cli.main import main

    monkeypatch.chdir(cwd)
    capsys.readouterr()  # what the test printed before is not the command's
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return subprocess.CompletedProcess([str(a) for a in args], code, captured.out, captured.err)
