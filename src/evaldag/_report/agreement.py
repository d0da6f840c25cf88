"""The report's agreement section: how a judge agrees with human labels, drawn.

Per agreement: the counts, each figure with its interval, and for binary labels the confusion
matrix and the ROC curve as inline SVG (the judge's threshold and the best threshold marked);
per slice, a row of figures.
"""

from __future__ import annotations

from evaldag._agreement.agreement import FIGURE_NAMES, Agreement, RocPoint, SliceAgreement
from evaldag._report.text import escaped, number_text


def agreement_section(agreements: list[Agreement]) -> str:
    """The section, one article per agreement; empty without any."""
    if not agreements:
        return ""
    articles = "".join(_article(found) for found in agreements)
    return (
        '<section id="agreement"><h2>Agreement with human labels</h2>'
        '<p class="muted small">How often the judge agrees with people on the labelled items. '
        "Each interval is a seeded bootstrap's: the figure recomputed on resamples of the "
        "compared items.</p>"
        f"{articles}</section>"
    )


def _article(found: Agreement) -> str:
    overall = found.overall
    if found.kind == "binary":
        rule = (
            f"positive: {', '.join(map(str, found.positive))}; the judge says positive at a "
            f"score ≥ {found.threshold:g}"
        )
    else:
        rule = "graded labels" + (
            f", low to high: {', '.join(map(str, found.order))}" if found.order else ""
        )
    left = ", ".join(f"{count} {reason}" for reason, count in overall.left_out())
    counts = f"{overall.compared} of {overall.items} items compared" + (
        f" ({left} left out)" if left else ""
    )
    pictures = ""
    if overall.confusion is not None:
        pictures = (
            f'<div class="agreement-pictures">{confusion_svg(overall)}'
            f"{roc_svg(overall.roc, found.threshold, _best(overall))}</div>"
            '<p class="muted small">On the ROC curve: <span class="key judge">●</span> the '
            f'judge\'s threshold ({found.threshold:g}), <span class="key best">●</span> the '
            f"threshold with the best balanced accuracy ({number_text(_best(overall), 2)}); the "
            "dashed diagonal is chance.</p>"
        )
    notes = "".join(f"<li>{escaped(note)}</li>" for note in overall.notes)
    return (
        f'<article class="agreement"><h3><code>{escaped(found.scorer_id)}</code> against '
        f"<code>{escaped(found.labels)}</code></h3>"
        f'<p class="muted small">{escaped(rule)} · {escaped(counts)} · '
        f"{found.level:.0%} intervals, {found.resamples:,} resamples</p>"
        f"{pictures}{_figures_table(overall)}"
        f"{f'<ul class=small>{notes}</ul>' if notes else ''}"
        f"{_slices_table(found)}</article>"
    )


def _best(part: SliceAgreement) -> float | None:
    figure = part.figures.get("best_threshold")
    return None if figure is None else figure.value


def _figures_table(part: SliceAgreement) -> str:
    rows = "".join(
        f"<tr><td>{escaped(FIGURE_NAMES[name])}</td>"
        f'<td class="num">{number_text(figure.value, 3)}</td>'
        f'<td class="num">{_interval_text(figure.interval)}</td></tr>'
        for name, figure in part.figures.items()
    )
    return (
        '<div class="table"><table class="data figures"><thead><tr><th>figure</th>'
        '<th class="num">value</th><th class="num">interval</th></tr></thead>'
        f"<tbody>{rows}</tbody></table></div>"
    )


def _interval_text(interval: object) -> str:
    if interval is None:
        return "–"
    return f"{interval.low:.3f} to {interval.high:.3f}"  # type: ignore[attr-defined]


def _slices_table(found: Agreement) -> str:
    if not found.slices:
        return ""
    names = list(found.overall.figures)
    head = "".join(f'<th class="num">{escaped(FIGURE_NAMES[n])}</th>' for n in names)
    rows = "".join(
        f'<tr><td>{escaped(part.slice)}</td><td class="num">{part.compared}</td>'
        + "".join(
            f'<td class="num" title="{escaped(_interval_text(part.figures[n].interval))}">'
            f"{number_text(part.figures[n].value, 3)}</td>"
            for n in names
        )
        + "</tr>"
        for part in found.slices
    )
    return (
        f"<h4>Per {escaped(found.by)}</h4>"
        f'<div class="table"><table class="data slices"><thead><tr><th>{escaped(found.by)}</th>'
        f'<th class="num">compared</th>{head}</tr></thead><tbody>{rows}</tbody></table></div>'
    )


