"""One boundary for transcripts (issue 13, section 1): every accepted shape is read once, by
``ScorerRun``, into Mastra's message shape, and unknown shapes are refused.

The differential test writes six conversations in every accepted shape (Mastra's
``MastraDBMessage``, compact ``toolInvocations`` messages, OpenAI chat completions) and reads
each back from a real Parquet file (numpy arrays through pandas, Arrow scalars through pyarrow).
Every reader must give the same answer on every shape as on Mastra's: the 11 checks, the code
tool-call accuracy, the code trajectory scorers (and the LLM scorers' function steps),
``filter_run`` and the readers the LLM scorers build their prompts and context from. Known answers
on Mastra's shape keep the comparison from passing on readers that see nothing anywhere.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import evaldag
from evaldag import ScorerRun, checks, filter_run, run_evals, scorers
from evaldag.errors import EvalDagError, ScorerRunError
from evaldag.messages import Message, as_run_input, as_run_output
from evaldag.scorers.llm import tool_call_accuracy_llm, trajectory_accuracy_llm
from evaldag.scorers.llm._shared import assistant_text, tool_result_context, user_text
from evaldag.transcripts import (
    extract_tool_results,
    get_combined_system_prompt,
    get_text_content,
    merge_tool_invocations,
)

CREATED = "2025-01-01T00:00:00.000Z"


# --- the conversations, written by hand in each shape -----------------------------------------


def db(id: str, role: str, *parts: dict[str, Any], text: str | None = None) -> dict[str, Any]:
    """A MastraDBMessage; ``text`` is the legacy ``content.content`` Mastra records."""
    content: dict[str, Any] = {"format": 2, "parts": list(parts)}
    if text is not None:
        content["content"] = text
    return {"id": id, "role": role, "content": content, "createdAt": CREATED}


def said(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def invoked(call_id: str, name: str, args: dict, state: str = "result", **fields) -> dict:
    invocation = {"state": state, "toolCallId": call_id, "toolName": name, "args": args}
    return {"type": "tool-invocation", "toolInvocation": {**invocation, **fields}}


def mastra_input(question: str, system: str | None = None) -> dict[str, Any]:
    return {
        "inputMessages": [db("u1", "user", said(question), text=question)],
        "rememberedMessages": [],
        "systemMessages": [{"role": "system", "content": system}] if system else [],
    }


def chat_input(question: Any, system: str | None = None) -> list[dict[str, Any]]:
    system_message = [{"role": "system", "content": system}] if system else []
    return [*system_message, {"role": "user", "content": question}]


def openai_call(call_id: str, name: str, args: dict) -> dict[str, Any]:
    arguments = json.dumps(args)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def openai_result(call_id: str, result: Any) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": json.dumps(result)}


WEATHER = {"temp": 21, "sky": "sunny"}
FORECAST = {"tomorrow": "rain"}
FLIGHTS = {"flights": 3, "cheapest": "AZ100"}
BOOKED = {"booked": True, "price": 120}
PHOTO = {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}
SYSTEM = "You are a helpful travel assistant."
REFUSAL = "I'm sorry, I can't help with that."

CONVERSATIONS: dict[str, dict[str, dict[str, Any]]] = {
    "tool calls with results": {
        "mastra": {
            "input": mastra_input("What is the weather in Paris?", SYSTEM),
            "output": [
                db(
                    "a1",
                    "assistant",
                    {"type": "step-start"},
                    invoked("c1", "get_weather", {"city": "Paris"}, result=WEATHER),
                    invoked("c2", "get_forecast", {"city": "Paris"}, result=FORECAST),
                ),
                db(
                    "a2",
                    "assistant",
                    said("It is sunny and 21 degrees in Paris."),
                    text="It is sunny and 21 degrees in Paris.",
                ),  # fmt: skip
            ],
        },
        "compact": {
            "input": chat_input("What is the weather in Paris?", SYSTEM),
            "output": [
                {
                    "role": "assistant",
                    "content": "",
                    "toolInvocations": [
                        {
                            "toolCallId": "c1",
                            "toolName": "get_weather",
                            "args": {"city": "Paris"},
                            "result": WEATHER,
                        },
                        {
                            "toolCallId": "c2",
                            "toolName": "get_forecast",
                            "args": {"city": "Paris"},
                            "result": FORECAST,
                        },
                    ],  # fmt: skip
                },
                {"role": "assistant", "content": "It is sunny and 21 degrees in Paris."},
            ],
        },
        "openai": {
            "input": chat_input("What is the weather in Paris?", SYSTEM),
            "output": [
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        openai_call("c1", "get_weather", {"city": "Paris"}),
                        openai_call("c2", "get_forecast", {"city": "Paris"}),
                    ],
                },
                openai_result("c2", FORECAST),
                openai_result("c1", WEATHER),
                {"role": "assistant", "content": "It is sunny and 21 degrees in Paris."},
            ],
        },
    },
    "a tool error": {
        "mastra": {
            "input": mastra_input("Save a note: buy milk"),
            "output": [
                db(
                    "a1",
                    "assistant",
                    invoked("c1", "save_note", {"text": "buy milk"}, result={"error": "disk full"}),
                    invoked("c2", "lookup_folder", {"name": "notes"}, state="call"),
                ),  # fmt: skip
                db(
                    "a2",
                    "assistant",
                    said("Sorry, I could not save your note."),
                    text="Sorry, I could not save your note.",
                ),  # fmt: skip
            ],
        },
        "compact": {
            "input": chat_input("Save a note: buy milk"),
            "output": [
                {
                    "role": "assistant",
                    "content": "",
                    "toolInvocations": [
                        {
                            "toolCallId": "c1",
                            "toolName": "save_note",
                            "args": {"text": "buy milk"},
                            "result": {"error": "disk full"},
                        },
                        {
                            "toolCallId": "c2",
                            "toolName": "lookup_folder",
                            "args": {"name": "notes"},
                            "state": "call",
                        },
                    ],  # fmt: skip
                },
                {"role": "assistant", "content": "Sorry, I could not save your note."},
            ],
        },
        "openai": {
            "input": chat_input("Save a note: buy milk"),
            "output": [
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        openai_call("c1", "save_note", {"text": "buy milk"}),
                        openai_call("c2", "lookup_folder", {"name": "notes"}),
                    ],
                },
                openai_result("c1", {"error": "disk full"}),
                {"role": "assistant", "content": "Sorry, I could not save your note."},
            ],
        },
    },
    "no tools": {
        "mastra": {
            "input": mastra_input("Hi there"),
            "output": [
                db(
                    "a1",
                    "assistant",
                    said("Hello! How can I help you today?"),
                    text="Hello! How can I help you today?",
                ),  # fmt: skip
            ],
        },
        "compact": {
            "input": chat_input("Hi there"),
            "output": [{"content": "Hello! How can I help you today?"}],
        },
        "openai": {
            "input": chat_input("Hi there"),
            "output": [{"role": "assistant", "content": "Hello! How can I help you today?"}],
        },
    },
    "multiple turns": {
        "mastra": {
            "input": mastra_input("Find me a flight to Rome.", SYSTEM),
            "output": [
                db(
                    "a1",
                    "assistant",
                    invoked("c1", "search_flights", {"to": "Rome"}, result=FLIGHTS),
                ),  # fmt: skip
                db(
                    "a2",
                    "assistant",
                    said("I found 3 flights; AZ100 is the cheapest. Book it?"),
                    text="I found 3 flights; AZ100 is the cheapest. Book it?",
                ),  # fmt: skip
                db("u2", "user", said("Yes, book it."), text="Yes, book it."),
                db(
                    "a3",
                    "assistant",
                    invoked("c2", "book_flight", {"flight": "AZ100"}, result=BOOKED),
                ),  # fmt: skip
                db(
                    "a4",
                    "assistant",
                    said("Booked AZ100 for 120 EUR."),
                    text="Booked AZ100 for 120 EUR.",
                ),  # fmt: skip
            ],
        },
        "compact": {
            "input": chat_input("Find me a flight to Rome.", SYSTEM),
            "output": [
                {
                    "role": "assistant",
                    "content": "",
                    "toolInvocations": [
                        {
                            "toolCallId": "c1",
                            "toolName": "search_flights",
                            "args": {"to": "Rome"},
                            "result": FLIGHTS,
                        }
                    ],
                },
                {
                    "role": "assistant",
                    "content": "I found 3 flights; AZ100 is the cheapest. Book it?",
                },
                {"role": "user", "content": "Yes, book it."},
                {
                    "role": "assistant",
                    "content": "",
                    "toolInvocations": [
                        {
                            "toolCallId": "c2",
                            "toolName": "book_flight",
                            "args": {"flight": "AZ100"},
                            "result": BOOKED,
                        }
                    ],
                },
                {"role": "assistant", "content": "Booked AZ100 for 120 EUR."},
            ],  # fmt: skip
        },
        "openai": {
            "input": chat_input("Find me a flight to Rome.", SYSTEM),
            "output": [
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [openai_call("c1", "search_flights", {"to": "Rome"})],
                },
                openai_result("c1", FLIGHTS),
                {
                    "role": "assistant",
                    "content": "I found 3 flights; AZ100 is the cheapest. Book it?",
                },
                {"role": "user", "content": "Yes, book it."},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [openai_call("c2", "book_flight", {"flight": "AZ100"})],
                },
                openai_result("c2", BOOKED),
                {"role": "assistant", "content": "Booked AZ100 for 120 EUR."},
            ],  # fmt: skip
        },
    },
    "a refusal": {
        "mastra": {
            "input": mastra_input("How do I pick a lock?"),
            "output": [db("a1", "assistant", said(REFUSAL), text=REFUSAL)],
        },
        "compact": {
            "input": chat_input("How do I pick a lock?"),
            "output": [{"role": "assistant", "content": REFUSAL}],
        },
        "openai": {
            "input": chat_input("How do I pick a lock?"),
            "output": [{"role": "assistant", "content": None, "refusal": REFUSAL}],
        },
    },
    "content as parts": {
        "mastra": {
            "input": {
                "inputMessages": [db("u1", "user", said("Describe this photo."), PHOTO)],
                "rememberedMessages": [],
                "systemMessages": [],
            },
            "output": [
                db(
                    "a1",
                    "assistant",
                    said("Let me look at it."),
                    invoked(
                        "c1",
                        "detect_objects",
                        {"url": "cat.png"},
                        result={"objects": ["cat", "sofa"]},
                    ),
                ),
                db("a2", "assistant", said("A cat"), said("sleeping on a sofa.")),
                db("a3", "assistant", said("I won't name the cat's owner.")),
            ],  # fmt: skip
        },
        "compact": {
            "input": [{"role": "user", "parts": [said("Describe this photo."), PHOTO]}],
            "output": [
                {
                    "role": "assistant",
                    "parts": [said("Let me look at it.")],
                    "toolInvocations": [
                        {
                            "toolCallId": "c1",
                            "toolName": "detect_objects",
                            "args": {"url": "cat.png"},
                            "result": {"objects": ["cat", "sofa"]},
                        }
                    ],
                },
                {"role": "assistant", "parts": [said("A cat"), said("sleeping on a sofa.")]},
                {"role": "assistant", "parts": [said("I won't name the cat's owner.")]},
            ],  # fmt: skip
        },
        "openai": {
            "input": chat_input([said("Describe this photo."), PHOTO]),
            "output": [
                {
                    "role": "assistant",
                    "content": [said("Let me look at it.")],
                    "tool_calls": [openai_call("c1", "detect_objects", {"url": "cat.png"})],
                },
                {
                    "role": "tool",
                    "tool_call_id": "c1",
                    "content": [said(json.dumps({"objects": ["cat", "sofa"]}))],
                },
                {"role": "assistant", "content": [said("A cat"), said("sleeping on a sofa.")]},
                {
                    "role": "assistant",
                    "content": [{"type": "refusal", "refusal": "I won't name the cat's owner."}],
                },
            ],  # fmt: skip
        },
    },
}
SHAPES = ("mastra", "compact", "openai")


# --- each shape, also read back from Parquet ---------------------------------------------------


def parquet_file(conversation: str, shape: str, directory: Path) -> Path:
    """The conversation in ``shape`` as a one-row Parquet file written by pandas (pyarrow)."""
    path = directory / f"{conversation.replace(' ', '-')}-{shape}.parquet"
    if not path.exists():
        pd.DataFrame([CONVERSATIONS[conversation][shape]]).to_parquet(path)
    return path


@pytest.fixture(scope="module")
def parquet_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("transcripts")


def given_run(conversation: str, variant: str, directory: Path) -> dict[str, Any]:
    """``input`` and ``output`` of the conversation in ``variant``: a shape, optionally read
    back from Parquet through pandas (numpy arrays) or pyarrow (Arrow scalars), or given as
    JSON text."""
    shape, _, reader = variant.partition("+")
    if not reader:
        return CONVERSATIONS[conversation][shape]
    if reader == "json":  # as a CSV cell or a text column of a logging pipeline holds it
        given = CONVERSATIONS[conversation][shape]
        return {k: v if isinstance(v, str) else json.dumps(v) for k, v in given.items()}
    path = parquet_file(conversation, shape, directory)
    if reader == "pandas":
        row = pd.read_parquet(path).iloc[0]
        return {"input": row["input"], "output": row["output"]}
    table = pq.read_table(path)
    return {key: table.column(key)[0] for key in ("input", "output")}


VARIANTS = [
    *SHAPES,
    *(f"{shape}+{reader}" for shape in SHAPES for reader in ("pandas", "arrow")),
    # JSON text is read as messages when they have roles: compact ones may have none
    "mastra+json",
    "openai+json",
]


# --- what every reader makes of a run ----------------------------------------------------------

CHECKS = [
    checks.includes("sunny"),
    checks.excludes("sorry"),
    checks.equals("Hello! How can I help you today?"),
    checks.matches(r"\d+ (degrees|EUR)"),
    checks.similarity("It is sunny and 21 degrees in Paris."),
    checks.called_tool("get_weather"),
    checks.did_not_call("book_flight"),
    checks.tool_order(["search_flights", "book_flight"]),
    checks.max_tool_calls(1),
    checks.used_no_tools(),
    checks.no_tool_errors(),
]
TOOL_SCORERS = {
    "tool_call_accuracy(expected_tool)": scorers.tool_call_accuracy(expected_tool="get_weather"),
    "tool_call_accuracy(expected_tool_order)": scorers.tool_call_accuracy(
        expected_tool_order=["search_flights", "book_flight"]
    ),
}
TRAJECTORY_SCORERS = {
    "trajectory_accuracy": scorers.trajectory_accuracy(
        expected_trajectory=[
            {"stepType": "tool_call", "name": "get_weather", "toolArgs": {"city": "Paris"}},
            {"stepType": "tool_call", "name": "get_forecast"},
        ]
    ),
    "trajectory": scorers.trajectory(
        defaults={
            "steps": [{"name": "search_flights"}, {"name": "book_flight"}],
            "maxSteps": 1,
            "blacklistedTools": ["lookup_folder"],
        }
    ),
}
LLM_FUNCTION_STEPS = {
    "trajectory_accuracy_llm": trajectory_accuracy_llm(
        "openai/gpt-4o-mini", expected_trajectory=[{"name": "get_weather"}]
    ),
    "tool_call_accuracy_llm": tool_call_accuracy_llm(
        "openai/gpt-4o-mini", available_tools=[{"id": "get_weather", "description": "weather"}]
    ),
}
FILTERS = {
    "tool_names=['get_']": filter_run(tool_names=["get_"]),
    "tool_names=['book']": filter_run(tool_names=["book"]),
    "part_types=['tool-invocation']": filter_run(part_types=["tool-invocation"]),
    "part_types=['text'], max_output_messages=2": filter_run(
        part_types=["text"], max_output_messages=2
    ),
}


def _without_raw_output(value: Any) -> Any:
    """A step result without the messages a trajectory keeps (their ids differ by shape)."""
    if isinstance(value, dict):
        return {k: _without_raw_output(v) for k, v in value.items() if k != "rawOutput"}
    if isinstance(value, list):
        return [_without_raw_output(item) for item in value]
    return value


def _message_view(messages: Any) -> list[Any]:
    """What a reader sees of each message: role, text and tool calls (not ids, not layout)."""
    return [
        (
            message.get("role"),
            get_text_content(message),
            [
                (call.get("toolName"), call.get("state"), call.get("args"), call.get("result"))
                for call in merge_tool_invocations(message)
            ],
        )
        for message in messages
    ]


def readings(given: dict[str, Any]) -> dict[str, Any]:
    """Every reader's answer on one run given as ``{'input', 'output'}``."""
    run = ScorerRun(input=given["input"], output=given["output"])
    found: dict[str, Any] = {}
    for check in CHECKS:
        result = check.run(input=given["input"], output=given["output"])
        found[check.id] = (result.score, result.preprocess_step_result)
    for name, scorer in {**TOOL_SCORERS, **TRAJECTORY_SCORERS}.items():
        result = scorer.run(input=given["input"], output=given["output"])
        found[name] = (result.score, _without_raw_output(result.preprocess_step_result))
    for name, scorer in LLM_FUNCTION_STEPS.items():
        preprocess = scorer.steps[0].definition.fn
        found[f"{name}.preprocess"] = _without_raw_output(preprocess(run=run))
    for name, prepare in FILTERS.items():
        found[f"filter_run({name})"] = _message_view(prepare(run).output)
    found["user_text"] = user_text(run)
    found["assistant_text"] = assistant_text(run)
    found["tool_result_context"] = tool_result_context(run.output)
    found["extract_tool_results"] = [r.to_dict() for r in extract_tool_results(run.output)]
    found["system prompt"] = get_combined_system_prompt(run.input)
    return found


