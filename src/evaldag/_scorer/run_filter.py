"""``filter_run``: what a scorer sees of an agent run, as a ``prepare_run`` (spec §5).

A scorer that judges tool use needs the tool messages, not the whole memory; one that must not peek
at the reference answer should not get it. ``create_scorer(..., prepare_run=filter_run(...))``
trims each run before the scorer's steps see it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel

from evaldag._scorer.run import ScorerRun
from evaldag.errors import EvalDagError
from evaldag.messages import AgentRunInput, Message, ToolInvocationPart

RunT = TypeVar("RunT", ScorerRun, dict[str, Any])

#: (option, ScorerRun field, Mastra's key) of each ``drop_*`` option.
_DROPS = (
    ("drop_request_context", "request_context", "requestContext"),
    ("drop_expected_trajectory", "expected_trajectory", "expectedTrajectory"),
    ("drop_ground_truth", "ground_truth", "groundTruth"),
)


@dataclass(frozen=True)
class RunFilter:
    """A ``prepare_run`` that filters messages and drops fields; made by :func:`filter_run`."""

    part_types: tuple[str, ...] | None = None
    tool_names: tuple[str, ...] | None = None
    max_remembered_messages: int | None = None
    max_output_messages: int | None = None
    drop_request_context: bool = False
    drop_expected_trajectory: bool = False
    drop_ground_truth: bool = False

    def __call__(self, run: RunT) -> RunT:
        """``run`` filtered: a ScorerRun gives a ScorerRun, a Mastra-shaped dict a dict."""
        if isinstance(run, ScorerRun):
            changes = {
                field: None for option, field, _ in _DROPS if getattr(self, option)
            } | self._message_changes(run.input, run.output)
            return run.model_copy(update=changes) if changes else run
        if isinstance(run, dict):
            result = dict(run)
            for option, field, key in _DROPS:
                if getattr(self, option):
                    if field in result:
                        result[field] = None
                    if key in result or field not in result:
                        result[key] = None
            changes = self._message_changes(result.get("input"), result.get("output"))
            return result | changes
        raise EvalDagError(
            "EVALDAG_INVALID_RUN",
            f"filter_run: expected a ScorerRun or a dict with 'input' and 'output', got "
            f"{type(run).__name__}",
        )

    def _message_changes(self, run_input: Any, run_output: Any) -> dict[str, Any]:
        changes: dict[str, Any] = {}
        if isinstance(run_input, AgentRunInput):
            remembered = self._kept(run_input.remembered_messages, self.max_remembered_messages)
            changes["input"] = run_input.model_copy(update={"remembered_messages": remembered})
        elif isinstance(run_input, dict) and "rememberedMessages" in run_input:
            remembered = self._kept(
                run_input["rememberedMessages"] or [], self.max_remembered_messages
            )
            changes["input"] = {**run_input, "rememberedMessages": remembered}
        if isinstance(run_output, list):
            changes["output"] = self._kept(run_output, self.max_output_messages)
        return changes

    def _kept(self, messages: Sequence[Any], limit: int | None) -> list[Any]:
        if self.part_types is not None or self.tool_names is not None:
            messages = [message for message in messages if self._keeps(message)]
        if limit is not None and len(messages) > limit:
            messages = messages[len(messages) - limit :]
        return list(messages)

    def _keeps(self, message: Any) -> bool:
        """Mastra's ``filterMessages`` rule for one message."""
        parts = _part_types_and_tools(message)
        if parts is None:
            return True
        if not any(part_type == "tool-invocation" for part_type, _ in parts):
            return self.part_types is None or _any_part_type(parts, self.part_types)
        if self.tool_names is not None and not any(
            isinstance(name, str) and name.startswith(self.tool_names) for _, name in parts
        ):
            return False
        return self.part_types is None or _any_part_type(parts, self.part_types)


def _any_part_type(parts: list[tuple[Any, Any]], patterns: tuple[str, ...]) -> bool:
    return any(
        isinstance(part_type, str) and part_type.startswith(patterns) for part_type, _ in parts
    )