def confusion_svg(part: SliceAgreement) -> str:
    """The confusion matrix as a 2×2 grid of shaded cells: the judge's calls by row, the
    labels by column; the diagonal (agreement) green, the rest red, darker for more items."""
    assert part.confusion is not None
    c = part.confusion
    cells = [
        (0, 0, c.true_positive, "agree", "judge positive, label positive"),
        (1, 0, c.false_positive, "disagree", "judge positive, label negative"),
        (0, 1, c.false_negative, "disagree", "judge negative, label positive"),
        (1, 1, c.true_negative, "agree", "judge negative, label negative"),
    ]
    total = max(1, c.true_positive + c.false_positive + c.false_negative + c.true_negative)
    size, left, top = 80, 92, 34
    parts = [
        (
            '<svg class="confusion" viewBox="0 0 270 220" role="img" '
            'aria-label="Confusion matrix of the judge against the labels">'
        ),
        "<title>Confusion matrix</title>",
        f'<text class="axis-label" x="{left + size}" y="14">label</text>',
        f'<text class="tick" x="{left + size / 2}" y="{top - 6}">positive</text>',
        f'<text class="tick" x="{left + 1.5 * size}" y="{top - 6}">negative</text>',
        f'<text class="tick end" x="{left - 8}" y="{top + size / 2 + 4}">judge positive</text>',
        f'<text class="tick end" x="{left - 8}" y="{top + 1.5 * size + 4}">judge negative</text>',
    ]
    for column, row, count, kind, words in cells:
        x, y = left + column * size, top + row * size
        shade = 0.12 + 0.78 * count / total
        parts.append(
            f'<g class="cell {kind}"><title>{words}: {count}</title>'
            f'<rect x="{x}" y="{y}" width="{size - 2}" height="{size - 2}" rx="4" '
            f'fill-opacity="{shade:.2f}"/>'
            f'<text class="count" x="{x + size / 2 - 1}" y="{y + size / 2 + 5}">{count}</text></g>'
        )
    parts.append("</svg>")
    return "".join(parts)


def roc_svg(points: list[RocPoint], threshold: float | None, best: float | None) -> str:
    """The ROC curve (false positive rate across, true positive rate up) over the chance
    diagonal, with the judge's threshold and the best threshold marked."""
    size, left, top = 170, 40, 14
    parts = [
        '<svg class="roc" viewBox="0 0 230 230" role="img" aria-label="ROC curve of the judge">',
        "<title>ROC curve</title>",
        f'<rect class="frame" x="{left}" y="{top}" width="{size}" height="{size}"/>',
        f'<line class="chance" x1="{left}" y1="{top + size}" x2="{left + size}" y2="{top}"/>',
        (
            f'<text class="tick" x="{left + size / 2}" y="{top + size + 30}">'
            "false positive rate</text>"
        ),
        f'<text class="tick" x="{left - 8}" y="{top + size + 14}">0</text>',
        f'<text class="tick" x="{left + size}" y="{top + size + 14}">1</text>',
        f'<text class="tick" x="{left - 10}" y="{top + 4}">1</text>',
        (
            f'<text class="tick vertical" transform="translate({left - 14} {top + size / 2}) '
            'rotate(-90)">true positive rate</text>'
        ),
    ]

    def xy(point: RocPoint) -> tuple[float, float]:
        return (
            left + point.false_positive_rate * size,
            top + (1 - point.true_positive_rate) * size,
        )

    if points:
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in map(xy, points))
        parts.append(f'<polyline class="curve" points="{path}"/>')
        for value, kind, words in (
            (threshold, "judge", "the judge's threshold"),
            (best, "best", "the best threshold"),
        ):
            point = _at_threshold(points, value)
            if point is not None:
                x, y = xy(point)
                parts.append(
                    f'<circle class="mark {kind}" cx="{x:.1f}" cy="{y:.1f}" r="4">'
                    f"<title>{words}, score ≥ {value:g}: true positive rate "
                    f"{point.true_positive_rate:.2f}, false positive rate "
                    f"{point.false_positive_rate:.2f}</title></circle>"
                )
    else:
        parts.append(
            f'<text class="tick" x="{left + size / 2}" y="{top + size / 2}">one class only: '
            "no curve</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


def _at_threshold(points: list[RocPoint], value: float | None) -> RocPoint | None:
    """The curve's point of ``score >= value``: the last point whose threshold is at or
    above it (the thresholds run downward)."""
    if value is None:
        return None
    reached = [point for point in points if point.threshold >= value]
    return reached[-1] if reached else None