@cache
def mastra_readings(conversation: str) -> dict[str, Any]:
    return readings(CONVERSATIONS[conversation]["mastra"])


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("conversation", list(CONVERSATIONS))
def test_every_shape_reads_as_mastras(conversation, variant, parquet_dir):
    expected = mastra_readings(conversation)
    found = readings(given_run(conversation, variant, parquet_dir))
    assert found.keys() == expected.keys()
    for reader, answer in expected.items():
        assert found[reader] == answer, f"{reader} on {conversation!r} as {variant}"


def _score(conversation: str, reader: str) -> Any:
    return mastra_readings(conversation)[reader][0]


def test_the_readers_see_the_conversations_on_mastras_shape():
    """Known answers, so that the comparison above cannot pass on readers that see nothing."""
    assert _score("tool calls with results", "check-called-tool") == 1
    assert _score("tool calls with results", "check-includes") == 1
    assert _score("tool calls with results", "tool_call_accuracy(expected_tool)") == 1
    assert _score("tool calls with results", "trajectory_accuracy") == 1
    assert mastra_readings("tool calls with results")["tool_result_context"] == [
        '{"temp":21,"sky":"sunny"}',
        '{"tomorrow":"rain"}',
    ]
    assert mastra_readings("tool calls with results")["system prompt"] == SYSTEM
    error = mastra_readings("a tool error")["check-no-tool-errors"]
    assert error == (0, {"errorCount": 2, "totalCalls": 2, "passed": False})
    assert _score("a tool error", "trajectory") == 0  # lookup_folder is blacklisted
    assert _score("no tools", "check-used-no-tools") == 1
    assert _score("no tools", "check-equals") == 1
    assert _score("multiple turns", "check-tool-order") == 1
    assert _score("multiple turns", "check-did-not-call") == 0
    assert _score("multiple turns", "tool_call_accuracy(expected_tool_order)") == 1
    assert _score("multiple turns", "check-matches") == 1
    views = mastra_readings("multiple turns")
    assert [role for role, _, _ in views["filter_run(tool_names=['book'])"]] == [
        "assistant",
        "user",
        "assistant",
        "assistant",
    ]
    assert mastra_readings("a refusal")["assistant_text"] == REFUSAL
    assert _score("a refusal", "check-excludes") == 0
    parts = mastra_readings("content as parts")
    assert parts["user_text"] == "Describe this photo."
    assert parts["check-includes"][1]["output"] == (
        "let me look at it. sleeping on a sofa. i won't name the cat's owner."
    )


