"""ruff is part of the tests: the code base stays lint-clean."""

import shutil
import subprocess
import sys
from pathlib import Path

from repo_paths import ROOT


def test_ruff_is_clean():
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    assert ruff, "ruff is not installed; install the dev extra: pip install -e '.[dev]'"
    completed = subprocess.run([ruff, "check", str(ROOT)], capture_output=True, text=True)
    assert completed.returncode == 0, completed.stdout + completed.stderr
