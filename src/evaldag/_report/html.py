"""The HTML report of an eval run: one self-contained file, readable offline.

``write_report(result, path)`` writes it; ``report_html(result)`` returns the text. It holds the
verdict, the gates and thresholds, a score histogram per scorer (inline SVG), the items that
scored worst with their reasons and judge records, judge usage and cost, and the eval's DAG
(Graphviz's SVG when the ``dot`` program is installed, else a drawing of the eval's stages and
the DOT text). No script, font or picture is fetched from anywhere.

``scorer_summaries(result)`` sums up each scorer and gate; the CLI prints the same rows.
"""

from __future__ import annotations

import html
import json
import math
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from string import Template
from typing import Any

import pandas as pd

from evaldag._results.eval_result import EvalResult, ScorerUsage
from evaldag._scorer.thresholds import ThresholdSpec
from evaldag.transcripts import get_assistant_message, get_user_message, tool_invocations

#: How many items the report shows in full, worst first.
WORST_ITEMS = 10
_BINS = 10
_TEXT_LIMIT = 600


@dataclass(frozen=True)
class ScorerSummary:
    """One scorer or gate of a run, summed up: its average and whether it met its requirement.

    ``requirement`` is the threshold of a scorer, 1.0 for a gate, None when nothing is required;
    ``passed`` is None when no requirement applies (or all its items were not scorable).
    """

    id: str
    name: str
    description: str
    role: str
    mean: float | None
    scored: int
    not_scorable: int
    errors: int
    requirement: ThresholdSpec | None
    passed: bool | None
    scores: tuple[float, ...]
    has_judge: bool


def scorer_summaries(result: EvalResult) -> list[ScorerSummary]:
    """A summary per scorer, then per gate, in configuration order."""
    gates = {g.id: g for g in result.gate_results}
    thresholds = {t.id: t for t in result.threshold_results}
    items = result.items
    summaries = []
    for definition in _definitions(result):
        sid = definition["id"]
        is_gate = definition["role"] == "gate"
        valid = _valid_scores(items, sid)
        if is_gate:
            gate = gates.get(sid)
            mean = gate.score if gate is not None else None
            requirement: ThresholdSpec | None = 1.0
            passed = gate.passed if gate is not None else None
        else:
            threshold = thresholds.get(sid)
            mean = result.scores.get(sid)
            requirement = definition.get("threshold")
            passed = threshold.passed if threshold is not None else None
        summaries.append(
            ScorerSummary(
                id=sid,
                name=definition.get("name") or sid,
                description=definition.get("description") or "",
                role="gate" if is_gate else "scorer",
                mean=mean,
                scored=len(valid),
                not_scorable=result.summary.not_scorable.get(sid, 0),
                errors=result.summary.errors.get(sid, 0),
                requirement=requirement,
                passed=passed,
                scores=tuple(valid),
                has_judge=any(step.get("type") == "prompt" for step in definition["steps"]),
            )
        )
    return summaries


def _definitions(result: EvalResult) -> list[dict[str, Any]]:
    if result.scorers:
        scorers = [d for d in result.scorers if d.get("role") != "gate"]
        return [*scorers, *(d for d in result.scorers if d.get("role") == "gate")]
    # A result without definitions: recover the ids from the item columns.
    ids = [c.removesuffix(".score") for c in result.items.columns if c.endswith(".score")]
    gate_ids = {g.id for g in result.gate_results}
    return [
        {"id": sid, "role": "gate" if sid in gate_ids else "scorer", "steps": []} for sid in ids
    ]


def _valid_scores(items: pd.DataFrame, sid: str) -> list[float]:
    """The scores that entered the average: no error, not 'not scorable', a number."""
    if f"{sid}.score" not in items:
        return []
    frame = items[[f"{sid}.score", f"{sid}.error", f"{sid}.not_scorable"]]
    ok = frame.iloc[:, 1].isna() & frame.iloc[:, 2].isna() & frame.iloc[:, 0].notna()
    return [float(v) for v in frame.iloc[:, 0][ok]]


