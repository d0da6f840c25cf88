"""Targets: what produces each item's output when the data has none (a function, an agent or a
model), one call per item or one per turn of a conversation."""

from __future__ import annotations

import asyncio
import inspect
import uuid
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from evaldag._engine.concurrency import gather_limited
from evaldag._engine.time_limits import limited_call
from evaldag._reader import read_transcript
from evaldag._scorer.steps import is_async_callable
from evaldag._scorer.time_limits import target_overrun
from evaldag._util.event_loop import run_sync
from evaldag.errors import ConfigurationError, EvalDagError, error_message
from evaldag.transcripts import run_messages


@dataclass(frozen=True, slots=True)
class TargetFailure:
    """The target raised for this item; its scorers are skipped and the item counts as failed.

    A workflow that failed at a node keeps what ran: ``steps`` (the failed node last, status
    ``failed``) and the ``trajectory`` up to the failure, which its step and trajectory scorers
    still score. A conversation that failed at a turn keeps the ``turns`` that completed before
    it and its ``thread_id``, which those turns' gates and scorers still score.
    """

    message: str
    error_type: str
    steps: dict[str, StepRun] = field(default_factory=dict)
    trajectory: dict[str, Any] | None = None
    turns: tuple[TurnRun, ...] = ()
    thread_id: str | None = None


def _model_target(model: str) -> Callable[..., Any]:
    async def answer(input: Any) -> str:
        from evaldag._judge.via_litellm import configured_litellm  # httpx, litellm: on use

        litellm = configured_litellm()
        messages = input if isinstance(input, list) else [{"role": "user", "content": str(input)}]
        response = await litellm.acompletion(model=model, messages=messages)
        return response.choices[0].message.content

    return answer


def target_callable(target: Any) -> Callable[..., Any]:
    """``target`` as a callable taking the item's input (and ``request_context`` if it asks)."""
    if isinstance(target, str):
        return _model_target(target)
    if not callable(target):
        raise EvalDagError(
            "INVALID_TARGET",
            f"target must be a function taking the item's input, or a litellm model string such "
            f"as 'openai/gpt-4o-mini', got {type(target).__name__}",
        )
    try:
        parameters = inspect.signature(target).parameters
    except (TypeError, ValueError) as error:
        raise EvalDagError(
            "INVALID_TARGET", f"cannot read the parameters of target {target!r}: {error}"
        ) from error
    if not parameters:
        raise EvalDagError(
            "INVALID_TARGET", "target must take the item's input as its first parameter"
        )
    return target


@dataclass(frozen=True, slots=True)
class TurnRun:
    """One turn of a conversation: its input and the target's output, as Mastra messages."""

    input: Any
    output: list[Any]


@dataclass(frozen=True, slots=True)
class StepRun:
    """One node of a workflow's execution: its inputs, its output, and how it went."""

    input: dict[str, Any]
    output: Any
    status: str
    started_at: float
    duration_ms: float
    error: str | None = None


@dataclass(frozen=True, slots=True)
class TargetRun:
    """What the target produced for one item: the output its scorers score; for a
    conversation each turn (the output is then every turn's messages, in order); for a workflow
    each node that ran, by name in execution order, and the trajectory they make."""

    output: Any
    turns: tuple[TurnRun, ...] = ()
    steps: dict[str, StepRun] = field(default_factory=dict)
    trajectory: dict[str, Any] | None = None
    thread_id: str | None = None


#: The keyword parameters a target may declare to get more than the input.
_EXTRAS = ("request_context", "thread_id", "history")


def target_runs(
    target: Callable[..., Any],
    inputs: list[Any],
    contexts: list[Any],
    conversations: list[list[Any] | None],
    concurrency: int,
    timeout: float | None = None,
) -> list[TargetRun | TargetFailure]:
    """The target's run per item, or a ``TargetFailure``; at most ``concurrency`` items at once.

    :param conversations: per item, the inputs of its turns (run in order on one thread), or
        None for an item with one input.
    :param timeout: seconds each call of the target (each turn of a conversation) may take; a
        call that overruns is the item's failure.
    :raises ConfigurationError: the target raised one (every item would fail the same way):
        the calls in flight finish, no other starts.
    """
    parameters = inspect.signature(target).parameters
    wanted = {name for name in _EXTRAS if name in parameters}
    asynchronous = is_async_callable(target)

    async def output(input: Any, **extras: Any) -> Any:
        kwargs = {name: value for name, value in extras.items() if name in wanted}
        if timeout is not None:
            return await limited_call(target, (input,), kwargs, timeout, overrun)
        if asynchronous:
            return await target(input, **kwargs)
        value = await asyncio.to_thread(target, input, **kwargs)
        return await value if inspect.isawaitable(value) else value

    def overrun(is_async: bool) -> BaseException:
        return target_overrun(timeout or 0, is_async=is_async)

    stopped: list[ConfigurationError] = []

    async def run(input: Any, context: Any, turns: list[Any] | None) -> TargetRun | TargetFailure:
        if stopped:
            return TargetFailure("not called: the run stopped", "ConfigurationError")
        try:
            if turns is None:
                produced = await output(_given(input, "the item's input"), request_context=context)
                if isinstance(produced, TargetRun | TargetFailure):
                    return produced
                return TargetRun(_returned(produced))
            return await _conversation(output, turns, context)
        except ConfigurationError as error:
            stopped.append(error)
            return TargetFailure(error.message, type(error).__name__)
        except Exception as error:
            return TargetFailure(error_message(error), type(error).__name__)

    calls = gather_limited(
        (run(i, c, t) for i, c, t in zip(inputs, contexts, conversations, strict=True)),
        concurrency,
        "target",
    )
    produced = run_sync(_with_threads(calls, concurrency))
    if stopped:
        raise stopped[0]
    return produced


