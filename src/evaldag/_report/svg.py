"""The report's pictures as inline SVG: a score histogram per scorer and the eval's stages."""

from __future__ import annotations

import math
from typing import Any

from evaldag._report.summary import ScorerSummary, scorer_definitions
from evaldag._report.text import escaped, number_text, short_id
from evaldag._results.eval_result import EvalResult
from evaldag._scorer.thresholds import threshold_bounds

_BINS = 10


def histogram_svg(summary: ScorerSummary) -> str:
    """The scorer's scores as an SVG histogram, with its mean and requirement marked."""
    width, height, left, bottom, top = 340, 150, 30, 24, 18
    plot_w, plot_h = width - left - 10, height - bottom - top
    scores = summary.scores
    low = min(0.0, *scores) if scores else 0.0
    high = max(1.0, *scores) if scores else 1.0
    span = high - low

    def x(value: float) -> float:
        return left + (value - low) / span * plot_w

    counts = [0] * _BINS
    for score in scores:
        counts[min(int((score - low) / span * _BINS), _BINS - 1)] += 1
    peak = max(counts) or 1
    parts = [
        (
            f'<svg class="hist" viewBox="0 0 {width} {height}" role="img" '
            f'aria-label="Histogram of {escaped(summary.id)} scores">'
        ),
        f"<title>{escaped(summary.id)}: {len(scores)} scores</title>",
    ]
    parts += _requirement_bands(summary, x, top, plot_h, low, high)
    bin_w = plot_w / _BINS
    for index, count in enumerate(counts):
        if not count:
            continue
        bar_h = count / peak * (plot_h - 12)
        bar_x = left + index * bin_w + 1.5
        bar_y = top + plot_h - bar_h
        parts.append(
            f'<rect class="bar" x="{bar_x:.1f}" y="{bar_y:.1f}" width="{bin_w - 3:.1f}" '
            f'height="{bar_h:.1f}" rx="2"><title>{count} items from '
            f"{low + index * span / _BINS:.2f} to {low + (index + 1) * span / _BINS:.2f}"
            "</title></rect>"
            f'<text class="count" x="{bar_x + (bin_w - 3) / 2:.1f}" y="{bar_y - 3:.1f}">'
            f"{count}</text>"
        )
    axis_y = top + plot_h
    parts.append(f'<line class="axis" x1="{left}" x2="{left + plot_w}" y1="{axis_y}" '
                 f'y2="{axis_y}"/>')  # fmt: skip
    for tick in (low, (low + high) / 2, high):
        parts.append(f'<text class="tick" x="{x(tick):.1f}" y="{axis_y + 15}">{tick:g}</text>')
    if summary.mean is not None and not math.isnan(summary.mean):
        mean_x = x(min(max(summary.mean, low), high))
        # The label sits beside the line near the plot's edges, so that it is never cut off.
        anchor = (
            "end" if mean_x > left + plot_w - 30 else "start" if mean_x < left + 30 else "middle"
        )
        parts.append(
            f'<line class="mean" x1="{mean_x:.1f}" x2="{mean_x:.1f}" y1="{top - 4}" '
            f'y2="{axis_y}"/><text class="mean-label" x="{mean_x:.1f}" y="{top - 7}" '
            f'text-anchor="{anchor}">mean {number_text(summary.mean, against=summary.requirement)}'
            "</text>"
        )
    if not scores:
        parts.append(
            f'<text class="empty" x="{left + plot_w / 2}" y="{top + plot_h / 2}">no scores</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _requirement_bands(
    summary: ScorerSummary, x: Any, top: float, plot_h: float, low: float, high: float
) -> list[str]:
    requirement = summary.requirement
    # A gate's only passing score is 1.0: shading everything else says nothing.
    if requirement is None or summary.role == "gate":
        return []
    bounds = threshold_bounds(requirement)
    bands = []
    if bounds[0] is not None and bounds[0] > low:
        bands.append((low, bounds[0]))
    if bounds[1] is not None and bounds[1] < high:
        bands.append((bounds[1], high))
    return [
        f'<rect class="band" x="{x(start):.1f}" y="{top}" width="{x(end) - x(start):.1f}" '
        f'height="{plot_h}"><title>outside the requirement</title></rect>'
        for start, end in bands
    ]