def requirement_text(requirement: ThresholdSpec | None, role: str) -> str:
    """``>= 0.70``, ``0.20 to 0.80``, ``= 1.00`` (a gate) or ``''``."""
    if requirement is None:
        return ""
    if role == "gate":
        return "= 1.00"
    if isinstance(requirement, dict):
        low, high = requirement.get("min"), requirement.get("max")
        if low is not None and high is not None:
            return f"{low:.2f} to {high:.2f}"
        return f">= {low:.2f}" if low is not None else f"<= {high:.2f}"
    return f">= {requirement:.2f}"


def verdict_explanation(result: EvalResult) -> str:
    """One line saying why the verdict is what it is."""
    gates, thresholds = result.gate_results, result.threshold_results
    failed_gates = [g.id for g in gates if not g.passed]
    missed = [t.id for t in thresholds if not t.passed]
    parts = []
    if gates:
        parts.append(
            f"gate failed: {', '.join(failed_gates)}"
            if len(failed_gates) == 1
            else f"{len(failed_gates)} of {len(gates)} gates failed"
            if failed_gates
            else f"all {len(gates)} gates passed"
        )
    if thresholds:
        parts.append(
            f"{len(missed)} of {len(thresholds)} thresholds missed ({', '.join(missed)})"
            if missed
            else f"all {len(thresholds)} thresholds met"
        )
    return "; ".join(parts) if parts else "no gates or thresholds, so no verdict"


# --- the page ------------------------------------------------------------------------------------