def _given(input: Any, what: str) -> Any:
    """An input for the target, which must be something: a row whose input cell is empty (a
    blank CSV cell) would otherwise call it with ``None`` and score the answer to nothing."""
    if input is None:
        raise ValueError(f"{what} is empty (None), so the target was not called; fill it in")
    return input


def _returned(produced: Any) -> Any:
    """What a target call returned, which must be something: ``None`` (a function that forgot
    its ``return``, a model reply without content) would pass every check that looks for what
    the answer must not hold."""
    if produced is None:
        raise TypeError(
            "the target returned None; it must return the item's output, a text or a "
            "transcript (did the function forget its return?)"
        )
    return produced


def empty_answer(read: Any) -> str | None:
    """Why a target's output, as read (a text, or messages in Mastra's shape), says nothing, if
    it does: a blank text, no messages, or messages of which none is a reply with content (only
    the user's, empty assistant messages). Every check for what an answer must not hold would
    pass it. Other values are left to the scorers, which name what they cannot read."""
    if isinstance(read, str):
        return None if read.strip() else f"a blank text ({read!r})"
    messages = [read] if isinstance(read, dict) and "role" in read else read
    if not isinstance(messages, list):
        return None
    if not messages:
        return "no messages"
    if not all(isinstance(m, dict) and "role" in m for m in messages):
        return None
    if any(_replied(m) for m in messages):
        return None
    roles = ", ".join(str(m["role"]) for m in messages)
    return f"no reply with content (messages of roles: {roles})"


def no_answer(empty: str) -> str:
    """The error of a target call whose answer says nothing (:func:`empty_answer`)."""
    return (
        f"the target returned {empty}: no answer to score, which every check for what an "
        "answer must not hold would pass; return the reply (or raise when there is none)"
    )


def _replied(message: dict[str, Any]) -> bool:
    """Whether ``message`` is a reply with content: a text that is not blank (its content
    string, Mastra's legacy ``content.content`` or a text part), or any other part."""
    if message["role"] in ("user", "system"):
        return False
    content = message.get("content")
    if isinstance(content, str):
        return bool(content.strip())
    if not isinstance(content, dict):
        return False
    texts = (content.get("content"), content.get("text"))
    return any(isinstance(text, str) and text.strip() for text in texts) or any(
        not (isinstance(p, dict) and p.get("type") == "text" and not str(p.get("text", "")).strip())
        for p in content.get("parts") or ()
    )


async def _with_threads(
    calls: Awaitable[list[TargetRun | TargetFailure]], threads: int
) -> list[TargetRun | TargetFailure]:
    """``calls`` on a loop whose worker threads (a sync target's calls, an agent's sync tools)
    number ``threads``: the default pool has min(32, CPUs + 4), fewer than a concurrency of 8 on
    2 cores."""
    pool = ThreadPoolExecutor(threads, "evaldag-target")
    asyncio.get_running_loop().set_default_executor(pool)  # asyncio.run shuts it down
    return await calls


async def _conversation(
    output: Callable[..., Awaitable[Any]], inputs: list[Any], context: Any
) -> TargetRun | TargetFailure:
    """The turns of one conversation, in order, on one thread: each turn's target call gets
    the ``thread_id`` and the ``history`` (every earlier input and output, as Mastra messages).
    A turn that fails ends it: the failure names the turn and keeps the turns before it."""
    thread_id = str(uuid.uuid4())
    history: list[Any] = []
    turns: list[TurnRun] = []
    for index, turn_input in enumerate(inputs):
        try:
            produced = _returned(
                await output(
                    _given(turn_input, "its input"),
                    request_context=context,
                    thread_id=thread_id,
                    history=list(history),
                )
            )
            said = read_transcript(run_messages(turn_input, "user"), "input")
            answered = read_transcript(run_messages(produced, "assistant"), "output")
            if empty := empty_answer(produced if isinstance(produced, str) else answered):
                raise ValueError(no_answer(empty))
        except ConfigurationError:
            raise
        except Exception as error:
            where = f"turn {index + 1} of {len(inputs)}"
            return TargetFailure(
                f"{where}: {error_message(error)}",
                type(error).__name__,
                turns=tuple(turns),
                thread_id=thread_id,
            )
        turns.append(TurnRun(turn_input, answered))
        history += [*said, *answered]
    return TargetRun([m for turn in turns for m in turn.output], tuple(turns), thread_id=thread_id)
