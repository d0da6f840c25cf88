"""``run_evals(trials=N)``: each item's judged scorers score it N times, reduced to one score.

A batch is run once as without trials (trial 0: the target, every scorer); then, for each
further trial, the scorers with a judge score the batch again on trial 0's outputs (as a
refreshed checkpoint's changed scorers do, :mod:`evaldag._eval.rescoring`), with the judge's
reply cache keyed by the trial (``evaldag._judge.cache.judge_trial``). An item keeps its first
trial's reason, so the further trials run without the generate_reason step (for an LLM scorer
with a judged reason, one call fewer per item and trial). The trials' columns are
then combined into one item row per item (``_results/trials.py`` says what each holds).

An item a scorer failed on in any trial is failed for it (the error names the trial): its
score did not get its N measurements; likewise one it could not score in some trial is not
scorable. Every trial's judge records stay in its ``judge`` column, so usage and cost count
every call.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from evaldag._eval.checkpoint import SavedBatch
from evaldag._eval.rescoring import RESCORED, Rescoring
from evaldag._graph.plan import EvalPlan
from evaldag._judge.cache import judge_trial
from evaldag._results.item_columns import ScorerColumns, item_states
from evaldag._results.reducers import Reducer, reducer_named
from evaldag._results.trials import TrialSettings, trial_flips, trial_passes, trial_spreads
from evaldag._scorer.steps import PromptStep, ScorerSpec
from evaldag._scorer.thresholds import ThresholdSpec, threshold_text
from evaldag.errors import EvalDagError

#: What ``run_evals(reducer=...)`` takes: one reducer for every judged scorer, or one per id.
ReducerSetting = str | Reducer | Mapping[str, str | Reducer]


def is_judged(scorer: ScorerSpec) -> bool:
    """Whether a judge (a prompt step) decides a scorer's score: it is scored in every trial; a
    scorer without one (a judge only in its generate_reason step, or none) is taken as
    deterministic and scored once."""
    return any(
        isinstance(step.definition, PromptStep) and step.stage != "generate_reason"
        for step in scorer.steps
    )


def checked_trials(trials: Any) -> int:
    """``trials`` checked: an integer >= 1."""
    if not isinstance(trials, int) or isinstance(trials, bool) or trials < 1:
        raise EvalDagError(
            "INVALID_TRIALS",
            f"trials must be an integer >= 1 (how many times each item is scored), got {trials!r}",
            details={"field": "trials", "value": repr(trials)},
        )
    return trials


def _reducers(reducer: ReducerSetting, plan: EvalPlan, count: int) -> dict[str, Reducer]:
    """Each judged scorer's reducer, checked against the scorers and the trials."""
    judged = [s.id for s in plan.all_scorers if is_judged(s)]
    if isinstance(reducer, Mapping):
        known = {s.id for s in plan.all_scorers}
        for sid in reducer:
            if sid not in known:
                raise EvalDagError(
                    "INVALID_REDUCER",
                    f"reducer names scorer {sid!r}, which the run has not: its scorers and "
                    f"gates are {sorted(known)}",
                    details={"field": "reducer", "scorerId": str(sid)},
                )
            if sid not in judged:
                raise EvalDagError(
                    "INVALID_REDUCER",
                    f"reducer names scorer {sid!r}, whose score no judge decides: it is "
                    "taken as deterministic and scored once, so it has no trials to reduce",
                    details={"field": "reducer", "scorerId": sid},
                )
        fields = {sid: (reducer.get(sid, "mean"), f"reducer[{sid!r}]") for sid in judged}
    else:
        fields = {sid: (reducer, "reducer") for sid in judged}
        _checked_reducer(reducer, "reducer", count)  # checked when no scorer is judged too
    return {sid: _checked_reducer(value, field, count) for sid, (value, field) in fields.items()}


def _checked_reducer(value: Any, field: str, count: int) -> Reducer:
    """The reducer ``value`` names, which must draw no more trials than are run."""
    reducer = reducer_named(value, field)
    if reducer.k is not None and reducer.k > count:
        raise EvalDagError(
            "INVALID_REDUCER",
            f"{field}={str(reducer)!r} draws {reducer.k} trials of an item, but trials={count}: "
            f"run at least {reducer.k} trials, or lower k",
            details={"field": field, "k": reducer.k, "trials": count},
        )
    return reducer


