"""Two experiments compared: Mastra's per-scorer stats, then paired per-item deltas.

Mastra's ``compareExperiments`` (spec §10.4) compares averages: a delta below ``-threshold`` is a
regression, however few items moved. Here every item scored in both runs is paired with itself
(by the data's ``id`` column, else the input, else the row position), the per-item deltas are
averaged, and a seeded bootstrap interval says how sure that average is: "B is worse" needs
Mastra's rule **and** an interval that lies wholly on the worse side of 0.

A gate is no average: it holds for every item or fails. An item that passed a gate in A
(score 1) and fails it in B is a regression of the gate, counted and named
(``ScorerComparison.newly_failed``), whatever the interval and the threshold say: the interval
asks whether an average moved beyond sampling noise, and a gate's item that newly fails is no
sample, it is the regression itself (four items newly failing and one newly passing gave an
interval holding 0: "no clear change"). An item a gate failed on (an error) scores 0, as
``run_evals`` counts it: no pass, so an item that passed in A and errs in B newly fails the gate,
``allow_missing`` or not (listed as a lost score only, it let a candidate whose own verdict
failed pass). The gates of conversations' turns are gates too, each turn's apart
(``turn<N>.<id>``, as the pytest plugin names them), paired by their item's key.

A candidate that lacks scorers, gates or items the baseline has, or lost scores the baseline
has (an item a scorer failed on, or a scorer or gate could not score: unpaired, it would drop out
of the deltas, so failing on the hard items would look like no change), is not a comparison of
the same thing: its result says so (``missing_scorers``, ``missing_items``, ``lost_scores``) and
does not pass unless ``allow_missing``. Items only the candidate has are listed
(``added_items``), not held against it.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from evaldag._results.eval_result import EvalResult
from evaldag._results.intervals import (
    LEVEL,
    RESAMPLES,
    SEED,
    ConfidenceInterval,
    bootstrap_interval,
    minimum_resamples,
)
from evaldag._results.item_columns import has_scorer, item_states, scorer_ids
from evaldag.errors import EvalDagError

Direction = Literal["higher", "lower"]
Role = Literal["scorer", "gate"]
Change = Literal["worse", "better", "no clear change", "added", "removed"]
#: Mastra's pass mark of an item in ``computeScorerStats``.
PASS_SCORE = 0.5
#: An item passes a gate at this score (a gate holds when its average is 1).
GATE_PASS_SCORE = 1.0
#: The columns an item is paired by, in order of preference; the row position comes last.
KEY_COLUMNS = ("id", "input")


class ScorerStats(BaseModel):
    """Mastra's ``computeScorerStats`` of one scorer in one experiment."""

    model_config = ConfigDict(frozen=True)

    items: int
    scored: int = Field(
        description="Items with a score (not failed, not 'not scorable'; a gate's failed item "
        "scores 0, as run_evals counts it)."
    )
    error_rate: float = Field(description="Share of the items without a score, as Mastra's.")
    pass_rate: float = Field(
        description="Share of the scored items at or above the pass mark (at or below it for a "
        "scorer whose lower scores are better)."
    )
    average: float = Field(description="Mean of the scores; 0 when there are none, as Mastra's.")


class ScorerComparison(BaseModel):
    """One scorer or gate of experiment B against experiment A."""

    model_config = ConfigDict(frozen=True)

    scorer_id: str
    role: Literal["scorer", "gate"]
    a: ScorerStats | None = Field(description="None when only B has the scorer.")
    b: ScorerStats | None = Field(description="None when only A has the scorer.")
    delta: float | None = Field(description="B's average minus A's (Mastra's delta).")
    direction: Direction = Field(description="Which way is better.")
    threshold: float = Field(description="How far the delta may go the worse way (Mastra's).")
    paired: int = Field(description="Items scored in both experiments.")
    worse: int = Field(description="Paired items that scored worse in B.")
    better: int = Field(description="Paired items that scored better in B.")
    paired_delta: float | None = Field(description="Mean of the paired per-item deltas (B − A).")
    interval: ConfidenceInterval | None = Field(
        description="Bootstrap interval of ``paired_delta``; None below two paired items."
    )
    change: Change = Field(
        description="What the interval says (the delta's sign when there is no interval)."
    )
    newly_failed: list[str] = Field(
        default_factory=list,
        description="A gate's paired items (keys, in A's order) that passed it in A and fail it "
        "in B; any is a regression.",
    )
    regressed: bool = Field(
        description="Worse by the interval and by Mastra's threshold rule, or a gate with "
        "newly failed items."
    )


