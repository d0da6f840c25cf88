"""``evaldag compare A B``: experiment B against experiment A, per scorer and item by item.

Exits 1 when a scorer regressed (B is worse by its interval and by Mastra's threshold rule), when
a gate regressed (an item that passed it in A fails it in B, or the gate failed on it), or when
B lacks scorers, gates, items or scores that A has (unless ``--allow-missing``), else 0; 3 on an
error, as every command.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING

from evaldag._scorer.thresholds import ThresholdSpec, figure_text

if TYPE_CHECKING:
    from evaldag._experiments.compare import Comparison, ScorerComparison

EXIT_SAME = 0
EXIT_REGRESSED = 1
#: How many of a worse scorer's items, or of the items B lacks, are named; the rest are counted.
NAMED_ITEMS = 5


def add_compare_command(commands: argparse._SubParsersAction) -> None:
    """The ``compare`` subcommand of the ``evaldag`` parser."""
    compare = commands.add_parser(
        "compare",
        help="compare two runs: per-scorer stats and paired per-item deltas; exit 1 on a "
        "regression, when B lacks scorers, items or scores of A, or when a run measured nothing",
        description="Compare experiment B with experiment A (results files written by "
        "'evaldag run --out' or 'evaldag demo', or runs saved in a score store): Mastra's "
        "per-scorer stats (error rate, pass rate, average, delta), then the items of both "
        "paired and the mean of their deltas with a bootstrap confidence interval. B is worse "
        "only when that interval lies wholly on the worse side of 0; exit 1 when a scorer is "
        "worse by more than the threshold, when an item that passed a gate in A fails it in B "
        "(or the gate errs on it: a failed item scores 0, as in 'evaldag run'; whatever the "
        "interval, the threshold and --allow-missing), or when B lacks scorers, gates or items "
        "that A has, or scores A has (B failed on or could not score the item) (unless "
        "--allow-missing), or when either run measured nothing (its verdict untrustworthy: a "
        "scorer or the target failed on every item), else 0.",
    )
    compare.add_argument(
        "a",
        metavar="A",
        help="the baseline: a results .parquet file, or with --store a run's id or name (the "
        "latest run of that name)",
    )
    compare.add_argument("b", metavar="B", help="the candidate, likewise")
    compare.add_argument(
        "--store",
        metavar="STORE",
        help="a score store (a SQLite file or a database URL) whose experiments A and B are",
    )
    compare.add_argument(
        "--threshold",
        type=float,
        default=0.0,
        metavar="X",
        help="how far a scorer's average may move the worse way before it is a regression "
        "(default: 0; a gate's newly failed items regress it whatever the threshold)",
    )
    compare.add_argument(
        "--lower-is-better",
        action="append",
        default=[],
        metavar="ID",
        help="a scorer whose lower scores are better (repeatable; default: those that say so, "
        "as bias, hallucination and toxicity do, and those whose threshold is a maximum only)",
    )
    compare.add_argument(
        "--key",
        metavar="COLUMN",
        help="the data column that pairs items (default: id, else input, else the row position)",
    )
    compare.add_argument(
        "--allow-missing",
        action="store_true",
        help="compare what both runs have when B lacks scorers, gates, items or scores of A "
        "(they are still listed) instead of exiting 1",
    )
    compare.add_argument(
        "--seed", type=int, default=0, metavar="N", help="the bootstrap's seed (default: 0)"
    )
    compare.add_argument(
        "--resamples",
        type=int,
        default=10_000,
        metavar="N",
        help="bootstrap resamples per interval (default: 10000; at least 1000, 25 resampled "
        "means beyond each end of the 95%% interval)",
    )
    compare.set_defaults(command=compare_command)


def compare_command(args: argparse.Namespace) -> int:
    """Print the comparison; exit 1 on a regression, when B lacks what A has or when either
    run measured nothing."""
    from evaldag._experiments.compare import compare_experiments

    comparison = compare_experiments(
        args.a,
        args.b,
        threshold=args.threshold,
        directions=dict.fromkeys(args.lower_is_better, "lower"),
        key=args.key,
        seed=args.seed,
        resamples=args.resamples,
        store=args.store,
        allow_missing=args.allow_missing,
    )
    print(comparison_text(comparison))
    return EXIT_SAME if comparison.passed else EXIT_REGRESSED


def comparison_text(comparison: Comparison) -> str:
    """The comparison as text: both tables, the worse items, and the conclusion."""
    lines = [
        f"{side}: {info.source} (experiment {info.experiment_id or 'without id'}"
        f"{f' {info.name!r}' if info.name else ''}, {info.items:,} items)"
        for side, info in (("A", comparison.a), ("B", comparison.b))
    ]
    lines.append(f"{comparison.paired_items:,} items paired by {_key_words(comparison.item_key)}")
    lines += ["", *_stats_table(comparison), "", *_deltas_table(comparison)]
    worse = _worse_items(comparison)
    if worse:
        lines += ["", *worse]
    gate_failures = _gate_failures(comparison)
    if gate_failures:
        lines += ["", *gate_failures]
    differences = _differences(comparison)
    if differences:
        lines += ["", *differences]
    lines += ["", *_conclusion(comparison)]
    return "\n".join(lines)


def _key_words(item_key: str) -> str:
    if item_key == "position":
        return "their row position"
    return f"the data's '{item_key}' column"


def _percent(share: float) -> str:
    return f"{share:.1%}"


def _signed(number: float | None, against: ThresholdSpec) -> str:
    return "-" if number is None else figure_text(number, against, signed=True)


def _allowed(s: ScorerComparison) -> ThresholdSpec:
    """How far a delta may go either way before Mastra's rule calls it a regression."""
    return {"min": -s.threshold, "max": s.threshold}


