"""What makes two scorers the same scorer, and two datasets the same data.

A scorer's fingerprint is a set of named parts, each a digest: the dataset columns it reads, its
judge settings (without credentials), its maximum score, and for ``prepare_run`` and each step
what it reaches (``evaldag._scorer.reach``: its code, the values its closure and defaults hold,
the helpers, classes and module constants of the user's modules it uses, recursively). A
prebuilt scorer built with other options, a step whose code was edited, or a helper or
constant it uses that changed, is another scorer, and the part that changed says how.
"""

from __future__ import annotations

import hashlib
import inspect
from typing import Any

import pandas as pd

from evaldag._compat.js import json_text
from evaldag._judge.settings import reply_settings
from evaldag._reader import python_data
from evaldag._scorer.reach import Memo, Reach
from evaldag._scorer.steps import PromptStep, ScorerSpec

#: Named parts, grouped by where they are: ``{"step 'analyze' of scorer 'x'": {"its code":
#: "<digest>", "helper 'normalize' (my_evals)": "<digest>"}}``.
Parts = dict[str, dict[str, str]]


def digest(value: Any) -> str:
    """A SHA-256 of ``value``'s JSON text."""
    return hashlib.sha256((json_text(value) or "null").encode()).hexdigest()


def reached_parts(fn: Any, prefix: str = "", memo: Memo | None = None) -> dict[str, str]:
    """What ``fn`` reaches (see ``evaldag._scorer.reach``), each part as a digest."""
    reach = Reach(memo)
    reach.add(fn, prefix)
    return {label: digest(data) for label, data in reach.parts.items()}


def _schema(schema: Any) -> Any:
    if inspect.isclass(schema) and hasattr(schema, "model_json_schema"):
        return schema.model_json_schema()
    return repr(schema) if schema is not None and not isinstance(schema, dict) else schema


def scorer_parts(scorer: ScorerSpec, memo: Memo | None = None) -> Parts:
    """Everything that decides the scorer's scores, in named parts.

    :param memo: what the walks of one fingerprint share (see ``Memo``).
    """
    sid = scorer.id
    parts: Parts = {
        f"scorer '{sid}'": {
            "the data columns it reads": digest(list(scorer.columns)),
            "its judge settings": digest(reply_settings(scorer.judge)),
            "its maximum score": digest(repr(scorer.max_score)),
        }
    }
    if scorer.prepare_run is not None:
        parts[f"prepare_run of scorer '{sid}'"] = reached_parts(scorer.prepare_run, memo=memo)
    for step in scorer.steps:
        definition = step.definition
        where = f"step '{step.node_name}' of scorer '{sid}'"
        if isinstance(definition, PromptStep):
            parts[where] = {
                "its description": digest(definition.description),
                "its output schema": digest(_schema(definition.output_schema)),
                "its judge settings": digest(reply_settings(definition.judge)),
                **reached_parts(definition.create_prompt, memo=memo),
            }
        else:
            parts[where] = reached_parts(definition.fn, memo=memo)
    return parts


def rows_fingerprint(rows: pd.DataFrame) -> str:
    """A digest of the rows' content, every column, in order (numpy and Arrow values as data)."""
    cells = [[python_data(cell) for cell in row] for row in rows.itertuples(index=False)]
    return digest({"columns": [str(c) for c in rows.columns], "rows": cells})


def scorer_fingerprint(scorer: ScorerSpec) -> str:
    """A digest of everything that decides the scorer's scores."""
    return digest(scorer_parts(scorer))
