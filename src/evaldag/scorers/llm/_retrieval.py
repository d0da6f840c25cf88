"""The retrieved context of a run, for the context scorers (precision, recall, relevance).

As in Mastra, the context is a fixed list of pieces (``context=``) or what
``context_extractor(input, output)`` returns for the run; one of the two is required and a
fixed context cannot be empty. Unlike Mastra, which calls the extractor only for runs in the
full agent shape, the extractor is called for every run (string inputs and outputs included).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from evaldag.errors import EvalDagError
from evaldag.scorers.llm._shared import context_option

ContextReader = Callable[[Any], Awaitable[list[str]]]


def retrieval_context(
    context: Any, context_extractor: Any, *, factory: str, scoring: str
) -> ContextReader:
    """An async ``context_of(run)`` after checking the options.

    :param factory: the factory's name, for error messages.
    :param scoring: what is scored, as Mastra names it ("Context Recall").
    """
    if context is None and context_extractor is None:
        raise EvalDagError(
            "EVALDAG_INVALID_SCORER_OPTION",
            f"Either context or contextExtractor is required for {scoring} scoring: pass "
            f"{factory}(model, context=[...]) or context_extractor=f(input, output)",
        )
    if context_extractor is not None and not callable(context_extractor):
        raise EvalDagError(
            "EVALDAG_INVALID_SCORER_OPTION",
            f"context_extractor of {factory}(...) must be a function (input, output) -> list "
            f"of strings, got {type(context_extractor).__name__}",
        )
    fixed = context_option(context, factory)
    if fixed is not None and not fixed:
        raise EvalDagError(
            "EVALDAG_INVALID_SCORER_OPTION",
            f"Context array cannot be empty if provided: give {factory}(...) at least one "
            "context piece, or leave context out and pass a context_extractor",
        )

    async def context_of(run: Any) -> list[str]:
        if context_extractor is None:
            return fixed or []
        pieces = context_extractor(run.input, run.output)
        if inspect.isawaitable(pieces):
            pieces = await pieces
        return context_option(pieces, factory, "the list context_extractor returned") or []

    return context_of


def indexed(pieces: Sequence[str]) -> str:
    """The pieces as lines ``[0] …``, ``[1] …``, numbered from 0 as the judge refers to them."""
    return "\n".join(f"[{index}] {piece}" for index, piece in enumerate(pieces))
