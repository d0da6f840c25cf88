"""The transcript reader: every shape an agent stack writes, read once into Mastra's messages.

:func:`read_transcript` is the one entry point: ``ScorerRun`` passes a run's ``input`` and
``output`` through it, so every scorer sees Mastra's format-2 messages whatever shape was given
(the table is ``shapes.SHAPES``; ``docs/transcripts.md`` lists the shapes with examples). The
reader is closed-world: every part and key that could hold text, a tool call, a result or an error
is read, kept because it holds none of them (an allow-list), or an ``EvalDagError`` naming its
place (``output[3].content[1].type``) — an unknown part is never "no tool calls".

Strings (except JSON text of a transcript), ``None`` and values that hold no message (a scorer's
own data, a trajectory) pass through, numpy and Arrow values in them as Python data.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evaldag._reader.chat import BODY_KEYS
from evaldag._reader.json_text import NOT_JSON, json_value, looks_like_json, structured_json
from evaldag._reader.mastra import INPUT_LISTS, is_canonical, read_model
from evaldag._reader.problems import brief, malformed
from evaldag._reader.shapes import is_wrapper, shape_of, unknown, wrapped
from evaldag._reader.transcript import Place, Transcript
from evaldag._reader.values import (
    SCALARS,
    arrow_derived,
    is_foreign,
    is_message_model,
    object_data,
    plain_data,
    python_data,
)
from evaldag.errors import EvalDagError
from evaldag.transcripts import extract_input_messages

__all__ = [
    "checked_input",
    "checked_input_texts",
    "checked_transcript",
    "described",
    "is_messages",
    "looks_like_json",
    "plain_data",
    "python_data",
    "read_conversation",
    "read_transcript",
    "structured_json",
    "transcript_json",
]

#: The keys of Mastra's agent run input (an ``input`` only).
_AGENT_INPUT_KEYS = frozenset({"inputMessages", "rememberedMessages", "systemMessages"})
#: Keys that make a dict Mastra's agent run input (or a record of its messages) for a reader.
_RUN_INPUT_KEYS = _AGENT_INPUT_KEYS | {"taggedSystemMessages", *INPUT_LISTS}


def read_transcript(value: Any, field: str) -> Any:
    """``value`` with every message in it in Mastra's format-2 shape, read once.

    :param field: ``'input'`` or ``'output'`` (or a path below them): the role of role-less
        messages and strings (user, assistant) and the start of the paths errors name.
    """
    kind = type(value)
    if kind is str:
        value = transcript_json(value, field)
        kind = type(value)
        if kind is str:
            return value
    if kind in SCALARS or (kind is list and all(map(is_canonical, value))):
        return value
    if is_message_model(value):
        return read_model(value, field)
    if is_foreign(value) or (isinstance(value, Mapping) and arrow_derived(value)):
        value = plain_data(value)  # a Parquet file's numpy arrays and Arrow values
    elif not isinstance(value, Mapping | list | tuple):
        data = object_data(value)
        if data is value or not (isinstance(data, Mapping) and _is_message(data)):
            return value
        value = data
    role = "user" if field == "input" else "assistant"
    if isinstance(value, list | tuple):
        if any(_is_message(item) for item in value):
            return _read_list(value, field, role)
        return python_data(value)
    if field == "input" and not value.keys().isdisjoint(INPUT_LISTS):
        return _read_agent_input(value)
    if _is_message(value):
        return _read_one(value, field, role)
    return python_data(value)


def transcript_json(text: str, field: str) -> Any:
    """``text``'s JSON when it is a transcript (a CSV cell, a logging pipeline's text column),
    else ``text``: see "JSON text" in docs/transcripts.md."""
    parsed = json_value(text)
    return parsed if parsed is not NOT_JSON and _is_transcript(parsed, field) else text


def is_messages(value: Any) -> bool:
    """Whether ``value`` is a message, or a list holding a message and only messages, strings
    and ``None``."""
    if not isinstance(value, list | tuple):
        return _is_message(value)
    found = False
    for item in value:
        if item is None or type(item) is str:
            continue
        if not _is_message(item):
            return False
        found = True
    return found


def checked_transcript(value: Any, reader: str, field: str = "run.output") -> Any:
    """``value`` if messages can be read from it (a string, ``None``, a message, a list of
    messages and strings); otherwise an ``EvalDagError`` that names ``field`` and what it holds.

    :param reader: who reads it, for the message ("a check").
    """
    if value is None or isinstance(value, str) or is_messages(value):
        return value
    if isinstance(value, list | tuple) and all(
        item is None or isinstance(item, str) for item in value
    ):
        return value
    raise EvalDagError(
        "EVALDAG_INVALID_RUN_OUTPUT",
        f"{field} must be a string, a message or a list of messages for {reader}, got "
        f"{described(value)}; {_UNREAD_FIX}",
        details={"field": field},
    )


def checked_input(value: Any, reader: str, field: str = "run.input") -> Any:
    """``value`` if a user's text can be read from it: what :func:`checked_transcript` takes,
    or Mastra's agent run input (``{inputMessages, ...}``); otherwise an ``EvalDagError`` that
    names ``field`` and what it holds."""
    if isinstance(value, Mapping) and not value.keys().isdisjoint(_RUN_INPUT_KEYS):
        return value
    try:
        return checked_transcript(value, reader, field)
    except EvalDagError:
        raise EvalDagError(
            "EVALDAG_INVALID_RUN_INPUT",
            f"{field} must be a string, a message, a list of messages or Mastra's agent run "
            f"input ({{inputMessages, ...}}) for {reader}, got {described(value)}; {_UNREAD_FIX}",
            details={"field": field},
        ) from None


def checked_input_texts(value: Any, reader: str) -> list[str]:
    """The text of each message of this turn's input (none for ``None``), once
    :func:`checked_input` took ``value``."""
    return [] if value is None else extract_input_messages(checked_input(value, reader))


#: What to do about a value no reader takes, for the errors above.
_UNREAD_FIX = (
    "give the text instead (columns= naming a text column, or a prepare_run step that picks the "
    "text out of the value); see docs/transcripts.md for the message shapes evaldag reads"
)


def described(value: Any) -> str:
    """What ``value`` is, for an error message; for a list, its first entry that is no message."""
    if isinstance(value, list | tuple):
        for index, item in enumerate(value):
            if not (item is None or isinstance(item, str) or _is_message(item)):
                return f"a list whose item {index} is {brief(item)}"
    return brief(value)


# --- recognizing ---------------------------------------------------------------------------------


def _is_message(value: Any) -> bool:
    """Whether a shape reads ``value`` (a message object as its JSON), or it is a response
    object holding messages."""
    if is_message_model(value):
        return True
    if is_foreign(value):
        value = plain_data(value)
    elif not isinstance(value, Mapping):
        value = object_data(value)
    return isinstance(value, Mapping) and (shape_of(value) is not None or is_wrapper(value))


def _is_transcript(value: Any, field: str) -> bool:
    """Whether JSON text's ``value`` is a transcript: a message of a strong shape (a chat
    message only with a body beside its role: ``{"role": "admin", ...}`` is an app's answer),
    a list holding one, a response object, or (``input``) Mastra's agent run input."""
    if isinstance(value, list):
        return any(_is_strong(item) for item in value)
    if not isinstance(value, dict):
        return False
    if field == "input" and not value.keys().isdisjoint(_AGENT_INPUT_KEYS):
        return True
    return _is_strong(value)