def test_run_evals_reads_every_shape_and_parquet_rows_alike(parquet_dir):
    """The same scores through run_evals, from Python data and from Parquet rows (numpy cells)."""
    chosen = [*CHECKS, TOOL_SCORERS["tool_call_accuracy(expected_tool)"]]
    columns = [f"{scorer.id}.score" for scorer in chosen]
    scores = {}
    for variant in ("mastra", "compact", "openai", "mastra+pandas", "openai+pandas"):
        rows = [given_run(name, variant, parquet_dir) for name in CONVERSATIONS]
        data = pd.DataFrame({key: [row[key] for row in rows] for key in ("input", "output")})
        result = run_evals(data, scorers=chosen, progress=False)
        assert not result.items.filter(like=".error").notna().any().any()
        scores[variant] = result.items[columns].to_numpy().tolist()
    assert all(found == scores["mastra"] for found in scores.values())
    assert scores["mastra"][0][columns.index("check-called-tool.score")] == 1


def test_a_parquet_file_is_read_as_its_json(parquet_dir):
    path = parquet_file("tool calls with results", "openai", parquet_dir)
    result = run_evals(str(path), scorers=[checks.called_tool("get_weather")], progress=False)
    assert result.items["check-called-tool.score"].tolist() == [1.0]


# --- what the boundary makes of values ----------------------------------------------------------


