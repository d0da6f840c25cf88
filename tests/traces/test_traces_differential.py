"""The same conversation, the same verdicts, read as transcripts and read as traces (issue 24).

For each of the nine conversations, every transcript fixture (``fixtures/transcripts/``: each
library's own serializer) and every trace fixture (``fixtures/traces/``: openai-v2 in its three
content modes, OpenInference, pydantic-ai 5 and 6, Mastra's span records; OTLP JSON and
protobuf) is scored by ``run_evals`` with the tool checks as gates and the code trajectory and
tool-call scorers: every score of every item, and each run's verdict, must be the same whichever
way the conversation was recorded. Nothing is compared with an expectation here; the readers are
compared with each other (``test_traces.py`` and ``test_transcript_differential.py`` compare each
with the conversation's definition).
"""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
import pytest
from conversation_cases import CONVERSATIONS, UNRECORDED_ERRORS, calls, gates
from repo_paths import FIXTURES
from trace_cases import SHAPES, sources

import evaldag
from evaldag import read_traces, scorers

TRANSCRIPTS = FIXTURES / "transcripts"


def transcript_items(conversation: str) -> pd.DataFrame:
    """The conversation as every transcript fixture recorded it, one item each (a shape that
    cannot record a tool error, LlamaIndex's, left out: its verdict differs by design)."""
    rows = []
    for path in sorted(TRANSCRIPTS.glob(f"*/{conversation}.json")):
        shape = path.parent.name
        if shape == "generate_node" or (shape, conversation) in UNRECORDED_ERRORS:
            continue
        data = json.loads(path.read_text())
        rows.append({"source": f"transcript {shape}", **{k: data[k] for k in ("input", "output")}})
    return pd.DataFrame(rows)


def trace_items(conversation: str) -> pd.DataFrame:
    """The conversation as every trace fixture recorded it, one item each, from each medium."""
    frames = []
    for shape in SHAPES:
        for medium, paths in sources(shape, conversation).items():
            items = read_traces(paths)
            items.insert(0, "source", f"trace {shape} {medium}")
            items["id"] = items["source"]  # one trace, read from two media
            frames.append(items)
    return pd.concat(frames, ignore_index=True)


def scored_with(conversation: dict[str, Any]) -> dict[str, Any]:
    """The tool checks as gates, and the code scorers of trajectories and tool calls."""
    tools = [call["tool"] for call in calls(conversation)]
    steps = [{"name": tool, "stepType": "tool_call"} for tool in tools]
    return {
        "gates": gates(conversation),
        "scorers": [
            scorers.trajectory_accuracy(steps or [{"name": "none"}], {"ordering": "strict"}),
            scorers.trajectory(
                {"blacklistedTools": ["delete_db"], "maxSteps": 1, "noRedundantCalls": True}
            ),
            scorers.tool_call_accuracy(expected_tool="get_weather"),
        ],
    }


def _scores(result: evaldag.EvalResult) -> pd.DataFrame:
    columns = [c for c in result.items.columns if c.endswith(".score")]
    return result.items.set_index("source")[columns]


@pytest.mark.parametrize("conversation_id", list(CONVERSATIONS))
def test_transcripts_and_traces_of_a_conversation_get_the_same_verdicts(conversation_id):
    conversation = CONVERSATIONS[conversation_id]
    as_transcripts = evaldag.run_evals(
        transcript_items(conversation_id), **scored_with(conversation), progress=False
    )
    as_traces = evaldag.run_evals(
        trace_items(conversation_id), **scored_with(conversation), progress=False
    )
    assert as_traces.verdict == as_transcripts.verdict
    scores = pd.concat([_scores(as_transcripts), _scores(as_traces)])
    assert len(scores) > 30 and scores.notna().all().all()
    reference = scores.iloc[0]
    differing = {
        source: {c: (row[c], reference[c]) for c in scores.columns if row[c] != reference[c]}
        for source, row in scores.iterrows()
        if not row.equals(reference)
    }
    assert not differing, f"{conversation_id}: scores differ from {scores.index[0]}: {differing}"