def _stats_table(comparison: Comparison) -> list[str]:
    rows = [
        (
            "id",
            "kind",
            "A err",
            "A pass",
            "A avg",
            "B err",
            "B pass",
            "B avg",
            "delta",
            "better",
            "threshold",
            "Mastra",
        )
    ]
    for s in comparison.scorers:
        sides = [
            (_percent(x.error_rate), _percent(x.pass_rate), f"{x.average:.2f}")
            if x is not None
            else ("-", "-", "-")
            for x in (s.a, s.b)
        ]
        beyond = s.delta is not None and s.delta * (1 if s.direction == "higher" else -1) < (
            -s.threshold
        )
        rows.append(
            (
                s.scorer_id,
                s.role,
                *sides[0],
                *sides[1],
                _signed(s.delta, _allowed(s)),
                s.direction,
                figure_text(s.threshold, s.threshold),
                "regression" if beyond else "-" if s.delta is None else "ok",
            )
        )
    title = (
        "Per scorer (Mastra's stats: err = items without a score, pass = scored items at "
        f">= {comparison.pass_score:.2f} (<= for dir lower), delta = B avg - A avg, Mastra = its "
        "rule: a delta "
        "beyond the threshold the worse way is a regression):"
    )
    return [title, *text_table(rows, numeric=range(2, 11))]


def _deltas_table(comparison: Comparison) -> list[str]:
    interval = next((s.interval for s in comparison.scorers if s.interval is not None), None)
    level = f"{interval.level:.0%}" if interval else "95%"
    rows = [("id", "paired", "worse", "better", "mean delta", f"{level} interval", "change")]
    for s in comparison.scorers:
        rows.append(
            (
                s.scorer_id,
                str(s.paired),
                str(s.worse),
                str(s.better),
                _signed(s.paired_delta, _allowed(s)),
                f"[{_signed(s.interval.low, 0.0)}, {_signed(s.interval.high, 0.0)}]"
                if s.interval
                else "-",
                "REGRESSED" if s.regressed else _change_words(s),
            )
        )
    how = (
        f"{interval.resamples:,} resamples, seed {interval.seed}"
        if interval
        else "no scorer has two paired items"
    )
    title = (
        f"Paired per-item deltas (B - A on the items scored in both; {level} percentile "
        f"bootstrap interval of their mean, {how}):"
    )
    return [title, *text_table(rows, numeric=range(1, 5))]


def _change_words(s: ScorerComparison) -> str:
    if s.change == "worse":
        return f"worse, within the threshold {figure_text(s.threshold, s.threshold)}"
    if s.change in ("added", "removed"):
        return f"only in {'B' if s.change == 'added' else 'A'}"
    return s.change


def text_table(rows: Sequence[tuple[str, ...]], numeric: range) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  "
        + "  ".join(
            cell.rjust(width) if index in numeric else cell.ljust(width)
            for index, (cell, width) in enumerate(zip(row, widths, strict=True))
        ).rstrip()
        for row in rows
    ]


def _worse_items(comparison: Comparison) -> list[str]:
    """A line per worse scorer naming its items that fell most, worst first."""
    worse = [s for s in comparison.scorers if s.change == "worse"]
    if not worse:
        return []
    deltas = comparison.item_deltas
    width = max(len(s.scorer_id) for s in worse)
    lines = [f"Where B is worse (items by {_key_words(comparison.item_key)}, worst first):"]
    for s in worse:
        rows = deltas[deltas["scorer"] == s.scorer_id]
        sign = 1 if s.direction == "higher" else -1
        fell = rows[rows["delta"] * sign < 0]
        named = [
            f"{row.item} {row.a:.2f} -> {row.b:.2f}" for row in fell.head(NAMED_ITEMS).itertuples()
        ]
        if len(fell) > NAMED_ITEMS:
            named.append(f"and {len(fell) - NAMED_ITEMS} more")
        text = ", ".join(named) or "no paired item; B has no scores"
        lines.append(f"  {s.scorer_id.ljust(width)}  {text}")
    return lines


