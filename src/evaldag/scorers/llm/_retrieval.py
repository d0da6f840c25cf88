"""The retrieved context of a run, for the context scorers (precision, recall, relevance).

As in Mastra, the context is a fixed list of pieces (``context=``) or what
``context_extractor(input, output)`` returns for the run; one of the two is required and a
fixed context cannot be empty. Unlike Mastra, which calls the extractor only for runs in the
full agent shape, the extractor is called for every run (string inputs and outputs included).
Precision and relevance judge each piece: :func:`pieces_prompt` shows the judge the pieces and
:func:`piece_verdicts` keeps one answer per piece.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from evaldag.errors import EvalDagError
from evaldag.scorers.llm._shared import (
    PromptTemplate,
    assistant_text,
    awaited,
    context_option,
    user_text,
)

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
        pieces = await awaited(context_extractor(run.input, run.output))
        return context_option(pieces, factory, "the list context_extractor returned") or []

    return context_of


def indexed(pieces: Sequence[str]) -> str:
    """The pieces as lines ``[0] …``, ``[1] …``, numbered from 0 as the judge refers to them."""
    return "\n".join(f"[{index}] {piece}" for index, piece in enumerate(pieces))


def pieces_prompt(
    template: PromptTemplate, context_of: ContextReader
) -> Callable[[Any], Awaitable[str]]:
    """A ``create_prompt(run)``: ``template`` filled with the run's question (``$input``), its
    response (``$output``) and its context pieces (``$piece_count``, and ``$context`` numbered
    as :func:`indexed` does).

    A run without context pieces fails there, before any judge call, as in Mastra.
    """

    async def create_prompt(run: Any) -> str:
        pieces = await context_of(run)
        if not pieces:
            raise EvalDagError(
                "EVALDAG_NO_CONTEXT",
                "No context available for evaluation: context_extractor returned no context "
                "pieces for this run",
            )
        return template.render(
            input=user_text(run),
            output=assistant_text(run),
            piece_count=str(len(pieces)),
            context=indexed(pieces),
        )

    return create_prompt


def piece_verdicts(
    context_of: ContextReader,
    key: str,
    missing: Callable[[int, str], Mapping[str, Any]],
    *,
    in_order: bool,
    description: str,
) -> Callable[..., Awaitable[dict[str, Any]]]:
    """An analyze function step for after a judged one: the judge's ``key`` list as one answer
    per context piece, found by its ``context_index``.

    An answer for each piece once is kept (put in piece order when ``in_order``). Otherwise
    answers with an unknown or repeated index are dropped, a piece without one gets
    ``missing(index, piece)``, and ``verdictCountMismatch`` records what the judge gave.
    """

    async def analyze(run: Any, analyze_step_result: Any) -> dict[str, Any]:
        pieces = await context_of(run)
        answers = analyze_step_result.get(key) or []
        by_index: dict[int, Any] = {}
        for answer in answers:
            index = answer.get("context_index")
            if isinstance(index, int) and 0 <= index < len(pieces):
                by_index.setdefault(index, answer)
        if len(by_index) == len(pieces) == len(answers):
            if not in_order:
                return analyze_step_result
            return {**analyze_step_result, key: [by_index[i] for i in range(len(pieces))]}
        return {
            **analyze_step_result,
            key: [
                by_index.get(index) or dict(missing(index, piece))
                for index, piece in enumerate(pieces)
            ],
            "verdictCountMismatch": {"expected": len(pieces), "received": len(answers)},
        }

    analyze.description = description
    return analyze
