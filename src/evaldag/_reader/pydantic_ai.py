"""pydantic-ai messages (``ModelMessagesTypeAdapter``'s JSON, or the ``ModelRequest`` /
``ModelResponse`` objects): ``{kind: 'request' | 'response', parts: [{part_kind, ...}]}``.

A request's system prompts and instructions, user prompts and speech are system and user
messages; its ``tool-return`` parts answer their calls (``outcome`` ``failed``, ``retried`` or
``interrupted`` is a failed call, ``denied`` a denied one), and an older ``retry-prompt`` naming a
tool is that call's error. A response is one assistant message: text, thinking, tool calls and
pydantic-ai's built-in tools (whose return failed by its ``outcome``, or by the provider's error
record pydantic-ai keeps as its content). Parts that only change the run's settings are skipped.
An output tool's call (a structured answer) is read as the answer's text when the transcript is
finished (:mod:`evaldag._reader.output_tools`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evaldag._reader.problems import brief, malformed, text_of
from evaldag._reader.transcript import Place, arguments, mcp_tool, reasoning_part, text_part

_PART_KINDS = (
    "system-prompt, instruction, instruction-delta, instruction-baseline, user-prompt, speech, "
    "tool-return, retry-prompt, retry-feedback, compaction and the settings deltas (requests); "
    "text, thinking, speech, tool-call, builtin-tool-call, builtin-tool-return, file, compaction "
    "(responses)"
)
#: Request parts that change the run's settings: no text, no tool.
_SETTINGS = frozenset(
    {
        "tool-availability-delta",
        "capability-load-delta",
        "model-settings-delta",
        "instruction-digest",
    }
)
#: ``tool-return`` outcomes that are a failed call (pydantic-ai's ``ERROR_OUTCOMES``, and a call
#: interrupted before it returned).
_FAILED = frozenset({"failed", "retried", "interrupted"})
#: User-prompt content items that are media (``kind`` of pydantic-ai's content classes).
_MEDIA = frozenset({"image-url", "audio-url", "document-url", "video-url", "binary", "file-url"})


def is_message(message: Mapping[str, Any]) -> bool:
    """``{kind: 'request' | 'response', parts: [...]}``."""
    return message.get("kind") in ("request", "response") and isinstance(
        message.get("parts"), list | tuple
    )


def read_message(message: Mapping[str, Any], at: Place) -> None:
    """One pydantic-ai message into ``at.transcript``."""
    if message["kind"] == "request":
        _request(message, at)
    else:
        _response(message, at)


def _request(message: Mapping[str, Any], at: Place) -> None:
    instructions = message.get("instructions")
    if isinstance(instructions, str) and instructions:
        _said("system", instructions, at)
    for k, part in enumerate(message["parts"]):
        path = f"{at.path}.parts[{k}]"
        kind = _kind(part, path)
        if kind in ("system-prompt", "instruction", "instruction-delta", "compaction"):
            content = part.get("content")
            if content is not None:
                _said("system", text_of(content, f"{path}.content"), at)
        elif kind == "instruction-baseline":
            for instruction in part.get("instructions") or ():
                if isinstance(instruction, Mapping) and isinstance(instruction.get("content"), str):
                    _said("system", instruction["content"], at)
        elif kind == "user-prompt":
            _user_prompt(part.get("content"), f"{path}.content", at)
        elif kind == "speech":
            _speech(part, path, at)
        elif kind == "tool-return":
            _tool_return(part, path, at)
        elif kind == "retry-prompt":
            _retry(part, path, at)
        elif kind == "retry-feedback":
            content = part.get("content")
            _said("user", content if isinstance(content, str) else str(content), at)
        elif kind not in _SETTINGS:
            raise malformed(
                f"{path}.part_kind", f"is {kind!r}; pydantic-ai's parts are {_PART_KINDS}"
            )


def _said(role: str, text: str, at: Place) -> None:
    at.transcript.add(role, [text_part(text)], id=None, index=at.index, text=text)


def _speech(part: Mapping[str, Any], path: str, at: Place) -> None:
    """A spoken turn: its transcript is what was said, by its speaker."""
    transcript = part.get("transcript")
    if transcript:
        role = "assistant" if part.get("speaker") == "assistant" else "user"
        _said(role, text_of(transcript, f"{path}.transcript"), at)


def _tool_return(part: Mapping[str, Any], path: str, at: Place) -> None:
    """A tool's return: ``outcome`` says whether it failed (raised, retried, interrupted) or was
    denied."""
    outcome = part.get("outcome", "success")
    _check_outcome(outcome, path)
    content = part.get("content")
    at.transcript.answer(
        part.get("tool_call_id"), part.get("tool_name"), f"{path}.tool_call_id",
        result=content, error=content if outcome != "success" else None,
        failed=outcome in _FAILED, denied=outcome == "denied",
    )  # fmt: skip


def _builtin_return(part: Mapping[str, Any], path: str, at: Place) -> None:
    """A built-in tool's return: its ``outcome`` as a tool return's, or, a success in
    pydantic-ai's eyes, a content holding the provider's own error mark (see
    :func:`_provider_failed`)."""
    outcome = part.get("outcome", "success")
    _check_outcome(outcome, path)
    content = part.get("content")
    failed = outcome in _FAILED or (outcome == "success" and _provider_failed(content))
    at.transcript.answer(
        part.get("tool_call_id"), part.get("tool_name"), f"{path}.tool_call_id",
        result=content, error=content if failed or outcome == "denied" else None,
        failed=failed, denied=outcome == "denied",
    )  # fmt: skip


def _provider_failed(content: Any) -> bool:
    """Whether a built-in tool's content (the provider's own record, which pydantic-ai keeps as
    it came) says the tool failed, as evaldag reads that provider's messages: Anthropic's
    ``*_error`` content types, MCP ``is_error`` and code execution ``return_code`` other than
    0, OpenAI's ``status`` ``failed`` or ``incomplete``, Gemini's code execution ``outcome``
    other than ``OUTCOME_OK``."""
    if not isinstance(content, Mapping):
        return False
    kind, outcome = content.get("type"), content.get("outcome")
    exited = isinstance(kind, str) and kind.endswith("code_execution_result")
    return (
        content.get("is_error") is True
        or (isinstance(kind, str) and kind.endswith("_error"))
        or (exited and content.get("return_code") != 0)
        or content.get("status") in ("failed", "incomplete")
        or (isinstance(outcome, str) and outcome.startswith("OUTCOME_") and outcome != "OUTCOME_OK")
    )


def _check_outcome(outcome: Any, path: str) -> None:
    if outcome not in ("success", "denied") and outcome not in _FAILED:
        raise malformed(
            f"{path}.outcome",
            f"is {outcome!r}; a tool return's outcome is success, failed, retried, denied or "
            "interrupted",
        )


def _user_prompt(content: Any, path: str, at: Place) -> None:
    if isinstance(content, str):
        at.transcript.add("user", [text_part(content)], id=None, index=at.index, text=content)
        return
    if not isinstance(content, list | tuple):
        raise malformed(path, f"must be text or a list of text and media, got {brief(content)}")
    parts = []
    for k, item in enumerate(content):
        if isinstance(item, str):
            parts.append(text_part(item))
        elif isinstance(item, Mapping) and item.get("kind") in _MEDIA:
            parts.append({"type": "file", **item})
        else:
            raise malformed(f"{path}[{k}]", f"is {brief(item)}; a user prompt holds text and media")
    at.transcript.add("user", parts, id=None, index=at.index)


def _retry(part: Mapping[str, Any], path: str, at: Place) -> None:
    """A retry prompt: a tool call's error, or (no tool) the model asked to answer again."""
    content = part.get("content")
    if part.get("tool_name"):
        at.transcript.answer(
            part.get("tool_call_id"), part.get("tool_name"), f"{path}.tool_call_id",
            error=content, failed=True,
        )  # fmt: skip
        return
    text = content if isinstance(content, str) else str(content)
    at.transcript.add("user", [text_part(text)], id=None, index=at.index, text=text)


