"""The table of transcript shapes: how each is recognized and which module reads it.

A message (a dict, or a library's message object as its JSON) is read by the first shape that
recognizes it; a whole response object (OpenAI's ``ChatCompletion`` and ``Response``, Gemini's
``GenerateContentResponse``) stands for the messages it holds. A value in a message list that no
shape recognizes is an error naming its place, never skipped.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from evaldag._reader import (
    chat,
    gemini,
    langchain,
    llama_index,
    mastra,
    openai_responses,
    pydantic_ai,
)
from evaldag._reader.problems import brief, malformed
from evaldag._reader.transcript import Place


@dataclass(frozen=True, slots=True)
class Shape:
    """A transcript shape: its name, how it is recognized, and its reader."""

    name: str
    recognized_by: str
    matches: Callable[[Mapping[str, Any]], bool]
    read: Callable[[Mapping[str, Any], Place], None]
    #: Whether it alone makes JSON text a transcript (a role-less compact message does not).
    strong: bool = True
    #: Whether JSON text of it is a transcript only with a message body beside its role.
    needs_body: bool = False


#: Keys of evaldag's compact message without a role (it takes its field's role).
_COMPACT_KEYS = frozenset(
    {
        "content",
        "toolInvocations",
        "tool_invocations",
        "tool_calls",
        "parts",
        "id",
        "text",
        "reasoning",
        "createdAt",
        "threadId",
        "resourceId",
        "metadata",
        "annotations",
        "experimental_attachments",
    }
)
_COMPACT_BODY = chat.BODY_KEYS - {"function_call"}


def _is_compact(message: Mapping[str, Any]) -> bool:
    return not message.keys().isdisjoint(_COMPACT_BODY) and message.keys() <= _COMPACT_KEYS


SHAPES: tuple[Shape, ...] = (
    Shape(
        "pydantic-ai",
        "{kind: 'request' | 'response', parts: [{part_kind, ...}]}",
        pydantic_ai.is_message,
        pydantic_ai.read_message,
    ),
    Shape(
        "LangChain",
        "{type: 'human' | 'ai' | 'tool' ..., data | content} or dumpd's {lc: 1, kwargs}",
        langchain.is_message,
        langchain.read_message,
    ),
    Shape(
        "LlamaIndex",
        "{role, additional_kwargs, blocks: [{block_type, ...}]}",
        llama_index.is_message,
        llama_index.read_message,
    ),
    Shape(
        "Gemini",
        "{role: 'user' | 'model', parts: [{text | functionCall | functionResponse ...}]}",
        gemini.is_content,
        gemini.read_content,
    ),
    Shape(
        "OpenAI Responses items",
        "{type: 'function_call' | 'function_call_output' | 'reasoning' | ..., call_id ...}",
        openai_responses.is_item,
        openai_responses.read_item,
    ),
    Shape(
        "Mastra",
        "{id, role, content: {format: 2, parts: [...]}, createdAt}",
        mastra.is_db_message,
        mastra.read_db_message,
    ),
    Shape(
        "chat messages (OpenAI Chat Completions, Anthropic Messages, AI SDK model and UI "
        "messages, LiteLLM, OpenAI Responses message items)",
        "{role, content | parts | tool_calls ...}",
        chat.is_chat_message,
        chat.read_chat,
        needs_body=True,
    ),
    Shape(
        "compact",
        "{content, toolInvocations?} without a role",
        _is_compact,
        chat.read_chat,
        strong=False,
    ),
)
SHAPE_NAMES = ", ".join(shape.name for shape in SHAPES)


def shape_of(message: Mapping[str, Any]) -> Shape | None:
    """The shape that reads ``message``, or None."""
    for shape in SHAPES:
        if shape.matches(message):
            return shape
    return None


def is_wrapper(value: Mapping[str, Any]) -> bool:
    """A whole response object that holds messages."""
    return (
        _choices(value) is not None
        or openai_responses.is_response(value)
        or gemini.is_response(value)
    )


def wrapped(value: Mapping[str, Any], path: str) -> list[tuple[Any, str]]:
    """The messages a response object holds, with their paths (none when it is no wrapper)."""
    choices = _choices(value)
    if choices is not None:
        if len(choices) != 1:
            raise malformed(
                f"{path}.choices",
                f"holds {len(choices)} choices; give the message of the one the app used",
            )
        return [(choices[0]["message"], f"{path}.choices[0].message")]
    if openai_responses.is_response(value):
        return [(item, f"{path}.output[{k}]") for k, item in enumerate(value["output"])]
    if gemini.is_response(value):
        return gemini.response_contents(value, path)
    return []


def _choices(value: Mapping[str, Any]) -> Any:
    """An OpenAI ``ChatCompletion``'s choices."""
    choices = value.get("choices")
    if value.get("object") == "chat.completion" and isinstance(choices, list | tuple):
        if all(isinstance(c, Mapping) and isinstance(c.get("message"), Mapping) for c in choices):
            return choices
    return None


def unknown(value: Any, path: str) -> Exception:
    """The error of a value in a message list that is no message."""
    return malformed(
        path,
        f"is not a message: got {brief(value)}; the shapes evaldag reads are {SHAPE_NAMES}",
    )