class ExperimentInfo(BaseModel):
    """Which experiment a side of the comparison is."""

    model_config = ConfigDict(frozen=True)

    source: str
    experiment_id: str | None
    name: str | None = Field(default=None, description="The run's name, if it was given one.")
    items: int
    untrustworthy: str | None = Field(
        default=None,
        description="Why the run's verdict cannot be trusted (its summary.untrustworthy: it "
        "measured nothing), when it cannot: no comparison with it passes.",
    )


class Comparison(BaseModel):
    """Experiment B against experiment A, per scorer and item by item."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    a: ExperimentInfo = Field(description="The baseline.")
    b: ExperimentInfo = Field(description="The candidate.")
    item_key: str = Field(description="'id', 'input', another column, or 'position'.")
    paired_items: int = Field(description="Items found in both experiments.")
    scorers: list[ScorerComparison] = Field(description="Each scorer and gate, A's order first.")
    item_deltas: pd.DataFrame = Field(
        description="One row per paired item and scorer: item, scorer, a, b, delta; worst first."
    )
    pass_score: float = Field(default=PASS_SCORE, description="An item's pass mark.")
    missing_scorers: list[str] = Field(
        default_factory=list, description="Scorers and gates of A that B lacks, in A's order."
    )
    missing_items: list[str] = Field(
        default_factory=list, description="Keys of A's items that B lacks, in A's order."
    )
    added_items: list[str] = Field(
        default_factory=list, description="Keys of B's items that A lacks (not compared)."
    )
    lost_scores: dict[str, list[str]] = Field(
        default_factory=dict,
        description="Scorer or gate id → keys of the items A scored and B has but could not "
        "score, or (a scorer, not a gate: a gate's failed item scores 0) failed on, in A's order "
        "(not paired).",
    )
    allow_missing: bool = Field(
        default=False, description="Whether B may lack scorers and items of A and still pass."
    )

    @property
    def regressions(self) -> list[str]:
        """The ids of the scorers and gates that regressed."""
        return [s.scorer_id for s in self.scorers if s.regressed]

    @property
    def incomplete(self) -> bool:
        """Whether B lacks scorers, gates, items or scores that A has."""
        return bool(self.missing_scorers or self.missing_items or self.lost_scores)

    @property
    def passed(self) -> bool:
        """Whether B holds up against A: both runs measured something (neither is
        untrustworthy), nothing regressed and, unless ``allow_missing``, B has every scorer,
        gate and item A has."""
        trusted = self.a.untrustworthy is None and self.b.untrustworthy is None
        return trusted and not self.regressions and (self.allow_missing or not self.incomplete)


def experiment_result(
    experiment: EvalResult | str | os.PathLike[str], store: Any = None
) -> tuple[EvalResult, str]:
    """An experiment's result and where it came from: an ``EvalResult``, a results file, or
    (with ``store``: a ``ScoreStore``, a SQLite file or a database URL) an experiment's id or
    name (the latest run of that name)."""
    if isinstance(experiment, EvalResult):
        return experiment, "a result in memory"
    if store is not None:
        from evaldag._store.locations import read_result, shown_location  # loads SQLAlchemy

        return read_result(store, str(experiment)), shown_location(store)
    path = Path(experiment)
    if not path.is_file():
        raise EvalDagError(
            "EXPERIMENT_NOT_FOUND",
            f"'{experiment}' is not a results file; give a .parquet file written by "
            "'evaldag run --out', 'evaldag demo' or EvalResult.to_parquet",
            details={"experiment": str(experiment)},
        )
    return EvalResult.read_parquet(path), str(path)


def compare_experiments(
    a: EvalResult | str | os.PathLike[str],
    b: EvalResult | str | os.PathLike[str],
    *,
    threshold: float | Mapping[str, float] = 0.0,
    directions: Mapping[str, Direction] | None = None,
    key: str | None = None,
    pass_score: float = PASS_SCORE,
    level: float = LEVEL,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    store: Any = None,
    allow_missing: bool = False,
) -> Comparison:
    """Experiment ``b`` against experiment ``a``: which scorers regressed, and on which items.

    :param a: the baseline: an ``EvalResult``, a results ``.parquet`` file, or with ``store`` an
        experiment's id or name (``run_evals(name=...)``; the latest run of that name).
    :param b: the candidate, likewise.
    :param threshold: how far an average may move the worse way before it counts (Mastra's
        threshold, default 0); one number, or scorer id → number. A gate's newly failed items
        regress it whatever the threshold, so a mapping may not name a gate.
    :param directions: scorer id → ``"higher"`` or ``"lower"`` (which way is better). Default:
        ``"lower"`` for a scorer whose ``better`` is ``"lower"`` (bias, hallucination,
        toxicity) or whose threshold has only a maximum, else ``"higher"``. Not for a gate,
        whose items pass at a score of 1.
    :param key: the data column that pairs items (default: ``id``, else ``input``, else the
        row position).
    :param pass_score: an item passes at this score or above (Mastra's 0.5); at or below it for
        a scorer whose lower scores are better.
    :param level: the intervals' confidence level.
    :param resamples: bootstrap resamples per interval; at least ``minimum_resamples(level)``
        (1,000 at 95 %): 25 resampled means beyond each end of the interval, below which an
        end is one or two extreme resamples (one resample gives an interval of a single mean).
    :param seed: the bootstrap's seed.
    :param store: the score store ``a`` and ``b`` are experiments of: a ``ScoreStore``, a
        SQLite file or a database URL (``run_evals(store=...)`` saves runs there).
    :param allow_missing: let ``b`` pass (``Comparison.passed``) while it lacks scorers, gates,
        items or scores that ``a`` has (``b`` could not score an item ``a`` scored, or a scorer
        failed on it); they are listed either way. A gate's item that passed in ``a`` and that
        ``b`` failed on is no missing score but a newly failed item, a regression either way.
    """
    if not 0 < level < 1:
        raise EvalDagError("INVALID_COMPARE_OPTION", f"level must lie in (0, 1), got {level!r}")
    _require_resamples(resamples, level)
    result_a, source_a = experiment_result(a, store)
    result_b, source_b = experiment_result(b, store)
    # Paired by the run fields whatever each run's data called them (run_evals(columns=...)).
    items_a, items_b = result_a.canonical_items(), result_b.canonical_items()
    fields = {column: field for field, column in {**result_b.columns, **result_a.columns}.items()}
    item_key = pairing_key(items_a, items_b, None if key is None else fields.get(key, key))
    keys_a, keys_b = item_keys(items_a, item_key), item_keys(items_b, item_key)
    # A conversation's turn gates are gates too, each turn's apart: turn<N>.<id>, as in tests.
    turn_gates_a, turn_gates_b = _turn_gates(result_a, keys_a), _turn_gates(result_b, keys_b)
    gate: Role = "gate"
    roles = {**_roles(result_a), **dict.fromkeys(turn_gates_a, gate)}
    roles_b = {**_roles(result_b), **dict.fromkeys(turn_gates_b, gate)}
    missing_scorers = [sid for sid in roles if sid not in roles_b]
    roles.update({sid: role for sid, role in roles_b.items() if sid not in roles})
    _require_known_ids(roles, directions, threshold)
    _require_no_gates(roles, directions, threshold)
    inferred = {**_directions(result_b), **_directions(result_a)}
    chosen = {sid: (directions or {}).get(sid, inferred.get(sid, "higher")) for sid in roles}
    for sid in roles:
        if chosen[sid] not in ("higher", "lower"):
            raise EvalDagError(
                "INVALID_COMPARE_OPTION",
                f"directions['{sid}'] must be 'higher' or 'lower', got {chosen[sid]!r}",
            )
    keyed = {
        sid: (
            turn_gates_a.get(sid, _keyed_scores(result_a.items, sid, keys_a, roles[sid])),
            turn_gates_b.get(sid, _keyed_scores(result_b.items, sid, keys_b, roles[sid])),
        )
        for sid in roles
    }
    comparisons, deltas, lost_scores = [], [], {}
    for sid, (scores_a, scores_b) in keyed.items():
        role, direction = roles[sid], chosen[sid]
        both = (
            pd.DataFrame({"a": scores_a, "b": scores_b})
            if scores_a is not None and scores_b is not None
            else pd.DataFrame({"a": [], "b": []}, dtype=float)
        )
        # B ran the scorer on the item (a skipped node is no score in either run) and has none
        ran_b = both.index.isin([] if scores_b is None else scores_b.index)
        lost = both["a"].notna() & both["b"].isna() & ran_b
        if lost.any():
            lost_keys = set(both.index[lost])
            lost_scores[sid] = [key for key in keys_a if key in lost_keys]
        paired = both.dropna()
        paired["delta"] = paired["b"] - paired["a"]
        newly_failed = _newly_failed(paired, keys_a) if role == "gate" else []
        comparisons.append(
            _scorer_comparison(
                sid,
                role,
                scores_a,
                scores_b,
                paired["delta"],
                direction=direction,
                threshold=_threshold(threshold, sid),
                pass_score=pass_score,
                newly_failed=newly_failed,
                interval=bootstrap_interval(
                    paired["delta"].to_numpy(), level=level, resamples=resamples, seed=seed
                ),
            )
        )
        worse_first = paired["delta"] * (1 if direction == "higher" else -1)
        deltas.append(paired.assign(scorer=sid).iloc[worse_first.argsort(kind="stable")])
    item_deltas = pd.concat(deltas).rename_axis("item").reset_index()
    return Comparison(
        a=_info(result_a, source_a),
        b=_info(result_b, source_b),
        item_key=item_key,
        paired_items=len(set(keys_a) & set(keys_b)),
        scorers=comparisons,
        item_deltas=item_deltas[["item", "scorer", "a", "b", "delta"]],
        pass_score=pass_score,
        missing_scorers=missing_scorers,
        missing_items=keys_a[~keys_a.isin(keys_b)].tolist(),
        added_items=keys_b[~keys_b.isin(keys_a)].tolist(),
        lost_scores=lost_scores,
        allow_missing=allow_missing,
    )


def _info(result: EvalResult, source: str) -> ExperimentInfo:
    return ExperimentInfo(
        source=source,
        experiment_id=result.experiment_id,
        name=result.name,
        items=len(result.items),
        untrustworthy=result.summary.untrustworthy,
    )


def _scorer_comparison(
    sid: str,
    role: Literal["scorer", "gate"],
    scores_a: pd.Series | None,
    scores_b: pd.Series | None,
    deltas: pd.Series,
    *,
    direction: Direction,
    threshold: float,
    pass_score: float,
    newly_failed: list[str],
    interval: ConfidenceInterval | None,
) -> ScorerComparison:
    """One scorer's stats on both sides, its paired deltas and what they say."""
    stats_a = None if scores_a is None else _stats(scores_a, pass_score, direction)
    stats_b = None if scores_b is None else _stats(scores_b, pass_score, direction)
    sign = 1 if direction == "higher" else -1
    delta = None
    change: Change = "added" if stats_a is None else "removed"
    regressed = False
    if stats_a is not None and stats_b is not None:
        delta = stats_b.average - stats_a.average
        if interval is not None:
            # The interval of "better" (delta × sign): wholly below 0 is worse, above is better.
            low, high = sorted((interval.low * sign, interval.high * sign))
            change = "worse" if high < 0 else "better" if low > 0 else "no clear change"
        else:
            change = (
                "worse"
                if delta * sign < 0
                else "better"
                if delta * sign > 0
                else ("no clear change")
            )
        # Mastra's rule: a delta beyond the threshold, the worse way.
        regressed = bool(newly_failed) or (change == "worse" and delta * sign < -threshold)
    return ScorerComparison(
        scorer_id=sid,
        role=role,
        a=stats_a,
        b=stats_b,
        delta=delta,
        direction=direction,
        threshold=threshold,
        paired=len(deltas),
        worse=int((deltas * sign < 0).sum()),
        better=int((deltas * sign > 0).sum()),
        paired_delta=float(deltas.mean()) if len(deltas) else None,
        interval=interval,
        change=change,
        newly_failed=newly_failed,
        regressed=regressed,
    )


def _newly_failed(paired: pd.DataFrame, keys_a: pd.Series) -> list[str]:
    """The keys of the paired items that passed the gate in A and fail it in B, in A's order."""
    fell = paired.index[(paired["a"] >= GATE_PASS_SCORE) & (paired["b"] < GATE_PASS_SCORE)]
    return keys_a[keys_a.isin(fell)].tolist()


def _stats(scores: pd.Series, pass_score: float, direction: Direction) -> ScorerStats:
    """Mastra's stats: no score is an error; a pass is a score at or above ``pass_score``, or at
    or below it when lower is better (Mastra's pass of a toxicity is a toxic item)."""
    scored = scores.dropna()
    passing = scored >= pass_score if direction == "higher" else scored <= pass_score
    return ScorerStats(
        items=len(scores),
        scored=len(scored),
        error_rate=(len(scores) - len(scored)) / len(scores) if len(scores) else 0.0,
        pass_rate=float(passing.mean()) if len(scored) else 0.0,
        average=float(scored.mean()) if len(scored) else 0.0,
    )


def _threshold(threshold: float | Mapping[str, float], sid: str) -> float:
    value = threshold.get(sid, 0.0) if isinstance(threshold, Mapping) else threshold
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not (math.isfinite(value) and value >= 0)
    ):
        raise EvalDagError(
            "INVALID_COMPARE_OPTION",
            f"the threshold of '{sid}' must be a finite number >= 0, got {value!r}",
            details={"scorerId": sid},
        )
    return float(value)