def _gate_failures(comparison: Comparison) -> list[str]:
    """A line per gate naming the items that passed it in A and fail it in B."""
    gates = [s for s in comparison.scorers if s.newly_failed]
    if not gates:
        return []
    by = _key_words(comparison.item_key)
    lines = [f"Gates B newly fails (items that passed in A and fail in B, by {by}):"]
    for s in gates:
        count = _count(len(s.newly_failed), "item", "items")
        lines.append(f"  {s.scorer_id}: {count}: {_named(s.newly_failed)}")
    return lines


def _named(keys: list[str]) -> str:
    named = ", ".join(keys[:NAMED_ITEMS])
    return named if len(keys) <= NAMED_ITEMS else f"{named} and {len(keys) - NAMED_ITEMS} more"


def _differences(comparison: Comparison) -> list[str]:
    """What one run has and the other lacks: scorers, gates, items and scores."""
    by = _key_words(comparison.item_key)
    lines = []
    if comparison.missing_scorers:
        lines.append(
            f"  scorers and gates of A that B lacks: {', '.join(comparison.missing_scorers)}"
        )
    if comparison.missing_items:
        lines.append(
            f"  items of A that B lacks: {len(comparison.missing_items):,} of "
            f"{comparison.a.items:,} (by {by}): {_named(comparison.missing_items)}"
        )
    for sid, keys in comparison.lost_scores.items():
        lines.append(
            f"  scores of A that B lost ({sid}: B failed on or could not score the item): "
            f"{len(keys):,} (by {by}): {_named(keys)}"
        )
    added = [s.scorer_id for s in comparison.scorers if s.change == "added"]
    if added:
        lines.append(f"  scorers and gates only B has (not compared): {', '.join(added)}")
    if comparison.added_items:
        lines.append(
            f"  items only B has (not compared): {len(comparison.added_items):,} (by {by}): "
            f"{_named(comparison.added_items)}"
        )
    return ["What one run has and the other lacks:", *lines] if lines else []


def _conclusion(comparison: Comparison) -> list[str]:
    """The regression line, then, when B lacks what A has, the line that says what follows."""
    regressed = comparison.regressions
    if regressed:
        why = [
            f"{s.scorer_id} (gate: {_count(len(s.newly_failed), 'item', 'items')} that passed "
            f"in A {'fails' if len(s.newly_failed) == 1 else 'fail'} in B)"
            if s.newly_failed
            else s.scorer_id
            for s in comparison.scorers
            if s.regressed
        ]
        by_interval = any(s.regressed and not s.newly_failed for s in comparison.scorers)
        verdict = f"REGRESSED: {', '.join(why)}" + (
            " (B is worse: the interval lies below 0 the worse way and the delta goes beyond "
            "the threshold)"
            if by_interval
            else ""
        )
    else:
        verdict = (
            "no regression: no scorer's interval lies wholly on the worse side of 0 with a "
            "delta beyond the threshold"
        ) + (" (on what both runs have)" if comparison.incomplete else "")
    lines = [verdict]
    if comparison.incomplete:
        lacks = " and ".join(
            what
            for what in (
                _count(len(comparison.missing_scorers), "scorer or gate", "scorers or gates"),
                _count(len(comparison.missing_items), "item", "items"),
                _count(sum(map(len, comparison.lost_scores.values())), "score", "scores"),
            )
            if what
        )
        lines.append(
            f"B lacks {lacks} of A's; --allow-missing: compared on what both have"
            if comparison.allow_missing
            else f"INCOMPLETE: B lacks {lacks} of A's (listed above), so it cannot stand in "
            "for A; rerun B on all of A's items with all of A's scorers, or give "
            "--allow-missing to compare only what both have"
        )
    for side, info in (("A", comparison.a), ("B", comparison.b)):
        if info.untrustworthy is not None:
            lines.append(
                f"UNTRUSTWORTHY: {side} measured nothing, so nothing can be compared with it: "
                f"{info.untrustworthy}; fix the run and compare again"
            )
    return lines


def _count(count: int, one: str, many: str) -> str:
    return "" if not count else f"{count:,} {one if count == 1 else many}"