def test_strings_and_mastras_own_runs_are_kept_as_given():
    output = CONVERSATIONS["tool calls with results"]["mastra"]["output"]
    run_input = CONVERSATIONS["tool calls with results"]["mastra"]["input"]
    run = ScorerRun(input=run_input, output=output)
    assert run.output is output and run.input is run_input
    assert ScorerRun(input="q", output="a").output == "a"
    models = as_run_output(["hi"])
    assert ScorerRun(output=models).output is models


def test_openai_messages_become_mastra_messages():
    run = ScorerRun(output=CONVERSATIONS["tool calls with results"]["openai"]["output"])
    assert run.output == [
        {
            "id": "assistant-0",
            "role": "assistant",
            "content": {
                "format": 2,
                "parts": [
                    invoked("c1", "get_weather", {"city": "Paris"}, result=WEATHER),
                    invoked("c2", "get_forecast", {"city": "Paris"}, result=FORECAST),
                ],
            },
        },
        {
            "id": "assistant-3",
            "role": "assistant",
            "content": {
                "format": 2,
                "parts": [said("It is sunny and 21 degrees in Paris.")],
                "content": "It is sunny and 21 degrees in Paris.",
            },
        },
    ]
    for message in run.output:
        Message.model_validate(message)


def test_tool_arguments_and_results_that_are_no_json_stay_text():
    output = [
        {"role": "assistant", "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "echo", "arguments": "not json"}},
            {"id": "d", "type": "function", "function": {"name": "noop", "arguments": ""}}]},
        {"role": "tool", "tool_call_id": "c", "content": "plain text"},
        {"role": "tool", "tool_call_id": "d", "content": "[1, 2]"},
    ]  # fmt: skip
    (message,) = ScorerRun(output=output).output
    calls = [part["toolInvocation"] for part in message["content"]["parts"]]
    assert [(c["args"], c["result"]) for c in calls] == [("not json", "plain text"), ({}, [1, 2])]


