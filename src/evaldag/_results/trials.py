"""Trials (``run_evals(trials=N)``): a judged scorer scores each item N times, and how far its
scores move from one trial to the next is measured.

A scorer with a judge (a prompt step) is **repeated**: each trial is an independent set of judge
calls (the reply cache keys them by trial). A scorer without one is a code scorer, taken as
deterministic: it scores once, and its summary says so.

A trial **passes** when its score meets the scorer's **pass line**: its threshold, applied to
the item's score; a gate's 1.0 (what a gate asks of every item); else full marks (the scorer's
maximum score, as Inspect counts a score of 1 as correct). An item's verdict **flips** when it
differs from one trial to the next.

Per scorer, the summary holds the **run-to-run standard deviation** (the square root of the
mean over items of the sample variance of their trial scores: how far a score moves when the
same item is judged again), the share of items whose verdict flips, and the mean of every trial
score with an interval from a **cluster bootstrap** over items: an item's trials are resampled
together, as they are not independent measurements.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from evaldag._results.intervals import (
    ConfidenceInterval,
    bootstrap_interval,
    cluster_bootstrap_interval,
)
from evaldag._results.item_columns import ScorerColumns, item_states
from evaldag._results.reducers import Reducer
from evaldag._scorer.fingerprint import Parts, digest
from evaldag._scorer.thresholds import ThresholdSpec, threshold_passed, threshold_text


@dataclass(frozen=True)
class TrialSettings:
    """A run's trials: how many, and per repeated scorer its reducer and pass line."""

    count: int
    reducers: dict[str, Reducer] = field(default_factory=dict)
    pass_lines: dict[str, ThresholdSpec] = field(default_factory=dict)

    def repeats(self, scorer_id: str) -> bool:
        """Whether the scorer is scored ``count`` times (it has a judge)."""
        return self.count > 1 and scorer_id in self.reducers

    def definition(self, scorer_id: str) -> dict[str, object]:
        """What the scorer's definition in the result says of its trials."""
        if not self.repeats(scorer_id):
            return {"count": 1, "repeated": False}
        return {
            "count": self.count,
            "repeated": True,
            "reducer": str(self.reducers[scorer_id]),
            "pass_line": self.pass_lines[scorer_id],
        }

    def parts(self, scorer_id: str) -> Parts:
        """What the trials add to the scorer's fingerprint: nothing unless it is repeated (a
        checkpoint made with one trial is not taken for three, nor one reduced otherwise)."""
        if not self.repeats(scorer_id):
            return {}
        return {
            f"the trials of scorer '{scorer_id}'": {
                "their number (trials=)": digest(self.count),
                "their reducer (reducer=)": digest(str(self.reducers[scorer_id])),
                "their pass line": digest(self.pass_lines[scorer_id]),
            }
        }


def trial_passes(scores: np.ndarray, pass_line: ThresholdSpec) -> np.ndarray:
    """Whether each score meets the pass line."""
    passes = np.vectorize(lambda s: threshold_passed(float(s), pass_line), otypes=[bool])
    return passes(scores) if scores.size else np.zeros(scores.shape, dtype=bool)


def trial_flips(passes: np.ndarray) -> np.ndarray:
    """Per row, how often the verdict changes from one trial to the next."""
    return (passes[:, 1:] != passes[:, :-1]).sum(axis=1)


def trial_spreads(scores: np.ndarray) -> np.ndarray:
    """Per row, the sample standard deviation of its trial scores."""
    return scores.std(axis=1, ddof=1) if scores.shape[1] > 1 else np.full(len(scores), np.nan)


class _Model(BaseModel):
    model_config = ConfigDict(populate_by_name=True, alias_generator=to_camel, frozen=True)


class TrialSpread(_Model):
    """How a scorer's scores moved across the trials of a run."""

    trials: int = Field(description="Trials per item: 1 for a scorer no judge decides (once).")
    repeated: bool = Field(description="Whether it was scored each trial (a judge decides it).")
    reducer: str | None = Field(default=None, description="How an item's trials became its score.")
    pass_line: ThresholdSpec | None = Field(
        default=None, description="What a trial's score must meet to pass (for flips)."
    )
    items: int = Field(default=0, description="Items scored in every trial: the ones measured.")
    mean: float | None = Field(default=None, description="Mean of those items' trial scores.")
    interval: ConfidenceInterval | None = Field(
        default=None, description="Cluster-bootstrap interval of the mean (items resampled)."
    )
    run_to_run_sd: float | None = Field(
        default=None,
        description="Square root of the mean over items of their trial scores' sample variance.",
    )
    flipped_items: int = Field(default=0, description="Items whose verdict changed between trials.")
    flip_share: float | None = Field(default=None, description="flipped_items / items.")
    flip_share_interval: ConfidenceInterval | None = Field(
        default=None, description="Bootstrap interval of the flip share (items resampled)."
    )

    def text(self) -> str:
        """One line: ``3 trials, mean: run-to-run SD 0.120; the verdict (score >= 1.00) flips
        on 8 of 200 items (4.0%)``."""
        if not self.repeated:
            return "scored once (no judge decides its score: deterministic)"
        if not self.items:
            return f"{self.trials} trials, {self.reducer}: no item was scored in every trial"
        line = "" if self.pass_line is None else f" (score {threshold_text(self.pass_line)})"
        return (
            f"{self.trials} trials, {self.reducer}: run-to-run SD {self.run_to_run_sd:.3f}; "
            f"the verdict{line} flips on {self.flipped_items} of {self.items} items "
            f"({self.flip_share:.1%})"
        )


def trial_spread(items: pd.DataFrame, scorer_id: str, settings: TrialSettings) -> TrialSpread:
    """The scorer's spread over the trials in ``items`` (its trial columns)."""
    if not settings.repeats(scorer_id):
        return TrialSpread(trials=1, repeated=False)
    columns = ScorerColumns(scorer_id)
    measured = item_states(items, scorer_id).scored & items[columns.trial_spread].notna()
    rows = items.loc[measured, columns.trial_scores]
    scores = np.array([list(row) for row in rows], dtype=float).reshape(len(rows), settings.count)
    flipped = items.loc[measured, columns.trial_flips].to_numpy(dtype=float) > 0
    spread = TrialSpread(
        trials=settings.count,
        repeated=True,
        reducer=str(settings.reducers[scorer_id]),
        pass_line=settings.pass_lines[scorer_id],
        items=len(rows),
    )
    if not len(rows):
        return spread
    return spread.model_copy(
        update={
            "mean": float(scores.mean()),
            "interval": cluster_bootstrap_interval(
                scores.sum(axis=1), np.full(len(rows), settings.count)
            ),
            "run_to_run_sd": float(np.sqrt(scores.var(axis=1, ddof=1).mean())),
            "flipped_items": int(flipped.sum()),
            "flip_share": float(flipped.mean()),
            "flip_share_interval": bootstrap_interval(flipped.astype(float)),
        }
    )