def write_report(result: EvalResult, path: str | Path, *, title: str | None = None) -> Path:
    """Write the report of ``result`` to ``path`` (an ``.html`` file); returns the path."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(report_html(result, title=title), encoding="utf-8")
    return target


def report_html(result: EvalResult, *, title: str | None = None) -> str:
    """The report of ``result`` as one HTML document."""
    summaries = scorer_summaries(result)
    shown_title = title or "Eval report"
    sections = [
        _header(result, shown_title, summaries),
        _requirements_section(summaries),
        _scores_section(summaries),
        _items_section(result, summaries),
        _usage_section(result.usage),
        _dag_section(result),
    ]
    template = Template(
        resources.files("evaldag").joinpath("data/report_template.html").read_text("utf-8")
    )
    from evaldag import __version__

    return template.substitute(
        title=_e(shown_title),
        content="\n".join(sections),
        footer=_e(
            f"Written by evaldag {__version__} on "
            f"{datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}."
        ),
    )


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _number(value: float | None, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{value:.{digits}f}"


def _header(result: EvalResult, title: str, summaries: list[ScorerSummary]) -> str:
    verdict = result.verdict or "none"
    label = result.verdict.upper() if result.verdict else "NO VERDICT"
    scorer_count = sum(s.role == "scorer" for s in summaries)
    gate_count = sum(s.role == "gate" for s in summaries)
    total = result.usage.get("total")
    cards = [
        ("Items", f"{result.summary.total_items:,}", _items_note(result)),
        ("Scorers", str(scorer_count), _counted(gate_count, "gate")),
        (
            "Gates passed",
            f"{sum(g.passed for g in result.gate_results)} / {len(result.gate_results)}",
            "a gate passes at an average of 1.0",
        ),
        (
            "Thresholds met",
            f"{sum(t.passed for t in result.threshold_results)} / {len(result.threshold_results)}",
            "minimum or range of an average",
        ),
        (
            "Judge calls",
            f"{total.calls:,}" if total else "0",
            f"{total.total_tokens:,} tokens · ${total.cost_usd:.4f}" if total else "no LLM judge",
        ),
    ]
    card_html = "".join(
        f'<div class="card"><span class="card-label">{_e(name)}</span>'
        f'<span class="card-value">{_e(value)}</span>'
        f'<span class="card-note">{_e(note)}</span></div>'
        for name, value, note in cards
    )
    return (
        f'<header class="top"><div><p class="eyebrow">evaldag report</p><h1>{_e(title)}</h1>'
        f'<p class="lede">{_counted(result.summary.total_items, "item")} scored by '
        f"{_counted(scorer_count, 'scorer')} and {_counted(gate_count, 'gate')}.</p></div>"
        f'<div class="verdict verdict-{verdict}" id="verdict"><span class="verdict-label">'
        f'Verdict</span><strong>{label}</strong><span class="verdict-why">'
        f"{_e(verdict_explanation(result))}</span></div></header>"
        f'<section class="cards">{card_html}</section>'
    )


def _counted(count: int, noun: str) -> str:
    return f"{count:,} {noun}" if count == 1 else f"{count:,} {noun}s"


def _items_note(result: EvalResult) -> str:
    summary = result.summary
    notes = []
    if summary.target_errors:
        notes.append(_counted(summary.target_errors, "target error"))
    errors = sum(summary.errors.values())
    if errors:
        notes.append(_counted(errors, "scorer error"))
    not_scorable = sum(summary.not_scorable.values())
    if not_scorable:
        notes.append(f"{not_scorable} not scorable")
    return ", ".join(notes) or "no errors"


def outcome_word(summary: ScorerSummary) -> str:
    """``passed``/``failed`` for a gate, ``met``/``missed`` for a threshold, else ``''``."""
    if summary.passed is None:
        return ""
    if summary.role == "gate":
        return "passed" if summary.passed else "failed"
    return "met" if summary.passed else "missed"


def _requirement(summary: ScorerSummary) -> str:
    """The requirement with typographic signs (the CLI keeps ASCII)."""
    text = requirement_text(summary.requirement, summary.role)
    return text.replace(">=", "≥").replace("<=", "≤")


def _status(summary: ScorerSummary) -> str:
    word = outcome_word(summary)
    if not word:
        return ""
    tone = "pass" if summary.passed else "fail"
    return f'<span class="status status-{tone}">{word}</span>'


def _requirements_section(summaries: list[ScorerSummary]) -> str:
    rows = [s for s in summaries if s.requirement is not None]
    if not rows:
        body = '<p class="muted">This run has no gates and no thresholds, so it has no verdict.</p>'
    else:
        lines = "".join(
            f"<tr><td><code>{_e(s.id)}</code></td><td>{s.role}</td>"
            f'<td class="num">{_number(s.mean)}</td>'
            f'<td class="num">{_e(_requirement(s))}</td>'
            f'<td class="num">{s.scored}</td><td class="num">{s.not_scorable}</td>'
            f'<td class="num">{s.errors}</td><td>{_status(s)}</td></tr>'
            for s in rows
        )
        body = (
            '<div class="table"><table class="data"><thead><tr><th>id</th><th>kind</th>'
            '<th class="num">average</th>'
            '<th class="num">required</th><th class="num">scored</th>'
            '<th class="num">not scorable</th><th class="num">errors</th><th>result</th></tr>'
            f"</thead><tbody>{lines}</tbody></table></div>"
            '<p class="muted small">A gate fails when any item fails it (a scorer error counts '
            "as 0). A threshold fails when the average is outside it or the scorer failed on "
            "an item. A failed gate makes the verdict <b>failed</b>; a missed threshold makes "
            "it <b>scored</b>.</p>"
        )
    return f'<section id="requirements"><h2>Gates and thresholds</h2>{body}</section>'


def _scores_section(summaries: list[ScorerSummary]) -> str:
    cards = "".join(_scorer_card(s) for s in summaries)
    return (
        '<section id="scores"><h2>Score distributions</h2>'
        '<p class="muted small">Each bar counts the items whose score falls in its range; the '
        "dashed line is the average, the shaded band what the requirement rules out.</p>"
        f'<div class="grid">{cards}</div></section>'
    )


def _scorer_card(summary: ScorerSummary) -> str:
    counts = f"{summary.scored} scored"
    if summary.not_scorable:
        counts += f" · {summary.not_scorable} not scorable"
    if summary.errors:
        counts += f" · {summary.errors} errors"
    badge = '<span class="tag tag-llm">LLM judge</span>' if summary.has_judge else ""
    if summary.role == "gate":
        badge += '<span class="tag tag-gate">gate</span>'
    requirement = _requirement(summary)
    return (
        f'<article class="scorer"><div class="scorer-head"><div><h3>{_e(summary.name)}</h3>'
        f"<code>{_e(summary.id)}</code> {badge}</div>"
        f'<div class="scorer-mean">{_number(summary.mean)}'
        f"<span>{'required ' + _e(requirement) if requirement else 'average'}</span></div></div>"
        f"{histogram_svg(summary)}"
        f'<p class="muted small">{_e(counts)} {_status(summary)}</p></article>'
    )


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
            f'aria-label="Histogram of {_e(summary.id)} scores">'
        ),
        f"<title>{_e(summary.id)}: {len(scores)} scores</title>",
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
            f'text-anchor="{anchor}">mean {summary.mean:.2f}</text>'
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
    if isinstance(requirement, dict):
        bounds = (requirement.get("min"), requirement.get("max"))
    else:
        bounds = (requirement, None)
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


# --- items -----------------------------------------------------------------------------------


def _items_section(result: EvalResult, summaries: list[ScorerSummary]) -> str:
    items = result.items
    if items.empty:
        return ""
    order = _worst_first(items, summaries)[:WORST_ITEMS]
    label_column = next((c for c in ("id", "item_id", "name") if c in items.columns), None)
    blocks = "".join(
        _item_block(items.loc[label], label, label_column, summaries, opened=rank == 0)
        for rank, label in enumerate(order)
    )
    return (
        '<section id="items"><h2>Items to look at</h2>'
        f'<p class="muted small">The {len(order)} items that fared worst: failed gates first, then '
        "scorer errors, then the lowest average score. Open one to see its answer, tool calls, "
        "each scorer's reason and the judge's records.</p>"
        f"{blocks}</section>"
    )


def _worst_first(items: pd.DataFrame, summaries: list[ScorerSummary]) -> list[Any]:
    gate_ids = [s.id for s in summaries if s.role == "gate"]
    scorer_ids = [s.id for s in summaries if s.role == "scorer"]
    failed_gates = sum(
        ((items[f"{g}.score"].fillna(0) < 1) | items[f"{g}.error"].notna()).astype(int)
        for g in gate_ids
    )
    errors = sum(items[f"{s}.error"].notna().astype(int) for s in [*scorer_ids, *gate_ids])
    if scorer_ids:
        valid = pd.concat(
            [items[f"{s}.score"].where(items[f"{s}.error"].isna()) for s in scorer_ids], axis=1
        )
        mean = valid.mean(axis=1, skipna=True).fillna(1.0)
    else:
        mean = pd.Series(1.0, index=items.index)
    ranking = pd.DataFrame(
        {
            "gates": pd.Series(failed_gates, index=items.index) if gate_ids else 0,
            "errors": pd.Series(errors, index=items.index) if scorer_ids or gate_ids else 0,
            "mean": mean,
        }
    )
    ranked = ranking.sort_values(["gates", "errors", "mean"], ascending=[False, False, True])
    return list(ranked.index)


def _tone(score: float | None) -> str:
    if score is None or math.isnan(score):
        return "none"
    return "bad" if score < 0.5 else "fair" if score < 0.8 else "good"


def _item_block(
    row: pd.Series,
    label: Any,
    label_column: str | None,
    summaries: list[ScorerSummary],
    *,
    opened: bool,
) -> str:
    name = row[label_column] if label_column else f"item {label}"
    question = _clipped(_input_text(row.get("input")), 140)
    chips = "".join(_chip(row, s) for s in summaries)
    details = "".join(_scorer_detail(row, s) for s in summaries)
    output_text = _output_text(row.get("output"))
    tools = _tool_list(row.get("output"))
    return (
        f'<details class="item"{" open" if opened else ""}><summary>'
        f'<span class="item-name">{_e(name)}</span><span class="item-q">{_e(question)}</span>'
        f'<span class="chips">{chips}</span></summary><div class="item-body">'
        f'<div class="qa"><div><h4>Input</h4><p>{_e(_clipped(_input_text(row.get("input"))))}'
        f"</p></div><div><h4>Output</h4><p>{_e(_clipped(output_text))}</p></div></div>"
        f"{tools}<h4>Scorers</h4>{details}</div></details>"
    )


def _chip(row: pd.Series, summary: ScorerSummary) -> str:
    sid = summary.id
    error = row.get(f"{sid}.error")
    if isinstance(error, str):
        return (
            f'<span class="chip chip-bad" title="{_e(sid)}: error">{_e(_short(sid))} error</span>'
        )
    if _present(row.get(f"{sid}.not_scorable")):
        return f'<span class="chip chip-none" title="{_e(sid)}">{_e(_short(sid))} n/a</span>'
    score = _score(row, sid)
    tone = _tone(score)
    if summary.role == "gate":
        tone = "good" if score is not None and score >= 1 else "bad"
    return (
        f'<span class="chip chip-{tone}" title="{_e(sid)}">{_e(_short(sid))} '
        f"{_number(score)}</span>"
    )


def _short(sid: str) -> str:
    return sid.removesuffix("-scorer").removeprefix("check-")


def _score(row: pd.Series, sid: str) -> float | None:
    value = row.get(f"{sid}.score")
    return float(value) if _present(value) else None


def _present(value: Any) -> bool:
    """Whether an item cell holds a value (None, NaN and pandas' NA do not)."""
    return value is not None and not (pd.api.types.is_scalar(value) and pd.isna(value))


def _scorer_detail(row: pd.Series, summary: ScorerSummary) -> str:
    sid = summary.id
    error = row.get(f"{sid}.error")
    reason = _decoded(row.get(f"{sid}.reason"))
    not_scorable = _decoded(row.get(f"{sid}.not_scorable"))
    lines = []
    if isinstance(error, str):
        failed_step = row.get(f"{sid}.failed_step")
        where = f" in step {failed_step}" if isinstance(failed_step, str) else ""
        lines.append(f'<p class="error">Failed{_e(where)}: {_e(error)}</p>')
    if _present(not_scorable):
        lines.append(f'<p class="muted">Not scorable: {_e(_plain_text(not_scorable))}</p>')
    if _present(reason):
        lines.append(f'<p class="reason">{_e(_clipped(_plain_text(reason)))}</p>')
    steps = _decoded(row.get(f"{sid}.steps"))
    if _present(steps) and steps:
        lines.append(
            f"<details><summary>Step results</summary><pre>{_e(_pretty(steps))}</pre></details>"
        )
    lines.append(_judge_records(_decoded(row.get(f"{sid}.judge"))))
    score_text = _number(_score(row, sid))
    return (
        f'<div class="scorer-detail"><div class="scorer-detail-head"><code>{_e(sid)}</code>'
        f'<span class="score">{score_text}</span></div>{"".join(lines)}</div>'
    )


def _judge_records(record: Any) -> str:
    if not isinstance(record, dict) or not record:
        return ""
    rows = []
    for stage, executions in record.items():
        entries = executions.get("executions", []) if isinstance(executions, dict) else executions
        for execution in entries or []:
            usage = execution.get("usage") or {}
            cost = (execution.get("cost") or {}).get("totalUsd")
            facts = [
                execution.get("status", ""),
                execution.get("judgeModelId", ""),
                f"{usage.get('totalTokens') or 0} tokens",
                f"{execution.get('durationMs', 0)} ms",
            ]
            if cost:
                facts.append(f"${cost:.5f}")
            if execution.get("cacheHit"):
                facts.append("from cache")
            answer = execution.get("output")
            if answer is None:
                answer = execution.get("rawOutput")
            error = execution.get("error")
            rows.append(
                f'<div class="judge"><div class="judge-head"><b>{_e(stage)}</b> '
                f'<span class="muted">{_e(" · ".join(str(f) for f in facts if f))}</span></div>'
                + (f'<p class="error">{_e(error.get("message", ""))}</p>' if error else "")
                + "<details><summary>Prompt</summary>"
                f"<pre>{_e(execution.get('prompt', ''))}</pre></details>"
                f"<details><summary>Answer</summary><pre>{_e(_pretty(answer))}</pre></details>"
                "</div>"
            )
    return f'<div class="judges"><h5>Judge records</h5>{"".join(rows)}</div>'


def _decoded(value: Any) -> Any:
    """Item cells of nested values are JSON text; anything else is returned as it is."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value if _present(value) else None


def _plain_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("reason"), str):
        return value["reason"]
    return _pretty(value)


def _pretty(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def _clipped(text: str, limit: int = _TEXT_LIMIT) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _input_text(value: Any) -> str:
    return _message_text(value, get_user_message)


def _output_text(value: Any) -> str:
    return _message_text(value, get_assistant_message)


def _message_text(value: Any, extract: Callable[[Any], str | None]) -> str:
    value = _decoded(value) if isinstance(value, str) and value[:1] in "[{" else value
    if isinstance(value, str):
        return value
    try:
        text = extract(value)
    except Exception:  # any shape a user's target takes; the report falls back to JSON
        text = None
    return text if text is not None else _pretty(value)


def _tool_list(output: Any) -> str:
    output = _decoded(output) if isinstance(output, str) and output[:1] in "[{" else output
    if isinstance(output, str) or output is None:
        return ""
    try:
        calls = tool_invocations(output)
    except Exception:  # an output that is not messages has no tool calls to show
        return ""
    if not calls:
        return ""
    rows = []
    for call in calls:
        failed = call.get("state") == "output-error" or call.get("isError")
        outcome = call.get("errorText") if failed else call.get("result")
        args = json.dumps(call.get("args"), ensure_ascii=False, default=str)
        rows.append(
            f'<li class="{"tool-failed" if failed else ""}"><code>{_e(call.get("toolName"))}'
            f"({_e(_clipped(args, 160))})</code> → "
            f'<span class="muted">{_e(_clipped(_pretty(outcome), 200))}</span></li>'
        )
    return f'<h4>Tool calls</h4><ol class="tools">{"".join(rows)}</ol>'


# --- usage and the DAG -----------------------------------------------------------------------


def _usage_section(usage: dict[str, ScorerUsage]) -> str:
    if not usage:
        body = '<p class="muted">No LLM judge was called in this run.</p>'
    else:
        rows = "".join(
            f'<tr class="{"total" if key == "total" else ""}"><td><code>{_e(key)}</code></td>'
            f'<td class="num">{u.calls:,}</td><td class="num">{u.input_tokens:,}</td>'
            f'<td class="num">{u.output_tokens:,}</td><td class="num">{u.total_tokens:,}</td>'
            f'<td class="num">${u.cost_usd:.4f}</td></tr>'
            for key, u in sorted(usage.items(), key=lambda kv: kv[0] == "total")
        )
        body = (
            '<div class="table"><table class="data"><thead><tr><th>scorer</th>'
            '<th class="num">calls</th>'
            '<th class="num">input tokens</th><th class="num">output tokens</th>'
            '<th class="num">total tokens</th><th class="num">cost</th></tr></thead>'
            f"<tbody>{rows}</tbody></table></div>"
            '<p class="muted small">Costs come from litellm\'s price table; local and unpriced '
            "models cost $0. Replies served from the judge cache cost nothing.</p>"
        )
    return f'<section id="usage"><h2>Judge usage and cost</h2>{body}</section>'


def _dag_section(result: EvalResult) -> str:
    dot = result.dag_dot
    body = (
        f'<div class="dag">{stages_svg(result)}</div>'
        '<p class="muted small">The stages each item goes through: every scorer\'s steps, its '
        "average, its gate or threshold, and the verdict.</p>"
    )
    if dot and shutil.which("dot"):
        body += (
            "<details><summary>The full Hamilton DAG, every node</summary>"
            f'<div class="dag-full">{_graphviz_svg(dot)}</div></details>'
        )
    elif dot:
        body += (
            "<details><summary>DOT source of the full Hamilton DAG</summary>"
            f"<pre>{_e(dot)}</pre></details>"
            '<p class="muted small">To draw it here, install Graphviz (<code>apt-get install '
            "graphviz</code>, <code>brew install graphviz</code>) and write the report again.</p>"
        )
    return f'<section id="dag"><h2>The eval\'s DAG</h2>{body}</section>'


def _graphviz_svg(dot: str) -> str:
    import graphviz

    svg = graphviz.Source(dot).pipe(format="svg", engine="dot").decode("utf-8")
    return svg[svg.index("<svg") :]


def stages_svg(result: EvalResult) -> str:
    """The eval's stages drawn without Graphviz: a row of step boxes per scorer and gate,
    from the items to each average, its gate or threshold, and the verdict."""
    definitions = _definitions(result)
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
        parts.append(_box(x_average, y, box_w, box_h, _short(sid), "node-agg", f"{sid}.average"))
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
        f'<g class="{kind}"><title>{_e(title or label)}</title>'
        f'<rect x="{x:.1f}" y="{y:.1f}" width="{w}" height="{h}" rx="6"/>'
        f'<text x="{x + w / 2:.1f}" y="{y + h / 2 + 4:.1f}">{_e(shown)}</text></g>'
    )


def _edge(x1: float, y1: float, x2: float, y2: float) -> str:
    bend = (x2 - x1) / 2
    return (
        f'<path class="edge" d="M{x1:.1f},{y1:.1f} C{x1 + bend:.1f},{y1:.1f} '
        f'{x2 - bend:.1f},{y2:.1f} {x2 - 2:.1f},{y2:.1f}" marker-end="url(#arrow)"/>'
    )
