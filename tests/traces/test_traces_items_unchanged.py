"""``read_traces`` gives, for every trace fixture and every medium (OTLP JSON, OTLP protobuf, a
table of spans, Mastra's span records), exactly the DataFrame recorded in
``fixtures/traces/expected_items/``: the items as read before ``read_traces`` was made fast
(values, their types, key order). A deliberate change of what ``read_traces`` gives rewrites
them: ``python tests/traces/test_traces_items_unchanged.py``, and the diff is reviewed."""

from __future__ import annotations

import base64
import json
import sys
from typing import Any

import pandas as pd
import pytest
from conversation_cases import CONVERSATIONS
from trace_cases import EXPECTED, SHAPES, sources, spans_table

from evaldag import read_traces


def media(shape: str, conversation: str) -> dict[str, Any]:
    """The sources of one fixture by medium: a table of spans too where it has no log records."""
    found: dict[str, Any] = sources(shape, conversation)
    if ".jsonl" in found and not found[".jsonl"][1:]:
        found["table"] = spans_table(found[".jsonl"])
    return found


def canonical(items: pd.DataFrame) -> str:
    """The DataFrame as JSON text, which tells apart what ``==`` would not: an int from a float,
    key order; other values tagged with their type (a tuple from a list, timestamps, bytes)."""
    return json.dumps(
        {
            "columns": [str(c) for c in items.columns],
            "dtypes": [str(d) for d in items.dtypes],
            "rows": [[_tagged(v) for v in row] for row in items.itertuples(index=False)],
        },
        indent=1,
        ensure_ascii=False,
    )


def _tagged(value: Any) -> Any:
    if value is None or isinstance(value, bool | str | int | float):
        return value
    if isinstance(value, dict):
        return {key: _tagged(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_tagged(item) for item in value]
    if isinstance(value, pd.Timestamp):
        return {"timestamp": value.isoformat()}
    if isinstance(value, bytes):
        return {"bytes": base64.b64encode(value).decode()}
    if isinstance(value, tuple):
        return {"tuple": [_tagged(item) for item in value]}
    return {type(value).__name__: repr(value)}


CASES = [
    (shape, conversation, medium)
    for shape in SHAPES
    for conversation in CONVERSATIONS
    for medium in media(shape, conversation)
]


@pytest.mark.parametrize(
    ("shape", "conversation", "medium"), CASES, ids=[f"{s}/{c}/{m}" for s, c, m in CASES]
)
def test_read_traces_gives_the_recorded_items(shape, conversation, medium):
    given = media(shape, conversation)[medium]
    want = (EXPECTED / shape / f"{conversation}.json").read_text()
    assert canonical(read_traces(given)) == want


def _write_expected() -> None:
    for shape in SHAPES:
        (EXPECTED / shape).mkdir(parents=True, exist_ok=True)
        for conversation in CONVERSATIONS:
            texts = {m: canonical(read_traces(s)) for m, s in media(shape, conversation).items()}
            assert len(set(texts.values())) == 1, (shape, conversation, "media differ")
            (EXPECTED / shape / f"{conversation}.json").write_text(next(iter(texts.values())))


if __name__ == "__main__":
    sys.exit(_write_expected())
