"""The columns of ``EvalResult.items`` a scorer adds to each item: ``<scorer id>.<column>``."""

#: Columns a scorer adds to each item (``<scorer id>.score``, ...): ``score`` a float, the
#: others text (JSON for nested values) or categories.
SCORER_COLUMNS = (
    "score",
    "reason",
    "error",
    "failed_step",
    "completed_steps",
    "not_scorable",
    "steps",
    "judge",
)
