"""The exception hierarchy: every error evaldag raises is an ``EvalDagError``.

Ids mirror Mastra's ``MastraError`` ids where Mastra has one, so that logs and dashboards keyed on
them keep working.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from evaldag._compat.js import camel

if TYPE_CHECKING:
    import pandas as pd

    from evaldag._results.eval_result import EvalResult
    from evaldag._results.scorer_result import ScorerResult

Category = Literal["UNKNOWN", "USER", "SYSTEM", "THIRD_PARTY"]


class EvalDagError(Exception):
    """An error with a stable ``id``, a ``domain``, a ``category`` and structured ``details``."""

    def __init__(
        self,
        id: str,
        message: str,
        *,
        domain: str = "SCORER",
        category: Category = "USER",
        details: dict[str, Any] | None = None,
        cause: BaseException | None = None,
    ) -> None:
        super().__init__(message)
        self.id = id
        self.message = message
        self.domain = domain
        self.category = category
        self.details = dict(details or {})
        self.cause = cause
        if cause is not None:
            self.__cause__ = cause

    def __reduce__(self):
        return (_rebuild, (type(self), self.__dict__.copy()))

    def to_dict(self) -> dict[str, Any]:
        """Mastra's JSON form: ``{message, domain, category, code, details, cause?}``."""
        data: dict[str, Any] = {
            "message": self.message,
            "domain": self.domain,
            "category": self.category,
            "code": self.id,
            "details": self.details,
        }
        if self.cause is not None:
            data["cause"] = cause_dict(self.cause)
        return data


def _rebuild(cls: type[EvalDagError], state: dict[str, Any]) -> EvalDagError:
    error = cls.__new__(cls)
    Exception.__init__(error, state["message"])
    error.__dict__.update(state)
    return error


def cause_dict(error: BaseException) -> dict[str, Any]:
    """A JSON-ready description of an exception and the chain of its causes."""
    if isinstance(error, EvalDagError):
        return error.to_dict()
    data: dict[str, Any] = {"message": error_message(error), "name": type(error).__name__}
    if error.__cause__ is not None:
        data["cause"] = cause_dict(error.__cause__)
    return data


def error_message(error: BaseException) -> str:
    """The exception's text, or its class name when it has none."""
    text = str(error)
    return text or type(error).__name__


class ScorerRunError(EvalDagError):
    """A scorer step failed. Carries the failed step, the steps that completed and a snapshot.

    ``result`` is the partial :class:`~evaldag.ScorerResult` built from the steps that completed
    (and the failed judge execution, for a prompt step), or ``None`` when no step produced
    anything.
    """

    def __init__(
        self,
        *,
        scorer_id: str,
        steps: Sequence[str],
        failed_step: str,
        completed_steps: Sequence[str],
        cause: BaseException,
        result: ScorerResult | None = None,
    ) -> None:
        super().__init__(
            "MASTR_SCORER_FAILED_TO_RUN_WORKFLOW_FAILED",
            f"Scorer Run Failed: {error_message(cause)}",
            details={
                "scorerId": scorer_id,
                "steps": ", ".join(camel(s) for s in steps),
                "failedStep": camel(failed_step),
                "completedSteps": ", ".join(camel(s) for s in completed_steps),
            },
            cause=cause,
        )
        self.scorer_id = scorer_id
        self.failed_step = failed_step
        self.completed_steps = list(completed_steps)
        self.result = result


class TimeLimitError(EvalDagError):
    """A step or a target took longer than its time limit (``step_timeout``,
    ``target_timeout``): the item records it as its error and the run goes on."""


class ConfigurationError(EvalDagError):
    """A setting that fails every item the same way, found while the run goes (an agent's
    model that refuses tools): the run stops with it instead of recording it on each item."""


class UntrustworthyRunError(EvalDagError):
    """The run finished, but its verdict cannot be trusted: the target or a scorer failed on
    every item (or on more than ``max_error_share`` of them), which is a misconfiguration (a
    judge that cannot be reached, a rejected key, an unknown model), not a measurement; or no
    scorer or gate could score a single item (a setting the data does not meet: no
    ``context=``, no ``ground_truth``, a judge budget of 0).

    ``result`` holds everything the run computed; files it was asked to write are written.
    """

    def __init__(
        self, message: str, *, result: EvalResult, details: dict[str, Any] | None = None
    ) -> None:
        super().__init__("EVALDAG_RUN_UNTRUSTWORTHY", message, category="USER", details=details)
        self.result = result


class OnItemCompleteError(EvalDagError):
    """``run_evals``' ``on_item_complete`` raised (``cause``): the run stopped there, as Mastra's
    does, without a verdict. ``item`` is the label of the item it was called for; ``items`` holds
    every item scored before the run stopped (that item's batch whole), as a result's ``items``
    would; a ``checkpoint`` (or ``out`` a directory) keeps them too, for a rerun to score only
    the rest."""

    def __init__(
        self,
        message: str,
        *,
        item: Any,
        items: pd.DataFrame,
        cause: BaseException,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(
            "EVALDAG_ON_ITEM_COMPLETE_FAILED",
            message,
            domain="EVAL",
            category="USER",
            details=details,
            cause=cause,
        )
        self.item = item
        self.items = items


class ResultNotSavedError(EvalDagError):
    """The run finished, but a results file (``out=``, ``checkpoint=``) or the score store
    could not take it (a full disk, a database locked past the wait or unreachable): ``result``
    holds everything the run computed, and what could be written was (the store even when a
    file failed). ``error.result.to_parquet(path)`` or ``store.save_result(error.result)``
    saves it later."""

    def __init__(
        self,
        message: str,
        *,
        result: EvalResult,
        cause: BaseException,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(
            "EVALDAG_RESULT_NOT_SAVED",
            message,
            domain="STORAGE",
            category="SYSTEM",
            details=details,
            cause=cause,
        )
        self.result = result
