"""ruff is part of the tests: the code base stays lint-clean."""

import ast
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


def test_a_test_module_imports_test_modules_of_its_own_folder_only():
    """pytest puts a test's own folder on sys.path, and tests/ (pythonpath): a test module of
    another folder imports only when that folder was collected first, so running one folder
    alone would fail. Shared cases live in tests/*.py beside conftest.py."""
    tests = ROOT / "tests"
    own = {path.stem: path.parent for path in tests.rglob("test_*.py")}
    crossing = []
    for path in tests.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names = [node.module]
            for name in names:
                folder = own.get(name.split(".")[0])
                if folder is not None and folder != path.parent:
                    crossing.append(f"{path.relative_to(ROOT)} imports {name}")
    assert not crossing, crossing
