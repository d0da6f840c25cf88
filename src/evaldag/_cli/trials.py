"""``evaldag run --trials N --reducer R``: each item judged N times, and the spread shown."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from evaldag._cli.values import positive_int

if TYPE_CHECKING:
    from evaldag._results.eval_result import EvalResult


def add_trial_options(run: argparse.ArgumentParser) -> None:
    """``--trials`` and ``--reducer`` on ``evaldag run``."""
    run.add_argument(
        "--trials",
        type=positive_int,
        default=1,
        metavar="N",
        help="score each item N times with every scorer whose score a judge decides (code "
        "scorers score once, the target runs once, a judged reason is asked for once); the "
        "summary shows each judged scorer's run-to-run "
        "standard deviation and how often its verdict flips (default: 1)",
    )
    run.add_argument(
        "--reducer",
        default="mean",
        metavar="R",
        help="how an item's trial scores become its score: mean (default), median, mode, max, "
        "min, 'pass_at_k(K)' (at least one of K trials passes) or 'pass_hat_k(K)' (all K pass)",
    )


def trial_options(args: argparse.Namespace) -> dict[str, Any]:
    """``run_evals``'s ``trials`` and ``reducer`` from the command line (checked there)."""
    return {"trials": args.trials, "reducer": args.reducer}


def trial_lines(result: EvalResult) -> list[str]:
    """A line per scorer and gate on how its scores moved across the trials; none for one."""
    spreads = result.summary.trials
    if not spreads:
        return []
    lines = [f"trials: {max(spread.trials for spread in spreads.values())} per item"]
    for sid, spread in spreads.items():
        interval = spread.flip_share_interval
        shown = f" (95% interval {interval.low:.1%} to {interval.high:.1%})" if interval else ""
        lines.append(f"  {sid}: {spread.text()}{shown if spread.repeated else ''}")
    return lines
