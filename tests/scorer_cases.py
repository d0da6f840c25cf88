"""Scorers several test folders run: a code scorer whose scores and not-scorable items are known
from the output alone; and what ``on_item_complete`` got, as values two runs can compare."""

from evaldag import create_scorer, not_scorable


def length_scorer():
    """``len``: an output's length over 10, at most 1; an empty output is not scorable."""
    return (
        create_scorer("len")
        .preprocess(lambda run: len(run.output))
        .generate_score(
            lambda preprocess_step_result: (
                not_scorable("empty")
                if preprocess_step_result == 0
                else min(1, preprocess_step_result / 10)
            )
        )
    )


def completions(calls):
    """What on_item_complete got, as comparable values: the item, the output and each scorer's
    score, reason and error (its type and message)."""
    return [
        (
            item,
            output,
            {
                sid: (
                    getattr(outcome, "score", None),
                    getattr(outcome, "reason", None),
                    type(outcome).__name__,
                    getattr(outcome, "message", None),
                )
                for sid, outcome in results.items()
            },
        )
        for item, output, results in calls
    ]
