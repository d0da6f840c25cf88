"""The completeness tagger compiled with mypyc (``setup.py`` with ``EVALDAG_COMPILE=1``) reads
every text as the pure Python tagger does.

Each side runs in its own process on its own copy of ``src``: one with the ``.py`` files only,
one built in place by the repository's ``setup.py`` (at mypyc's ``-O0``, which compiles in a
fraction of ``-O3``'s time and means the same code).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig

import pytest
import repo_paths

ROOT = repo_paths.ROOT
PROSE = repo_paths.FIXTURES / "code_scorers"

_ELEMENTS = """
import json, sys
from evaldag.scorers import _nlp
from evaldag.scorers._nlp import _match
texts = json.load(open(sys.argv[1], encoding="utf-8"))
print(json.dumps({"match": _match.__file__,
                  "elements": [_nlp.completeness_elements(text) for text in texts]}))
"""


def _texts() -> list[str]:
    pairs = [
        *json.loads((PROSE / "completeness-prose.heldout.json").read_text(encoding="utf-8")),
        *json.loads((PROSE / "text-pairs.public.json").read_text(encoding="utf-8")),
    ]
    return list(dict.fromkeys(text for pair in pairs for text in (pair["input"], pair["output"])))


def _elements(src, texts_file) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", _ELEMENTS, str(texts_file)],
        capture_output=True, text=True, check=True,
        env={**os.environ, "PYTHONPATH": str(src), "PYTHONDONTWRITEBYTECODE": "1"},
    )  # fmt: skip
    return json.loads(done.stdout)


@pytest.mark.slow
def test_the_compiled_tagger_gives_the_pure_taggers_elements(tmp_path):
    compiler = shlex.split(sysconfig.get_config_var("CC") or "cc")[0]
    if shutil.which(compiler) is None:
        pytest.skip(f"no C compiler ({compiler}) to build the compiled tagger with")
    ignore = shutil.ignore_patterns("__pycache__", "*.so")
    for side in ("pure", "compiled"):
        shutil.copytree(ROOT / "src", tmp_path / side / "src", ignore=ignore)
    for name in ("setup.py", "pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, tmp_path / "compiled" / name)
    built = subprocess.run(
        [sys.executable, "setup.py", "build_ext", "--inplace"],
        cwd=tmp_path / "compiled", capture_output=True, text=True,
        env={**os.environ, "EVALDAG_COMPILE": "1", "MYPYC_OPT_LEVEL": "0"},
    )  # fmt: skip
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
    texts = _texts()
    texts_file = tmp_path / "texts.json"
    texts_file.write_text(json.dumps(texts), encoding="utf-8")

    pure = _elements(tmp_path / "pure" / "src", texts_file)
    compiled = _elements(tmp_path / "compiled" / "src", texts_file)

    assert pure["match"].endswith(".py")
    assert compiled["match"].endswith(".so")
    assert len(compiled["elements"]) == len(texts) > 1_800
    differing = [
        text
        for text, ours, theirs in zip(texts, compiled["elements"], pure["elements"], strict=True)
        if ours != theirs
    ]
    assert differing == []
