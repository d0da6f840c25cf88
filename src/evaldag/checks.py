"""Checks: small deterministic scorers of an agent's answer and tool use, usable as gates (spec §7).

Each check is a :class:`~evaldag.Scorer` with Mastra's id (``check-includes``, ...) whose
preprocess step records what it found and whose score is 1 (pass) or 0 (fail); ``similarity``
without a threshold scores the similarity itself. Pass ``id=`` to run two checks of one kind side
by side. Text checks read the assistant messages of ``run.output`` (a string output is one
assistant message); tool checks read its tool calls (``evaldag.transcripts.extract_tool_calls``),
and those that forbid calls (``did_not_call``, ``used_no_tools``, ``max_tool_calls``) every call
the model asked for, made or not (waiting for approval, denied, cut off mid-stream).
``run.output`` may be in any transcript shape of ``docs/transcripts.md``; a value that holds no
messages (a trajectory, a dict of other data) fails the run. Bad arguments fail when the check is
created.
"""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from evaldag._reader import checked_transcript
from evaldag._reader.said import said_texts
from evaldag._scorer.builder import Scorer, create_scorer
from evaldag._traces.matching import SpanQuery, checked_query, matching_spans
from evaldag.errors import EvalDagError
from evaldag.transcripts import (
    CALL_STATES,
    compare_two_strings,
    extract_agent_response_messages,
    extract_tool_calls,
    is_tool_error,
    run_messages,
    tool_invocations,
)

#: re flags and the letters JavaScript's RegExp prints for them, in its order.
_FLAG_LETTERS = ((re.IGNORECASE, "i"), (re.MULTILINE, "m"), (re.DOTALL, "s"))


def includes(expected: str, ignore_case: bool = True, *, id: str = "check-includes") -> Scorer:
    """Passes when the assistant's text (messages joined by a space) contains ``expected``, a
    non-empty text (every text contains ``""``: the check could not fail)."""
    _text("includes", "expected", expected)
    if not expected:
        raise _invalid(
            "includes", "expected", "is empty: every output includes it, so the check would "
            "always pass; give the text the answer must contain"
        )  # fmt: skip
    _flag("includes", "ignore_case", ignore_case)

    def preprocess(run: Any) -> dict[str, Any]:
        output, target = _folded(_assistant_text(run, " "), expected, ignore_case)
        return {"output": output, "target": target, "found": target in output}

    return _check(
        id, "Includes Check", f'Checks if output includes "{expected}"', preprocess, "found"
    )


def excludes(unwanted: str, ignore_case: bool = True, *, id: str = "check-excludes") -> Scorer:
    """Passes when the assistant's text (messages joined by a space) lacks ``unwanted``, a
    non-empty text (no text lacks ``""``: the check could not pass). Every text of a message
    counts, not only its last text part as Mastra reads it: "The password is X", then a tool
    call, then "Done." does not pass ``excludes("X")``."""
    _text("excludes", "unwanted", unwanted)
    if not unwanted:
        raise _invalid(
            "excludes", "unwanted", "is empty: every output includes it, so the check would "
            "always fail; give the text the answer must not contain"
        )  # fmt: skip
    _flag("excludes", "ignore_case", ignore_case)

    def preprocess(run: Any) -> dict[str, Any]:
        output, target = _folded(_everything_said(run), unwanted, ignore_case)
        return {"output": output, "target": target, "excluded": target not in output}

    description = f'Checks that output does not include "{unwanted}"'
    return _check(id, "Excludes Check", description, preprocess, "excluded")


def equals(expected: str, ignore_case: bool = True, *, id: str = "check-equals") -> Scorer:
    """Passes when the assistant's text (messages joined with nothing between) is ``expected``.

    Nothing is trimmed: ``" x "`` does not equal ``"x"``.
    """
    _text("equals", "expected", expected)
    _flag("equals", "ignore_case", ignore_case)

    def preprocess(run: Any) -> dict[str, Any]:
        output, target = _folded(_assistant_text(run, ""), expected, ignore_case)
        return {"output": output, "target": target, "isEqual": output == target}

    return _check(
        id, "Equals Check", f'Checks if output equals "{expected}"', preprocess, "isEqual"
    )