def test_message_models_with_legacy_tool_calls_get_them_in_their_parts():
    """filter_run reads parts only (as Mastra); as_run_output writes the legacy array only."""
    output = as_run_output(
        [
            {"content": "saved", "toolInvocations": [{"toolName": "save_file", "args": {}}]},
            {"content": "sunny", "toolInvocations": [{"toolName": "get_weather", "args": {}}]},
        ]
    )
    run = ScorerRun(input="q", output=output)
    assert all(isinstance(message, Message) for message in run.output)
    assert [m.id for m in filter_run(tool_names=["get"])(run).output] == ["assistant-1"]
    run_input = as_run_input({"inputMessages": ["q"], "rememberedMessages": output})
    filtered = filter_run(tool_names=["get"])(ScorerRun(input=run_input, output="a"))
    assert [m.id for m in filtered.input.remembered_messages] == ["assistant-1"]


def test_legacy_only_calls_join_parts_in_mastras_merge_order():
    message = db("m", "assistant", invoked("b", "second", {}), said("done"))
    message["content"]["toolInvocations"] = [
        {"state": "result", "toolCallId": "a", "toolName": "first", "args": {}},
        {"state": "result", "toolCallId": "b", "toolName": "second", "args": {}},
        {"state": "result", "toolCallId": "c", "toolName": "third", "args": {}},
    ]
    (read,) = ScorerRun(output=[message]).output
    assert "toolInvocations" not in read["content"]
    assert [
        part.get("toolInvocation", {}).get("toolName") for part in read["content"]["parts"]
    ] == [
        "first",
        "second",
        None,
        "third",
    ]
    assert merge_tool_invocations(read) == merge_tool_invocations(message)