def stages_svg(result: EvalResult) -> str:
    """The eval's stages drawn without Graphviz: a row of step boxes per scorer and gate,
    from the items to each average, its gate or threshold, and the verdict."""
    definitions = scorer_definitions(result)
    box_w, box_h, gap, row_h = 124, 30, 22, 44
    step_columns = max([len(d["steps"]) for d in definitions] + [1])
    x_steps = 20 + box_w + gap
    x_average = x_steps + step_columns * (box_w + gap)
    x_check = x_average + box_w + gap
    x_verdict = x_check + box_w + gap
    width = x_verdict + box_w + 20
    rows_end = 30 + (len(definitions) - 1) * row_h + box_h
    height = rows_end + 44
    middle = 30 + (len(definitions) - 1) * row_h / 2
    parts = [
        (
            f'<svg class="stages" viewBox="0 0 {width} {height}" role="img" '
            'aria-label="The stages of the eval">'
        ),
        (
            '<defs><marker id="arrow" viewBox="0 0 8 8" refX="7" refY="4" markerWidth="7" '
            'markerHeight="7" orient="auto"><path d="M0,0 L8,4 L0,8 z" class="arrowhead"/>'
            "</marker></defs>"
        ),
    ]
    for x_pos, title in (
        (20, "data"),
        (x_steps, "scorer steps"),
        (x_average, "averages"),
        (x_check, "checks"),
        (x_verdict, "verdict"),
    ):
        parts.append(f'<text class="col" x="{x_pos}" y="16">{title}</text>')
    parts.append(_box(20, middle, box_w, box_h, "items", "node-data"))
    has_checks = False
    for index, definition in enumerate(definitions):
        y = 30 + index * row_h
        sid = definition["id"]
        previous_x = 20 + box_w
        previous_y = middle + box_h / 2
        for column, step in enumerate(definition["steps"]):
            x_pos = x_steps + column * (box_w + gap)
            kind = "node-llm" if step.get("type") == "prompt" else "node-step"
            parts.append(_edge(previous_x, previous_y, x_pos, y + box_h / 2))
            parts.append(_box(x_pos, y, box_w, box_h, step["name"], kind, f"{sid}.{step['name']}"))
            previous_x, previous_y = x_pos + box_w, y + box_h / 2
        parts.append(_edge(previous_x, previous_y, x_average, y + box_h / 2))
        parts.append(_box(x_average, y, box_w, box_h, short_id(sid), "node-agg", f"{sid}.average"))
        check = "gate" if definition["role"] == "gate" else None
        if check is None and definition.get("threshold") is not None:
            check = "threshold"
        if check:
            has_checks = True
            parts.append(_edge(x_average + box_w, y + box_h / 2, x_check, y + box_h / 2))
            parts.append(_box(x_check, y, box_w, box_h, check, "node-check", f"{sid}.{check}"))
            parts.append(_edge(x_check + box_w, y + box_h / 2, x_verdict, middle + box_h / 2))
    if has_checks:
        parts.append(
            _box(x_verdict, middle, box_w, box_h, result.verdict or "verdict", "node-check")
        )
    legend = (
        ("node-step", "function step"),
        ("node-llm", "LLM judge step"),
        ("node-agg", "average"),
        ("node-check", "gate, threshold, verdict"),
    )
    for index, (kind, label) in enumerate(legend):
        x_pos = 20 + index * 170
        parts.append(
            f'<g class="{kind}"><rect x="{x_pos}" y="{rows_end + 20}" width="14" height="14" '
            f'rx="3"/></g><text class="legend" x="{x_pos + 20}" y="{rows_end + 31}">{label}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _box(x: float, y: float, w: float, h: float, label: str, kind: str, title: str = "") -> str:
    shown = label if len(label) <= 18 else label[:17] + "…"
    return (
        f'<g class="{kind}"><title>{escaped(title or label)}</title>'
        f'<rect x="{x:.1f}" y="{y:.1f}" width="{w}" height="{h}" rx="6"/>'
        f'<text x="{x + w / 2:.1f}" y="{y + h / 2 + 4:.1f}">{escaped(shown)}</text></g>'
    )


def _edge(x1: float, y1: float, x2: float, y2: float) -> str:
    bend = (x2 - x1) / 2
    return (
        f'<path class="edge" d="M{x1:.1f},{y1:.1f} C{x1 + bend:.1f},{y1:.1f} '
        f'{x2 - bend:.1f},{y2:.1f} {x2 - 2:.1f},{y2:.1f}" marker-end="url(#arrow)"/>'
    )