def matches(
    pattern: str | re.Pattern[str], exact: bool = False, *, id: str = "check-matches"
) -> Scorer:
    """Passes when the assistant's text (messages joined with nothing between) matches ``pattern``.

    :param pattern: a Python regular expression, as a string or compiled (with its flags).
    :param exact: the whole text must match (``re.fullmatch``); otherwise a match anywhere counts.
    """
    if isinstance(pattern, str):
        try:
            pattern = re.compile(pattern)
        except re.error as error:
            raise _invalid(
                "matches", "pattern", f"is not a valid regular expression: {error}"
            ) from error
    elif not isinstance(pattern, re.Pattern) or not isinstance(pattern.pattern, str):
        raise _invalid(
            "matches", "pattern", f"must be a str or a compiled re.Pattern, got {pattern!r}"
        )
    _flag("matches", "exact", exact)
    if not pattern.pattern and not exact:
        raise _invalid(
            "matches", "pattern", "is empty: it matches every output, so the check would always "
            "pass; give the pattern the answer must match (exact=True with '' for an empty answer)"
        )  # fmt: skip
    compiled = pattern
    shown = "/{}/{}".format(
        compiled.pattern, "".join(letter for flag, letter in _FLAG_LETTERS if compiled.flags & flag)
    )
    test = compiled.fullmatch if exact else compiled.search

    def preprocess(run: Any) -> dict[str, Any]:
        output = _assistant_text(run, "")
        return {"output": output, "pattern": shown, "matched": test(output) is not None}

    description = f"Checks if output matches pattern {shown}"
    return _check(id, "Matches Check", description, preprocess, "matched")


def similarity(
    expected: str,
    threshold: float | None = None,
    ignore_case: bool = True,
    *,
    id: str = "check-similarity",
) -> Scorer:
    """Scores the Dice similarity of the assistant's text to ``expected`` (0 to 1).

    The assistant messages are joined by a space; whitespace is ignored in the comparison
    (``evaldag.transcripts.compare_two_strings``).

    :param threshold: if given, the score is 1 when the similarity reaches it, else 0.
    """
    _text("similarity", "expected", expected)
    _flag("similarity", "ignore_case", ignore_case)
    if threshold is not None and not (
        isinstance(threshold, numbers.Real)
        and not isinstance(threshold, bool)
        and math.isfinite(threshold)
        and 0 <= threshold <= 1
    ):
        raise _invalid(
            "similarity", "threshold", f"must be a number from 0 to 1 or None, got {threshold!r}"
        )

    def preprocess(run: Any) -> dict[str, Any]:
        output, target = _folded(_assistant_text(run, " "), expected, ignore_case)
        found = {"output": output, "target": target, "score": compare_two_strings(output, target)}
        if threshold is not None:
            found["threshold"] = threshold
        return found

    def generate_score(preprocess_step_result: dict[str, Any]) -> float:
        score = preprocess_step_result["score"]
        if threshold is None:
            return score
        return 1 if score >= threshold else 0

    return (
        create_scorer(
            id,
            name="Similarity Check",
            description=f'Checks string similarity to "{expected}"',
            type="agent",
        )
        .preprocess(preprocess)
        .generate_score(generate_score)
    )


def called_tool(name: str, times: int = 1, *, id: str = "check-called-tool") -> Scorer:
    """Passes when the tool ``name`` (exact, case-sensitive) was called at least ``times`` times
    (1 or more: at least 0 calls could not fail; ``did_not_call`` checks for none).

    A call counts once it was made: its state is 'call', 'result' or 'output-error' (it threw).
    """
    _tool_name("called_tool", "name", name)
    _count("called_tool", "times", times)
    if times == 0:
        raise _invalid(
            "called_tool", "times", "is 0: at least 0 calls always passes; give 1 or more, or "
            "use checks.did_not_call(name) to require that it was not called"
        )  # fmt: skip

    def preprocess(run: Any) -> dict[str, Any]:
        count = extract_tool_calls(_output(run)).tools.count(name)
        return {
            "toolName": name,
            "expectedTimes": times,
            "actualCount": count,
            "passed": count >= times,
        }

    at_least = f" at least {times} times" if times > 1 else ""
    description = f'Checks that "{name}" was called{at_least}'
    return _check(id, "Called Tool Check", description, preprocess, "passed")


