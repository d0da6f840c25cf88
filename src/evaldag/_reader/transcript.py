"""The transcript being read: Mastra's format-2 messages made so far, and the tool calls that
still wait for their result.

Every shape ends here. A call becomes a ``tool-invocation`` part in state ``call``; its result,
wherever the shape records it (a ``role: 'tool'`` message, an Anthropic ``tool_result`` block, a
Gemini ``functionResponse``, a pydantic-ai ``tool-return`` ...), is joined to it by id (by name
and order where the shape has no ids): state ``result`` with ``result``, ``output-error`` with
``errorText``, or ``output-denied``. A result that answers no call is an error, never dropped.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any

from evaldag._reader.output_tools import NOT_EXECUTED, STATUSES, read_output_calls
from evaldag._reader.problems import brief, malformed

#: States in which a call still waits for its result.
_WAITING = frozenset({"partial-call", "call", "approval-requested", "approval-responded"})


def text_part(text: str) -> dict[str, Any]:
    """A Mastra text part."""
    return {"type": "text", "text": text}


def reasoning_part(text: str) -> dict[str, Any]:
    """A Mastra reasoning part (``getReasoning`` reads ``details``)."""
    return {"type": "reasoning", "reasoning": text, "details": [{"type": "text", "text": text}]}


def invocation_part(invocation: dict[str, Any]) -> dict[str, Any]:
    """A Mastra tool-invocation part."""
    return {"type": "tool-invocation", "toolInvocation": invocation}


def arguments(value: Any) -> Any:
    """Tool call arguments: JSON text parsed (text that is no JSON stays text), none as ``{}``."""
    if not isinstance(value, str):
        return {} if value is None else value
    if not value.strip():
        return {}
    try:
        return json.loads(value)
    except ValueError:
        return value


def mcp_tool(name: Any, args: Any) -> tuple[Any, Any]:
    """pydantic-ai's call of an MCP server's tool that its provider runs (``mcp_server:<id>``,
    arguments ``{action: 'call_tool', tool_name, tool_args}``) as the call of that tool, as the
    providers' own messages name it (Anthropic's ``mcp_tool_use``, OpenAI's ``mcp_call``); any
    other call as it is."""
    if (
        isinstance(name, str)
        and name.startswith("mcp_server:")
        and isinstance(args, dict)
        and args.get("action") == "call_tool"
        and isinstance(args.get("tool_name"), str)
        and args["tool_name"]
    ):
        return args["tool_name"], args.get("tool_args") or {}
    return name, args


def result_value(content: Any) -> Any:
    """A tool's result given as text (or text parts): JSON objects and arrays parsed, other text
    kept as text."""
    if isinstance(content, list | tuple) and all(
        isinstance(part, str) or (isinstance(part, dict) and isinstance(part.get("text"), str))
        for part in content
    ):
        content = "".join(part if isinstance(part, str) else part["text"] for part in content)
    if isinstance(content, str) and content.lstrip()[:1] in ("{", "["):
        try:
            return json.loads(content)
        except ValueError:
            return content
    return content


def error_text(value: Any) -> str:
    """An error as the ``errorText`` of its call: text as it is, anything else as JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


