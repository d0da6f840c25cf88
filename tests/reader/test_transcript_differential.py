"""The same conversation, the same verdict, in every shape (issue 22).

``fixtures/transcripts/conversations.json`` holds nine conversations (tool errors raised and
returned, repeated, forbidden, parallel and unanswered calls, no tools); each library's own
serializer wrote them (``generate_node/``, ``generate_python.py``; never typed by hand) into
``fixtures/transcripts/<shape>/``. Every fixture is scored as the library's JSON, as JSON text, from
a CSV file and from a Parquet file; every check must give the answer the conversation itself
implies, which is computed here from ``conversations.json`` alone, never from a reader.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import repo_paths
from conversation_cases import (
    CONVERSATIONS,
    UNRECORDED_ERRORS,
    expected,
    gates,
    read_answers,
)

import evaldag

FIXTURES = repo_paths.FIXTURES / "transcripts"
#: Every shape the reader must read, each from its library's own serializer.
REQUIRED_SHAPES = {
    "ai5_ui",
    "ai5_model",
    "ai5_dynamic_ui",
    "ai6_ui",
    "ai6_model",
    "ai7_ui",
    "ai7_model",
    "mastra_scorer_run",
    "mastra_ui",
    "openai_chat",
    "openai_responses",
    "anthropic",
    "gemini",
    "gemini_snake",
    "gemini_no_ids",
    "langchain_dict",
    "langchain_dumpd",
    "langchain_model_dump",
    "pydantic_ai",
    "llama_index_blocks",
    "llama_index_kwargs",
}
MEDIA = ("json", "json-text", "csv", "parquet")


def fixture_files() -> list[Path]:
    return sorted(path for path in FIXTURES.glob("*/*.json") if path.parent.name != "generate_node")


@cache
def fixture(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def test_every_shape_has_every_conversation_or_says_why():
    shapes = {path.parent.name for path in fixture_files()}
    assert shapes >= REQUIRED_SHAPES, f"missing shapes: {REQUIRED_SHAPES - shapes}"
    manifests = [json.loads(p.read_text()) for p in FIXTURES.glob("manifest-*.json")]
    explained = json.dumps(manifests)
    python = json.loads((FIXTURES / "manifest-python.json").read_text())["shapes"]
    for shape, conversation in UNRECORDED_ERRORS:
        assert "nothing marks it an error" in python[shape]["lossy"][conversation]
    for shape in shapes:
        have = {path.stem for path in (FIXTURES / shape).glob("*.json")}
        for missing in set(CONVERSATIONS) - have:
            assert missing in explained, f"{shape}/{missing}.json is missing and not explained"


@pytest.mark.parametrize("path", fixture_files(), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_each_fixture_reads_as_its_conversation(path):
    data = fixture(path)
    want = expected(CONVERSATIONS[data["conversation"]], path.parent.name)
    answers = read_answers(data["input"], data["output"])
    assert answers == {key: want[key] for key in answers}
    as_text = read_answers(json.dumps(data["input"]), "\ufeff" + json.dumps(data["output"]))
    assert as_text == answers  # JSON text, with a byte-order mark as Windows tools write it


def _table(paths: list[Path], medium: str) -> pd.DataFrame:
    rows = []
    for path in paths:
        data = fixture(path)
        row = {"item": f"{path.parent.name}/{path.stem}", "conversation": data["conversation"]}
        if medium == "json":
            row |= {"input": data["input"], "output": data["output"]}
        else:
            row |= {"input": json.dumps(data["input"]), "output": json.dumps(data["output"])}
        rows.append(row)
    return pd.DataFrame(rows)


def _parquet(paths: list[Path], folder: Path) -> list[Path]:
    """One Parquet file per fixture, its transcripts as nested Arrow values where Arrow can hold
    them (one type per field), as JSON text where it cannot (docs/transcripts.md says so)."""
    written = []
    for path in paths:
        data = fixture(path)
        row = {"conversation": [data["conversation"]], "item": [f"{path.parent.name}/{path.stem}"]}
        target = folder / f"{path.parent.name}-{path.stem}.parquet"
        try:
            table = pa.table(row | {"input": [data["input"]], "output": [data["output"]]})
            pq.write_table(table, target)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
            text = {"input": [json.dumps(data["input"])], "output": [json.dumps(data["output"])]}
            pq.write_table(pa.table(row | text), target)
        written.append(target)
    return written


@pytest.mark.parametrize("medium", MEDIA)
def test_every_shape_gives_every_check_the_same_verdict(medium, tmp_path):
    by_conversation: dict[str, list[Path]] = {}
    for path in fixture_files():
        by_conversation.setdefault(fixture(path)["conversation"], []).append(path)
    for conversation_id, paths in sorted(by_conversation.items()):
        conversation = CONVERSATIONS[conversation_id]
        if medium == "csv":
            data: Any = tmp_path / f"{conversation_id}.csv"
            _table(paths, medium).to_csv(data, index=False)
        elif medium == "parquet":
            folder = tmp_path / conversation_id
            folder.mkdir()
            data = pd.concat(
                [pd.read_parquet(part) for part in _parquet(paths, folder)], ignore_index=True
            )
        else:
            data = _table(paths, medium)
        result = evaldag.run_evals(data, scorers=gates(conversation), progress=False)
        for _, item in result.items.iterrows():
            want = expected(conversation, item["item"].split("/")[0])
            got = {check: item[f"{check}.score"] for check in want if check.startswith("check-")}
            assert got == {k: v for k, v in want.items() if k in got}, item["item"]


# --- the libraries' own objects ------------------------------------------------------------------


def _openai_chat(messages: list[Any]) -> list[Any]:
    from openai.types.chat import ChatCompletionMessage

    return [
        ChatCompletionMessage.model_validate(m) if m.get("role") == "assistant" else m
        for m in messages
    ]


def _openai_responses(items: list[Any]) -> list[Any]:
    from openai.types.responses import ResponseOutputItem
    from pydantic import TypeAdapter

    output = TypeAdapter(ResponseOutputItem)
    produced = {"function_call", "reasoning"}
    return [
        output.validate_python(i)
        if i.get("type") in produced or i.get("role") == "assistant"
        else i
        for i in items
    ]


def _gemini(contents: list[Any]) -> list[Any]:
    from google.genai import types

    return [types.Content.model_validate(content) for content in contents]


def _langchain(messages: list[Any]) -> list[Any]:
    from langchain_core.load import load
    from langchain_core.messages import messages_from_dict

    if messages and "lc" in messages[0]:
        return [load(message, allowed_objects="messages") for message in messages]
    if messages and "data" in messages[0]:
        return messages_from_dict(messages)
    return messages_from_dict([{"type": m["type"], "data": m} for m in messages])


def _pydantic_ai(messages: list[Any]) -> list[Any]:
    from pydantic_ai.messages import ModelMessagesTypeAdapter

    return ModelMessagesTypeAdapter.validate_python(messages)


def _llama_index(messages: list[Any]) -> list[Any]:
    from llama_index.core.base.llms.types import ChatMessage

    return [ChatMessage.model_validate(message) for message in messages]


#: Shape prefix → the library objects its fixture's JSON loads into, through the library itself.
OBJECTS = {
    "openai_chat": _openai_chat,
    "openai_responses": _openai_responses,
    "gemini": _gemini,
    "langchain": _langchain,
    "pydantic_ai": _pydantic_ai,
    "llama_index": _llama_index,
}


def _objects(shape: str) -> Any:
    return next((load for prefix, load in OBJECTS.items() if shape.startswith(prefix)), None)


@pytest.mark.parametrize(
    "path",
    [
        p
        for p in fixture_files()
        if _objects(p.parent.name) and isinstance(fixture(p)["output"], list)
    ],
    ids=lambda p: f"{p.parent.name}/{p.stem}",
)
def test_the_libraries_own_objects_read_as_their_json(path):
    data = fixture(path)
    load = _objects(path.parent.name)
    answers = read_answers(load(data["input"]), load(data["output"]))
    assert answers == read_answers(data["input"], data["output"])