def _require_known_ids(
    roles: Mapping[str, str],
    directions: Mapping[str, Direction] | None,
    threshold: float | Mapping[str, float],
) -> None:
    for option, given in (("directions", directions), ("threshold", threshold)):
        unknown = sorted(set(given) - set(roles)) if isinstance(given, Mapping) else []
        if unknown:
            raise EvalDagError(
                "INVALID_COMPARE_OPTION",
                f"{option} names {unknown}, which neither experiment scored; their scorers and "
                f"gates are {list(roles)}",
                details={"option": option, "ids": unknown},
            )


def _require_no_gates(
    roles: Mapping[str, str],
    directions: Mapping[str, Direction] | None,
    threshold: float | Mapping[str, float],
) -> None:
    """A gate's items pass at a score of 1, and one that newly fails regresses it: neither a
    direction nor a threshold of its own means anything, so naming a gate is a mistake."""
    for option, given in (("directions", directions), ("threshold", threshold)):
        gates = [sid for sid in given if roles[sid] == "gate"] if isinstance(given, Mapping) else []
        if gates:
            raise EvalDagError(
                "INVALID_COMPARE_OPTION",
                f"{option} names the gates {gates}: a gate's items pass at a score of 1, and "
                "an item that passed in A and fails in B regresses it whatever its direction or "
                f"threshold; leave the gates out of {option} (it is for scorers' averages)",
                details={"option": option, "ids": gates},
            )


