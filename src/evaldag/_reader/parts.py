"""Message parts, by ``type``: one table for every shape that lists typed parts in a message
(Mastra and AI SDK UI ``parts``; OpenAI, Anthropic, AI SDK model and LangChain ``content`` lists).

A part is read (text, reasoning, a tool call, a tool result), kept as it is because it holds
neither text nor tools (:data:`KEPT`: media, sources, step markers, ``data-*``), or dropped
because it holds nothing readable (:data:`DROPPED`). Any other type is an error naming its path:
an unknown part could be a tool call, and reading it as "no tool calls" would score it wrongly.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cache
from typing import Any, get_args

from evaldag._reader.problems import brief, malformed, text_of
from evaldag._reader.transcript import (
    Place,
    arguments,
    invocation_part,
    mcp_tool,
    reasoning_part,
    result_value,
    text_part,
)

Parts = list[dict[str, Any]]
Reader = Callable[[Mapping[str, Any], str, Place], Parts]

#: AI SDK 5+ UI tool part states, as Mastra's states.
_UI_STATES = {
    "input-streaming": "partial-call",
    "input-available": "call",
    "output-available": "result",
    "output-error": "output-error",
    "approval-requested": "approval-requested",
    "approval-responded": "approval-responded",
    "output-denied": "output-denied",
}
#: Parts kept as given: they hold no text and no tool (media, citations, step markers), or, in
#: Anthropic's ``mcp_tool_listing`` (the tools an MCP server offers), ``fallback`` (the point
#: where a declining model hands over to the next) and ``compaction`` (a summary of the earlier
#: turns the API drops, not the reply), no call and no text of the reply.
KEPT = frozenset(
    {
        "mcp_tool_listing",
        "fallback",
        "compaction",
        "step-start",
        "source",
        "source-url",
        "source-document",
        "file",
        "image",
        "image_url",
        "input_image",
        "input_file",
        "input_audio",
        "audio",
        "video",
        "document",
        "search_result",
        "text-plain",
        "container_upload",
        "blob",
        "uri",
        "error",
    }
)
#: Parts dropped: they hold nothing a reader could read (redacted reasoning).
DROPPED = frozenset({"redacted_thinking", "redacted-reasoning"})
#: Anthropic's results of its own (server) tools, answering a ``server_tool_use`` block.
_SERVER_RESULTS = frozenset(
    {
        "web_search_tool_result",
        "web_fetch_tool_result",
        "code_execution_tool_result",
        "bash_code_execution_tool_result",
        "text_editor_code_execution_tool_result",
        "tool_search_tool_result",
        "advisor_tool_result",
    }
)


@cache
def mastra_states() -> frozenset[str]:
    """The tool states of Mastra's ``MastraToolInvocation`` (and of AI SDK 4 UI messages): the
    message models' ``ToolInvocationState``, taken when a tool call is first read rather than
    when the reader is imported, which would build the models for every run."""
    from evaldag.messages import ToolInvocationState

    return frozenset(get_args(ToolInvocationState))


def read_parts(parts: Any, path: str, at: Place) -> Parts:
    """Each part of ``parts`` read into Mastra's parts (tool results go to their calls)."""
    if not isinstance(parts, list | tuple):
        raise malformed(path, f"must be a list of parts, got {brief(parts)}")
    read: Parts = []
    for k, part in enumerate(parts):
        read.extend(read_part(part, f"{path}[{k}]", at))
    return read


def read_part(part: Any, path: str, at: Place) -> Parts:
    """One part read into Mastra's parts (none for a result, which joins its call)."""
    if isinstance(part, str):
        return [text_part(part)]
    kind = part.get("type") if isinstance(part, Mapping) else None
    if not isinstance(kind, str):
        raise malformed(path, f"is not a part with a 'type': got {brief(part)}")
    reader = _READERS.get(kind)
    if reader is not None and not (kind.startswith("tool-") and "state" in part):
        return reader(part, path, at)  # a UI part of a tool named "call" has a state
    if kind in KEPT or kind.startswith("data-"):
        return [dict(part)]
    if kind in DROPPED:
        return []
    if kind.startswith("tool-"):
        return _ui_tool(part, path, at, kind.removeprefix("tool-"))
    if kind in _SERVER_RESULTS:
        return _server_result(part, path, at)
    raise malformed(
        f"{path}.type",
        f"is {kind!r}, a part evaldag does not read; it reads {', '.join(sorted(_READERS))}, "
        "tool-<name>, data-<name> and Anthropic's server tool results, and keeps "
        f"{', '.join(sorted(KEPT))}",
    )