def _part_types_and_tools(message: Any) -> list[tuple[Any, Any]] | None:
    """(type, tool name) of each part, or None when the message has no ``content.parts`` list."""
    if isinstance(message, Message):
        return [
            (part.type, part.tool_invocation.tool_name)
            if isinstance(part, ToolInvocationPart)
            else (part.type, None)
            for part in message.content.parts
        ]
    if isinstance(message, BaseModel):
        message = message.model_dump(by_alias=True)
    content = message.get("content") if isinstance(message, dict) else None
    parts = content.get("parts") if isinstance(content, dict) else None
    if not isinstance(parts, list):
        return None
    view = []
    for part in parts:
        part_type = part.get("type") if isinstance(part, dict) else None
        invocation = part.get("toolInvocation") if part_type == "tool-invocation" else None
        view.append(
            (part_type, invocation.get("toolName") if isinstance(invocation, dict) else None)
        )
    return view


def filter_run(
    part_types: Sequence[str] | None = None,
    tool_names: Sequence[str] | None = None,
    max_remembered_messages: int | None = None,
    max_output_messages: int | None = None,
    drop_request_context: bool = False,
    drop_expected_trajectory: bool = False,
    drop_ground_truth: bool = False,
) -> RunFilter:
    """A ``prepare_run`` that trims agent runs before scoring, as Mastra's ``filterRun``.

    Messages are filtered in ``input.rememberedMessages`` and in ``output`` (when it is a list);
    ``inputMessages``, ``systemMessages`` and ``taggedSystemMessages`` are never touched, and
    messages without a ``content.parts`` list (strings, Mastra's ``{id, role, content: str}``)
    are always kept. Only parts are read, as in Mastra; as a ``prepare_run`` it gets the run as
    ``ScorerRun`` read it (``docs/transcripts.md``), where chat and OpenAI messages have parts and
    every tool call is in them.

    :param part_types: keep a message only if one of its parts' types starts with one of these
        (``'data-'`` keeps every data part; ``[]`` keeps only messages without parts).
    :param tool_names: keep a message that has tool calls only if one of them calls a tool whose
        name starts with one of these; messages without tool calls are not affected.
    :param max_remembered_messages: after filtering, keep only the newest this many remembered
        messages. ``0`` keeps none (Mastra: no limit); ``None`` means no limit.
    :param max_output_messages: the same for the output messages.
    :param drop_request_context: set ``request_context`` to None (likewise the other ``drop_*``).
    """
    options: dict[str, Any] = {
        "part_types": _patterns("part_types", part_types),
        "tool_names": _patterns("tool_names", tool_names),
        "max_remembered_messages": _limit("max_remembered_messages", max_remembered_messages),
        "max_output_messages": _limit("max_output_messages", max_output_messages),
    }
    flags: dict[str, Any] = {
        "drop_request_context": drop_request_context,
        "drop_expected_trajectory": drop_expected_trajectory,
        "drop_ground_truth": drop_ground_truth,
    }
    for option, value in flags.items():
        if not isinstance(value, bool):
            raise _invalid(option, f"must be True or False, got {value!r}")
    return RunFilter(**options, **flags)


def _patterns(option: str, value: Sequence[str] | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str):
        raise _invalid(option, f"must be a list of strings such as [{value!r}], not a string")
    if not isinstance(value, Sequence | set | frozenset):
        raise _invalid(option, f"must be a list of strings, got {type(value).__name__}")
    patterns = tuple(value)
    for index, pattern in enumerate(patterns):
        if not isinstance(pattern, str):
            raise _invalid(
                option, f"must hold strings; item {index} is {type(pattern).__name__} {pattern!r}"
            )
    return patterns


def _limit(option: str, value: int | None) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise _invalid(option, f"must be a whole number or None, got {value!r}")
    if value < 0:
        raise _invalid(
            option, f"must be 0 or more (0 keeps no messages, None keeps all), got {value}"
        )
    return value


def _invalid(option: str, problem: str) -> EvalDagError:
    return EvalDagError(
        "EVALDAG_INVALID_FILTER_RUN_OPTION",
        f"filter_run: {option} {problem}",
        details={"option": option},
    )
