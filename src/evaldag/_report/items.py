"""The report's items to look at: the worst items, each with its answer, tool calls, every
scorer's reason and the judge's records."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

import pandas as pd

from evaldag._reader import read_transcript
from evaldag._report.failing import id_column, item_ids, requirement_gaps, scorer_scale
from evaldag._report.summary import ScorerSummary
from evaldag._report.text import escaped, number_text, short_id
from evaldag._results.item_columns import ScorerColumns, item_states
from evaldag.errors import EvalDagError
from evaldag.transcripts import get_assistant_message, get_user_message, tool_invocations

#: How many items the report shows in full, worst first.
WORST_ITEMS = 10
_TEXT_LIMIT = 600
#: Characters shown of a step result, prompt or answer block.
_BLOCK_LIMIT = 4_000
#: Cells longer than this are shown as clipped text, not parsed as JSON.
_DECODE_LIMIT = 100_000


def items_section(items: pd.DataFrame, summaries: list[ScorerSummary]) -> str:
    """The section of the worst items, or ``''`` for a run without items."""
    if items.empty:
        return ""
    order = worst_first(items, summaries)[:WORST_ITEMS]
    gaps = _gaps(items, summaries)
    ids = item_ids(items)
    named = id_column(items) is not None
    blocks = "".join(
        _item_block(
            items.loc[label],
            ids[label] if named else f"item {label}",
            gaps.loc[label],
            summaries,
            opened=rank == 0,
        )
        for rank, label in enumerate(order)
    )
    return (
        '<section id="items"><h2>Items to look at</h2>'
        f'<p class="muted small">The {len(order)} items furthest from passing: those failing a '
        "gate first, then by how far they fall short of the gates and thresholds, each in its "
        "direction (above a maximum is short too) and on its scorer's scale, an error counting "
        "as the whole scale; then the items that fail nothing, closest to failing first. Open "
        "one to see its answer, tool calls, each scorer's reason and the judge's records.</p>"
        f"{blocks}</section>"
    )


def worst_first(items: pd.DataFrame, summaries: list[ScorerSummary]) -> list[Any]:
    """The items' index labels, furthest from passing first.

    Items failing more gates come first (a failed gate fails the run). Then those that fall
    short of a gate or threshold, by how far in all (each gap a share of its scorer's scale); then
    those that fail nothing, by their summed margin, the smallest first; items no requirement
    applies to come last. Ties go to scorer errors, then to the lowest average of the scorers
    without a requirement.
    """
    gaps = _gaps(items, summaries)
    gate_ids = [s.id for s in summaries if s.role == "gate"]
    shortfall = gaps.clip(lower=0).sum(axis=1)
    plain = [s.id for s in summaries if s.requirement is None]
    scores = [item_states(items, s).counted_scores for s in plain]
    ranking = pd.DataFrame(
        {
            "gates": (gaps[gate_ids] > 0).sum(axis=1),
            "distance": shortfall.where(shortfall > 0, gaps.sum(axis=1, min_count=1)),
            "errors": sum(item_states(items, s.id).failed.astype(int) for s in summaries),
            "mean": pd.concat(scores, axis=1).mean(axis=1) if plain else float("nan"),
        },
        index=items.index,
    )
    ranked = ranking.sort_values(
        ["gates", "distance", "errors", "mean"],
        ascending=[False, False, False, True],
        na_position="last",
        kind="stable",
    )
    return list(ranked.index)


def _gaps(items: pd.DataFrame, summaries: list[ScorerSummary]) -> pd.DataFrame:
    """Each item's gap to each gate's and threshold's requirement, as a share of its scale."""
    return pd.DataFrame(
        {
            s.id: requirement_gaps(items, s.id, s.requirement)
            / scorer_scale(items, s.id, s.requirement)
            for s in summaries
            if s.requirement is not None
        },
        index=items.index,
        dtype=float,
    )


def score_tone(score: float | None, better: str = "higher") -> str:
    """How good ``score`` looks, on a 0-1 scale: the other way round for a scorer whose lower
    scores are better (a toxicity of 0.9 is bad)."""
    if score is None or math.isnan(score):
        return "none"
    goodness = 1 - score if better == "lower" else score
    return "bad" if goodness < 0.5 else "fair" if goodness < 0.8 else "good"


def _item_block(
    row: pd.Series,
    name: Any,
    gaps: pd.Series,
    summaries: list[ScorerSummary],
    *,
    opened: bool,
) -> str:
    question = clipped(input_text(row.get("input")), 140)
    chips = "".join(_chip(row, s, gaps.get(s.id)) for s in summaries)
    details = "".join(_scorer_detail(row, s) for s in summaries)
    answer = output_text(row.get("output"))
    tools = tool_list(row.get("output"))
    return (
        f'<details class="item"{" open" if opened else ""}><summary>'
        f'<span class="item-name">{escaped(name)}</span>'
        f'<span class="item-q">{escaped(question)}</span>'
        f'<span class="chips">{chips}</span></summary><div class="item-body">'
        f'<div class="qa"><div><h4>Input</h4><p>{escaped(clipped(input_text(row.get("input"))))}'
        f"</p></div><div><h4>Output</h4><p>{escaped(clipped(answer))}</p></div></div>"
        f"{tools}<h4>Scorers</h4>{details}</div></details>"
    )


def _chip(row: pd.Series, summary: ScorerSummary, gap: float | None) -> str:
    sid = summary.id
    columns = ScorerColumns(sid)
    if isinstance(row.get(columns.error), str):
        return (
            f'<span class="chip chip-bad" title="{escaped(sid)}: error">'
            f"{escaped(short_id(sid))} error</span>"
        )
    if _present(row.get(columns.not_scorable)):
        return (
            f'<span class="chip chip-none" title="{escaped(sid)}">'
            f"{escaped(short_id(sid))} n/a</span>"
        )
    score = _score(row, sid)
    # Against a requirement, its direction decides: a high hallucination score is bad.
    met = None if gap is None or math.isnan(gap) else gap <= 0
    tone = score_tone(score, summary.better) if met is None else "good" if met else "bad"
    return (
        f'<span class="chip chip-{tone}" title="{escaped(sid)}">{escaped(short_id(sid))} '
        f"{number_text(score, against=summary.requirement)}</span>"
    )


def _score(row: pd.Series, sid: str) -> float | None:
    value = row.get(ScorerColumns(sid).score)
    return float(value) if _present(value) else None


def _present(value: Any) -> bool:
    """Whether an item cell holds a value (None, NaN and pandas' NA do not)."""
    return value is not None and not (pd.api.types.is_scalar(value) and pd.isna(value))


def _scorer_detail(row: pd.Series, summary: ScorerSummary) -> str:
    sid, columns = summary.id, ScorerColumns(summary.id)
    error = row.get(columns.error)
    reason = _decoded(row.get(columns.reason))
    not_scorable = _decoded(row.get(columns.not_scorable))
    lines = []
    if isinstance(error, str):
        failed_step = row.get(columns.failed_step)
        where = f" in step {failed_step}" if isinstance(failed_step, str) else ""
        lines.append(
            f'<p class="error">Failed{escaped(where)}: {escaped(_cut(error, _BLOCK_LIMIT))}</p>'
        )
    if _present(not_scorable):
        lines.append(f'<p class="muted">Not scorable: {escaped(_plain_text(not_scorable))}</p>')
    if _present(reason):
        lines.append(f'<p class="reason">{escaped(clipped(_plain_text(reason)))}</p>')
    trials = row.get(columns.trial_scores)
    if pd.api.types.is_list_like(trials) and len(trials):
        shown = ", ".join(number_text(score) for score in trials)
        spread = number_text(row.get(columns.trial_spread))
        lines.append(
            f'<p class="muted">Trials: {shown} (spread {spread}; the reason is the first'
            " trial's)</p>"
        )
    steps = _decoded(row.get(columns.steps))
    if _present(steps) and steps:
        lines.append(
            "<details><summary>Step results</summary>"
            f"<pre>{escaped(_pretty(steps))}</pre></details>"
        )
    lines.append(_judge_records(_decoded(row.get(columns.judge))))
    score_text = number_text(_score(row, sid), against=summary.requirement)
    return (
        f'<div class="scorer-detail"><div class="scorer-detail-head"><code>{escaped(sid)}</code>'
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
            failure = (
                f'<p class="error">{escaped(_pretty(error.get("message", "")))}</p>'
                if error
                else ""
            )
            rows.append(
                f'<div class="judge"><div class="judge-head"><b>{escaped(stage)}</b> '
                f'<span class="muted">{escaped(" · ".join(str(f) for f in facts if f))}'
                "</span></div>" + (failure if error else "") + "<details><summary>Prompt</summary>"
                f"<pre>{escaped(_pretty(execution.get('prompt', '')))}</pre></details>"
                f"<details><summary>Answer</summary><pre>{escaped(_pretty(answer))}</pre></details>"
                "</div>"
            )
    return f'<div class="judges"><h5>Judge records</h5>{"".join(rows)}</div>'


def _decoded(value: Any) -> Any:
    """Item cells of nested values are JSON text; anything else is returned as it is.

    A cell too long to show whole stays text (clipped where shown), so a 200 MB output never
    becomes a 200 MB tree of objects here.
    """
    if isinstance(value, str):
        if len(value) > _DECODE_LIMIT:
            return value
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


def _pretty(value: Any, limit: int = _BLOCK_LIMIT) -> str:
    """``value`` as indented JSON (or its text), clipped to ``limit`` characters."""
    text = (
        value
        if isinstance(value, str)
        else json.dumps(value, indent=2, ensure_ascii=False, default=str)
    )
    return _cut(text, limit)


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… {len(text) - limit:,} more characters"


def clipped(text: str, limit: int = _TEXT_LIMIT) -> str:
    """``text`` on one line (whitespace runs as one space), clipped to ``limit``."""
    head = " ".join(text[: limit * 4].split())  # only what can be shown is split
    if len(head) <= limit and len(text) <= limit * 4:
        return head
    return f"{head[:limit]}… {max(len(text) - limit, 1):,} more characters"


def input_text(value: Any) -> str:
    return _message_text(_transcript(value, "input"), get_user_message)


def output_text(value: Any) -> str:
    return _message_text(_transcript(value, "output"), get_assistant_message)


def _transcript(value: Any, field: str) -> Any:
    """An input or output cell as the scorers read it (OpenAI's messages, JSON text of them and
    the other shapes in Mastra's); as it is when it reads as none."""
    if isinstance(value, str):
        if value[:1] not in ("[", "{") or len(value) > _DECODE_LIMIT:  # text, or clipped
            return value
        value = _decoded(value)
    try:
        return read_transcript(value, field)
    except EvalDagError:
        return value


def _message_text(value: Any, extract: Callable[[Any], str | None]) -> str:
    if isinstance(value, str):
        return value
    try:
        text = extract(value)
    except Exception:  # any shape a user's target takes; the report falls back to JSON
        text = None
    return text if text is not None else _pretty(value)


def tool_list(output: Any) -> str:
    output = _transcript(output, "output")
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
            f'<li class="{"tool-failed" if failed else ""}"><code>{escaped(call.get("toolName"))}'
            f"({escaped(clipped(args, 160))})</code> → "
            f'<span class="muted">{escaped(clipped(_pretty(outcome), 200))}</span></li>'
        )
    return f'<h4>Tool calls</h4><ol class="tools">{"".join(rows)}</ol>'
