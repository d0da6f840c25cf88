"""The house: packages import only downward, no import cycles, Hamilton only in the graphs,
small modules, imports change nothing.

The import graph is read from the source (AST), so a function-level import counts as an edge;
imports under ``if TYPE_CHECKING:`` do not, since they never run. The package order is the one
docs/concepts.md writes down ("Where things live").
"""

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from repo_paths import ROOT

PACKAGE = ROOT / "src" / "evaldag"
CONCEPTS = ROOT / "docs" / "concepts.md"
MAX_LINES = 600
#: The one import that goes up the order: a Scorer runs (and draws) its own DAG, as Mastra's
#: ``scorer.run`` asks, through the graphs, which build on what a scorer is.
EXCEPTION = ("evaldag._scorer.builder", "evaldag._graph")
#: The methods of ``Scorer`` that make the exception, each importing ``_graph`` when called.
EXCEPTION_METHODS = {"_driver", "run_one", "visualize"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imported_names(module: str, path: Path) -> set[str]:
    """Every name ``module`` imports (``a.b`` for ``import a.b``, ``a.b.c`` for ``from a.b import
    c``), at any depth of its code."""
    found: set[str] = set()
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
            found.update(f"{base}.{alias.name}" for alias in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text()))
    return found


NAMES = {module: _imported_names(module, path) for module, path in MODULES.items()}


def _edges(module: str, names: set[str]) -> set[str]:
    """The evaldag modules that importing ``names`` runs."""
    edges = set()
    for name in names:
        parts = name.split(".")
        # Importing a.b.c runs a and a.b too; a module's own packages are already running.
        for end in range(1, len(parts) + 1):
            prefix = ".".join(parts[:end])
            if prefix in MODULES and prefix != module and not module.startswith(prefix + "."):
                edges.add(prefix)
    return edges


