"""Eval files: a Python file or module whose module-level names define an eval.

``scorers`` (a list, or Mastra's agent or workflow config: ``{"agent": [...], "trajectory":
[...]}``, ``{"workflow": [...], "steps": {...}, "trajectory": [...]}``), ``gates`` (a list),
``target`` (optional: a function, ``evaldag.agent(...)``, a litellm model string, or a Hamilton
dataflow: ``evaldag.workflow(...)``, a driver or a module), ``data`` (optional: what the pytest
plugin and ``evaldag run`` without ``--data`` score; a path is read beside the file,
:func:`eval_data`) and ``columns`` (optional: run field → the data's column, as
``run_evals(columns=...)``). Misspelt names are errors, not silently ignored.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
import os
import sys
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from evaldag.errors import EvalDagError


@dataclass(frozen=True)
class EvalDefinition:
    """What an eval file defines: its scorers, gates, target, data and the data's columns."""

    name: str
    scorers: Sequence[Any] | Mapping[str, Any]
    gates: Sequence[Any]
    target: Any
    data: Any = None
    columns: Mapping[str, str] | None = None
    #: The folder of the file (or of the module's file), where a relative data path is read.
    folder: Path | None = None


def eval_definition(spec: str) -> EvalDefinition:
    """The scorers, gates, target, data and columns that the eval file or module ``spec``
    defines."""
    module = _eval_module(spec)
    missing = object()
    # ``from evaldag import scorers`` binds the module, not a list: the file assigned none
    scorers, gates = (
        value if not isinstance(value, ModuleType) else missing
        for value in (getattr(module, "scorers", missing), getattr(module, "gates", missing))
    )
    name = Path(spec).name if spec.endswith(".py") else spec
    if scorers is missing and gates is missing:
        unset = EvalDefinition(name=name, scorers=[], gates=[], target=None)
        _require_known_names(spec, module, unset)  # a misspelt "scorer" says so
        imported = isinstance(getattr(module, "scorers", None), ModuleType)
        note = " ('scorers' is only the imported module evaldag.scorers)" if imported else ""
        raise EvalDagError(
            "EVAL_DEFINES_NO_SCORERS",
            f"{spec} defines neither 'scorers' nor 'gates'{note}; add e.g. "
            "scorers = [evaldag.scorers.completeness()] at module level",
            details={"eval": spec},
        )
    definition = EvalDefinition(
        name=name,
        scorers=_entries(spec, "scorers", [] if scorers is missing else scorers),
        gates=_entries(spec, "gates", [] if gates is missing else gates),
        target=getattr(module, "target", None),
        data=getattr(module, "data", None),
        columns=_mapping(spec, getattr(module, "columns", None)),
        folder=Path(file).resolve().parent if (file := getattr(module, "__file__", None)) else None,
    )
    _require_known_names(spec, module, definition)
    return definition


def eval_data(definition: EvalDefinition) -> Any:
    """The data the eval file defines (None when it defines none): a relative path is read
    beside the file, else from the working directory; a path found in neither is an error that
    names both."""
    data = definition.data
    if not isinstance(data, str | os.PathLike) or Path(data).is_absolute():
        return data
    if definition.folder is not None:
        beside = definition.folder / data
        if beside.exists():
            return beside
    if Path(data).exists() or definition.folder is None:
        return data
    raise EvalDagError(
        "INVALID_DATA_FILE",
        f"{definition.name} defines data = {str(data)!r}, which is neither beside it "
        f"('{definition.folder / data}') nor in the working directory ('{Path(data).resolve()}')",
        details={"eval": definition.name, "path": str(data)},
    )


#: The module-level names an eval file is read through.
EVAL_NAMES = ("scorers", "gates", "target", "data", "columns")
#: Settings of a run that change its verdict or cost, which an eval file cannot give: defined
#: there, they were ignored (a max_error_share of 0.1 let a run with 30 % errors pass).
RUN_SETTINGS = (
    "trials",
    "reducer",
    "max_error_share",
    "budget_usd",
    "step_timeout",
    "target_timeout",
)


