"""The HTML report of an eval run: one self-contained file, readable offline.

``write_report(result, path)`` writes it; ``report_html(result)`` returns the text. It holds the
verdict, the gates and thresholds, a score histogram per scorer (inline SVG), how far the scores
moved across trials (``run_evals(trials=N)``), the items that scored worst with their reasons and
judge records, the conversations as threads of turns, judge usage and cost, and the eval's DAG
(Graphviz's SVG when the ``dot`` program is installed, else a drawing of the eval's stages and the
DOT text). No script, font or picture is fetched from anywhere.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Sequence
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from string import Template

from evaldag._agreement.agreement import Agreement
from evaldag._io.files import atomic_write_text
from evaldag._io.pictures import drawn_dot
from evaldag._report.agreement import agreement_section
from evaldag._report.conversations import conversations_section
from evaldag._report.failing import requirements
from evaldag._report.items import items_section
from evaldag._report.summary import (
    ScorerSummary,
    judge_limit_texts,
    outcome_word,
    requirement_text,
    scorer_summaries,
    turn_summaries,
    verdict_explanation,
)
from evaldag._report.svg import histogram_svg, stages_svg
from evaldag._report.text import escaped, number_text
from evaldag._report.trials import trials_section
from evaldag._results.eval_result import EvalResult, ScorerUsage, verdict_word
from evaldag._version import __version__
from evaldag.errors import EvalDagError

#: What marks an HTML file as a report evaldag wrote: the template's generator tag.
_REPORT_MARK = b'<meta name="generator" content="evaldag">'


def is_report(path: Path) -> bool:
    """Whether ``path`` is a report evaldag wrote (its generator tag in the first 2 kB)."""
    try:
        with path.open("rb") as file:
            return _REPORT_MARK in file.read(2048)
    except OSError:
        return False


def write_report(
    result: EvalResult,
    path: str | Path,
    *,
    title: str | None = None,
    agreement: Sequence[Agreement] = (),
) -> Path:
    """Write the report of ``result`` to ``path`` (an ``.html`` file); returns the path."""
    return atomic_write_text(path, report_html(result, title=title, agreement=agreement))


def report_html(
    result: EvalResult, *, title: str | None = None, agreement: Sequence[Agreement] = ()
) -> str:
    """The report of ``result`` as one HTML document; ``agreement``: its scorers' agreement
    with human labels (``evaldag.agreement``), drawn in a section of its own."""
    summaries = scorer_summaries(result)
    shown_title = title or "Eval report"
    sections = [
        _header(result, shown_title, summaries),
        _requirements_section([*summaries, *turn_summaries(result)]),
        _scores_section(summaries),
        trials_section(result),
        agreement_section(list(agreement)),
        items_section(result.canonical_items(), summaries),
        conversations_section(result),
        _usage_section(result.usage, judge_limit_texts(result), result.target_usage),
        _dag_section(result),
    ]
    template = Template(
        resources.files("evaldag").joinpath("data/report_template.html").read_text("utf-8")
    )
    return template.substitute(
        title=escaped(shown_title),
        content="\n".join(sections),
        footer=escaped(
            f"Written by evaldag {__version__} on "
            f"{datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}."
        ),
    )


def _header(result: EvalResult, title: str, summaries: list[ScorerSummary]) -> str:
    word = verdict_word(result)
    verdict = "failed" if word == "untrustworthy" else word or "none"
    label = word.upper() if word else "NO VERDICT"
    scorer_count = sum(s.role == "scorer" for s in summaries)
    gate_count = sum(s.role == "gate" for s in summaries)
    total = result.usage.get("total")
    every = requirements(result)  # the turns' too
    gates = [r for r in every if r.is_gate]
    thresholds = [r for r in every if not r.is_gate]
    cards = [
        ("Items", f"{result.summary.total_items:,}", _items_note(result)),
        ("Scorers", str(scorer_count), _counted(gate_count, "gate")),
        (
            "Gates passed",
            f"{sum(g.outcome.passed for g in gates)} / {len(gates)}",
            "a gate passes at an average of 1.0",
        ),
        (
            "Thresholds met",
            f"{sum(t.outcome.passed for t in thresholds)} / {len(thresholds)}",
            "minimum or range of an average",
        ),
        (
            "Judge calls",
            f"{total.calls:,}" if total else "0",
            f"{total.total_tokens:,} tokens · ${total.cost_usd:.4f}" if total else "no LLM judge",
        ),
    ]
    card_html = "".join(
        f'<div class="card"><span class="card-label">{escaped(name)}</span>'
        f'<span class="card-value">{escaped(value)}</span>'
        f'<span class="card-note">{escaped(note)}</span></div>'
        for name, value, note in cards
    )
    return (
        f'<header class="top"><div><p class="eyebrow">evaldag report</p><h1>{escaped(title)}</h1>'
        f'<p class="lede">{_counted(result.summary.total_items, "item")} scored by '
        f"{_counted(scorer_count, 'scorer')} and {_counted(gate_count, 'gate')}.</p></div>"
        f'<div class="verdict verdict-{verdict}" id="verdict"><span class="verdict-label">'
        f'Verdict</span><strong>{label}</strong><span class="verdict-why">'
        f"{escaped(verdict_explanation(result))}</span></div></header>"
        f'<section class="cards">{card_html}</section>'
        + "".join(
            f'<p class="warning"><b>Warning:</b> {escaped(warning)}</p>'
            for warning in result.summary.target_warnings
        )
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


def _requirement(summary: ScorerSummary) -> str:
    """The requirement with typographic signs (the CLI keeps ASCII)."""
    text = requirement_text(summary.requirement, summary.role)
    return text.replace(">=", "≥").replace("<=", "≤")


def _interval(summary: ScorerSummary) -> str:
    """The interval of the average, beside its requirement; ``–`` for none."""
    interval = summary.interval
    return "–" if interval is None else interval.text(summary.requirement)


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
            f"<tr><td><code>{escaped(s.id)}</code></td><td>{s.role}</td>"
            f'<td class="num">{number_text(s.mean, against=s.requirement)}</td>'
            f'<td class="num">{escaped(_interval(s))}</td>'
            f'<td class="num">{escaped(_requirement(s))}</td>'
            f'<td class="num">{s.scored}</td><td class="num">{s.not_scorable}</td>'
            f'<td class="num">{s.errors}</td><td>{_status(s)}</td></tr>'
            for s in rows
        )
        body = (
            '<div class="table"><table class="data"><thead><tr><th>id</th><th>kind</th>'
            '<th class="num">average</th><th class="num">95 % interval</th>'
            '<th class="num">required</th><th class="num">scored</th>'
            '<th class="num">not scorable</th><th class="num">errors</th><th>result</th></tr>'
            f"</thead><tbody>{lines}</tbody></table></div>"
            '<p class="muted small">A gate fails when any item fails it (a scorer error counts '
            "as 0). A threshold fails when the average is outside it or the scorer failed on "
            "an item. A failed gate makes the verdict <b>failed</b>; a missed threshold makes "
            "it <b>scored</b>. The interval is a seeded bootstrap's (10,000 resamples): "
            "where the average of a rerun on similar items would likely fall.</p>"
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
    if summary.interval is not None:
        counts += f" · 95 % interval {_interval(summary)}"
    badge = '<span class="tag tag-llm">LLM judge</span>' if summary.has_judge else ""
    if summary.role == "gate":
        badge += '<span class="tag tag-gate">gate</span>'
    requirement = _requirement(summary)
    return (
        f'<article class="scorer"><div class="scorer-head"><div><h3>{escaped(summary.name)}</h3>'
        f"<code>{escaped(summary.id)}</code> {badge}</div>"
        f'<div class="scorer-mean">{number_text(summary.mean, against=summary.requirement)}'
        f"<span>{'required ' + escaped(requirement) if requirement else 'average'}</span>"
        "</div></div>"
        f"{histogram_svg(summary)}"
        f'<p class="muted small">{escaped(counts)} {_status(summary)}</p></article>'
    )


def _usage_section(
    usage: dict[str, ScorerUsage], limits: list[str], target: ScorerUsage | None
) -> str:
    if not usage:
        body = '<p class="muted">No LLM judge was called in this run.</p>'
    else:
        rows = "".join(
            f'<tr class="{"total" if key == "total" else ""}"><td><code>{escaped(key)}</code></td>'
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
    if limits:
        body += (
            '<ul id="judge-limits">'
            + "".join(f"<li>{escaped(text)}</li>" for text in limits)
            + '</ul><p class="muted small">A judge\'s limit on calls in flight is halved when '
            "its endpoint answers 429 (too many requests) and grows back by one per round of "
            "calls that succeed, never above its max_concurrency.</p>"
        )
    if target is not None:
        body += (
            f'<p id="target-usage">The target\'s own model: {target.calls:,} calls, '
            f"{target.total_tokens:,} tokens, ${target.cost_usd:.4f} (not in the judge figures "
            "above).</p>"
        )
    return f'<section id="usage"><h2>Judge usage and cost</h2>{body}</section>'


def _dag_section(result: EvalResult) -> str:
    dot = result.dag_dot
    body = (
        f'<div class="dag">{stages_svg(result)}</div>'
        '<p class="muted small">The stages each item goes through: every scorer\'s steps, its '
        "average, its gate or threshold, and the verdict.</p>"
    )
    drawn = _graphviz_svg(dot) if dot and shutil.which("dot") else None
    if isinstance(drawn, EvalDagError):
        body += (
            f'<p class="muted small" id="dag-not-drawn">The full Hamilton DAG is left out: '
            f"{escaped(drawn.message)}.</p>"
        )
    elif drawn is not None:
        body += (
            "<details><summary>The full Hamilton DAG, every node</summary>"
            f'<div class="dag-full">{drawn}</div></details>'
        )
    elif dot:
        body += (
            "<details><summary>DOT source of the full Hamilton DAG</summary>"
            f"<pre>{escaped(dot)}</pre></details>"
            '<p class="muted small">To draw it here, install Graphviz (<code>apt-get install '
            "graphviz</code>, <code>brew install graphviz</code>) and write the report again.</p>"
        )
    return f'<section id="dag"><h2>The eval\'s DAG</h2>{body}</section>'


#: What the full DAG's SVG may not keep: links (a results file's DOT can carry
#: URL="javascript:…"), event handlers and scripts.
_UNSAFE_SVG = re.compile(
    r"<a\b[^>]*>|</a>|<script\b.*?</script>|\s(?:xlink:href|href|target|on\w+)\s*=\s*"
    r"(?:\"[^\"]*\"|'[^']*')",
    re.IGNORECASE | re.DOTALL,
)


def _graphviz_svg(dot: str) -> str | EvalDagError:
    """The DOT text drawn as inline SVG, or why it was not (too large, too slow, refused)."""
    try:
        svg = drawn_dot(dot, "svg").decode("utf-8", "replace")
    except EvalDagError as error:
        return error
    if "<svg" not in svg:
        return EvalDagError("EVALDAG_DOT_FAILED", "Graphviz's dot drew no SVG")
    return _UNSAFE_SVG.sub("", svg[svg.index("<svg") :])