# --- text ------------------------------------------------------------------------------------


def _text(part: Mapping[str, Any], path: str, at: Place) -> Parts:
    """A text part: ``text``, or ``content`` in OpenTelemetry's GenAI messages."""
    key = "content" if "text" not in part and isinstance(part.get("content"), str) else "text"
    return [text_part(text_of(part.get(key), f"{path}.{key}"))]


def _refusal(part: Mapping[str, Any], path: str, at: Place) -> Parts:
    return [text_part(text_of(part.get("refusal"), f"{path}.refusal"))]


def _reasoning(part: Mapping[str, Any], path: str, at: Place) -> Parts:
    """Mastra's ``{reasoning, details}`` kept; AI SDK 5 and LangChain ``{text}`` or
    ``{reasoning}`` read into it."""
    if isinstance(part.get("reasoning"), str) and isinstance(part.get("details"), list):
        return [dict(part)]
    for key in ("text", "reasoning", "content"):
        if isinstance(part.get(key), str):
            return [reasoning_part(part[key])]
    if isinstance(part.get("details"), list):  # redacted: details without text
        return [dict(part)]
    raise malformed(path, "is a reasoning part without its text ('text', 'reasoning' or 'content')")


def _thinking(part: Mapping[str, Any], path: str, at: Place) -> Parts:
    """Anthropic's ``thinking`` block; pydantic-ai's GenAI messages write ``content``."""
    key = "content" if "thinking" not in part else "thinking"
    return [reasoning_part(text_of(part.get(key), f"{path}.{key}"))]


# --- tool calls and results ----------------------------------------------------------------


def checked_invocation(invocation: Any, path: str) -> Mapping[str, Any]:
    """``invocation`` when it is a Mastra tool invocation: a known state and a tool name."""
    if not isinstance(invocation, Mapping):
        raise malformed(path, f"must be a tool invocation, got {brief(invocation)}")
    state = invocation.get("state")
    if state not in (states := mastra_states()):
        raise malformed(
            f"{path}.state",
            f"is {state!r}; a tool invocation's state is one of {', '.join(sorted(states))}",
        )
    text_of(invocation.get("toolName"), f"{path}.toolName")
    return invocation


def _mastra_invocation(part: Mapping[str, Any], path: str, at: Place) -> Parts:
    """Mastra's (and AI SDK 4's) ``tool-invocation`` part: kept when its invocation is one."""
    invocation = part.get("toolInvocation")
    if invocation is not None:  # a part without one holds no call: Mastra's readers skip it
        checked_invocation(invocation, f"{path}.toolInvocation")
    return [dict(part)]


def _ui_tool(part: Mapping[str, Any], path: str, at: Place, name: Any) -> Parts:
    """An AI SDK 5+ UI tool part (``tool-<name>`` or ``dynamic-tool``): call and outcome in one."""
    given: Any = part.get("state")
    state = _UI_STATES.get(given)
    if state is None:
        raise malformed(
            f"{path}.state",
            f"is {given!r}; an AI SDK tool part's state is one of {', '.join(_UI_STATES)}",
        )
    invocation: dict[str, Any] = {
        "state": state,
        "toolCallId": text_of(part.get("toolCallId"), f"{path}.toolCallId"),
        "toolName": text_of(name, f"{path}.toolName"),
        "args": arguments(part.get("input")),
    }
    if state == "result":
        invocation["result"] = part.get("output")
        at.transcript.answered(invocation, f"{path}.output")
    elif state in ("output-error", "output-denied") and part.get("errorText") is not None:
        invocation["errorText"] = part["errorText"]
    if part.get("rawInput") is not None:
        invocation["rawInput"] = part["rawInput"]
    if isinstance(part.get("approval"), Mapping):
        invocation["approval"] = dict(part["approval"])
    read = invocation_part(invocation)
    for key in ("providerExecuted", "preliminary", "title"):
        if part.get(key) is not None:
            read[key] = part[key]
    return [read]


