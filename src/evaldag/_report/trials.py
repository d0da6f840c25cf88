"""The report's trials section: how far each scorer's scores moved when its items were judged
again (``run_evals(trials=N)``)."""

from __future__ import annotations

from evaldag._report.text import escaped, number_text
from evaldag._results.eval_result import EvalResult
from evaldag._results.intervals import ConfidenceInterval
from evaldag._scorer.thresholds import threshold_text


def _share(interval: ConfidenceInterval | None) -> str:
    return "–" if interval is None else f"{interval.low:.1%} to {interval.high:.1%}"


def trials_section(result: EvalResult) -> str:
    """A row per scorer and gate: its trials, reducer, run-to-run standard deviation and flip
    share with their intervals; empty for a run of one trial."""
    spreads = result.summary.trials
    if not spreads:
        return ""
    rows = []
    for sid, spread in spreads.items():
        if not spread.repeated:
            once = "scored once (no judge decides its score)"
            cells = f'<td class="num">1</td><td colspan="5">{once}</td>'
        else:
            line = (
                "" if spread.pass_line is None else f" at score {threshold_text(spread.pass_line)}"
            )
            flips = (
                "–"
                if spread.flip_share is None
                else f"{spread.flipped_items} of {spread.items} ({spread.flip_share:.1%}){line}"
            )
            mean = f"{number_text(spread.mean)} {spread.interval or ''}".strip()
            cells = (
                f'<td class="num">{spread.trials}</td><td>{escaped(spread.reducer)}</td>'
                f'<td class="num">{number_text(spread.run_to_run_sd, 3)}</td>'
                f'<td class="num">{escaped(flips)}</td>'
                f'<td class="num">{escaped(_share(spread.flip_share_interval))}</td>'
                f'<td class="num">{escaped(mean)}</td>'
            )
        rows.append(f"<tr><td><code>{escaped(sid)}</code></td>{cells}</tr>")
    return (
        '<section id="trials"><h2>Trials</h2><div class="table"><table class="data"><thead><tr>'
        '<th>scorer</th><th class="num">trials</th><th>reducer</th>'
        '<th class="num">run-to-run SD</th><th class="num">verdict flipped</th>'
        '<th class="num">95 % interval</th><th class="num">mean of trials</th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
        '<p class="muted small">Each item was judged once per trial, every trial its own judge '
        "calls. The run-to-run SD is how far an item's score moves when it is judged again (the "
        "square root of the mean over items of their trials' variance); a verdict flips when "
        "a trial's score meets the pass line and another's does not. The intervals resample "
        "items with all their trials (a cluster bootstrap): trials of one item are not "
        "independent.</p></section>"
    )