@dataclass(eq=False, slots=True)
class Transcript:
    """The messages read from one list, in Mastra's format-2 shape.

    :param field: where the list sits (``output``, ``input.inputMessages``), the start of paths.
    """

    field: str
    messages: list[Any] = dataclasses.field(default_factory=list)
    #: Whether a message differs from the one given (then a new list is returned).
    changed: bool = False
    _waiting: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    #: Calls answered with a status text of pydantic-ai's output tools, and the answers' paths.
    _outputs: list[tuple[dict[str, Any], str]] = dataclasses.field(default_factory=list)
    #: Calls answered as failed (an output call pydantic-ai asked to redo may be among them).
    _failed: list[dict[str, Any]] = dataclasses.field(default_factory=list)

    def keep(self, message: Any, *, changed: bool = False) -> None:
        """A message in the shape readers take: as given, or (``changed``) as read."""
        self.messages.append(message)
        self.changed = self.changed or changed

    def add(
        self,
        role: str,
        parts: list[Any],
        *,
        id: Any,
        index: int,
        text: str | None = None,
        reasoning: str | None = None,
    ) -> dict[str, Any]:
        """A new format-2 message (``id`` ``<role>-<index>`` when none is given)."""
        body: dict[str, Any] = {"format": 2, "parts": parts}
        if text:
            body["content"] = text
        if reasoning:
            body["reasoning"] = reasoning
        message = {
            "id": id if isinstance(id, str) and id else f"{role}-{index}",
            "role": role,
            "content": body,
        }
        self.messages.append(message)
        self.changed = True
        return message

    def call(
        self, name: Any, args: Any, call_id: Any, path: str, *, default_id: str, **fields: Any
    ) -> dict[str, Any]:
        """A tool call's invocation part, in state ``call`` (or ``fields["state"]``); until a
        result arrives, :meth:`answer` finds it by its id."""
        if not isinstance(name, str) or not name:
            raise malformed(path, f"is a tool call without a tool name (got {brief(name)})")
        given = call_id if isinstance(call_id, str) and call_id else None
        invocation: dict[str, Any] = {
            "state": "call",
            "toolCallId": given or default_id,
            "toolName": name,
        }
        invocation["args"] = args
        invocation.update(fields)
        if invocation["state"] in _WAITING:
            self._waiting[invocation["toolCallId"]] = invocation
            if given is None:
                invocation["_unnamed"] = True
        return invocation_part(invocation)

    def answer(
        self,
        call_id: Any,
        name: Any,
        path: str,
        *,
        result: Any = None,
        error: Any = None,
        failed: bool = False,
        denied: bool = False,
    ) -> None:
        """A tool's result joined to its waiting call: by id, or (no id given) the first
        waiting call of that tool that had no id either.

        :param failed: the tool raised (or its executor marked the result an error): state
            ``output-error`` with ``errorText`` (``error``, else the result as text).
        :param denied: the call was not run (a denied approval): state ``output-denied``.
        """
        invocation = self.waiting_call(call_id, name, path)
        invocation.pop("_unnamed", None)
        if denied:
            invocation["state"] = "output-denied"
            if error is not None:
                invocation["errorText"] = error_text(error)
        elif failed:
            invocation["state"] = "output-error"
            invocation["errorText"] = error_text(error if error is not None else result)
            self._failed.append(invocation)
        else:
            invocation["state"] = "result"
            invocation["result"] = result
            self.answered(invocation, path)
        del self._waiting[invocation["toolCallId"]]

    def answered(self, invocation: dict[str, Any], path: str) -> None:
        """A call's result, given at ``path`` (or in the call's own part, as AI SDK UI parts
        give it): one of pydantic-ai's output statuses makes the call text when the transcript
        is finished; its status of a call it did not run makes the call a call not run."""
        result = invocation.get("result")
        if type(result) is str and result in STATUSES:
            self._outputs.append((invocation, path))
        elif result == NOT_EXECUTED:
            invocation["state"] = "output-denied"
            invocation["errorText"] = invocation.pop("result")

    def approval(self, approval_id: Any, path: str) -> dict[str, Any]:
        """The waiting call whose approval ``approval_id`` is (AI SDK 6 approvals)."""
        for invocation in self._waiting.values():
            approval = invocation.get("approval")
            if isinstance(approval, dict) and approval.get("id") == approval_id:
                return invocation
        raise malformed(
            path, f"answers the approval request {approval_id!r}, which no earlier call made"
        )

    def waiting_call(self, call_id: Any, name: Any, path: str) -> dict[str, Any]:
        """The waiting call that ``call_id`` (or, without one, ``name``) answers."""
        if isinstance(call_id, str) and call_id:
            invocation = self._waiting.get(call_id)
        else:
            invocation = next(
                (
                    waiting
                    for waiting in self._waiting.values()
                    if waiting.get("_unnamed") and waiting["toolName"] == name
                ),
                None,
            )
        if invocation is None:
            which = repr(call_id) if call_id else f"a result of {name!r} without a call id"
            raise malformed(
                path,
                f"is {which}, which answers no tool call of an earlier message that still "
                "waits for its result (each call is answered once, by its id)",
            )
        return invocation

    def finished(self) -> list[Any]:
        """The messages read; calls nobody answered stay in state ``call``, pydantic-ai's output
        calls become text (:mod:`evaldag._reader.output_tools`)."""
        for invocation in self._waiting.values():
            invocation.pop("_unnamed", None)
        if self._outputs:
            read_output_calls(self.messages, self._outputs, self._failed)
        return self.messages


@dataclass(eq=False, slots=True)
class Place:
    """Where a message sits while it is read: its transcript, index, path and role."""

    transcript: Transcript
    index: int
    path: str
    role: str
    _calls: int = 0

    def default_id(self) -> str:
        """The id of this message's next call that has none: ``call-<message>-<n>``."""
        self._calls += 1
        return f"call-{self.index}-{self._calls - 1}"
