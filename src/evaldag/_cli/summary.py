"""What ``evaldag run`` and ``evaldag demo`` print about a run: the summary table, and where
each failed gate and missed threshold failed."""

from __future__ import annotations

import pandas as pd

from evaldag._cli.trials import trial_lines
from evaldag._report.failing import (
    failing_items,
    ids_source,
    item_ids,
    requirements,
    shortfall_text,
)
from evaldag._report.summary import (
    ScorerSummary,
    judge_limit_texts,
    outcome_word,
    requirement_text,
    scorer_summaries,
    turn_summaries,
    verdict_explanation,
)
from evaldag._results.eval_result import EvalResult, verdict_word
from evaldag._results.item_columns import first_not_scorable, has_scorer, item_states
from evaldag._scorer.thresholds import ThresholdSpec, figure_text, threshold_bounds

#: How many of a gate's or threshold's failing items are named; the rest are counted.
NAMED_ITEMS = 5


def summary_table(result: EvalResult, title: str) -> str:
    """The run summed up as text: a row per scorer and gate (its average with the report's 95 %
    bootstrap interval), judge usage, the verdict."""
    header = ("id", "kind", "average", "95% interval", "scored", "not scorable", "errors")
    rows = [(*header, "required", "result")]
    summaries = scorer_summaries(result)
    for s in [*summaries, *turn_summaries(result)]:
        outcome = outcome_word(s)
        rows.append(
            (
                s.id,
                s.role,
                "-" if s.mean is None else figure_text(s.mean, s.requirement),
                "-" if s.interval is None else s.interval.text(s.requirement),
                str(s.scored),
                str(s.not_scorable),
                str(s.errors),
                requirement_text(s.requirement, s.role),
                outcome if s.passed is not False else outcome.upper(),
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    numeric = {2, 3, 4, 5, 6, 7}
    lines = [f"{title}: {result.summary.total_items:,} items", ""]
    for row in rows:
        cells = [
            cell.rjust(width) if index in numeric else cell.ljust(width)
            for index, (cell, width) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append("  " + "  ".join(cells).rstrip())
    lines.append("")
    lines += _unscored_texts(result, [s for s in summaries if s.not_scorable and not s.scored])
    if result.summary.target_errors:
        lines.append(f"target failed on {result.summary.target_errors} items")
    lines += trial_lines(result)
    lines += [f"note: {problem}" for problem in result.summary.judge_cache_problems]
    lines += [f"warning: {warning}" for warning in result.summary.target_warnings]
    total = result.usage.get("total")
    if total is not None:
        lines.append(
            f"judge: {total.calls:,} calls, {total.total_tokens:,} tokens, ${total.cost_usd:.4f}"
        )
        lines += judge_limit_texts(result)
    if result.target_usage is not None:
        model = result.target_usage
        lines.append(
            f"target model: {model.calls:,} calls, {model.total_tokens:,} tokens, "
            f"${model.cost_usd:.4f}"
        )
    word = verdict_word(result)
    verdict = word.upper() if word else "none"
    lines.append(f"verdict: {verdict} ({verdict_explanation(result)})")
    return "\n".join(lines)


def _unscored_texts(result: EvalResult, unscored: list[ScorerSummary]) -> list[str]:
    """A line per scorer or gate that could score no item, with the first item's reason: most
    often a setting the data does not meet (no ``context=``, no ``ground_truth``)."""
    items, ids = result.items, item_ids(result.items)
    lines = []
    for s in unscored:
        first = first_not_scorable(items, s.id)
        if first is not None:
            position, reason = first
            label = ids.iloc[position]
            lines.append(f"{s.id} could score no item; first, on item {label}: {reason}")
    return [*lines, ""] if lines else []


def where_it_failed(result: EvalResult) -> str:
    """A line per failed gate and missed threshold (a turn's too) naming the items that pulled
    it down, worst first, and why when it is more than its items; ``''`` when none failed."""
    failed = [r for r in requirements(result) if not r.outcome.passed]
    if not failed:
        return ""
    width = max(len(r.label) for r in failed)
    lines = [f"where it failed (items named by {ids_source(result.items)}; worst first):"]
    for requirement in failed:
        sid, rows = requirement.outcome.id, requirement.rows(result)
        parts = [requirement.outcome.reason] if requirement.outcome.reason else []
        if has_scorer(rows, sid):
            failing = failing_items(rows, sid, requirement.required)
            if len(failing):
                parts.append(
                    _failing_text(rows, item_ids(rows), sid, requirement.required, failing.index)
                )
        text = "; ".join(parts) or "no single item falls short, only the average"
        lines.append(f"  {requirement.label.ljust(width)}  {text}")
    return "\n".join(lines)


def _failing_text(
    items: pd.DataFrame, ids: pd.Series, sid: str, requirement: ThresholdSpec, labels: pd.Index
) -> str:
    """``3 of 10 items below 1.00 or in error: q7 (error), q2 (0.00), q9 (0.50)``."""
    named = [
        f"{ids[label]} ({shortfall_text(items, sid, label, requirement)})"
        for label in labels[:NAMED_ITEMS]
    ]
    more = len(labels) - len(named)
    if more:
        named.append(f"and {more} more")
    low, high = (None if b is None else figure_text(b, b) for b in threshold_bounds(requirement))
    short = (
        f"outside {low} to {high}"
        if low is not None and high is not None
        else f"below {low}"
        if low is not None
        else f"above {high}"
    )
    in_error = " or in error" if item_states(items, sid).failed[labels].any() else ""
    count = f"{len(labels)} of {len(items):,} items"
    return f"{count} {short}{in_error}: {', '.join(named)}"
