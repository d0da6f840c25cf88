"""evaldag: score LLM apps and agents with scorers that are Apache Hamilton DAGs.

The public API is imported lazily, so ``import evaldag`` stays fast: Hamilton, pandas and
litellm load when first needed.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS = {
    "EvalDagError": "evaldag.errors",
    "ScorerRunError": "evaldag.errors",
    "ScorerRun": "evaldag.runs",
    "ScorerResult": "evaldag.results",
    "JudgeExecution": "evaldag.results",
    "JudgeUsage": "evaldag.results",
    "JudgeCost": "evaldag.results",
    "Judge": "evaldag.judge",
    "JudgeError": "evaldag.judging",
    "NotScorableInfo": "evaldag.results",
    "PromptStep": "evaldag.steps",
    "not_scorable": "evaldag.steps",
    "is_not_scorable": "evaldag.steps",
    "Scorer": "evaldag.scorer",
    "create_scorer": "evaldag.scorer",
    "run_evals": "evaldag.evals",
    "visualize": "evaldag.evals",
    "EvalResult": "evaldag.eval_result",
    "GateResult": "evaldag.eval_result",
    "ThresholdResult": "evaldag.eval_result",
    "ScorerWithThreshold": "evaldag.thresholds",
    "filter_run": "evaldag.run_filter",
    "checks": "evaldag.checks",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from evaldag import checks
    from evaldag.errors import EvalDagError, ScorerRunError
    from evaldag.eval_result import EvalResult, GateResult, ThresholdResult
    from evaldag.evals import run_evals, visualize
    from evaldag.judge import Judge
    from evaldag.judging import JudgeError
    from evaldag.results import JudgeCost, JudgeExecution, JudgeUsage, NotScorableInfo, ScorerResult
    from evaldag.run_filter import filter_run
    from evaldag.runs import ScorerRun
    from evaldag.scorer import Scorer, create_scorer
    from evaldag.steps import PromptStep, is_not_scorable, not_scorable
    from evaldag.thresholds import ScorerWithThreshold


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'evaldag' has no attribute {name!r}")
    value = importlib.import_module(module)
    if module != f"{__name__}.{name}":  # a module exported whole, such as evaldag.checks
        value = getattr(value, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