def _is_strong(value: Any) -> bool:
    if not isinstance(value, dict):
        return False
    if is_wrapper(value):
        return True
    shape = shape_of(value)
    if shape is None or not shape.strong:
        return False
    return not shape.needs_body or not value.keys().isdisjoint(BODY_KEYS)


# --- reading -------------------------------------------------------------------------------------


def read_conversation(messages: list[Any], field: str, earlier: int) -> tuple[list[Any], int]:
    """``messages`` read as :func:`read_transcript` reads a list (``field`` names it in errors),
    and how many of the messages read its first ``earlier`` entries made: a trace's conversation
    and where the turns it was given end (its calls are the item's input, not its output)."""
    if all(map(is_canonical, messages)):
        return messages, earlier
    transcript = Transcript(field)
    _read_into(transcript, messages, "assistant", range(earlier))
    made = len(transcript.messages)
    _read_into(transcript, messages, "assistant", range(earlier, len(messages)))
    return transcript.finished(), made


def _read_list(messages: Any, field: str, role: str) -> Any:
    """The messages in Mastra's shape; the same list when every one already was."""
    if type(messages) is list and all(map(is_canonical, messages)):
        return messages
    transcript = Transcript(field)
    _read_into(transcript, messages, role, range(len(messages)))
    read = transcript.finished()
    return read if transcript.changed or not isinstance(messages, list) else messages