IMPORTS = {module: _edges(module, names) for module, names in NAMES.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return components


def test_the_import_graph_has_no_cycle():
    assert _cycles(IMPORTS) == []


def test_the_cycle_finder_finds_cycles():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def _package(module: str) -> str:
    """The package ``module`` belongs to: ``evaldag._judge`` for ``evaldag._judge.records``; a
    module at the root is a package of its own, and ``evaldag`` is ``__init__.py``."""
    return ".".join(module.split(".")[:2])


def _defining_module(name: str) -> str | None:
    """The evaldag module an imported name comes from: the longest of its prefixes that is one
    (``evaldag`` itself for a name its ``__init__.py`` defines)."""
    parts = name.split(".")
    return next(
        (
            ".".join(parts[:end])
            for end in range(len(parts), 0, -1)
            if ".".join(parts[:end]) in MODULES
        ),
        None,
    )


def _lazy_exports() -> set[str]:
    """The modules ``evaldag/__init__.py`` imports on first use of a public name (``_EXPORTS``)."""
    for node in ast.parse((PACKAGE / "__init__.py").read_text()).body:
        if isinstance(node, ast.Assign) and [t.id for t in node.targets] == ["_EXPORTS"]:
            return {value.value for value in node.value.values}
    raise AssertionError("evaldag/__init__.py has no _EXPORTS")


def _package_imports() -> set[tuple[str, str]]:
    """(importing module, imported package) for every import across packages."""
    imports = {(m, _defining_module(n)) for m, names in NAMES.items() for n in names}
    imports |= {("evaldag", module) for module in _lazy_exports()}
    return {(m, _package(t)) for m, t in imports if t is not None and _package(t) != _package(m)}


def _written_order() -> list[str]:
    """The packages as docs/concepts.md lists them under "Where things live", bottom up."""
    section = CONCEPTS.read_text().split("\n## Where things live\n", 1)[1]
    table = section.split("| --- | --- |\n", 1)[1].split("\n\n", 1)[0]
    rows = table.splitlines()
    names = [found.group(1) for found in map(re.compile(r"\| `([^`]+)` \|").match, rows) if found]
    assert len(names) == len(rows), "each row of the table names one package"
    return [
        "evaldag"
        if name == "__init__.py"
        else f"evaldag.{name.removesuffix('/').removesuffix('.py')}"
        for name in names
    ]


ORDER = _written_order()
PACKAGE_IMPORTS = _package_imports()


def test_every_package_has_one_place_in_the_written_order():
    assert len(ORDER) == len(set(ORDER)), ORDER
    assert set(ORDER) == {_package(m) for m in MODULES}


def test_packages_import_only_downward():
    rank = {package: i for i, package in enumerate(ORDER)}
    upward = sorted(
        (module, package)
        for module, package in PACKAGE_IMPORTS
        if rank[package] > rank[_package(module)] and (module, package) != EXCEPTION
    )
    assert upward == [], "imports of packages written after the importer in docs/concepts.md"


def test_the_package_graph_has_no_cycle():
    graph: dict[str, set[str]] = {package: set() for package in ORDER}
    for module, package in PACKAGE_IMPORTS - {EXCEPTION}:
        graph[_package(module)].add(package)
    assert _cycles(graph) == []


def _functions_importing(path: Path, package: str) -> set[str]:
    """The functions of ``path`` that import from ``package`` (``<module>`` for an import outside
    any function); imports under ``if TYPE_CHECKING:`` aside."""
    found: set[str] = set()

    def visit(node: ast.AST, function: str) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            return
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(package):
            found.add(function)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            function = node.name
        for child in ast.iter_child_nodes(node):
            visit(child, function)

    visit(ast.parse(path.read_text()), "<module>")
    return found


def test_the_one_exception_is_scorer_run_importing_the_graphs_when_called():
    module, package = EXCEPTION
    assert EXCEPTION in PACKAGE_IMPORTS  # an exception nobody needs is removed
    assert _functions_importing(MODULES[module], package) == EXCEPTION_METHODS


def test_an_import_counts_for_the_package_that_defines_the_name():
    assert _package("evaldag._judge.records") == "evaldag._judge"
    assert _package("evaldag.scorers.llm.bias") == "evaldag.scorers"
    assert _defining_module("evaldag._version.__version__") == "evaldag._version"
    assert _defining_module("evaldag.__version__") == "evaldag"
    assert ("evaldag._engine.stages", "evaldag._judge") in PACKAGE_IMPORTS


def test_no_module_imports_a_private_name_of_another():
    """A module is used through its public names (``_eval.estimate`` once imported run_evals'
    private ``_plan``); only a helper module of its package's own (``scorers/_trajectory.py``)
    shares private ones."""
    private = sorted(
        (module, name)
        for module, names in NAMES.items()
        for name in names
        if name not in MODULES
        and (source := _defining_module(name)) not in (None, module)
        and name.rsplit(".", 1)[-1].startswith("_")
        and not name.endswith("__")
        and not (source.rsplit(".", 1)[-1].startswith("_") and _package(source) == _package(module))
    )
    assert private == []


def _modules_importing(package: str) -> list[str]:
    return sorted(
        m
        for m, names in NAMES.items()
        if any(n == package or n.startswith(package + ".") for n in names)
    )


def test_only_the_graphs_use_hamiltons_decorators():
    users = _modules_importing("hamilton.function_modifiers")
    assert users and all(m.startswith("evaldag._graph.") for m in users), users


@pytest.mark.parametrize("layer", ["evaldag._scorer", "evaldag._engine", "evaldag._results"])
def test_scorers_engine_and_results_run_without_hamilton(layer):
    assert [m for m in _modules_importing("hamilton") if m.startswith(layer)] == []


@pytest.mark.parametrize("layer", ["evaldag._engine", "evaldag._graph"])
def test_engine_and_graphs_read_scorers_through_the_protocol(layer):
    users = [
        m
        for m, edges in IMPORTS.items()
        if m.startswith(layer) and edges & {"evaldag._scorer.builder"}
    ]
    assert users == []


def test_no_temporary_modules():
    assert [m for m, path in MODULES.items() if "create_temporary_module" in path.read_text()] == []


def test_every_module_reads_at_once():
    long = {m: n for m, p in MODULES.items() if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert long == {}


@pytest.mark.slow
def test_importing_every_module_changes_nothing_global():
    """No umask flip, no Hamilton adapter registered, no logging or litellm settings changed."""
    probe = f"""
import importlib, json, logging, os
import hamilton.io.materialization  # Hamilton registers its own savers when first imported
from hamilton import registry

def state():
    umask = os.umask(0o022); os.umask(umask)
    loggers = {{n: (l.level, len(l.handlers)) for n, l in logging.root.manager.loggerDict.items()
               if isinstance(l, logging.Logger)}}
    return {{"umask": umask, "savers": sorted(registry.SAVER_REGISTRY),
            "root": [logging.root.level, len(logging.root.handlers)],
            "env": sorted(os.environ), "loggers": loggers}}

os.umask(0o027)
before = state()
for name in {sorted(MODULES)!r}:
    if name != "evaldag.__main__":
        importlib.import_module(name)
after = state()
new_loggers = set(after["loggers"]) - set(before["loggers"])
for name in new_loggers:  # loggers that libraries create at import are fine if left untouched
    if not name.startswith("evaldag"):
        after["loggers"].pop(name)
print(json.dumps({{"before": before, "after": after}}))
"""
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    states = json.loads(done.stdout.splitlines()[-1])
    before, after = states["before"], states["after"]
    for key in ("umask", "savers", "root", "env"):
        assert after[key] == before[key], key
    changed = {
        name: level
        for name, level in after["loggers"].items()
        if before["loggers"].get(name, level) != level
        or (name.startswith("evaldag") and level != [0, 0])
    }
    assert changed == {}


_CODE_SCORER_RUN = """
import json, os, sys
import evaldag
from evaldag import checks

result = evaldag.run_evals(
    [{"input": "a", "output": "hello world"}], scorers=[checks.includes("hello")], progress=False
)
assert result.summary.total_items == 1
heavy = {"litellm", "dask", "ray", "aiohttp", "graphviz"}  # graphviz: a picture not asked for
print(json.dumps({
    "imported": sorted({m.split(".")[0] for m in sys.modules} & heavy),
    "extensions": sorted(m for m in sys.modules if m.startswith("hamilton.plugins.")),
    "setting": os.environ.get("HAMILTON_AUTOLOAD_EXTENSIONS"),
}))
"""


def _code_scorer_run(**env: str) -> dict:
    environment = {k: v for k, v in os.environ.items() if k != "HAMILTON_AUTOLOAD_EXTENSIONS"}
    done = subprocess.run(
        [sys.executable, "-c", _CODE_SCORER_RUN],
        capture_output=True, text=True, env={**environment, **env},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.slow
def test_a_code_scorer_run_imports_no_judge_transport_and_no_hamilton_extension():
    found = _code_scorer_run()
    assert found == {"imported": [], "extensions": [], "setting": None}


@pytest.mark.slow
def test_hamilton_autoloads_its_extensions_when_the_user_says_so():
    found = _code_scorer_run(HAMILTON_AUTOLOAD_EXTENSIONS="1")
    assert "hamilton.plugins.pandas_extensions" in found["extensions"]
    assert found["setting"] == "1"