def did_not_call(name: str, *, id: str = "check-did-not-call") -> Scorer:
    """Passes when the model never asked for the tool ``name`` (exact, case-sensitive).

    Every call of it counts, whatever became of it: made, waiting for approval or answered,
    denied, cut off mid-stream ('partial-call'); ``unfinished`` counts those that were not made.
    Mastra counts only calls made: an agent stopped at its approval to delete a database passed.
    """
    _tool_name("did_not_call", "name", name)

    def preprocess(run: Any) -> dict[str, Any]:
        asked = _asked_for(run)
        count = [tool for tool, _ in asked].count(name)
        made = sum(1 for tool, state in asked if tool == name and state in CALL_STATES)
        return _with_unfinished({"toolName": name, "count": count, "passed": count == 0}, made)

    description = f'Checks that "{name}" was NOT called'
    return _check(id, "Did Not Call Check", description, preprocess, "passed")


def tool_order(names: Sequence[str], *, id: str = "check-tool-order") -> Scorer:
    """Passes when the tools ``names`` were called in this order, others may come in between.

    Each name must be matched by its own call (``['search', 'search']`` needs two searches); an
    empty list always passes.
    """
    if isinstance(names, str) or not isinstance(names, Sequence):
        raise _invalid(
            "tool_order", "names", f"must be a list of tool names, got {type(names).__name__}"
        )
    expected = list(names)
    for index, name in enumerate(expected):
        _tool_name("tool_order", f"names[{index}]", name)

    def preprocess(run: Any) -> dict[str, Any]:
        tools = extract_tool_calls(_output(run)).tools
        matched = 0
        for tool in tools:
            if matched < len(expected) and tool == expected[matched]:
                matched += 1
        return {
            "actualTools": tools,
            "expectedOrder": list(expected),
            "passed": matched == len(expected),
        }

    description = f"Checks tool call order: [{' → '.join(expected)}]"
    return _check(id, "Tool Order Check", description, preprocess, "passed")


def max_tool_calls(n: int, *, id: str = "check-max-tool-calls") -> Scorer:
    """Passes when the model asked for at most ``n`` tool calls: as ``did_not_call``, a call
    counts whatever became of it (``unfinished``: those not made)."""
    _count("max_tool_calls", "n", n)

    def preprocess(run: Any) -> dict[str, Any]:
        asked = _asked_for(run)
        made = sum(1 for _, state in asked if state in CALL_STATES)
        return _with_unfinished({"count": len(asked), "max": n, "passed": len(asked) <= n}, made)

    description = f"Checks that no more than {n} tool calls were made"
    return _check(id, "Max Tool Calls Check", description, preprocess, "passed")


def used_no_tools(*, id: str = "check-used-no-tools") -> Scorer:
    """Passes when the model asked for no tool: as ``did_not_call``, a call counts whatever
    became of it (``unfinished``: those not made)."""

    def preprocess(run: Any) -> dict[str, Any]:
        asked = _asked_for(run)
        made = sum(1 for _, state in asked if state in CALL_STATES)
        return _with_unfinished({"count": len(asked), "passed": not asked}, made)

    description = "Checks that no tools were called"
    return _check(id, "Used No Tools Check", description, preprocess, "passed")


