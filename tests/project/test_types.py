"""mypy over src/evaldag, as pyproject.toml configures it, finds nothing."""

import subprocess
import sys

import pytest
from repo_paths import ROOT


@pytest.mark.slow
def test_mypy_finds_nothing_in_the_package(tmp_path):
    checked = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
