"""Google Gemini ``Content``: ``{role: 'user' | 'model', parts: [...]}`` whose parts have no
``type`` but one data field each (``text``, ``functionCall``, ``functionResponse``,
``executableCode`` ...), in the REST API's camelCase or the Python SDK's snake_case.

A ``functionResponse`` answers its call by ``id``, or (Gemini often records none) the first
waiting call of the same name; its result is the response's ``output`` or ``result`` (as
google-genai writes it), and a response ``{"error": ...}`` is an error, as in Mastra. Code
execution is a call of ``code_execution`` whose result is the next ``codeExecutionResult``; a
server-side ``toolCall`` is a call of its ``toolType`` in lower case (``google_search_web`` ...)
answered by the ``toolResponse`` of its ``id``. A
``GenerateContentResponse`` is its candidate's content, after the calls google-genai's automatic
function calling made (its ``automatic_function_calling_history``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evaldag._compat.js import camel
from evaldag._reader.problems import brief, malformed, require_known_keys
from evaldag._reader.transcript import Place, reasoning_part, text_part

_ROLES = {"user": "user", "model": "assistant", "function": "user", "tool": "user"}
#: Part fields that hold no text and no tool.
_METADATA = frozenset(
    {"thought", "thoughtSignature", "videoMetadata", "mediaResolution", "partMetadata"}
)
_MEDIA = frozenset({"inlineData", "fileData"})
_READ = frozenset(
    {
        "text",
        "functionCall",
        "functionResponse",
        "executableCode",
        "codeExecutionResult",
        "toolCall",
        "toolResponse",
    }
)
_KNOWN = _METADATA | _MEDIA | _READ
_CODE = "code_execution"


def is_content(message: Mapping[str, Any]) -> bool:
    """``{role?, parts}`` whose parts have no ``type`` (AI SDK UI parts have one), or a model's."""
    parts = message.get("parts")
    if not isinstance(parts, list | tuple) or "kind" in message or "content" in message:
        return False
    if parts:
        return all(isinstance(part, Mapping) and "type" not in part for part in parts)
    return message.get("role") == "model"


def is_response(value: Mapping[str, Any]) -> bool:
    """A ``GenerateContentResponse``: ``candidates`` holding contents."""
    candidates = value.get("candidates")
    return (
        isinstance(candidates, list | tuple)
        and bool(candidates)
        and all(
            isinstance(c, Mapping) and isinstance(c.get("content"), Mapping) for c in candidates
        )
    )


def response_contents(value: Mapping[str, Any], path: str) -> list[tuple[Any, str]]:
    """The contents of a response, with their paths: the calls and results of google-genai's
    automatic function calling (:func:`_called_automatically`), then its one candidate's."""
    candidates = value["candidates"]
    if len(candidates) > 1:
        raise malformed(
            f"{path}.candidates",
            f"holds {len(candidates)} candidates; give the content of the one the app used",
        )
    return [
        *_called_automatically(value, path),
        (candidates[0]["content"], f"{path}.candidates[0].content"),
    ]


def _called_automatically(value: Mapping[str, Any], path: str) -> list[tuple[Any, str]]:
    """The model's calls and their results of google-genai's automatic function calling, which
    the response keeps in ``automatic_function_calling_history`` (its candidate holds only the
    last answer): the history after the request's contents, that is after its last content that
    is neither the model's nor function responses only (the user's message)."""
    for key in ("automaticFunctionCallingHistory", "automatic_function_calling_history"):
        history = value.get(key)
        if history:
            break
    else:
        return []
    if not isinstance(history, list | tuple):
        raise malformed(f"{path}.{key}", f"must be a list of contents, got {brief(history)}")
    start = 0
    for index, content in enumerate(history):
        if not isinstance(content, Mapping):
            raise malformed(f"{path}.{key}[{index}]", f"is no Gemini content: got {brief(content)}")
        if not _is_turn(content):
            start = index + 1
    return [(history[k], f"{path}.{key}[{k}]") for k in range(start, len(history))]