def _pass_line(scorer: ScorerSpec, plan: EvalPlan) -> ThresholdSpec:
    if scorer.id in plan.thresholds:
        return plan.thresholds[scorer.id]
    return 1.0 if scorer.id in plan.gate_ids else float(scorer.max_score)


def _check_threshold_of_chances(
    scorer: ScorerSpec, threshold: ThresholdSpec, reducer: Reducer
) -> None:
    """A pass reducer makes an item's score its chance of passing, from 0 to 1, higher better:
    a threshold the average of those chances can be held to is a minimum on a 0-1 scorer. A
    maximum (lower is better) would pass the items that fail, and a bound on another scale
    reads a chance as a score of that scale."""
    upper = isinstance(threshold, dict) and threshold.get("max") is not None
    if not upper and scorer.max_score == 1:
        return
    why = (
        f"its threshold ({threshold_text(threshold)}) has a maximum: lower scores are better, "
        "so the chances would be read backwards and failing items pass"
        if upper
        else f"its threshold ({threshold_text(threshold)}) lies on its scale of 0 to "
        f"{scorer.max_score:g}, not a chance's"
    )
    raise EvalDagError(
        "INVALID_REDUCER",
        f"reducer={str(reducer)!r} makes each item's score of scorer '{scorer.id}' its chance "
        f"of passing (0 to 1, higher is better), but {why}. Reduce '{scorer.id}' with a score "
        "reducer instead ('max' keeps an item's worst trial under a maximum, 'min' under a "
        "minimum; reducer={...} takes one per scorer)",
        details={"field": "reducer", "scorerId": scorer.id, "reducer": str(reducer)},
    )


def _no_chances_of(scorer: ScorerSpec, reducer: Reducer) -> EvalDagError:
    """A pass reducer on a scorer whose lower scores are better: a trial passes at its top
    score (or above a minimum), which for such a scorer is its worst."""
    return EvalDagError(
        "INVALID_REDUCER",
        f"reducer={str(reducer)!r} makes each item's score of scorer '{scorer.id}' its chance "
        f"of passing, a trial passing at {scorer.max_score:g}, its top score; but lower scores "
        f"of '{scorer.id}' are better, so its worst trials would pass. Reduce '{scorer.id}' "
        "with a score reducer ('max' keeps an item's worst trial; reducer={...} takes one per "
        "scorer) and hold it to with_threshold(max=...)",
        details={"field": "reducer", "scorerId": scorer.id, "reducer": str(reducer)},
    )


def with_trials(plan: EvalPlan, trials: Any, reducer: ReducerSetting) -> EvalPlan:
    """``plan`` with its trials (none for ``trials=1``), the settings checked."""
    count = checked_trials(trials)
    reducers = _reducers(reducer, plan, count)
    if count == 1:
        return plan
    for unsupported, what in (
        (plan.turn_specs, "conversations ('inputs' or 'turns' items)"),
        (plan.workflow, "a workflow target"),
    ):
        if unsupported:
            raise EvalDagError(
                "INVALID_TRIALS",
                f"trials={count} cannot repeat the scorers of {what} yet; run them with "
                "trials=1, or repeat their items in the data",
                details={"field": "trials", "value": count},
            )
    lines = {s.id: _pass_line(s, plan) for s in plan.all_scorers if s.id in reducers}
    for scorer in plan.all_scorers:
        chosen = reducers.get(scorer.id)
        if chosen is not None and chosen.k and scorer.better == "lower":
            raise _no_chances_of(scorer, chosen)
        if chosen is not None and chosen.k and scorer.id in plan.thresholds:
            _check_threshold_of_chances(scorer, plan.thresholds[scorer.id], chosen)
    return dataclasses.replace(plan, trials=TrialSettings(count, reducers, lines))


def without_reasons(plan: EvalPlan, ids: tuple[str, ...]) -> EvalPlan:
    """``plan`` with the scorers and gates ``ids`` names stripped of their generate_reason
    step: what the trials after the first run."""

    def lean(scorer: ScorerSpec) -> ScorerSpec:
        return scorer.without_reason() if scorer.id in ids else scorer

    return dataclasses.replace(
        plan, scorers=tuple(map(lean, plan.scorers)), gates=tuple(map(lean, plan.gates))
    )


