"""Targets: what produces each item's output when the data has none (a function or a model)."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from evaldag._engine.concurrency import gather_limited, run_sync
from evaldag._judge.via_litellm import configured_litellm
from evaldag._scorer.steps import is_async_callable
from evaldag.errors import EvalDagError, error_message


@dataclass(frozen=True, slots=True)
class TargetFailure:
    """The target raised for this item; its scorers are skipped and the item counts as failed."""

    message: str
    error_type: str


def _model_target(model: str) -> Callable[..., Any]:
    async def answer(input: Any) -> str:
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


def target_outputs(
    target: Callable[..., Any], inputs: list[Any], contexts: list[Any], concurrency: int
) -> list[Any]:
    """The target's output per item, or a ``TargetFailure``; at most ``concurrency`` at once."""
    wants_context = "request_context" in inspect.signature(target).parameters
    asynchronous = is_async_callable(target)

    async def output(input: Any, context: Any) -> Any:
        kwargs = {"request_context": context} if wants_context else {}
        try:
            if asynchronous:
                return await target(input, **kwargs)
            value = await asyncio.to_thread(target, input, **kwargs)
            return await value if inspect.isawaitable(value) else value
        except Exception as error:
            return TargetFailure(error_message(error), type(error).__name__)

    return run_sync(
        gather_limited((output(i, c) for i, c in zip(inputs, contexts, strict=True)), concurrency)
    )