def no_tool_errors(*, id: str = "check-no-tool-errors") -> Scorer:
    """Passes when no tool invocation failed (``evaldag.transcripts.is_tool_error``).

    Every invocation counts towards ``totalCalls``, unfinished ones ('partial-call') included; one
    left in state 'call' never returned, so it is an error.
    """

    def preprocess(run: Any) -> dict[str, Any]:
        invocations = tool_invocations(_output(run))
        errors = sum(1 for invocation in invocations if is_tool_error(invocation))
        return {"errorCount": errors, "totalCalls": len(invocations), "passed": errors == 0}

    description = "Checks that no tool calls resulted in errors"
    return _check(id, "No Tool Errors Check", description, preprocess, "passed")


# --- spans (items read from traces: ``evaldag.read_traces`` gives each its ``spans``) --------


def has_span(
    name: str = "*",
    *,
    attributes: Mapping[str, Any] | None = None,
    parent: str | None = None,
    child: str | None = None,
    id: str = "check-has-span",
) -> Scorer:
    """Passes when a span of the trace matches: named like ``name`` (a glob such as
    ``"execute_tool delete_*"``), holding ``attributes`` (values, or functions of the value),
    under a span named like ``parent``, over one named like ``child``."""
    query = checked_query("has_span", name, attributes, parent, child)
    description = f"Checks that there are {query.describe()}"
    return _span_check(id, "Has Span Check", description, query, lambda found: len(found) > 0)


def no_span(
    name: str,
    *,
    attributes: Mapping[str, Any] | None = None,
    parent: str | None = None,
    child: str | None = None,
    id: str = "check-no-span",
) -> Scorer:
    """Passes when no span of the trace matches (as in :func:`has_span`)."""
    query = checked_query("no_span", name, attributes, parent, child)
    description = f"Checks that there are no {query.describe()}"
    return _span_check(id, "No Span Check", description, query, lambda found: not found)


def span_count(
    name: str = "*",
    *,
    min: int = 0,
    max: int | None = None,
    attributes: Mapping[str, Any] | None = None,
    id: str = "check-span-count",
) -> Scorer:
    """Passes when between ``min`` and ``max`` spans of the trace match."""
    query = checked_query("span_count", name, attributes, None, None)
    _count("span_count", "min", min)
    if max is not None:
        _count("span_count", "max", max)
        if max < min:
            raise _invalid("span_count", "max", f"is {max}, below min ({min}): no count passes")
    bounds = f"{min} to {max}" if max is not None else f"at least {min}"

    def counted(found: list[Mapping[str, Any]]) -> bool:
        return min <= len(found) and (max is None or len(found) <= max)

    description = f"Checks that {bounds} {query.describe()} exist"
    return _span_check(id, "Span Count Check", description, query, counted)


def no_error_spans(name: str = "*", *, id: str = "check-no-error-spans") -> Scorer:
    """Passes when no span of the trace named like ``name`` ended in error."""
    query = checked_query("no_error_spans", name, None, None, None)

    def none_failed(found: list[Mapping[str, Any]]) -> bool:
        return not any(span.get("status") == "ERROR" for span in found)

    description = f"Checks that no {query.describe()} ended in error"
    return _span_check(id, "No Error Spans Check", description, query, none_failed)


def max_span_duration(
    max_ms: float, name: str = "*", *, id: str = "check-max-span-duration"
) -> Scorer:
    """Passes when every span of the trace named like ``name`` took at most ``max_ms``
    milliseconds (and there is at least one such span); a matched span that recorded no end
    is the item's error."""
    query = checked_query("max_span_duration", name, None, None, None)
    if isinstance(max_ms, bool) or not isinstance(max_ms, int | float) or not max_ms >= 0:
        raise _invalid("max_span_duration", "max_ms", f"must be a number >= 0, got {max_ms!r}")

    def fast(found: list[Mapping[str, Any]]) -> bool:
        return bool(found) and all(_duration_ms(span, id) <= max_ms for span in found)

    description = f"Checks that {query.describe()} take at most {max_ms:g} ms"
    return _span_check(id, "Max Span Duration Check", description, query, fast)


