"""OpenAI Responses API items: ``function_call`` / ``function_call_output`` and the other typed
items of a response's ``output`` and a request's ``input`` (``message`` items are chat messages).

Each item becomes its own message; a call waits for the ``*_output`` item that answers its
``call_id``. OpenAI's own tools (web and file search, code interpreter, image generation, MCP)
record call and outcome in one item: a call in state ``result``, or ``output-error`` when the
item's status is ``failed`` or ``incomplete`` or it carries an ``error``. A shell call's output
is an error when a command exited non-zero or timed out.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from evaldag._reader.problems import brief, malformed
from evaldag._reader.transcript import Place, arguments, reasoning_part, result_value

Reader = Callable[[Mapping[str, Any], Place], None]


def _call(item: Mapping[str, Any], at: Place, name: Any, args: Any, call_id: Any) -> None:
    part = at.transcript.call(name, args, call_id, at.path, default_id=at.default_id())
    at.transcript.add("assistant", [part], id=item.get("id"), index=at.index)


def _answer(
    item: Mapping[str, Any], at: Place, call_id: Any, failed: bool = False, field: str = "output"
) -> None:
    output = item.get(field)
    at.transcript.answer(
        call_id, None, f"{at.path}.call_id", result=result_value(output), failed=failed
    )


def _function_call(item: Mapping[str, Any], at: Place) -> None:
    _call(item, at, item.get("name"), arguments(item.get("arguments")), item.get("call_id"))


def _custom_call(item: Mapping[str, Any], at: Place) -> None:
    _call(item, at, item.get("name"), item.get("input"), item.get("call_id"))


def _output(item: Mapping[str, Any], at: Place) -> None:
    _answer(item, at, item.get("call_id"), failed=item.get("status") == "failed")


def _shell_output(item: Mapping[str, Any], at: Place) -> None:
    """``shell_call_output``: its chunks' outcomes; one that exited non-zero or timed out makes
    the call an error (its ``stderr``, else its ``stdout``)."""
    chunks = item.get("output")
    if not isinstance(chunks, list | tuple):
        raise malformed(f"{at.path}.output", f"must be a list of chunks, got {brief(chunks)}")
    failed = []
    for k, chunk in enumerate(chunks):
        outcome = chunk.get("outcome") if isinstance(chunk, Mapping) else None
        if not isinstance(outcome, Mapping) or outcome.get("type") not in ("exit", "timeout"):
            raise malformed(
                f"{at.path}.output[{k}].outcome",
                f"is {brief(outcome)}; a shell output's outcome has a type exit or timeout",
            )
        if outcome["type"] == "timeout" or outcome.get("exit_code") != 0:
            failed.append(chunk)
    error = "\n".join(c.get("stderr") or c.get("stdout") or "" for c in failed).strip()
    at.transcript.answer(
        item.get("call_id"),
        None,
        f"{at.path}.call_id",
        result=chunks,
        error=error or None,
        failed=bool(failed) or item.get("status") == "failed",
    )


def _local_shell_output(item: Mapping[str, Any], at: Place) -> None:
    _answer(item, at, item.get("call_id") or item.get("id"), failed=item.get("status") == "failed")


def _ran(item: Mapping[str, Any], at: Place, name: Any, args: Any, **outcome: Any) -> None:
    """A tool that ran on OpenAI's side: its call and outcome, from one item."""
    part = at.transcript.call(
        name, args, item.get("id"), at.path, default_id=at.default_id(), providerExecuted=True
    )
    at.transcript.add("assistant", [part], id=item.get("id"), index=at.index)
    call_id = part["toolInvocation"]["toolCallId"]
    at.transcript.answer(call_id, None, at.path, error=item.get("error"), **outcome)


def _builtin(name: str, args: Callable[[Mapping[str, Any]], Any], result: str | None) -> Reader:
    """One of OpenAI's own tools (web and file search, code interpreter, image generation)."""

    def read(item: Mapping[str, Any], at: Place) -> None:
        failed = item.get("status") in ("failed", "incomplete") or bool(item.get("error"))
        outcome = item.get(result) if result else None
        _ran(item, at, name, args(item), result=outcome, failed=failed)

    return read


def _waiting(name: str, args: str) -> Reader:
    """A call of a tool the app runs (computer use, shell, patches): its output item answers."""

    def read(item: Mapping[str, Any], at: Place) -> None:
        _call(item, at, name, item.get(args), item.get("call_id"))

    return read


def _mcp_call(item: Mapping[str, Any], at: Place) -> None:
    failed = bool(item.get("error")) or item.get("status") in ("failed", "incomplete")
    output = result_value(item.get("output"))
    _ran(item, at, item.get("name"), arguments(item.get("arguments")), result=output, failed=failed)


