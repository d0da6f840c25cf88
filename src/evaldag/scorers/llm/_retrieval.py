"""The context of a run: what a scorer judges the response (or the summary) against.

Every scorer that reads a context takes it through one option, ``context=`` (``source=`` for
summarization; Mastra's names), read once when the scorer is built by :func:`run_context`:

- a list of strings: the same pieces for every run (Mastra's ``context``); never empty;
- a string: the name of a dataset column holding each run's pieces (``"contexts"``, Ragas'
  ``"retrieved_contexts"``); the scorer declares it in ``columns``, so ``run_evals`` puts each
  item's value on the run (and refuses data without the column) and ``scorer.run`` takes it
  by name;
- a function of the run (sync or async) returning the run's pieces; it is called by each step
  that reads the context;
- None: the scorer's default (faithfulness and hallucination: the run's tool results;
  summarization: the user's message). Context precision, recall and relevance have none.

Mastra's extractors are aliases of the one option: ``context_extractor=f`` is
``context=lambda run: f(run.input, run.output)``, and ``source_extractor`` likewise.

What a run's context holds is a list-like of strings (a list, a tuple, or the numpy array or
Arrow list a Parquet file gives back, or the JSON text of one, as a CSV cell holds it); a source
may also be one string. Anything else is an ``EvalDagError`` naming the option, the column and
the type. A context with no piece of text
(None, NaN, an empty list, blank strings) makes the run not scorable before any judge call
(:func:`~evaldag.scorers.llm._shared.scorer_needing`). Precision and relevance judge each piece:
:func:`pieces_prompt` shows the judge the pieces and :func:`piece_verdicts` keeps one answer per
piece.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from evaldag._reader import looks_like_json, plain_data
from evaldag._scorer.needs import DataNeed
from evaldag._scorer.run import ScorerRun
from evaldag._scorer.steps import described_step
from evaldag.errors import EvalDagError
from evaldag.scorers.llm._shared import (
    PromptTemplate,
    assistant_text,
    awaited,
    missing_value,
    tool_result_context,
    user_text,
)


@dataclass(frozen=True)
class RunContext:
    """A scorer's context option, checked: the dataset columns it reads and each run's pieces.

    :param read: the run's context as given (a list-like, a string, None; may be awaitable).
    :param where: the option (and column) a wrong value came from, for errors.
    :param missing: why a run without context is not scorable.
    :param details: the option (and column), for the errors' details.
    :param columns: the dataset columns read (the column form's one name).
    :param text: whether one string is a context (of one piece), as a source text is.
    :param fixed: whether every run has the same, non-empty, context.
    :param need: what a scorer reading the context needs of the data: the column form's cells
        readable as pieces, checked for every item before any step runs.
    """

    read: Callable[[Any], Any]
    where: str
    missing: str
    details: Mapping[str, str]
    columns: tuple[str, ...] = ()
    text: bool = False
    fixed: bool = False
    need: DataNeed | None = None

    async def found(self, run: Any) -> list[str]:
        """The run's pieces; ``[]`` when none holds text. A value of another shape is an error."""
        pieces = self.pieces(await awaited(self.read(run)))
        return pieces if any(piece.strip() for piece in pieces) else []

    async def __call__(self, run: Any) -> list[str]:
        """The run's pieces, for the steps after the check that there are some (see
        :func:`~evaldag.scorers.llm._shared.scorer_needing`)."""
        pieces = await self.found(run)
        if not pieces:
            # A function that found a context for the check and none now: never judge nothing.
            raise EvalDagError(
                "EVALDAG_NO_CONTEXT",
                f"No context available for evaluation: {self.missing}",
                details=dict(self.details),
            )
        return pieces

    async def text_of(self, run: Any) -> str:
        """The run's pieces, one per line."""
        return "\n".join(await self(run))

    def pieces(self, value: Any) -> list[str]:
        """``value`` as a list of strings; ``[]`` when it is missing (None, NaN, pandas' NA).

        Text where only a list of strings can be is read as the JSON array it holds, as a CSV
        cell holds a row's pieces (``'["a", "b"]'``); a source's text is the source itself.
        """
        if missing_value(value):
            return []
        if isinstance(value, str):
            if self.text:
                return [value]
            return self._listed(value)
        value = plain_data(value)
        if isinstance(value, list | tuple) and all(isinstance(piece, str) for piece in value):
            return list(value)
        raise self._invalid(f"got {type(value).__name__} {value!r:.80}", type(value).__name__)

    def _listed(self, text: str) -> list[str]:
        """The pieces that JSON ``text`` holds; an error saying what it holds otherwise."""
        if not looks_like_json(text):
            raise self._invalid(f"got str {text!r:.80}", "str")
        try:
            value = json.loads(text)
        except ValueError as error:
            raise self._invalid(
                f"got str {text!r:.80}, which starts like JSON but is none ({error})", "str"
            ) from None
        if isinstance(value, list) and all(isinstance(piece, str) for piece in value):
            return value
        kind = type(value).__name__
        raise self._invalid(f"got JSON text of a {kind} {text!r:.80}", kind)

    def _invalid(self, got: str, kind: str) -> EvalDagError:
        """The error for a context of another shape, with the fix: in a data column's cell, the
        JSON array a CSV cell holds; from a function, one string put in a list."""
        expected = "a text or a list of strings" if self.text else "a list of strings"
        if "column" in self.details:
            fix = '; write each cell as a JSON array of strings, e.g. \'["first piece", "second"]\''
        else:
            fix = "; put one piece in a list" if kind == "str" and not self.text else ""
        return EvalDagError(
            "EVALDAG_INVALID_CONTEXT",
            f"{self.where} must be {expected}, one string per piece (e.g. ['Paris is the "
            f"capital of France.']), {got}{fix}",
            details={**self.details, "type": kind},
        )


#: The context of faithfulness and hallucination without ``context=``: the JSON of each tool
#: result in the run's output.
TOOL_RESULTS = RunContext(
    lambda run: tool_result_context(run.output),
    "the run's tool results",
    "no context: the run's output has no tool results, and no context= was given "
    "(context='<column>' reads each item's pieces from a column of the data)",
    {"option": "context"},
)


#: The forms of a context option, for errors.
_FORMS = (
    "give {option}=[...] (the same pieces for every run), the name of a data column holding "
    "each run's pieces ({option}='contexts') or a function of the run ({option}=lambda run: "
    "[...])"
)


def run_context(
    value: Any,
    *,
    factory: str,
    option: str = "context",
    extractor: Any = None,
    default: RunContext | None = None,
    scoring: str = "",
    text: bool = False,
) -> RunContext:
    """``value`` of a scorer's context option (or ``extractor``, Mastra's ``<option>_extractor``
    alias) checked and read into a :class:`RunContext`; ``default`` when both are None.

    :param factory: the factory's name, for errors.
    :param option: the option's name (``'context'``, ``'source'``).
    :param default: the context without the option; None when the option is required.
    :param scoring: what is scored, as Mastra names it ("Context Recall"), for the error a
        missing required option raises.
    :param text: whether one string is a context (of one piece), as a source text is.
    """
    alias = f"{option}_extractor"
    if extractor is not None:
        if value is not None:
            raise EvalDagError(
                "EVALDAG_INVALID_SCORER_OPTION",
                f"{factory}(...) got both {option} and {alias}; give one: {alias}=f is "
                f"{option}=lambda run: f(run.input, run.output)",
                details={"option": option},
            )
        function = _function(extractor, f"{alias} of {factory}(...)", alias, "(input, output)")
        return _function_context(
            lambda run: function(run.input, run.output), alias, factory, option, text
        )
    if value is None:
        if default is None:
            raise EvalDagError(
                "EVALDAG_INVALID_SCORER_OPTION",
                f"Either {option} or {option}Extractor is required for {scoring} scoring: "
                f"{_FORMS.format(option=option)}",
                details={"option": option},
            )
        return default
    if isinstance(value, str):
        return _column_context(value, factory, option, text)
    if callable(value):
        function = _function(value, f"{option} of {factory}(...)", option, "(run)")
        return _function_context(function, option, factory, option, text)
    return _fixed_context(value, factory, option)


def _fixed_context(value: Any, factory: str, option: str) -> RunContext:
    where = f"{option} of {factory}(...)"
    details = {"option": option}
    fixed = RunContext(lambda run: value, where, "", details).pieces(value)
    if not any(piece.strip() for piece in fixed):
        raise EvalDagError(
            "EVALDAG_INVALID_SCORER_OPTION",
            f"{option.capitalize()} array cannot be empty if provided: {where} holds no piece "
            f"of text, so no run could be scored; {_FORMS.format(option=option)}",
            details=details,
        )
    return RunContext(lambda run: fixed, where, "", details, fixed=True)


def _column_context(name: str, factory: str, option: str, text: bool) -> RunContext:
    shown = name if len(name) <= 40 else f"{name[:40]}…"  # a text meant as a fixed context
    where = f"the data column '{shown}' ({option} of {factory}(...))"
    details = {"option": option, "column": name}
    if not name.strip() or name in ScorerRun.model_fields:
        raise EvalDagError(
            "EVALDAG_INVALID_SCORER_OPTION",
            f"{option}={shown!r} of {factory}(...) must name a data column other than the "
            f"run's own fields ({', '.join(ScorerRun.model_fields)}); "
            f"{_FORMS.format(option=option)}",
            details=details,
        )

    def read(run: Any) -> Any:
        extra = run.model_extra or {}
        if name not in extra:
            raise EvalDagError(
                "EVALDAG_MISSING_COLUMN",
                f"{option} of {factory}(...) reads the data column '{shown}', which this run "
                f"does not have: add the column to the data, or pass it to scorer.run(..., "
                f"{shown}=[...]); a fixed {option} is a list: {option}=['...']",
                details=details,
            )
        return extra[name]

    missing = f"no {option}: the data column '{shown}' is empty for this run"
    context = RunContext(read, where, missing, details, columns=(name,), text=text)
    reads = f"{option}= of {factory}(...)"
    return replace(context, need=DataNeed(name, reads, context.pieces, from_text=not text))


def _function_context(
    function: Callable[[Any], Any], name: str, factory: str, option: str, text: bool
) -> RunContext:
    return RunContext(
        function,
        f"the {'text' if text else 'list'} {name} returned of {factory}(...)",
        f"no {option}: the function given as {name} returned none for this run",
        {"option": name},
        text=text,
    )


def _function(value: Any, where: str, option: str, arguments: str) -> Callable[..., Any]:
    """``value`` checked: a function taking ``arguments`` (``'(run)'``, ``'(input, output)'``)."""
    try:
        if not callable(value):
            raise TypeError
        inspect.signature(value).bind(*[None] * (arguments.count(",") + 1))
    except ValueError:  # no signature to read (some builtins): called as given
        return value
    except TypeError:
        shown = type(value).__name__
        if callable(value):
            shown = f"{getattr(value, '__name__', shown)}{inspect.signature(value)}"
        raise EvalDagError(
            "EVALDAG_INVALID_SCORER_OPTION",
            f"{where} must be a function {arguments} -> list of strings (sync or async), got "
            f"{shown}",
            details={"option": option},
        ) from None
    return value


def indexed(pieces: Sequence[str]) -> str:
    """The pieces as lines ``[0] …``, ``[1] …``, numbered from 0 as the judge refers to them."""
    return "\n".join(f"[{index}] {piece}" for index, piece in enumerate(pieces))


def pieces_prompt(
    template: PromptTemplate, context_of: RunContext
) -> Callable[[Any], Awaitable[str]]:
    """A ``create_prompt(run)``: ``template`` filled with the run's question (``$input``), its
    response (``$output``) and its context pieces (``$piece_count``, and ``$context`` numbered
    as :func:`indexed` does)."""

    async def create_prompt(run: Any) -> str:
        pieces = await context_of(run)
        return template.render(
            input=user_text(run),
            output=assistant_text(run),
            piece_count=str(len(pieces)),
            context=indexed(pieces),
        )

    return create_prompt


def piece_verdicts(
    context_of: RunContext,
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

    described_step(analyze, description)
    return analyze