def _read_into(transcript: Transcript, messages: Any, role: str, indexes: range) -> None:
    """The entries ``indexes`` of a message list read into ``transcript``."""
    for index in indexes:
        message = messages[index]
        if message is None or type(message) is str:
            transcript.keep(message)
            continue
        _read_message(message, Place(transcript, index, f"{transcript.field}[{index}]", role))


def _read_one(message: Any, field: str, role: str) -> Any:
    """A single message (or response object) in Mastra's shape: one message, or the list a
    response object holds."""
    transcript = Transcript(field)
    _read_message(message, Place(transcript, 0, field, role))
    read = transcript.finished()
    if not transcript.changed:
        return message
    return read[0] if len(read) == 1 and not is_wrapper(message) else read


def _read_message(message: Any, at: Place) -> None:
    """One entry of a message list into ``at.transcript``."""
    given = message
    if type(message) is dict:  # the common case: JSON's dicts, without the tests of others
        if arrow_derived(message):
            message = plain_data(message)
    else:
        if is_message_model(message):
            read = read_model(message, at.path)
            at.transcript.keep(read, changed=read is not message)
            return
        if is_foreign(message) or arrow_derived(message):
            message = plain_data(message)
        elif not isinstance(message, Mapping):
            message = object_data(message)
        if not isinstance(message, Mapping):
            raise unknown(message, at.path)
    inner = wrapped(message, at.path)
    if inner:
        for item, path in inner:
            _read_message(item, Place(at.transcript, at.index, path, at.role))
        at.transcript.changed = True
        return
    shape = shape_of(message)
    if shape is None:
        raise unknown(message, at.path)
    shape.read(message, at)
    if message is not given:
        at.transcript.changed = True


def _read_input_list(given: Any, key: str) -> Any:
    """One message list of an agent run input (``inputMessages`` ...) read; one message is a
    list of it, and a value that holds no messages (a number, an app's own dict) is an error,
    not a list of empty messages."""
    kind = type(given)
    if given is None or kind is str or ((kind is list or kind is dict) and not given):
        return given
    item = plain_data(given) if is_foreign(given) else given
    if isinstance(item, Mapping) and _is_message(item):
        item = [item]
    if not isinstance(item, list | tuple):
        raise malformed(f"input.{key}", f"must be a list of messages, got {brief(item)}")
    return _read_list(item, f"input.{key}", "user")


#: The keys of a system message that hold its text (``transcripts.get_system_messages``).
_SYSTEM_TEXT_KEYS = frozenset({"content", "text", "body", "parts"})


def _check_system_messages(messages: Any, path: str) -> None:
    """An error unless ``messages`` is a list of strings and messages with text: a system prompt
    of another shape would be read as none."""
    if not isinstance(messages, list | tuple):
        raise malformed(path, f"must be a list of system messages, got {brief(messages)}")
    for index, message in enumerate(messages):
        if isinstance(message, str) or (
            isinstance(message, Mapping) and not message.keys().isdisjoint(_SYSTEM_TEXT_KEYS)
        ):
            continue
        raise malformed(
            f"{path}[{index}]",
            f"is no system message (a string or {{'role': 'system', 'content': '...'}}): got "
            f"{brief(message)}",
        )


def _check_tagged_system_messages(tagged: Any) -> None:
    """An error unless ``tagged`` is a dict of system message lists."""
    if not isinstance(tagged, Mapping):
        raise malformed(
            "input.taggedSystemMessages",
            f"must be a dict of system message lists, got {brief(tagged)}",
        )
    for tag, messages in tagged.items():
        _check_system_messages(messages, f"input.taggedSystemMessages[{tag!r}]")


def _read_agent_input(value: Mapping[str, Any]) -> Any:
    """An agent run input (``inputMessages``, ``rememberedMessages`` ...) with its messages
    read; the system messages are kept as given (Mastra's ``CoreMessage`` shape)."""
    changed = {}
    for key, given in value.items():
        kind = type(given)
        if key in INPUT_LISTS:
            read = _read_input_list(given, key)
        elif key == "systemMessages" and given is not None:
            read = python_data(given)
            _check_system_messages(read, "input.systemMessages")
        elif key == "taggedSystemMessages" and given is not None:
            read = python_data(given)
            _check_tagged_system_messages(read)
        elif kind in SCALARS or ((kind is list or kind is dict) and not given):
            continue
        else:
            read = python_data(given)
        if read is not given:
            changed[key] = read
    return {**value, **changed} if changed else value
