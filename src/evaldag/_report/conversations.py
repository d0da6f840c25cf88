"""The report's conversations: each conversation item as a thread, turn by turn: the user's
message, the target's answer with its tool calls (or, where the target failed, its error and
the turns it never reached), and the chips of that turn's gates and scorers."""

from __future__ import annotations

from typing import Any

import pandas as pd

from evaldag._report.items import clipped, input_text, output_text, score_tone, tool_list
from evaldag._report.text import escaped, number_text, short_id
from evaldag._results.eval_result import EvalResult
from evaldag._results.item_columns import ScorerColumns, scorer_ids

#: How many conversations the report shows, those with a failed turn (or target) first.
SHOWN_CONVERSATIONS = 10


def conversations_section(result: EvalResult) -> str:
    """The section of the run's conversations, or ``''`` for a run without them."""
    turns = result.turns
    if turns is None or turns.empty:
        return ""
    gates = {(t.index, g.id) for t in result.turn_results for g in t.gate_results}
    ids = scorer_ids(turns.columns)
    lower = {d["id"] for d in result.scorers if d.get("better") == "lower"}
    items = result.items
    target_errors = items["target_error"] if "target_error" in items else pd.Series()
    threads = []
    for item, rows in turns.groupby("item", sort=False):
        chips = [
            [_chip(row, sid, (row["turn"], sid) in gates, sid in lower) for sid in ids]
            for _, row in rows.iterrows()
        ]
        failure = target_errors.get(item)
        failure = failure if isinstance(failure, str) else None
        failed = sum("chip-bad" in chip for row_chips in chips for chip in row_chips)
        threads.append((failed + (failure is not None), item, rows, chips, failure))
    threads.sort(key=lambda thread: -thread[0])
    shown = threads[:SHOWN_CONVERSATIONS]
    blocks = "".join(
        _thread(item, rows, chips, failure, opened=rank == 0)
        for rank, (_, item, rows, chips, failure) in enumerate(shown)
    )
    return (
        '<section id="conversations"><h2>Conversations</h2>'
        f'<p class="muted small">{len(shown)} of {len(threads)} conversations, those with a '
        "failing turn first. Each turn shows the user's message, the target's answer (with its "
        "tool calls) and the turn's own gates and scorers.</p>"
        f"{blocks}</section>"
    )


def _thread(
    item: Any, rows: pd.DataFrame, chips: list[list[str]], failure: str | None, *, opened: bool
) -> str:
    """A conversation's turns; ``failure``, the target's error, where it failed at a turn."""
    name = rows["id"].iloc[0] if "id" in rows.columns else f"item {item}"
    answered = [not _unanswered(output) for output in rows["output"]]
    turns = "".join(
        '<li class="turn">'
        f'<div class="bubble bubble-user">{escaped(clipped(input_text(row["input"])))}</div>'
        f"{_answer(row['output'], failure, reached=all(answered[:number]))}"
        f'<span class="chips">{"".join(turn_chips)}</span></li>'
        for number, ((_, row), turn_chips) in enumerate(zip(rows.iterrows(), chips, strict=True))
    )
    return (
        f'<details class="item"{" open" if opened else ""}><summary>'
        f'<span class="item-name">{escaped(name)}</span>'
        f'<span class="item-q">{len(rows)} turns</span></summary>'
        f'<div class="item-body"><ol class="thread">{turns}</ol></div></details>'
    )


def _unanswered(output: Any) -> bool:
    return output is None or (isinstance(output, float) and pd.isna(output))


def _answer(output: Any, failure: str | None, *, reached: bool) -> str:
    """The target's answer at a turn; at the turn where it failed, its error; after it, that
    the conversation never got there."""
    if not _unanswered(output):
        text = escaped(clipped(output_text(output)))
        return f'<div class="bubble bubble-agent">{text}{tool_list(output)}</div>'
    if not reached:
        return '<div class="bubble bubble-agent muted">not reached: the target failed before</div>'
    why = f"the target failed: {failure}" if failure else "the target failed"
    return f'<div class="bubble bubble-agent error">{escaped(clipped(why))}</div>'


def _chip(row: pd.Series, sid: str, gate: bool, lower_better: bool) -> str:
    columns = ScorerColumns(sid)
    error, score = row.get(columns.error), row.get(columns.score)
    if isinstance(error, str):
        return (
            f'<span class="chip chip-bad" title="{escaped(error)}">'
            f"{escaped(short_id(sid))} error</span>"
        )
    if score is None or pd.isna(score):
        return ""
    better = "lower" if lower_better else "higher"
    tone = ("good" if score >= 1 else "bad") if gate else score_tone(float(score), better)
    kind = "gate" if gate else "scorer"
    return (
        f'<span class="chip chip-{tone}" title="{escaped(sid)} ({kind})">'
        f"{escaped(short_id(sid))} {number_text(float(score))}</span>"
    )
