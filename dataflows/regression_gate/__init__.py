"""Compare a candidate eval run against a baseline one and decide whether it regressed.

Both runs are results Parquet files written by ``EvalResult.to_parquet`` (or ``evaldag run
--out``). The dataflow pairs their items, works out per-scorer deltas and the items that got
worse, and gives a verdict a CI job can act on. A candidate that lacks scorers, gates or items
of the baseline, or failed on items the baseline scored, fails it, unless ``allow_missing``.
"""

import json
import logging
from typing import Any, Literal

from hamilton import contrib
from hamilton.function_modifiers import config

logger = logging.getLogger(__name__)

with contrib.catch_import_errors(__name__, __file__, logger):
    import pandas as pd

    from evaldag import EvalResult

RegressionVerdict = Literal["passed", "failed"]


def baseline_result(baseline_path: str) -> EvalResult:
    """The baseline run, read from its results Parquet file."""
    return EvalResult.read_parquet(baseline_path)


def candidate_result(candidate_path: str) -> EvalResult:
    """The candidate run, read from its results Parquet file."""
    return EvalResult.read_parquet(candidate_path)


def _averages(result: EvalResult) -> dict[str, dict[str, Any]]:
    """Per scorer and gate id: its role, dataset average and failed-item count."""
    gate_scores = {gate.id: gate.score for gate in result.gate_results}
    averages = {}
    for definition in result.scorers:
        sid = definition["id"]
        role = definition["role"]
        mean = gate_scores.get(sid) if role == "gate" else result.scores.get(sid)
        averages[sid] = {
            "role": role,
            "average": mean,
            "errors": result.summary.errors.get(sid, 0),
        }
    return averages


def scorer_deltas(
    baseline_result: EvalResult, candidate_result: EvalResult, max_average_drop: float = 0.0
) -> pd.DataFrame:
    """One row per scorer and gate: baseline and candidate averages, delta, whether it regressed.

    :param max_average_drop: how far an average may fall before the scorer counts as regressed.
    """
    baseline, candidate = _averages(baseline_result), _averages(candidate_result)
    rows = []
    for sid in [*baseline, *(s for s in candidate if s not in baseline)]:
        before, after = baseline.get(sid), candidate.get(sid)
        old = before["average"] if before else None
        new = after["average"] if after else None
        delta = None if old is None or new is None else new - old
        status = "removed" if after is None else "added" if before is None else "compared"
        rows.append(
            {
                "scorer": sid,
                "role": (after or before)["role"],
                "status": status,
                "baseline": old,
                "candidate": new,
                "delta": delta,
                "baseline_errors": before["errors"] if before else 0,
                "candidate_errors": after["errors"] if after else 0,
                "regressed": (delta is not None and delta < -max_average_drop)
                or (old is not None and new is None and after is not None),
            }
        )
    return pd.DataFrame(rows).set_index("scorer")


def _key_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=repr)


def _scores(result: EvalResult, scorer_ids: list[str]) -> pd.DataFrame:
    items = result.items
    columns = {}
    for sid in scorer_ids:
        for part in ("score", "reason", "error"):
            column = f"{sid}.{part}"
            columns[column] = items[column] if column in items else None
    return pd.DataFrame(columns, index=items.index)


def _compared_ids(scorer_deltas: pd.DataFrame) -> list[str]:
    return scorer_deltas.index[scorer_deltas["status"] == "compared"].tolist()


def _item_keys(result: EvalResult, name: str, item_key: str) -> pd.Series:
    """Each item's ``item_key`` as text, checked to name every item of the run once."""
    if item_key not in result.items.columns:
        raise ValueError(
            f"The {name} results have no column {item_key!r} to match items on; pass "
            f"item_key= one of {list(result.items.columns)[:8]}, or use the config "
            "match_items_by='position'"
        )
    keys = result.items[item_key].map(_key_text)
    if keys.duplicated().any():
        duplicate = keys[keys.duplicated()].iloc[0]
        raise ValueError(
            f"The {name} results have several items with {item_key}={duplicate!r}; match on "
            "a column that is unique per item (item_key=...) or by position"
        )
    return keys