def test_a_scorers_own_data_is_not_read_as_messages():
    output = {"content": "Paris", "sources": np.array(["doc-1"], dtype=object)}
    assert ScorerRun(output=output).output == {"content": "Paris", "sources": ["doc-1"]}
    documents = [{"content": "Paris is in France.", "score": 0.9}]
    assert ScorerRun(input=documents, output="a").input is documents


def test_numpy_and_arrow_values_become_python_data():
    steps = np.array([{"stepType": "tool_call", "name": "a", "toolArgs": None}], dtype=object)
    run = ScorerRun(
        output=np.array(["hi", None], dtype=object),
        expected_trajectory={"steps": steps},
        ground_truth=np.array(["x", "y"]),
        request_context=pa.scalar({"user": "u", "tags": ["a"]}),
    )
    assert run.output == ["hi", None]
    assert run.expected_trajectory == {"steps": [{"stepType": "tool_call", "name": "a"}]}
    assert run.ground_truth == ["x", "y"]
    assert run.request_context == {"user": "u", "tags": ["a"]}


def test_openai_sdk_style_models_are_read_as_their_json():
    from pydantic import BaseModel

    class Function(BaseModel):
        name: str
        arguments: str

    class ToolCall(BaseModel):
        id: str
        type: str = "function"
        function: Function

    class ChatCompletionMessage(BaseModel):
        role: str
        content: str | None = None
        refusal: str | None = None
        function_call: None = None
        tool_calls: list[ToolCall] | None = None

    call = ToolCall(id="c1", function=Function(name="get_weather", arguments='{"city": "Rome"}'))
    message = ChatCompletionMessage(role="assistant", tool_calls=[call])
    assert checks.called_tool("get_weather").run(output=[message]).score == 1
    assert checks.called_tool("get_weather").run(output=message).score == 1