def _mcp_approval_request(item: Mapping[str, Any], at: Place) -> None:
    part = at.transcript.call(
        item.get("name"),
        arguments(item.get("arguments")),
        item.get("id"),
        at.path,
        default_id=at.default_id(),
        state="approval-requested",
        approval={"id": item.get("id")},
    )
    at.transcript.add("assistant", [part], id=item.get("id"), index=at.index)


def _mcp_approval_response(item: Mapping[str, Any], at: Place) -> None:
    path = f"{at.path}.approval_request_id"
    invocation = at.transcript.approval(item.get("approval_request_id"), path)
    invocation["state"] = "approval-responded"
    invocation["approval"] = {
        "id": item.get("approval_request_id"),
        "approved": item.get("approve"),
    }
    if item.get("reason"):
        invocation["approval"]["reason"] = item["reason"]
    if item.get("approve") is False:
        at.transcript.answer(
            invocation["toolCallId"], None, path, error=item.get("reason"), denied=True
        )


def _reasoning(item: Mapping[str, Any], at: Place) -> None:
    texts = [
        entry["text"]
        for key in ("summary", "content")
        for entry in item.get(key) or ()
        if isinstance(entry, Mapping) and isinstance(entry.get("text"), str)
    ]
    text = "\n".join(texts)
    parts = [reasoning_part(text)] if text else []
    at.transcript.add("assistant", parts, id=item.get("id"), index=at.index, reasoning=text)


def _tool_search(item: Mapping[str, Any], at: Place) -> None:
    """``tool_search_call``: a search for tools to load, answered by its ``tool_search_output``
    (by ``call_id``, or without one the next output)."""
    _call(item, at, "tool_search", item.get("arguments"), item.get("call_id"))


def _tool_search_output(item: Mapping[str, Any], at: Place) -> None:
    """``tool_search_output``: the tools the search loaded; ``incomplete`` is an error."""
    at.transcript.answer(
        item.get("call_id"),
        "tool_search",
        f"{at.path}.call_id",
        result=item.get("tools"),
        failed=item.get("status") == "incomplete",
    )


def _program(item: Mapping[str, Any], at: Place) -> None:
    """``program``: JavaScript code run by programmatic tool calling (the function calls it makes
    are items of their own), answered by its ``program_output``."""
    _call(item, at, "program", {"code": item.get("code")}, item.get("call_id"))


def _program_output(item: Mapping[str, Any], at: Place) -> None:
    """``program_output``: a program's ``result``; ``incomplete`` is an error."""
    _answer(item, at, item.get("call_id"), item.get("status") == "incomplete", field="result")


def _reference(item: Mapping[str, Any], at: Place) -> None:
    raise malformed(
        at.path,
        f"is a reference to the item {item.get('id')!r} that OpenAI stores; evaldag reads the "
        "items themselves: give the item (from the response's output or responses.input_items)",
    )


def _tools_listed(item: Mapping[str, Any], at: Place) -> None:
    """``mcp_list_tools``: which tools an MCP server offers; no call, no text."""


ITEMS: dict[str, Reader] = {
    "function_call": _function_call,
    "function_call_output": _output,
    "custom_tool_call": _custom_call,
    "custom_tool_call_output": _output,
    "reasoning": _reasoning,
    "web_search_call": _builtin("web_search", lambda item: item.get("action") or {}, None),
    "file_search_call": _builtin(
        "file_search", lambda item: {"queries": item.get("queries")}, "results"
    ),
    "code_interpreter_call": _builtin(
        "code_interpreter", lambda item: {"code": item.get("code")}, "outputs"
    ),
    "image_generation_call": _builtin("image_generation", lambda item: {}, None),
    "computer_call": _waiting("computer", "action"),
    "computer_call_output": _output,
    "local_shell_call": _waiting("local_shell", "action"),
    "local_shell_call_output": _local_shell_output,
    "shell_call": _waiting("shell", "action"),
    "shell_call_output": _shell_output,
    "apply_patch_call": _waiting("apply_patch", "operation"),
    "apply_patch_call_output": _output,
    "tool_search_call": _tool_search,
    "tool_search_output": _tool_search_output,
    "program": _program,
    "program_output": _program_output,
    "mcp_call": _mcp_call,
    "mcp_list_tools": _tools_listed,
    "mcp_approval_request": _mcp_approval_request,
    "mcp_approval_response": _mcp_approval_response,
    "item_reference": _reference,
}


def is_item(message: Mapping[str, Any]) -> bool:
    """A typed Responses item that is no chat message (those have a role)."""
    return "role" not in message and message.get("type") in ITEMS


def is_response(value: Mapping[str, Any]) -> bool:
    """A whole ``Response`` object: its ``output`` holds the items."""
    return value.get("object") == "response" and isinstance(value.get("output"), list | tuple)


def read_item(item: Mapping[str, Any], at: Place) -> None:
    """One Responses item into ``at.transcript``."""
    ITEMS[item["type"]](item, at)
