"""Which items keep a gate or threshold from passing, and how far: what the CLI's "where it
failed" lines and the report's ranking of items share, with the ids that name items."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from evaldag._results.eval_result import EvalResult, GateResult, ThresholdResult
from evaldag._results.item_columns import ScorerColumns, item_states
from evaldag._scorer.thresholds import ThresholdSpec, figure_text, threshold_bounds

#: The column that names items. Mastra's dataset items and most eval sets (the demo's too) use
#: it; other common columns (``name``, ``question``) need not be unique, so they are not used.
ID_COLUMN = "id"


@dataclass(frozen=True)
class Requirement:
    """A gate or threshold of the run, or of one turn of its conversations (``turn``)."""

    outcome: GateResult | ThresholdResult
    turn: int | None = None

    @property
    def is_gate(self) -> bool:
        return isinstance(self.outcome, GateResult)

    @property
    def required(self) -> ThresholdSpec:
        """What the average must meet: a gate's 1.0, or the threshold."""
        return self.outcome.threshold if isinstance(self.outcome, ThresholdResult) else 1.0

    @property
    def label(self) -> str:
        """The scorer's id, after ``turn N:`` for a turn's."""
        prefix = "" if self.turn is None else f"turn {self.turn}: "
        return prefix + self.outcome.id

    def rows(self, result: EvalResult) -> pd.DataFrame:
        """The rows its items were scored in: the items, or that turn's rows."""
        return result.items if self.turn is None else turn_rows(result, self.turn)


def turn_rows(result: EvalResult, index: int) -> pd.DataFrame:
    """Turn ``index``'s row of each conversation that has one, labelled by its item."""
    turns = result.turns
    if turns is None:
        return result.items.iloc[:0]
    return turns[turns["turn"] == index].set_index("item")


def requirements(result: EvalResult) -> list[Requirement]:
    """Every gate, then every threshold of the run, then those of each turn of its
    conversations: all that make its verdict."""
    turns: list[Requirement] = []
    for turn in result.turn_results:
        turns.extend(Requirement(g, turn.index) for g in turn.gate_results)
        turns.extend(Requirement(t, turn.index) for t in turn.threshold_results)
    return [
        *(Requirement(g) for g in result.gate_results),
        *(Requirement(t) for t in result.threshold_results),
        *turns,
    ]


def id_column(items: pd.DataFrame) -> str | None:
    """``id`` when the data has that column with a value for every item, else None."""
    if ID_COLUMN in items.columns and items[ID_COLUMN].notna().all():
        return ID_COLUMN
    return None


def item_ids(items: pd.DataFrame) -> pd.Series:
    """Each item's id: its ``id`` value, else its row's index label."""
    column = id_column(items)
    if column is not None:
        return items[column]
    return pd.Series(items.index, index=items.index)


def ids_source(items: pd.DataFrame) -> str:
    """What ``item_ids`` are, in words."""
    if id_column(items) is not None:
        return f"the data's '{ID_COLUMN}' column"
    if items.index.equals(pd.RangeIndex(len(items))):
        return "their row number in the data, counting from 0"
    return "the data's index label"


def scorer_scale(items: pd.DataFrame, scorer_id: str, requirement: ThresholdSpec) -> float:
    """The top of the scorer's scale: 1, unless its bounds or scores go higher."""
    # A result does not record a scorer's max_score; its scores and bounds lie within it.
    scores = item_states(items, scorer_id).scores.dropna()
    return max(
        1.0, *(b for b in threshold_bounds(requirement) if b is not None), *scores.nlargest(1)
    )


def requirement_gaps(items: pd.DataFrame, scorer_id: str, requirement: ThresholdSpec) -> pd.Series:
    """How far each item's score is from meeting ``requirement``, on the scorer's scale.

    Above 0 the item falls short by that much (below a minimum, or above a maximum: lower is
    better there); at or below 0 it meets the requirement with that much to spare. An item the
    scorer failed on is the whole scale short (for a gate, the same as a score of 0); one it
    could not score is NaN. A gate's requirement is 1.0.
    """
    states = item_states(items, scorer_id)
    score = states.counted_scores
    low, high = threshold_bounds(requirement)
    below = low - score if low is not None else None
    above = score - high if high is not None else None
    if below is not None and above is not None:
        gaps = below.where(below > above, above)
    else:
        gaps = below if below is not None else above
    return gaps.mask(states.failed, scorer_scale(items, scorer_id, requirement)).astype(float)


def failing_items(items: pd.DataFrame, scorer_id: str, requirement: ThresholdSpec) -> pd.Series:
    """The gaps of the items that fall short of ``requirement``, worst first (then in data
    order), indexed by their row labels."""
    gaps = requirement_gaps(items, scorer_id, requirement)
    return gaps[gaps > 0].sort_values(ascending=False, kind="stable")


def shortfall_text(
    items: pd.DataFrame, scorer_id: str, label: Any, requirement: ThresholdSpec
) -> str:
    """What a failing item scored, as its line names it: ``error``, or its score (``0.50``;
    never on or across ``requirement``, which it misses: ``0.999`` below 1.0)."""
    columns = ScorerColumns(scorer_id)
    if pd.notna(items.at[label, columns.error]):
        return "error"
    return figure_text(items.at[label, columns.score], requirement)
