"""A run's judge budget: what its judge calls may cost, and what they cost so far.

``run_evals(budget_usd=...)`` makes one ``JudgeBudget`` for the run and hands it to every prompt
step, as it hands the judge cache: a step asks it before calling the judge, and adds the cost
of each judge execution (from its record) once it ends. When the spent cost reaches the limit,
the steps that have not called yet end their item as not scorable, with a ``budget`` reason;
every item judged before stays as it was. Calls already in flight finish, so the spent cost can
pass the limit by what they cost.

A budget holds only over priced calls: a run with one refuses, before any call, a judge whose
model has no price (litellm's table lacks it and the judge gives none), whose calls would count
as $0 and leave the budget unenforced (:func:`require_prices`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from evaldag._judge.endpoints import rates, require_endpoint
from evaldag._judge.records import JudgeExecution
from evaldag._judge.settings import Judge
from evaldag.errors import EvalDagError

#: How a not-scorable reason of the budget begins.
BUDGET_REASON = "budget"


@dataclass
class JudgeBudget:
    """The run's limit in US dollars, the cost spent and the judge calls it refused."""

    limit_usd: float
    spent_usd: float = 0.0
    refused: int = 0

    def __post_init__(self) -> None:
        limit = self.limit_usd
        if (
            isinstance(limit, bool)
            or not isinstance(limit, int | float)
            or not (math.isfinite(limit) and limit >= 0)
        ):
            raise EvalDagError(
                "INVALID_BUDGET",
                f"budget_usd must be a finite number of US dollars >= 0, got {limit!r}",
                details={"budget_usd": repr(limit)},
            )

    @property
    def spent(self) -> bool:
        """Whether the cost so far has reached the limit."""
        return self.spent_usd >= self.limit_usd

    def refusal(self) -> str:
        """The not-scorable reason of a step refused a judge call; counts the refusal."""
        self.refused += 1
        return (
            f"{BUDGET_REASON}: the run's judge budget of ${self.limit_usd:.4f} was spent "
            f"(${self.spent_usd:.4f}) before this step called its judge"
        )

    def spend(self, execution: JudgeExecution | None) -> None:
        """Add what a judge execution cost (nothing for cached replies and unpriced models)."""
        if execution is not None and execution.cost is not None:
            self.spent_usd += execution.cost.total_usd


def require_prices(budget: JudgeBudget, judges: Iterable[tuple[str, Judge]]) -> None:
    """Refuse a judge without a price (the local judge is free): the budget could not count
    its calls. ``judges`` are (whose it is, the judge) pairs."""
    for owner, judge in judges:
        endpoint = require_endpoint(judge)
        if endpoint is None or rates(endpoint) is not None:
            continue
        raise EvalDagError(
            "EVALDAG_BUDGET_UNPRICED",
            f"budget_usd={budget.limit_usd:g} cannot be held: {owner} calls {judge.model!r}, "
            "which litellm's price table has no price for, so its calls would cost $0 and "
            f"never spend the budget. Give its price: Judge({judge.model!r}, ..., "
            "input_cost_per_token=..., output_cost_per_token=...) in US dollars per token, or "
            "run without budget_usd",
            details={"model": judge.model, "judgeOf": owner, "budget_usd": budget.limit_usd},
        )