class TrialRuns:
    """Runs a batch's further trials and combines them with its first."""

    def __init__(self, plan: EvalPlan) -> None:
        assert plan.trials is not None
        self.settings = plan.trials
        self.repeated = tuple(s.id for s in plan.all_scorers if self.settings.repeats(s.id))
        self.rescoring = Rescoring(without_reasons(plan, self.repeated))

    def values(
        self,
        values: dict[str, Any],
        rows: pd.DataFrame,
        inputs: dict[str, Any],
        check: Callable[[dict[str, Any]], None] | None = None,
    ) -> dict[str, Any]:
        """A batch's values (of its execute, or of its rescoring) with the items of every
        repeated scorer (that was scored in them) scored in each further trial, combined.

        :param inputs: the graph's inputs beside ``dataset``.
        :param check: called with each further trial's values, its scorers' last nodes in them
            (``on_error="raise"``).
        """
        scored = values.get(RESCORED, self.repeated)
        ids = tuple(sid for sid in self.repeated if sid in scored)
        if not ids:
            return values
        first = values["batch_items"]
        trials = [first]
        for trial in range(1, self.settings.count):
            token = judge_trial.set(trial)
            try:
                later = self.rescoring.values(
                    SavedBatch(first, ids), rows, inputs, states=check is not None
                )
            finally:
                judge_trial.reset(token)
            if check is not None:
                check(later)
            trials.append(later["batch_items"])
        columns: dict[str, pd.Series] = {}
        for sid in ids:
            columns.update(_combined(trials, sid, self.settings))
        return {**values, "batch_items": first.assign(**columns)}


def _combined(trials: list[pd.DataFrame], sid: str, settings: TrialSettings) -> dict[str, Any]:
    """The scorer's columns of an item frame from its frame in each trial."""
    own, first, count = ScorerColumns(sid), trials[0], len(trials)
    states = [item_states(frame, sid) for frame in trials]
    scores = np.column_stack([s.scores.to_numpy() for s in states])
    failed = np.column_stack([s.failed.to_numpy() for s in states])
    unscorable = np.column_stack([s.not_scorable.to_numpy() for s in states])
    complete = np.column_stack([s.scored.to_numpy() for s in states]).all(axis=1)
    full = scores[complete]
    passes = trial_passes(full, settings.pass_lines[sid])
    reduced = scores[:, 0].copy()
    reduced[complete] = settings.reducers[sid].reduced(full, passes)
    columns: dict[str, Any] = {own.score: pd.Series(reduced, index=first.index)}
    for trial in range(1, count):
        # The first trial that failed (else could not score) the item says why.
        earlier = failed[:, :trial].any(axis=1)
        took = pd.Series(failed[:, trial] & ~earlier, index=first.index)
        taken = pd.Series(
            unscorable[:, trial] & ~failed.any(axis=1) & ~unscorable[:, :trial].any(axis=1),
            index=first.index,
        )
        frame = trials[trial]
        error = f"trial {trial + 1} of {count}: " + frame[own.error]
        columns[own.error] = columns.get(own.error, first[own.error]).where(~took, error)
        for column in (own.failed_step, own.completed_steps):
            columns[column] = columns.get(column, first[column]).where(~took, frame[column])
        cell = columns.get(own.not_scorable, first[own.not_scorable])
        columns[own.not_scorable] = cell.where(~taken, frame[own.not_scorable])
    columns[own.judge] = pd.Series(
        [_judge_records(cells) for cells in zip(*(t[own.judge] for t in trials), strict=True)],
        index=first.index,
        dtype=first[own.judge].dtype,
    )
    mean, spread = np.full(len(first), np.nan), np.full(len(first), np.nan)
    mean[complete], spread[complete] = full.mean(axis=1), trial_spreads(full)
    flips = pd.Series(pd.NA, index=first.index, dtype="Int64")
    flips[complete] = trial_flips(passes)
    columns[own.trial_scores] = pd.Series(
        [[None if np.isnan(s) else float(s) for s in row] for row in scores],
        index=first.index,
        dtype=object,
    )
    columns[own.trial_mean] = pd.Series(mean, index=first.index)
    columns[own.trial_spread] = pd.Series(spread, index=first.index)
    columns[own.trial_flips] = flips
    return columns


def _judge_records(cells: tuple[Any, ...]) -> str | None:
    """The judge records of every trial of an item, per step, in trial order."""
    merged: dict[str, list[Any]] = {}
    for cell in cells:
        if isinstance(cell, str):
            for step, records in json.loads(cell).items():
                merged.setdefault(step, []).extend(records)
    return json.dumps(merged) if merged else None
