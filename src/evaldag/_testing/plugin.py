"""The pytest plugin (entry point ``pytest11``): eval files collected as tests.

A file named ``eval_*.py`` whose module level assigns ``data`` and ``scorers`` or ``gates`` is an
eval file (read from its source, not imported, so other ``eval_*.py`` files are left alone). It
becomes one test per gate (``gate[<id>]``) and per threshold (``threshold[<id>]``), a turn's
named ``turn<N>.<id>``, or one test (``run``) when it has neither; the eval runs once, when its
first test runs, and its results are written to ``<--evaldag-out>/<its path>.parquet``, its path
from the rootdir (``tests/a/eval_x.py`` gives ``tests/a/eval_x.parquet``: files of one name in
two folders get two results files; the default folder ``.evaldag/pytest`` under the rootdir,
rewritten each session; a run that fails before writing leaves none). A failed gate or
missed threshold fails its test like an assertion.

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
#: Where the results of eval files outside the rootdir go, under the results folder.
_ELSEWHERE = "_elsewhere"


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
        folder = _results_folder(config)
        terminalreporter.write_line(f"evaldag: results of {len(written)} eval file(s) in {folder}")


def _results_folder(config: pytest.Config) -> Path:
    folder = Path(config.getoption("evaldag_out") or config.getini("evaldag_out"))
    return config.rootpath / folder


def _results_path(config: pytest.Config, eval_file: Path) -> Path:
    """Where an eval file's results go: its path from the rootdir, under the results folder."""
    try:
        relative = eval_file.relative_to(config.rootpath)
    except ValueError:
        relative = Path(_ELSEWHERE, *eval_file.resolve().parts[1:])
    return _results_folder(config) / relative.with_suffix(".parquet")


def _defines_an_eval(path: Path) -> bool:
    """Whether the module level assigns (or imports) ``data`` and ``scorers`` or ``gates``:
    also in its ``with``, ``if``, ``try`` and ``for`` blocks and by unpacking
    (``data, gates = ...``), or an eval file would be left out of the run, its gates untested."""
    try:
        tree = ast.parse(path.read_bytes())
    except (SyntaxError, ValueError):
        return False
    names = _module_names(tree.body)
    return "data" in names and bool(names & {"scorers", "gates"})


def _module_names(body: list[ast.stmt]) -> set[str]:
    """The names statements bind at module level (function and class bodies are not)."""
    names: set[str] = set()
    for node in body:
        if isinstance(node, ast.ImportFrom):
            names.update(alias.asname or alias.name for alias in node.names)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        names.update(n.id for t in _targets(node) for n in ast.walk(t) if isinstance(n, ast.Name))
        for field in ("body", "orelse", "finalbody"):
            names |= _module_names(getattr(node, field, []))
        for block in (*getattr(node, "handlers", ()), *getattr(node, "cases", ())):
            names |= _module_names(block.body)  # except clauses, match cases
    return names


def _targets(node: ast.stmt) -> list[ast.expr]:
    """What a statement assigns to (names, or tuples and lists of them when it unpacks)."""
    if isinstance(node, ast.Assign):
        return node.targets
    if isinstance(node, ast.AnnAssign | ast.AugAssign | ast.For | ast.AsyncFor):
        return [node.target]
    if isinstance(node, ast.With | ast.AsyncWith):
        return [item.optional_vars for item in node.items if item.optional_vars is not None]
    return []


def _test_name(requirement_id: str, turn: int | None) -> str:
    """A gate's or threshold's name in its test's: its id, after ``turn<N>.`` for a turn's."""
    return requirement_id if turn is None else f"turn{turn}.{requirement_id}"


def _turn_names(definition: EvalDefinition) -> list[tuple[str, str]]:
    """The gates and thresholds of the conversations' turns in data given in the file (a file
    of data holds no scorers), each once, turn by turn; none when the data is not readable
    here (the run then says why)."""
    from evaldag._eval.column_mapping import column_mapping
    from evaldag._eval.conversations import conversation_items
    from evaldag._eval.dataset import loaded_dataset
    from evaldag.errors import EvalDagError

    data = definition.data
    if isinstance(data, str | os.PathLike) or definition.target is None:
        return []
    try:
        columns = column_mapping(definition.columns)
        _, specs = conversation_items(
            loaded_dataset(data, has_target=True, columns=columns),
            has_target=True,
            workflow_target=False,
        )
    except EvalDagError:
        return []
    found: dict[tuple[int, bool, str], None] = {}  # (turn, is a threshold, id), in data order
    for turns in specs.values():
        for turn, spec in enumerate(turns):
            found.update(dict.fromkeys((turn, False, gate.id) for gate in spec.gates))
            found.update(dict.fromkeys((turn, True, sid) for sid in spec.thresholds))
    return [
        ("threshold" if is_threshold else "gate", _test_name(rid, turn))
        for turn, is_threshold, rid in sorted(found, key=lambda key: key[:2])
    ]


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
            *_turn_names(self._definition),
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
        from evaldag._eval.eval_file import eval_data
        from evaldag._eval.run_evals import run_evals

        definition = self._definition
        out = _results_path(self.config, self.path)
        # An earlier session's file would stand for this run if it fails before writing one.
        out.unlink(missing_ok=True)
        data = eval_data(definition)
        result = run_evals(
            data,
            scorers=definition.scorers,
            gates=definition.gates,
            target=definition.target,
            columns=definition.columns,
            out=out,
            progress=False,
        )
        self.config.stash.setdefault(_WRITTEN, []).append(out)
        return result


class EvalItem(pytest.Item):
    """One gate or threshold of an eval file (or its run, when it has neither)."""

    def __init__(self, *, kind: str, requirement_id: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.kind = kind
        self.requirement_id = requirement_id

    def runtest(self) -> None:
        from evaldag._report.failing import requirements
        from evaldag._testing.failures import failure, raise_failures

        assert isinstance(self.parent, EvalFile)
        result = self.parent.result()
        raise_failures(
            [
                failure(result, requirement)
                for requirement in requirements(result)
                if requirement.is_gate == (self.kind == "gate")
                and _test_name(requirement.outcome.id, requirement.turn) == self.requirement_id
            ]
        )

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