def _require_resamples(resamples: int, level: float) -> None:
    minimum = minimum_resamples(level)
    if isinstance(resamples, bool) or not isinstance(resamples, int) or resamples < minimum:
        raise EvalDagError(
            "INVALID_COMPARE_OPTION",
            f"resamples (--resamples) must be an integer of at least {minimum:,} for a "
            f"{level * 100:g} % interval (25 resampled means beyond each end), got {resamples!r}; "
            f"give {minimum} or more (the default is {RESAMPLES:,})",
            details={"option": "resamples", "minimum": minimum},
        )


def pairing_key(items_a: pd.DataFrame, items_b: pd.DataFrame, key: str | None) -> str:
    """The column that pairs items: ``key``, else the first of ``KEY_COLUMNS`` that names every
    item of both runs once, else ``'position'`` for runs of one size."""
    if key is not None:
        for name, items in (("A", items_a), ("B", items_b)):
            problem = _key_problem(items, key)
            if problem:
                raise EvalDagError(
                    "INVALID_COMPARE_OPTION",
                    f"key='{key}' cannot pair items: experiment {name}'s column {problem}",
                    details={"key": key},
                )
        return key
    for column in KEY_COLUMNS:
        if not _key_problem(items_a, column) and not _key_problem(items_b, column):
            return column
    if len(items_a) == len(items_b):
        return "position"
    raise EvalDagError(
        "INVALID_COMPARE_OPTION",
        f"cannot pair the items: neither {' nor '.join(KEY_COLUMNS)} names each item of both "
        f"experiments once, and their sizes differ ({len(items_a)} and {len(items_b)}); "
        "give key= a column that does",
    )