def _response(message: Mapping[str, Any], at: Place) -> None:
    parts: list[dict[str, Any]] = []
    for k, part in enumerate(message["parts"]):
        path = f"{at.path}.parts[{k}]"
        kind = _kind(part, path)
        if kind == "text":
            parts.append(text_part(text_of(part.get("content"), f"{path}.content")))
        elif kind == "thinking":
            parts.append(reasoning_part(text_of(part.get("content"), f"{path}.content")))
        elif kind in ("tool-call", "builtin-tool-call"):
            name, args = part.get("tool_name"), arguments(part.get("args"))
            fields = {}
            if kind == "builtin-tool-call":
                fields["providerExecuted"] = True
                name, args = mcp_tool(name, args)
            parts.append(
                at.transcript.call(
                    name, args, part.get("tool_call_id"), path, default_id=at.default_id(),
                    **fields,
                )
            )  # fmt: skip
        elif kind == "builtin-tool-return":
            _builtin_return(part, path, at)
        elif kind == "file":
            parts.append({"type": "file", **dict(part)})
        elif kind == "speech":
            if part.get("transcript"):
                parts.append(text_part(text_of(part["transcript"], f"{path}.transcript")))
        elif kind == "compaction":
            if part.get("content"):  # a summary of the history before it; often encrypted
                parts.append(reasoning_part(text_of(part["content"], f"{path}.content")))
        else:
            raise malformed(
                f"{path}.part_kind", f"is {kind!r}; pydantic-ai's parts are {_PART_KINDS}"
            )
    at.transcript.add("assistant", parts, id=message.get("provider_response_id"), index=at.index)


def _kind(part: Any, path: str) -> Any:
    if not isinstance(part, Mapping):
        raise malformed(path, f"is {brief(part)}, not a pydantic-ai message part")
    return part.get("part_kind")