def _dynamic_tool(part: Mapping[str, Any], path: str, at: Place) -> Parts:
    return _ui_tool(part, path, at, part.get("toolName"))


def _model_call(part: Mapping[str, Any], path: str, at: Place) -> Parts:
    """An AI SDK model message's ``tool-call`` (``input``; AI SDK 4: ``args``)."""
    args = part.get("input", part.get("args"))
    fields = {"providerExecuted": True} if part.get("providerExecuted") else {}
    return [
        at.transcript.call(
            part.get("toolName"),
            arguments(args),
            part.get("toolCallId"),
            path,
            default_id=at.default_id(),
            **fields,
        )
    ]


def _model_result(part: Mapping[str, Any], path: str, at: Place) -> Parts:
    """An AI SDK model message's ``tool-result``: ``output`` typed (5+) or ``result`` (4)."""
    call_id, name = part.get("toolCallId"), part.get("toolName")
    if "output" not in part:
        at.transcript.answer(
            call_id, name, path, result=part.get("result"), failed=part.get("isError") is True
        )
        return []
    output = part["output"]
    kind = output.get("type") if isinstance(output, Mapping) else None
    value = output.get("value") if isinstance(output, Mapping) else None
    if kind in ("text", "json", "content"):
        at.transcript.answer(call_id, name, path, result=value)
    elif kind in ("error-text", "error-json"):
        at.transcript.answer(call_id, name, path, error=value, failed=True)
    elif kind == "execution-denied":
        at.transcript.answer(call_id, name, path, error=output.get("reason"), denied=True)
    else:
        raise malformed(
            f"{path}.output",
            f"is {brief(output) if kind is None else repr(kind)}; a tool result's output has a "
            "type text, json, content, error-text, error-json or execution-denied",
        )
    return []


def _model_error(part: Mapping[str, Any], path: str, at: Place) -> Parts:
    """An AI SDK ``tool-error`` content part: the call raised ``error``."""
    at.transcript.answer(
        part.get("toolCallId"), part.get("toolName"), path, error=part.get("error"), failed=True
    )
    return []


def _approval_request(part: Mapping[str, Any], path: str, at: Place) -> Parts:
    """AI SDK 6: the call ``toolCallId`` waits for approval ``approvalId``."""
    invocation = at.transcript.waiting_call(part.get("toolCallId"), None, f"{path}.toolCallId")
    invocation["state"] = "approval-requested"
    invocation["approval"] = {"id": part.get("approvalId")}
    return []


def _approval_response(part: Mapping[str, Any], path: str, at: Place) -> Parts:
    """AI SDK 6: the approval ``approvalId`` was answered."""
    invocation = at.transcript.approval(part.get("approvalId"), f"{path}.approvalId")
    invocation["state"] = "approval-responded"
    invocation["approval"] = {
        "id": part.get("approvalId"),
        "approved": part.get("approved"),
        **({"reason": part["reason"]} if part.get("reason") is not None else {}),
    }
    return []


def _anthropic_call(part: Mapping[str, Any], path: str, at: Place) -> Parts:
    """Anthropic's ``tool_use`` (and its server and MCP tools' ``server_tool_use``,
    ``mcp_tool_use``)."""
    fields = {"providerExecuted": True} if part["type"] != "tool_use" else {}
    return [
        at.transcript.call(
            part.get("name"),
            arguments(part.get("input")),
            part.get("id"),
            path,
            default_id=at.default_id(),
            **fields,
        )
    ]


def _anthropic_result(part: Mapping[str, Any], path: str, at: Place) -> Parts:
    """Anthropic's ``tool_result`` (``mcp_tool_result``): ``is_error`` marks a failed call."""
    at.transcript.answer(
        part.get("tool_use_id"),
        None,
        f"{path}.tool_use_id",
        result=result_value(part.get("content")),
        failed=part.get("is_error") is True,
    )
    return []