def _key_problem(items: pd.DataFrame, column: str) -> str | None:
    if column not in items.columns:
        return f"'{column}' is missing"
    keys = item_keys(items, column)
    if keys.isna().any():
        return f"'{column}' has missing values"
    if keys.duplicated().any():
        return f"'{column}' repeats {keys[keys.duplicated()].iloc[0]!r}"
    return None


def item_keys(items: pd.DataFrame, item_key: str) -> pd.Series:
    """Each item's key as text (JSON for a non-text value), by the items' index."""
    if item_key == "position" and item_key not in items.columns:
        return pd.Series([str(n) for n in range(len(items))], index=items.index)
    return items[item_key].map(_key_text)


def _key_text(value: Any) -> str | None:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)


def _keyed_scores(items: pd.DataFrame, sid: str, keys: pd.Series, role: Role) -> pd.Series | None:
    """The scorer's score per item key; NaN where it could not score, and where it failed
    unless it is a gate: a gate's failed item scores 0, as ``run_evals`` counts it (no pass, so
    an item that passed in A and failed in B newly fails the gate); None when the experiment
    has no such scorer. Items it skipped (a workflow node that did not run) are left out, as
    Mastra writes no score for them."""
    if not has_scorer(items, sid):
        return None
    states = item_states(items, sid)
    ran = ~states.skipped.to_numpy()
    counted = states.counted_scores
    if role == "gate":
        counted = counted.mask(states.failed, 0.0)
    scores = counted.to_numpy()[ran]
    return pd.Series(scores, index=keys.to_numpy()[ran], name=sid)


