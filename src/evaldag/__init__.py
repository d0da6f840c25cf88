"""evaldag: score LLM apps and agents with scorers that are Apache Hamilton DAGs.

The public API is imported lazily, so ``import evaldag`` stays fast: Hamilton, pandas and
litellm load when first needed.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from evaldag._version import __version__ as __version__

_EXPORTS = {
    "EvalDagError": "evaldag.errors",
    "ScorerRunError": "evaldag.errors",
    "UntrustworthyRunError": "evaldag.errors",
    "ResultNotSavedError": "evaldag.errors",
    "OnItemCompleteError": "evaldag.errors",
    "ScorerRun": "evaldag._scorer.run",
    "ScorerResult": "evaldag._results.scorer_result",
    "JudgeExecution": "evaldag._judge.records",
    "JudgeUsage": "evaldag._judge.records",
    "JudgeCost": "evaldag._judge.records",
    "Judge": "evaldag._judge.settings",
    "JudgeError": "evaldag._judge.errors",
    "CallFault": "evaldag._judge.errors",
    "Transport": "evaldag._judge.transports",
    "Route": "evaldag._judge.transports",
    "register_transport": "evaldag._judge.transports",
    "NotScorableInfo": "evaldag._results.scorer_result",
    "PromptStep": "evaldag._scorer.steps",
    "not_scorable": "evaldag._scorer.steps",
    "is_not_scorable": "evaldag._scorer.steps",
    "Scorer": "evaldag._scorer.builder",
    "DataNeed": "evaldag._scorer.needs",
    "create_scorer": "evaldag._scorer.builder",
    "run_evals": "evaldag._eval.run_evals",
    "visualize": "evaldag._eval.visualize",
    "EvalResult": "evaldag._results.eval_result",
    "GateResult": "evaldag._results.eval_result",
    "ThresholdResult": "evaldag._results.eval_result",
    "ScorerWithThreshold": "evaldag._scorer.builder",
    "Reducer": "evaldag._results.reducers",
    "pass_at_k": "evaldag._results.reducers",
    "pass_hat_k": "evaldag._results.reducers",
    "TrialSpread": "evaldag._results.trials",
    "filter_run": "evaldag._scorer.run_filter",
    "compare_experiments": "evaldag._experiments.compare",
    "agreement": "evaldag._agreement.agreement",
    "Agreement": "evaldag._agreement.agreement",
    "compare_judges": "evaldag._agreement.judges",
    "JudgeComparison": "evaldag._agreement.judges",
    "cost_estimate": "evaldag._eval.estimate",
    "CostEstimate": "evaldag._eval.estimate",
    "Comparison": "evaldag._experiments.compare",
    "ScoreStore": "evaldag._store.stores",
    "SqlScoreStore": "evaldag._store.sql",
    "register_store": "evaldag._store.stores",
    "ScoreRow": "evaldag._store.rows",
    "read_scores": "evaldag._store.locations",
    "read_results": "evaldag._results.files",
    "read_traces": "evaldag._traces.table",
    "live": "evaldag._live.wrapper",
    "LiveScoring": "evaldag._live.wrapper",
    "LiveStats": "evaldag._live.wrapper",
    "OtlpReceiver": "evaldag._receiver.receiver",
    "ReceiverStats": "evaldag._receiver.receiver",
    "serve": "evaldag._receiver.serving",
    "checks": "evaldag.checks",
    "scorers": "evaldag.scorers",
    "messages": "evaldag.messages",
    "transcripts": "evaldag.transcripts",
    "local_judge": "evaldag.local_judge",
    "agent": "evaldag._targets.agent",
    "Agent": "evaldag._targets.agent",
    "workflow": "evaldag._targets.workflow",
    "Workflow": "evaldag._targets.workflow",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from evaldag import checks, local_judge, messages, scorers, transcripts
    from evaldag._agreement.agreement import Agreement, agreement
    from evaldag._agreement.judges import JudgeComparison, compare_judges
    from evaldag._eval.estimate import CostEstimate, cost_estimate
    from evaldag._eval.run_evals import run_evals
    from evaldag._eval.visualize import visualize
    from evaldag._experiments.compare import Comparison, compare_experiments
    from evaldag._judge.errors import CallFault, JudgeError
    from evaldag._judge.records import JudgeCost, JudgeExecution, JudgeUsage
    from evaldag._judge.settings import Judge
    from evaldag._judge.transports import Route, Transport, register_transport
    from evaldag._live.wrapper import LiveScoring, LiveStats, live
    from evaldag._receiver.receiver import OtlpReceiver, ReceiverStats
    from evaldag._receiver.serving import serve
    from evaldag._results.eval_result import EvalResult, GateResult, ThresholdResult
    from evaldag._results.files import read_results
    from evaldag._results.reducers import Reducer, pass_at_k, pass_hat_k
    from evaldag._results.scorer_result import NotScorableInfo, ScorerResult
    from evaldag._results.trials import TrialSpread
    from evaldag._scorer.builder import Scorer, ScorerWithThreshold, create_scorer
    from evaldag._scorer.needs import DataNeed
    from evaldag._scorer.run import ScorerRun
    from evaldag._scorer.run_filter import filter_run
    from evaldag._scorer.steps import PromptStep, is_not_scorable, not_scorable
    from evaldag._store.locations import read_scores
    from evaldag._store.rows import ScoreRow
    from evaldag._store.sql import SqlScoreStore
    from evaldag._store.stores import ScoreStore, register_store
    from evaldag._targets.agent import Agent, agent
    from evaldag._targets.workflow import Workflow, workflow
    from evaldag._traces.table import read_traces
    from evaldag.errors import (
        EvalDagError,
        OnItemCompleteError,
        ResultNotSavedError,
        ScorerRunError,
        UntrustworthyRunError,
    )


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