def _require_known_names(spec: str, module: ModuleType, definition: EvalDefinition) -> None:
    """A misspelt name (``gate``, ``scorer``, ``thresholds``) or a list of scorers that neither
    ``scorers`` nor ``gates`` holds would be silently ignored: both are errors."""
    from evaldag._scorer.builder import Scorer, ScorerWithThreshold

    used = {id(entry) for entry in (*_listed(definition.scorers), *definition.gates)}
    for name, value in vars(module).items():
        if name.startswith("_") or name in EVAL_NAMES or isinstance(value, ModuleType):
            continue
        close = difflib.get_close_matches(name.lower(), EVAL_NAMES, n=1, cutoff=0.7)
        if name.lower() in ("threshold", "thresholds"):
            hint = "a threshold goes with its scorer: scorers = [scorer.with_threshold(0.7)]"
        elif name in RUN_SETTINGS:
            hint = (
                f"it is a setting of the run: give --{name.replace('_', '-')} to 'evaldag run', "
                f"or {name}= to run_evals"
            )
        elif close and (not callable(value) or (close[0] == "target" and not definition.target)):
            # helper functions (target_fn, score_gate) are fine; a target left unset is not
            hint = f"did you mean {close[0]}?"
        elif (
            isinstance(value, list | tuple)
            and value
            and all(
                isinstance(v, Scorer | ScorerWithThreshold) and id(v) not in used for v in value
            )
        ):
            hint = "its scorers are in neither scorers nor gates; add them to one of those"
        else:
            continue
        raise EvalDagError(
            "EVAL_UNKNOWN_NAME",
            f"{spec} defines '{name}', which evaldag does not read ({hint}); an eval file "
            f"is read through {', '.join(EVAL_NAMES)}",
            details={"eval": spec, "name": name},
        )


def _listed(scorers: Sequence[Any] | Mapping[str, Any]) -> list[Any]:
    """Every scorer entry of a list, or of an agent or workflow config (``steps`` included)."""
    if not isinstance(scorers, Mapping):
        return list(scorers)
    entries = []
    for key, value in scorers.items():
        groups = value.values() if key == "steps" and isinstance(value, Mapping) else [value]
        entries += [entry for group in groups if isinstance(group, list | tuple) for entry in group]
    return entries


def _entries(spec: str, name: str, value: Any) -> Any:
    if name == "scorers" and isinstance(value, Mapping):
        return value  # an agent or workflow config, checked by run_evals
    if not isinstance(value, list | tuple):
        raise EvalDagError(
            "EVAL_INVALID_ENTRIES",
            f"{spec}: '{name}' must be a list, got {type(value).__name__}; write {name} = [...]",
            details={"eval": spec, "name": name},
        )
    return list(value)


def _mapping(spec: str, value: Any) -> Mapping[str, str] | None:
    """The file's ``columns``, which run_evals checks entry by entry."""
    if value is not None and not isinstance(value, Mapping):
        raise EvalDagError(
            "EVAL_INVALID_ENTRIES",
            f"{spec}: 'columns' must be a dict of run field → data column, got "
            f"{type(value).__name__}; write columns = {{'input': 'question', ...}}",
            details={"eval": spec, "name": "columns"},
        )
    return value


def _eval_module(spec: str) -> ModuleType:
    path = Path(spec)
    try:
        if spec.endswith(".py") or path.is_file():
            return _module_from_file(path)
        # A console script's sys.path lacks the working directory; ``python -m`` has it.
        if os.getcwd() not in sys.path:
            sys.path.insert(0, os.getcwd())
        return importlib.import_module(spec)
    except EvalDagError:
        raise
    except ModuleNotFoundError as error:
        if error.name is not None and (spec == error.name or spec.startswith(f"{error.name}.")):
            raise EvalDagError(
                "EVAL_NOT_FOUND",
                f"no eval file or module named '{spec}': give a path to a .py file or a module "
                "importable from the current directory",
                details={"eval": spec},
            ) from None
        raise _load_error(spec, error) from error
    except Exception as error:  # the user's eval code failed while loading
        raise _load_error(spec, error) from error


def _module_from_file(path: Path) -> ModuleType:
    if not path.is_file():
        raise EvalDagError(
            "EVAL_NOT_FOUND", f"eval file '{path}' does not exist", details={"eval": str(path)}
        )
    # Like ``python file.py``: modules next to the eval file are importable from it.
    folder = str(path.resolve().parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    name = f"evaldag_eval_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise EvalDagError(
            "EVAL_NOT_FOUND",
            f"'{path}' cannot be loaded as Python; give a .py file",
            details={"eval": str(path)},
        )
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    _pickled_by_value(module)
    spec.loader.exec_module(module)
    return module


def _pickled_by_value(module: ModuleType) -> None:
    """The eval file's functions travel to a cluster's workers (``--executor``) by value: the
    workers cannot import it by its name."""
    try:
        import cloudpickle  # Dask's and Ray's: there is no cluster without it
    except ImportError:
        return
    cloudpickle.register_pickle_by_value(module)


def _load_error(spec: str, error: BaseException) -> EvalDagError:
    frames = traceback.extract_tb(error.__traceback__)
    where = f" ({frames[-1].filename}, line {frames[-1].lineno})" if frames else ""
    return EvalDagError(
        "EVAL_LOAD_FAILED",
        f"loading {spec} raised {type(error).__name__}: {error}{where}",
        details={"eval": spec},
        cause=error,
    )