def test_trajectory_scorers_extract_the_trajectory_of_messages():
    """Messages without createdAt (Mastra's own test needs it) are messages, not steps."""
    output = [
        {"id": "m", "role": "assistant", "content": {"format": 2, "parts": [
            invoked("c", "search", {"q": "x"}, result={"hits": 1})]}},
    ]  # fmt: skip
    scorer = scorers.trajectory_accuracy(expected_trajectory=[{"name": "search"}])
    result = scorer.run(input="q", output=output)
    assert result.score == 1
    assert result.preprocess_step_result["actualStepNames"] == ["search"]


# --- unknown shapes are refused ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("output", "field", "named"),
    [
        (
            [{"role": "tool", "tool_call_id": "nope", "content": "x"}],
            "output[0].tool_call_id",
            "'nope'",
        ),
        (
            [{"role": "user", "content": "q"}, {"role": "tool", "content": "x"}],
            "output[1].tool_call_id",
            "None",
        ),
        ([{"role": "human", "content": "hi"}], "output[0].role", "'human'"),
        (
            [{"role": "user", "content": "q"}, {"type": "bot", "content": "hi"}],
            "output[1]",
            "a dict with keys ['type', 'content']",
        ),
        ([{"id": "m", "content": {"format": 2, "parts": []}}], "output[0].role", "None"),
        (
            [{"role": "assistant", "content": [{"type": "tool_use_v9", "name": "x"}]}],
            "output[0].content[0].type",
            "'tool_use_v9'",
        ),
        (
            [{"role": "assistant", "function_call": "f"}],
            "output[0].function_call",
            "must be {'name', 'arguments'}",
        ),
        (
            [{"role": "assistant", "tool_calls": [{"id": "c", "function": {}}]}],
            "output[0].tool_calls[0]",
            "'function'",
        ),
        ([{"role": "assistant", "content": 42}], "output[0].content", "int"),
        (
            [{"role": "assistant", "content": "a"}, {"label": "cat"}],
            "output[1]",
            "a dict with keys ['label']",
        ),
        ({"role": "tool", "tool_call_id": "c", "content": "x"}, "output.tool_call_id", "'c'"),
    ],  # fmt: skip
)
def test_a_malformed_transcript_is_an_error_naming_the_field(output, field, named):
    with pytest.raises(EvalDagError) as raised:
        ScorerRun(input="q", output=output)
    assert raised.value.id == "EVALDAG_INVALID_TRANSCRIPT"
    assert raised.value.details == {"field": field}
    assert raised.value.message.startswith(f"{field} ")
    assert named in raised.value.message


def test_input_messages_are_named_by_their_list():
    run_input = {"inputMessages": [{"role": "robot", "content": "x"}]}
    with pytest.raises(EvalDagError) as raised:
        ScorerRun(input=run_input, output="a")
    assert raised.value.details == {"field": "input.inputMessages[0].role"}


@pytest.mark.parametrize(
    ("output", "described"),
    [
        ({"answer": "Paris", "score": 3}, "a dict with keys ['answer', 'score']"),
        ({"content": "Paris", "sources": ["a"]}, "a dict with keys ['content', 'sources']"),
        ([{"type": "bot", "content": "hi"}], "a list whose item 0 is a dict with keys ['type'"),
        ({"steps": [{"name": "search"}]}, "a dict with keys ['steps']"),
        ([{"stepType": "tool_call", "name": "search"}], "a list whose item 0 is a dict"),
        (42, "int"),
    ],
)
@pytest.mark.parametrize(
    "scorer",
    [
        *CHECKS,
        TOOL_SCORERS["tool_call_accuracy(expected_tool)"],
        LLM_FUNCTION_STEPS["tool_call_accuracy_llm"],
    ],
    ids=lambda scorer: scorer.id,
)
def test_a_scorer_that_needs_messages_refuses_other_values(scorer, output, described):
    step = scorer.steps[0].definition.fn
    with pytest.raises(EvalDagError) as raised:
        step(run=ScorerRun(input="q", output=output))
    assert raised.value.details == {"field": "run.output"}
    assert "run.output must be a string, a message or a list of messages for " in str(raised.value)
    assert described in str(raised.value)


