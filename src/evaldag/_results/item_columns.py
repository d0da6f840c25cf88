"""The columns a scorer adds to each item (``<scorer id>.<column>``) and what they say of it: the
one place their names are spelled and an item's state is read from them.

A scorer's item (or turn) is in one of four states:

- **scored**: a number in ``score``, no ``error``, nothing in ``not_scorable``; only these
  scores enter an average;
- **failed**: an ``error``, the scorer's or the target's (``failed_step`` says which step); a
  score its run recovered before the failure stays in ``score`` but counts for nothing, except
  that a gate counts the item as 0;
- **not scorable**: ``not_scorable`` holds why (a setting the data does not meet);
- **skipped**: none of these, as the scorer never ran on it: a workflow node that did not run
  (Mastra skips its step scorers), a turn the scorer is not one of.

A scorer of a group (``run_evals(scorers={"agent": [...], "steps": {...}})``) is keyed by its
group: ``agent.<id>``, ``workflow.<id>``, ``trajectory.<id>``, ``steps.<node>.<id>``; a
scorer's own id holds no dot, a node's may.
"""

from __future__ import annotations

import json
from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from evaldag._judge.budget import BUDGET_REASON

#: Columns a scorer adds to each item (``<scorer id>.score``, ...): ``score`` a float, the
#: others text (JSON for nested values) or categories.
SCORER_COLUMNS = (
    "score",
    "reason",
    "error",
    "failed_step",
    "completed_steps",
    "not_scorable",
    "steps",
    "judge",
)
#: Columns a scorer repeated by ``run_evals(trials=N)`` adds to each item: its N trials' scores
#: (a list, None for a trial that gave none), their mean, their spread (sample standard
#: deviation) and how often the verdict flipped from one trial to the next; ``score`` then holds
#: the reduced score (``reducer=``).
TRIAL_COLUMNS = ("trial_scores", "trial_mean", "trial_spread", "trial_flips")
#: Columns of a conversation's turn row (``EvalResult.turns``) besides its scorers' columns.
TURN_COLUMNS = ("item", "turn", "input", "output", "run_id", "thread_id")
#: How much of a reason a one-line message shows.
REASON_CHARACTERS = 300
#: The group of a workflow's step scorers, keyed ``steps.<node>.<id>``.
_STEPS = "steps"


@dataclass(frozen=True)
class ScorerColumns:
    """The names of one scorer's (or gate's) columns in an items or turns frame: ``.score`` is
    ``<scorer id>.score``, and so on for each of ``SCORER_COLUMNS``."""

    scorer_id: str
    score: str = field(init=False, repr=False)
    reason: str = field(init=False, repr=False)
    error: str = field(init=False, repr=False)
    failed_step: str = field(init=False, repr=False)
    completed_steps: str = field(init=False, repr=False)
    not_scorable: str = field(init=False, repr=False)
    steps: str = field(init=False, repr=False)
    judge: str = field(init=False, repr=False)
    trial_scores: str = field(init=False, repr=False)
    trial_mean: str = field(init=False, repr=False)
    trial_spread: str = field(init=False, repr=False)
    trial_flips: str = field(init=False, repr=False)

    def __post_init__(self) -> None:
        for column in (*SCORER_COLUMNS, *TRIAL_COLUMNS):
            object.__setattr__(self, column, self.column(column))

    def column(self, column: str) -> str:
        """The name of the scorer's ``column`` (one of ``SCORER_COLUMNS`` or ``TRIAL_COLUMNS``)."""
        return f"{self.scorer_id}.{column}"

    @property
    def all(self) -> list[str]:
        """Every column of the scorer, in the order of ``SCORER_COLUMNS``."""
        return [self.column(column) for column in SCORER_COLUMNS]

    @property
    def trials(self) -> list[str]:
        """The columns of its trials (``run_evals(trials=N)``), in the order of
        ``TRIAL_COLUMNS``."""
        return [self.column(column) for column in TRIAL_COLUMNS]


def scorer_ids(columns: Iterable[Hashable]) -> list[str]:
    """The ids of the scorers whose columns these are, in column order: each with a score, an
    error and a not-scorable column (a data column that merely ends in ``.score`` is none)."""
    names = [column for column in columns if isinstance(column, str)]
    present = set(names)
    ids = [column.removesuffix(".score") for column in names if column.endswith(".score")]
    return [sid for sid in ids if f"{sid}.error" in present and f"{sid}.not_scorable" in present]


