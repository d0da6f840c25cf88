"""evaldag's build, for the one optional part that pyproject.toml cannot say: compiling the
completeness tagger.

``pip install .`` and ``pip install -e .`` build pure Python, as always. With
``EVALDAG_COMPILE=1`` set, the tagger's modules (``src/evaldag/scorers/_nlp``, the port of
compromise) are also compiled with mypyc into C extensions, which need a C compiler and take a
few minutes to build; the completeness scorer then runs about twice as fast (see
``benchmarks/RESULTS.md``), with the same results. The ``.py`` files stay in the package beside
the extensions, which Python imports first. An editable compiled install
(``EVALDAG_COMPILE=1 pip install -e .``) builds them in ``src``: after editing a module, build
again (or delete the ``.so`` files, which git ignores).
"""

from __future__ import annotations

import os

from setuptools import setup

#: The tagger's modules mypyc compiles (``__init__.py`` stays Python: it is the entry point).
NLP_MODULES = [
    f"src/evaldag/scorers/_nlp/{name}.py"
    for name in (
        "_contractions", "_lexicon", "_match", "_model", "_posttag", "_pretag", "_syntax",
        "_tags", "_tokens", "_verbs", "_views",
    )
]  # fmt: skip


def _compiled() -> dict:
    if os.environ.get("EVALDAG_COMPILE", "").strip() not in ("1", "true", "yes"):
        return {}
    try:
        from mypyc.build import mypycify
    except ImportError:
        # pip's isolated build env asks setup.py for its build requirements first: mypy is
        # one only when compiling. The build that follows has it.
        return {"setup_requires": ["mypy>=1.10"]}
    # The tagger imports nothing of evaldag outside itself: mypy reads only these modules
    # (following the package's imports would type-check all of evaldag and its dependencies).
    # No config file: pyproject.toml's [tool.mypy] is for checking all of evaldag (its pydantic
    # plugin is not in a build environment).
    options = ["--follow-imports=skip", "--config-file="]
    return {
        "ext_modules": mypycify(
            [*options, *NLP_MODULES], opt_level=os.environ.get("MYPYC_OPT_LEVEL", "3")
        )
    }


setup(**_compiled())