@config.when_not(match_items_by="position")
def paired_items__by_key(
    baseline_result: EvalResult,
    candidate_result: EvalResult,
    scorer_deltas: pd.DataFrame,
    item_key: str = "input",
) -> pd.DataFrame:
    """Items of both runs side by side, matched on the ``item_key`` column.

    Columns are ``item`` (the key) and ``baseline.<id>.score`` / ``candidate.<id>.score`` (and
    ``.reason``, ``.error``) for each scorer both runs have; items in one run only are left out.

    :param item_key: the dataset column that identifies an item in both runs.
    """
    ids = _compared_ids(scorer_deltas)
    sides = []
    for name, result in (("baseline", baseline_result), ("candidate", candidate_result)):
        side = _scores(result, ids).add_prefix(f"{name}.")
        side.index = pd.Index(_item_keys(result, name, item_key), name="item")
        sides.append(side)
    return sides[0].join(sides[1], how="inner").reset_index()


@config.when_not(match_items_by="position")
def missing_items__by_key(
    baseline_result: EvalResult, candidate_result: EvalResult, item_key: str = "input"
) -> list[str]:
    """The ``item_key`` of each baseline item the candidate lacks, in baseline order."""
    before = _item_keys(baseline_result, "baseline", item_key)
    after = _item_keys(candidate_result, "candidate", item_key)
    return before[~before.isin(after)].tolist()


@config.when(match_items_by="position")
def missing_items__by_position(
    baseline_result: EvalResult, candidate_result: EvalResult
) -> list[str]:
    """The positions of the baseline's items past the candidate's last one."""
    return [str(n) for n in range(len(candidate_result.items), len(baseline_result.items))]


@config.when(match_items_by="position")
def paired_items__by_position(
    baseline_result: EvalResult, candidate_result: EvalResult, scorer_deltas: pd.DataFrame
) -> pd.DataFrame:
    """Items of both runs side by side, the n-th item of one against the n-th of the other."""
    ids = _compared_ids(scorer_deltas)
    if len(baseline_result.items) != len(candidate_result.items):
        raise ValueError(
            f"Matching items by position needs runs of one size; the baseline has "
            f"{len(baseline_result.items)} items, the candidate {len(candidate_result.items)}. "
            "Match them by a key column instead (match_items_by='key', item_key=...)"
        )
    sides = [
        _scores(result, ids).add_prefix(f"{name}.").reset_index(drop=True)
        for name, result in (("baseline", baseline_result), ("candidate", candidate_result))
    ]
    paired = sides[0].join(sides[1])
    paired.insert(0, "item", [str(n) for n in range(len(paired))])
    return paired


def worse_items(
    paired_items: pd.DataFrame, scorer_deltas: pd.DataFrame, min_item_drop: float = 0.0
) -> pd.DataFrame:
    """Every (item, scorer) whose score fell by more than ``min_item_drop``, or that now fails.

    Sorted worst first; ``candidate_reason`` and ``candidate_error`` say why.
    """
    rows = []
    for sid in _compared_ids(scorer_deltas):
        before = paired_items[f"baseline.{sid}.score"]
        after = paired_items[f"candidate.{sid}.score"]
        newly_failed = (
            paired_items[f"candidate.{sid}.error"].notna()
            & paired_items[f"baseline.{sid}.error"].isna()
        )
        fell = (after - before) < -min_item_drop
        for index in paired_items.index[fell | newly_failed]:
            old, new = before[index], after[index]
            rows.append(
                {
                    "item": paired_items.at[index, "item"],
                    "scorer": sid,
                    "baseline_score": old,
                    "candidate_score": new,
                    "delta": new - old if pd.notna(new) and pd.notna(old) else None,
                    "candidate_reason": paired_items.at[index, f"candidate.{sid}.reason"],
                    "candidate_error": paired_items.at[index, f"candidate.{sid}.error"],
                }
            )
    columns = [
        "item",
        "scorer",
        "baseline_score",
        "candidate_score",
        "delta",
        "candidate_reason",
        "candidate_error",
    ]
    frame = pd.DataFrame(rows, columns=columns)
    # Items that now fail have no delta: list them first, then the largest drops.
    return frame.sort_values("delta", na_position="first", kind="stable").reset_index(drop=True)


def newly_failing_gates(baseline_result: EvalResult, candidate_result: EvalResult) -> list[str]:
    """Gates that passed in the baseline and fail in the candidate."""
    passed_before = {gate.id for gate in baseline_result.gate_results if gate.passed}
    return [
        gate.id
        for gate in candidate_result.gate_results
        if gate.id in passed_before and not gate.passed
    ]