def _server_result(part: Mapping[str, Any], path: str, at: Place) -> Parts:
    """Anthropic's result of a server tool: an error when its content's type ends in
    ``_error`` (``web_search_tool_result_error`` ...), or when the code it ran exited with a
    non-zero ``return_code`` (its error: ``stderr``, else ``stdout``)."""
    content = part.get("content")
    kind = content.get("type") if isinstance(content, Mapping) else None
    exited, error = False, None
    if isinstance(content, Mapping) and str(kind).endswith("code_execution_result"):
        code = content.get("return_code")
        if not isinstance(code, int):
            raise malformed(f"{path}.content.return_code", f"must be an int, got {brief(code)}")
        exited = code != 0
        error = (content.get("stderr") or content.get("stdout") or None) if exited else None
    at.transcript.answer(
        part.get("tool_use_id"),
        None,
        f"{path}.tool_use_id",
        result=content,
        error=error,
        failed=exited or (isinstance(kind, str) and kind.endswith("_error")),
    )
    return []


def _standard_call(part: Mapping[str, Any], path: str, at: Place) -> Parts:
    """LangChain's standard ``tool_call`` and ``server_tool_call`` blocks, OpenTelemetry GenAI
    messages' ``tool_call`` / ``server_tool_call`` parts (and the OpenAI Responses
    ``function_call`` a LangChain message may hold)."""
    name = part.get("name")
    args = arguments(part.get("args", part.get("arguments", part.get("server_tool_call"))))
    call_id = part.get("call_id") if part["type"] == "function_call" else part.get("id")
    fields = {"providerExecuted": True} if part["type"] == "server_tool_call" else {}
    if part.get("builtin") is True:  # pydantic-ai's GenAI messages: its built-in tools
        name, args = mcp_tool(name, args)
    return [at.transcript.call(name, args, call_id, path, default_id=at.default_id(), **fields)]


def _standard_unfinished(part: Mapping[str, Any], path: str, at: Place) -> Parts:
    """LangChain's ``invalid_tool_call`` (arguments that did not parse: a call that failed) and
    ``tool_call_chunk`` (a call still streaming)."""
    invalid = part["type"] == "invalid_tool_call"
    fields: dict[str, Any] = {"state": "output-error" if invalid else "partial-call"}
    if invalid:
        fields["errorText"] = part.get("error") or "the tool call's arguments could not be parsed"
    name = part.get("name") or "unknown"
    call_id = part.get("id")
    return [
        at.transcript.call(
            name, arguments(part.get("args")), call_id, path, default_id=at.default_id(), **fields
        )
    ]


def _standard_result(part: Mapping[str, Any], path: str, at: Place) -> Parts:
    """LangChain's ``server_tool_result`` block."""
    at.transcript.answer(
        part.get("tool_call_id"),
        None,
        f"{path}.tool_call_id",
        result=part.get("output"),
        failed=part.get("status") == "error",
    )
    return []


def _genai_result(part: Mapping[str, Any], path: str, at: Place) -> Parts:
    """OpenTelemetry GenAI messages' ``tool_call_response`` (``response``; some instrumentations
    write ``result``) and ``server_tool_call_response`` parts. They carry no error flag: a
    trace's ``execute_tool`` span says whether the call failed."""
    result = next(
        (part[key] for key in ("response", "result", "server_tool_call_response") if key in part),
        None,
    )
    at.transcript.answer(part.get("id"), None, f"{path}.id", result=result_value(result))
    return []


_READERS: dict[str, Reader] = {
    "text": _text,
    "input_text": _text,
    "output_text": _text,
    "refusal": _refusal,
    "reasoning": _reasoning,
    "thinking": _thinking,
    "tool-invocation": _mastra_invocation,
    "dynamic-tool": _dynamic_tool,
    "tool-call": _model_call,
    "tool-result": _model_result,
    "tool-error": _model_error,
    "tool-approval-request": _approval_request,
    "tool-approval-response": _approval_response,
    "tool_use": _anthropic_call,
    "server_tool_use": _anthropic_call,
    "mcp_tool_use": _anthropic_call,
    "tool_result": _anthropic_result,
    "mcp_tool_result": _anthropic_result,
    "tool_call": _standard_call,
    "server_tool_call": _standard_call,
    "function_call": _standard_call,
    "invalid_tool_call": _standard_unfinished,
    "tool_call_chunk": _standard_unfinished,
    "server_tool_result": _standard_result,
    "tool_call_response": _genai_result,
    "server_tool_call_response": _genai_result,
}
