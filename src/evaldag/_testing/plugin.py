"""The pytest plugin (entry point ``pytest11``): eval files collected as tests.

A file named ``eval_*.py`` whose module level assigns ``data`` and ``scorers`` or ``gates`` is an
eval file (read from its source, not imported, so other ``eval_*.py`` files are left alone). It
becomes one test per gate (``gate[<id>]``) and per threshold (``threshold[<id>]``), or one test
(``run``) when it has neither; the eval runs once, when its first test runs, and its results are
written to ``<--evaldag-out>/<file name>.parquet`` (default ``.evaldag/pytest`` under the rootdir,
rewritten each session). A failed gate or missed threshold fails its test like an assertion.

Until it meets an eval file the plugin imports only pytest and the standard library, so test
suites without eval files run as if it were not installed; ``-p no:evaldag`` turns it off.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from evaldag._eval.eval_file import EvalDefinition
    from evaldag._results.eval_result import EvalResult

EVAL_FILES = "eval_*.py"
DEFAULT_OUT = ".evaldag/pytest"
_WRITTEN = pytest.StashKey[list[Path]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("evaldag", "evaldag eval files (eval_*.py)")
    group.addoption(
        "--evaldag-out",
        metavar="DIR",
        help=f"where the eval files' results go, one .parquet each (default: {DEFAULT_OUT})",
    )
    parser.addini("evaldag_out", "where the eval files' results go", default=DEFAULT_OUT)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if file_path.match(EVAL_FILES) and _defines_an_eval(file_path):
        return EvalFile.from_parent(parent, path=file_path)
    return None


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    written = config.stash.get(_WRITTEN, [])
    if written:
        folder = written[0].parent
        terminalreporter.write_line(f"evaldag: results of {len(written)} eval file(s) in {folder}")


def _defines_an_eval(path: Path) -> bool:
    """Whether the module level assigns (or imports) ``data`` and ``scorers`` or ``gates``."""
    try:
        tree = ast.parse(path.read_bytes())
    except (SyntaxError, ValueError):
        return False
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign | ast.AugAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.ImportFrom):
            names.update(alias.asname or alias.name for alias in node.names)
    return "data" in names and bool(names & {"scorers", "gates"})


class EvalFile(pytest.File):
    """An eval file: its gates and thresholds as tests, its eval run once for all of them."""

    _definition: EvalDefinition
    _outcome: EvalResult | BaseException | None = None

    def collect(self) -> list[pytest.Item]:
        from evaldag._eval.eval_file import eval_definition
        from evaldag._eval.eval_plan import eval_plan
        from evaldag.errors import EvalDagError

        try:
            self._definition = eval_definition(str(self.path))
            # The plan run_evals makes: a workflow target's config keyed as run_evals keys it.
            plan = eval_plan(
                self._definition.scorers, self._definition.gates, self._definition.target
            )
        except EvalDagError as error:
            raise self.CollectError(f"{self.path.name}: {error.message}") from error
        names = [
            *(("gate", gate_id) for gate_id in plan.gate_ids),
            *(("threshold", sid) for sid in plan.thresholds),
        ]
        if not names:
            return [EvalItem.from_parent(self, name="run", kind="run", requirement_id="")]
        return [
            EvalItem.from_parent(self, name=f"{kind}[{rid}]", kind=kind, requirement_id=rid)
            for kind, rid in names
        ]

    def result(self) -> EvalResult:
        """The eval's result: run on the first call, kept for the file's other tests."""
        if self._outcome is None:
            try:
                self._outcome = self._run()
            except Exception as error:
                self._outcome = error
        if isinstance(self._outcome, BaseException):
            raise self._outcome
        return self._outcome

    def _run(self) -> EvalResult:
        from evaldag._eval.run_evals import run_evals

        definition = self._definition
        data = definition.data
        if isinstance(data, str | os.PathLike) and not Path(data).is_absolute():
            beside = self.path.parent / data
            data = beside if beside.exists() else data
        config = self.config
        folder = Path(config.getoption("evaldag_out") or config.getini("evaldag_out"))
        out = config.rootpath / folder / f"{self.path.stem}.parquet"
        result = run_evals(
            data,
            scorers=definition.scorers,
            gates=definition.gates,
            target=definition.target,
            out=out,
            progress=False,
        )
        config.stash.setdefault(_WRITTEN, []).append(out)
        return result


class EvalItem(pytest.Item):
    """One gate or threshold of an eval file (or its run, when it has neither)."""

    def __init__(self, *, kind: str, requirement_id: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.kind = kind
        self.requirement_id = requirement_id

    def runtest(self) -> None:
        from evaldag._testing.failures import gate_failure, raise_failures, threshold_failure

        assert isinstance(self.parent, EvalFile)
        result = self.parent.result()
        if self.kind == "gate":
            gates = [g for g in result.gate_results if g.id == self.requirement_id]
            raise_failures([gate_failure(result, g) for g in gates])
        elif self.kind == "threshold":
            thresholds = [t for t in result.threshold_results if t.id == self.requirement_id]
            raise_failures([threshold_failure(result, t) for t in thresholds])

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        from evaldag.errors import EvalDagError

        error = excinfo.value
        if isinstance(error, AssertionError):
            return f"AssertionError: {error}"
        if isinstance(error, EvalDagError):
            return f"{type(error).__name__}: {error.message}"
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, self.name