def _is_turn(content: Mapping[str, Any]) -> bool:
    """Whether ``content`` is the model's or holds function responses only."""
    parts = content.get("parts")
    if content.get("role") == "model":
        return True
    return (
        isinstance(parts, list | tuple)
        and bool(parts)
        and all(
            isinstance(part, Mapping)
            and (part.get("functionResponse") or part.get("function_response")) is not None
            for part in parts
        )
    )


def read_content(message: Mapping[str, Any], at: Place) -> None:
    """One Gemini content into ``at.transcript``."""
    require_known_keys(message, ("role", "parts"), at.path, "a Gemini content")
    given = message.get("role")
    role = _ROLES.get(given) if given is not None else at.role
    if role is None:
        raise malformed(
            f"{at.path}.role", f"is {given!r}; a Gemini content's role is user or model"
        )
    parts: list[dict[str, Any]] = []
    joined = False
    for k, given_part in enumerate(message["parts"]):
        path = f"{at.path}.parts[{k}]"
        part = {camel(key): value for key, value in given_part.items()}
        require_known_keys(part, _KNOWN, path, "a Gemini part")
        read = _part(part, path, at)
        joined = joined or read is None
        parts.extend(read or ())
    if parts or not joined:
        at.transcript.add(role, parts, id=None, index=at.index)


def _part(part: Mapping[str, Any], path: str, at: Place) -> list[dict[str, Any]] | None:
    """The Mastra parts of one Gemini part; None for a result (now in its call)."""
    fields = [key for key in _READ | _MEDIA if part.get(key) is not None]
    if len(fields) > 1:
        raise malformed(path, f"holds {', '.join(sorted(fields))}; a Gemini part holds one")
    if not fields:
        return []
    (field,) = fields
    value = part[field]
    if field == "text":
        return [reasoning_part(value) if part.get("thought") else text_part(value)]
    if field in _MEDIA:
        return [{"type": "file", **{camel(key): item for key, item in value.items()}}]
    if not isinstance(value, Mapping):
        raise malformed(f"{path}.{field}", f"must be an object, got {brief(value)}")
    value = {camel(key): item for key, item in value.items()}
    if field == "functionCall":
        call = at.transcript.call(
            value.get("name"), value.get("args") or {}, value.get("id"), path,
            default_id=at.default_id(),
        )  # fmt: skip
        return [call]
    if field == "functionResponse":
        at.transcript.answer(
            value.get("id"), value.get("name"), path, result=_response(value.get("response"))
        )
        return None
    if field == "toolCall":
        call = at.transcript.call(
            _server_tool(value, f"{path}.toolCall"), value.get("args") or {}, value.get("id"),
            path, default_id=at.default_id(), providerExecuted=True,
        )  # fmt: skip
        return [call]
    if field == "toolResponse":
        name = _server_tool(value, f"{path}.toolResponse")
        at.transcript.answer(value.get("id"), name, path, result=value.get("response"))
        return None
    if field == "executableCode":
        code = {"code": value.get("code"), "language": value.get("language")}
        call = at.transcript.call(
            _CODE, code, value.get("id"), path, default_id=at.default_id(), providerExecuted=True
        )
        return [call]
    outcome = value.get("outcome")
    at.transcript.answer(
        value.get("id"),
        _CODE,
        path,
        result={"outcome": outcome, "output": value.get("output")},
        error=value.get("output"),
        failed=outcome not in ("OUTCOME_OK", None),
    )
    return None


def _server_tool(value: Mapping[str, Any], path: str) -> str:
    """The name of the Gemini tool a ``toolCall`` / ``toolResponse`` ran on Google's side: its
    ``toolType`` in lower case (``google_search_web``, ``url_context``, ``file_search`` ...)."""
    kind = value.get("toolType")
    if not isinstance(kind, str) or not kind or kind == "TOOL_TYPE_UNSPECIFIED":
        raise malformed(
            f"{path}.toolType", f"is {kind!r}; a server-side tool call names its tool type"
        )
    return kind.lower()


def _response(response: Any) -> Any:
    """A function's response: Gemini asks for ``{"output": ...}`` or ``{"error": ...}``, and
    google-genai's automatic function calling writes ``{"result": ...}``; the value of a lone
    ``output`` or ``result`` key is the result."""
    if isinstance(response, Mapping) and len(response) == 1:
        ((key, value),) = response.items()
        if key in ("output", "result"):
            return value
    return response