def _turn_gates(result: EvalResult, keys: pd.Series) -> dict[str, pd.Series]:
    """Each turn gate's scores (``turn<N>.<id>``), by the key of the conversation item it is a
    turn of; as ``_keyed_scores``, 0 where it failed, NaN where it could not score."""
    turns, gates = result.turns, {}
    for turn in result.turn_results:
        if turns is None:
            if not turn.gate_results:
                continue
            raise EvalDagError(
                "INVALID_COMPARE_OPTION",
                f"experiment {result.experiment_id} has gates on turn {turn.index} of its "
                "conversations but not their rows, so they cannot be compared item by item; "
                "run it again with this version of evaldag",
            )
        rows = turns[turns["turn"] == turn.index].reset_index(drop=True)
        of_items = pd.Series(keys.to_numpy()[rows["item"].to_numpy(dtype=int)])
        for gate in turn.gate_results:
            scores = _keyed_scores(rows, gate.id, of_items, "gate")
            if scores is not None:
                gates[f"turn{turn.index}.{gate.id}"] = scores
    return gates


def _roles(result: EvalResult) -> dict[str, Role]:
    """Scorer and gate ids in configuration order, from the definitions or the item columns."""
    if result.scorers:
        return {d["id"]: "gate" if d.get("role") == "gate" else "scorer" for d in result.scorers}
    gates = {g.id for g in result.gate_results}
    return {sid: "gate" if sid in gates else "scorer" for sid in scorer_ids(result.items.columns)}


def _directions(result: EvalResult) -> dict[str, Direction]:
    """``lower`` for the scorers that say lower is better (``Scorer.better``: bias,
    hallucination, toxicity) and those whose threshold is a maximum only."""
    thresholds = {t.id: t.threshold for t in result.threshold_results}
    thresholds.update({d["id"]: d["threshold"] for d in result.scorers if d.get("threshold")})
    lower = {d["id"] for d in result.scorers if d.get("better") == "lower"}
    lower |= {
        sid
        for sid, spec in thresholds.items()
        if isinstance(spec, dict) and spec.get("max") is not None and spec.get("min") is None
    }
    return dict.fromkeys(lower, "lower")