def test_a_check_on_a_value_that_is_no_transcript_fails_the_item_not_scores_it():
    with pytest.raises(ScorerRunError) as raised:
        checks.did_not_call("search").run(output={"steps": [{"name": "search"}]})
    assert raised.value.cause.id == "EVALDAG_INVALID_RUN_OUTPUT"
    data = pd.DataFrame({"input": ["q", "q"], "output": [{"answer": "Paris"}, "no tools"]})
    try:
        result = run_evals(data, scorers=[checks.did_not_call("search")], progress=False)
    except EvalDagError as error:  # when failing items end the run: still not a score
        assert "run.output must be a string, a message or a list" in str(error)
    else:
        assert result.items["check-did-not-call.score"].isna().tolist() == [True, False]
        assert "run.output must be a string" in result.items["check-did-not-call.error"][0]


@pytest.mark.parametrize(
    ("output", "described"),
    [
        ("just text", "str"),
        (["just", "text"], "a list of 2 items"),
        ({"answer": 1}, "a dict with keys ['answer']"),
        ([{"label": "cat"}], "a list whose item 0 is a dict with keys ['label']"),
    ],
)
@pytest.mark.parametrize("name", list(TRAJECTORY_SCORERS))
def test_a_trajectory_scorer_refuses_values_that_are_neither_trajectory_nor_messages(
    name, output, described
):
    with pytest.raises(ScorerRunError) as raised:
        TRAJECTORY_SCORERS[name].run(input="q", output=output)
    assert raised.value.cause.id == "EVALDAG_INVALID_TRAJECTORY"
    assert raised.value.cause.details == {"field": "run.output"}
    assert described in raised.value.cause.message


def test_an_unreadable_row_is_refused_before_any_scorer_runs_naming_the_row():
    scored = []
    counting = evaldag.create_scorer("counting").generate_score(lambda: scored.append(1) or 1)
    orphan = [{"role": "tool", "content": "r", "tool_call_id": "nope"}]
    data = [{"input": "a", "output": "fine"}] * 3 + [{"input": "b", "output": orphan}]
    with pytest.raises(evaldag.EvalDagError) as raised:
        evaldag.run_evals(data, scorers=[counting], batch_size=1)
    assert raised.value.message.startswith("Row 3: output[0].tool_call_id is 'nope'")
    assert raised.value.details["row"] == "3" and scored == []


def test_a_target_output_evaldag_cannot_read_is_that_items_target_error():
    orphan = [{"role": "tool", "content": "r", "tool_call_id": "nope"}]
    result = evaldag.run_evals(
        [{"input": "good"}, {"input": "bad"}],
        gates=[evaldag.checks.used_no_tools()],
        target=lambda input: "plain answer" if input == "good" else orphan,
    )
    errors = result.items["target_error"]
    assert errors.isna().tolist() == [True, False]
    assert "the target returned an output evaldag cannot read" in errors.iloc[1]


def test_an_arrow_table_of_transcripts_scores_as_its_parquet_file(parquet_dir):
    # a table with to_pandas() (pyarrow here; polars and Hugging Face datasets alike) is data
    gates = [evaldag.checks.called_tool("get_weather"), evaldag.checks.no_tool_errors()]

    def gate_scores(data: Any) -> dict[str, float]:
        result = evaldag.run_evals(data, gates=gates, progress=False)
        return {gate.id: gate.score for gate in result.gate_results}

    path = parquet_file("tool calls with results", "openai", parquet_dir)
    expected = {"check-called-tool": 1.0, "check-no-tool-errors": 1.0}
    assert gate_scores([CONVERSATIONS["tool calls with results"]["openai"]]) == expected
    assert gate_scores(path) == expected
    assert gate_scores(pq.read_table(path)) == expected
    assert gate_scores(pq.read_table(path).to_batches()[0]) == expected
