"""What ``evaldag run --estimate`` prints: the judge calls, tokens and dollars a run would cost."""

from __future__ import annotations

from evaldag._eval.estimate import CostEstimate, JudgeCallEstimate


def estimate_text(estimate: CostEstimate, title: str) -> str:
    """A row per judged scorer and the total, why items make no call and which scorers have no
    judged step, then what is estimated rather than counted."""
    rows: list[tuple[str, ...]] = [("scorer", "calls", "input tokens", "output tokens", "cost")]
    parts = [*estimate.scorers.items(), ("total", estimate.total)] if estimate.scorers else []
    rows += [(name, *_cells(part)) for name, part in parts]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [f"{title}: {estimate.items:,} items; no judge called", ""]
    if not estimate.scorers:
        lines.append("no scorer or gate has a judged step: the run makes no judge call")
        return "\n".join(lines)
    for row in rows:
        cells = [
            cell.ljust(w) if i == 0 else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append("  " + "  ".join(cells).rstrip())
    lines.append("")
    notes = [(sid, note) for sid, part in estimate.scorers.items() for note in part.notes]
    lines += [f"{sid}: {note}" for sid, note in notes]
    if estimate.unjudged:
        lines.append(f"no judged step, no call: {', '.join(estimate.unjudged)}")
    if notes or estimate.unjudged:
        lines.append("")
    if estimate.total.unpriced:
        unpriced = ", ".join(estimate.total.unpriced)
        lines.append(f"not priced by litellm's table (left out of the cost): {unpriced}")
    lines.append(
        "estimated: one call per judged step of each item its code steps let through (no "
        "retries); input tokens from litellm's tokenizer on each item's first judged prompt "
        f"(later judged steps counted as large); {estimate.output_tokens_per_call} output "
        "tokens per call; prices from litellm's table"
    )
    return "\n".join(lines)


def _cells(part: JudgeCallEstimate) -> tuple[str, ...]:
    return (
        f"{part.calls:,}",
        f"{part.input_tokens:,}",
        f"{part.output_tokens:,}",
        f"${part.cost_usd:.4f}",
    )