def regression_reasons(
    scorer_deltas: pd.DataFrame,
    newly_failing_gates: list[str],
    missing_items: list[str],
    worse_items: pd.DataFrame,
    allow_missing: bool = False,
) -> list[str]:
    """Why the candidate counts as a regression, one sentence each; empty when it does not.

    A scorer that failed on items the baseline scored is one: without them its average can
    rise (failing on the hardest items would look like progress).

    :param allow_missing: let a candidate that lacks scorers, gates, items or the scores of
        items it failed on pass on what both runs have.
    """
    reasons = [f"gate {gid} passed in the baseline and fails now" for gid in newly_failing_gates]
    if not allow_missing:
        removed = scorer_deltas[scorer_deltas["status"] == "removed"]
        reasons += [
            f"{row['role']} {sid} is in the baseline but not in the candidate"
            for sid, row in removed.iterrows()
        ]
        if missing_items:
            named = ", ".join(missing_items[:5]) + (
                f" and {len(missing_items) - 5} more" if len(missing_items) > 5 else ""
            )
            reasons.append(
                f"the candidate lacks {len(missing_items)} of the baseline's items: {named}"
            )
        lost = worse_items[
            worse_items["candidate_error"].notna() & worse_items["baseline_score"].notna()
        ]
        for sid, items in lost.groupby("scorer", sort=False)["item"]:
            named = ", ".join(items.head(5)) + (
                f" and {len(items) - 5} more" if len(items) > 5 else ""
            )
            reasons.append(
                f"{sid} failed on {len(items)} of the items the baseline scored: {named}"
            )
    for sid, row in scorer_deltas[scorer_deltas["regressed"]].iterrows():
        if pd.isna(row["delta"]):
            reasons.append(f"{sid} has no average any more ({row['candidate_errors']} errors)")
        else:
            reasons.append(
                f"{sid} average fell from {row['baseline']:.3f} to {row['candidate']:.3f} "
                f"({row['delta']:+.3f})"
            )
    return reasons


def verdict(regression_reasons: list[str]) -> RegressionVerdict:
    """``failed`` when the candidate regressed on any scorer or gate, else ``passed``."""
    return "failed" if regression_reasons else "passed"


def regression_report(
    verdict: RegressionVerdict,
    regression_reasons: list[str],
    scorer_deltas: pd.DataFrame,
    worse_items: pd.DataFrame,
) -> str:
    """A Markdown summary for a pull-request comment or a CI log."""
    lines = [f"## Regression gate: {verdict}", ""]
    lines += [f"- {reason}" for reason in regression_reasons] or ["- no scorer got worse"]
    lines += ["", "| scorer | baseline | candidate | delta |", "| --- | ---: | ---: | ---: |"]
    for sid, row in scorer_deltas.iterrows():
        cells = [_number(row["baseline"]), _number(row["candidate"]), _number(row["delta"], True)]
        lines.append(f"| {sid} | {' | '.join(cells)} |")
    lines += ["", f"{len(worse_items)} item scores got worse."]
    return "\n".join(lines)


def _number(value: Any, signed: bool = False) -> str:
    if value is None or pd.isna(value):
        return "–"
    return f"{value:+.3f}" if signed else f"{value:.3f}"


if __name__ == "__main__":
    import sys
    import tempfile
    from pathlib import Path

    from hamilton import driver

    import evaldag
    from evaldag import checks
    from evaldag.scorers import completeness

    dr = driver.Builder().with_modules(sys.modules[__name__]).build()
    dr.display_all_functions(
        str(Path(__file__).with_name("dag.png")), deduplicate_inputs=True, show_legend=False
    )

    questions = ["What is the capital of France?", "Who wrote Hamlet?", "How tall is Everest?"]
    runs = {
        "baseline": [
            "Paris is the capital of France.",
            "William Shakespeare wrote Hamlet.",
            "Mount Everest is 8,849 metres tall.",
        ],
        "candidate": [
            "Paris is the capital of France.",
            "I am not sure.",
            "Everest is about 8,849 metres tall.",
        ],
    }
    with tempfile.TemporaryDirectory() as folder:
        paths = {}
        for name, answers in runs.items():
            result = evaldag.run_evals(
                pd.DataFrame({"input": questions, "output": answers}),
                scorers=[completeness().with_threshold(0.5)],
                gates=[checks.excludes("not sure")],
            )
            paths[f"{name}_path"] = str(result.to_parquet(Path(folder) / f"{name}.parquet"))
        outputs = dr.execute(["verdict", "regression_report", "worse_items"], inputs=paths)
    print(outputs["regression_report"])
    print(outputs["worse_items"])