def has_scorer(frame: pd.DataFrame, scorer_id: str) -> bool:
    """Whether ``frame`` holds the scorer's columns (a turn's rows hold only their scorers')."""
    return ScorerColumns(scorer_id).score in frame.columns


@dataclass(frozen=True)
class ItemStates:
    """One scorer's items (or turns) by state: masks over the frame's rows that together cover
    each row once, and its numeric scores (see the module docstring)."""

    scores: pd.Series
    failed: pd.Series
    not_scorable: pd.Series
    skipped: pd.Series

    @property
    def scored(self) -> pd.Series:
        """The items whose score enters an average."""
        return ~(self.failed | self.not_scorable | self.skipped)

    @property
    def counted_scores(self) -> pd.Series:
        """Each row's score where it counts (a scored item), else NaN."""
        return self.scores.where(self.scored)

    @property
    def valid_scores(self) -> pd.Series:
        """The scores of the scored items, by their row labels."""
        return self.scores[self.scored]


def item_states(frame: pd.DataFrame, scorer_id: str) -> ItemStates:
    """The state of each of ``frame``'s rows for the scorer: scored, failed, not scorable or
    skipped; a failure wins over a not-scorable mark."""
    columns = ScorerColumns(scorer_id)
    scores = pd.to_numeric(frame[columns.score], errors="coerce").astype(float)
    failed = frame[columns.error].notna()
    not_scorable = frame[columns.not_scorable].notna() & ~failed
    return ItemStates(
        scores=scores,
        failed=failed,
        not_scorable=not_scorable,
        skipped=scores.isna() & ~failed & ~not_scorable,
    )


def unjudged(items: pd.DataFrame, scorer_id: str, states: ItemStates) -> pd.Series:
    """Which items the run's judge budget left unjudged (not scorable with a ``budget:``
    reason): items ``scorer_id`` was to check, unlike those it could not score."""
    reasons = items.loc[states.not_scorable, ScorerColumns(scorer_id).not_scorable]
    cut = [not_scorable_reason(cell).startswith(f"{BUDGET_REASON}:") for cell in reasons]
    return pd.Series(cut, index=reasons.index, dtype=bool).reindex(items.index, fill_value=False)


def not_scorable_reason(cell: object) -> str:
    """The reason in an item's ``<id>.not_scorable`` cell (JSON text, or the dict before it was
    written), clipped to a line."""
    if isinstance(cell, str):
        try:
            cell = json.loads(cell)
        except ValueError:
            pass
    reason = cell.get("reason") if isinstance(cell, dict) else cell
    text = str(reason or "no reason given")
    return text if len(text) <= REASON_CHARACTERS else text[: REASON_CHARACTERS - 1] + "…"


def first_not_scorable(frame: pd.DataFrame, scorer_id: str) -> tuple[int, str] | None:
    """The position of the first row the scorer could not score, and why; None when none."""
    states = item_states(frame, scorer_id)
    found = states.not_scorable.to_numpy().nonzero()[0]
    if not len(found):
        return None
    cell = frame[ScorerColumns(scorer_id).not_scorable].iloc[found[0]]
    return int(found[0]), not_scorable_reason(cell)


def grouped_id(group: str, scorer_id: str) -> str:
    """A scorer's key in its group of ``run_evals(scorers={...})``: ``agent.<id>``, or
    ``steps.<node>.<id>`` for ``group`` ``steps.<node>``."""
    return f"{group}.{scorer_id}"


def step_group(node: str) -> str:
    """The group of a workflow node's step scorers: ``steps.<node>``."""
    return f"{_STEPS}.{node}"


def nested_by_group(values: dict[str, Any]) -> dict[str, Any]:
    """Values by scorer key nested as Mastra nests them: ``agent.<id>`` under ``agent``, and so
    on; ``steps.<node>.<id>`` under ``steps`` and the node; an ungrouped id stays on top."""
    nested: dict[str, Any] = {}
    for key, value in values.items():
        group, dot, rest = key.partition(".")
        if not dot:
            nested[key] = value
        elif group == _STEPS:
            node, _, scorer_id = rest.rpartition(".")
            nested.setdefault(_STEPS, {}).setdefault(node, {})[scorer_id] = value
        else:
            nested.setdefault(group, {})[rest] = value
    return nested
