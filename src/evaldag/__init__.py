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
    "NotScorableInfo": "evaldag.results",
    "PromptStep": "evaldag.steps",
    "not_scorable": "evaldag.steps",
    "is_not_scorable": "evaldag.steps",
    "Scorer": "evaldag.scorer",
    "create_scorer": "evaldag.scorer",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from evaldag.errors import EvalDagError, ScorerRunError
    from evaldag.results import JudgeCost, JudgeExecution, JudgeUsage, NotScorableInfo, ScorerResult
    from evaldag.runs import ScorerRun
    from evaldag.scorer import Scorer, create_scorer
    from evaldag.steps import PromptStep, is_not_scorable, not_scorable


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'evaldag' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