def _span_check(
    id: str,
    name: str,
    description: str,
    query: SpanQuery,
    passes: Callable[[list[Mapping[str, Any]]], bool],
) -> Scorer:
    def preprocess(run: Any) -> dict[str, Any]:
        found = matching_spans(getattr(run, "spans", None), query, id)
        return {
            "matched": [
                {
                    "name": span.get("name"),
                    "spanId": span.get("span_id"),
                    "status": span.get("status"),
                    "durationMs": span.get("duration_ms"),
                }
                for span in found
            ],
            "count": len(found),
            "passed": passes(found),
        }

    def generate_score(preprocess_step_result: dict[str, Any]) -> int:
        return 1 if preprocess_step_result["passed"] else 0

    return (
        create_scorer(id, name=name, description=description, type="trajectory", columns=("spans",))
        .preprocess(preprocess)
        .generate_score(generate_score)
    )


def _duration_ms(span: Mapping[str, Any], check: str) -> float:
    """How long a span took; one that recorded no end (Mastra's ``endedAt: null``, OTLP's
    ``endTimeUnixNano`` missing) took an unknown time, which no bound may count as 0."""
    duration = span.get("duration_ms")
    if duration is None:
        raise EvalDagError(
            "EVALDAG_INVALID_SPANS",
            f"{check}: span {span.get('name')!r} ({span.get('span_id')}) has no duration (no end "
            "time was recorded: it had not ended when the trace was read), so whether it took "
            "at most the limit is unknown; score the trace once its spans have ended",
            details={"field": "run.spans", "span_id": span.get("span_id")},
        )
    return duration


def _check(
    id: str,
    name: str,
    description: str,
    preprocess: Callable[..., dict[str, Any]],
    passed_key: str,
) -> Scorer:
    def generate_score(preprocess_step_result: dict[str, Any]) -> int:
        return 1 if preprocess_step_result[passed_key] else 0

    return (
        create_scorer(id, name=name, description=description, type="agent")
        .preprocess(preprocess)
        .generate_score(generate_score)
    )


def _output(run: Any) -> Any:
    """``run.output``, which must be something messages can be read from."""
    return checked_transcript(run.output, "a check")


def _asked_for(run: Any) -> list[tuple[str, Any]]:
    """Each tool the model asked for, with its call's state, in order."""
    return [
        (invocation["toolName"], invocation.get("state"))
        for invocation in tool_invocations(_output(run))
        if isinstance(invocation, dict) and invocation.get("toolName")
    ]


def _with_unfinished(found: dict[str, Any], made: int) -> dict[str, Any]:
    """``found``, with how many of its ``count`` calls were not made, when some were not."""
    if found["count"] > made:
        found["unfinished"] = found["count"] - made
    return found


def _assistant_text(run: Any, separator: str) -> str:
    return separator.join(extract_agent_response_messages(_output(run)))


def _everything_said(run: Any) -> str:
    """Every text of the assistant messages (``said_texts``), joined by a space."""
    return " ".join(said_texts(run_messages(_output(run), "assistant")))


def _folded(output: str, target: str, ignore_case: bool) -> tuple[str, str]:
    return (output.lower(), target.lower()) if ignore_case else (output, target)


def _text(check: str, argument: str, value: Any) -> None:
    if not isinstance(value, str):
        raise _invalid(check, argument, f"must be a string, got {type(value).__name__}")


def _tool_name(check: str, argument: str, value: Any) -> None:
    if not isinstance(value, str) or not value:
        raise _invalid(check, argument, f"must be a tool name (a non-empty string), got {value!r}")


def _flag(check: str, argument: str, value: Any) -> None:
    if not isinstance(value, bool):
        raise _invalid(check, argument, f"must be True or False, got {value!r}")


def _count(check: str, argument: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _invalid(check, argument, f"must be a whole number, 0 or more, got {value!r}")


def _invalid(check: str, argument: str, problem: str) -> EvalDagError:
    return EvalDagError(
        "EVALDAG_INVALID_CHECK_ARGUMENT",
        f"checks.{check}: {argument} {problem}",
        details={"check": check, "argument": argument},
    )
