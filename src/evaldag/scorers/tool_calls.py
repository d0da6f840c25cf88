"""Tool call accuracy (code): did the agent call the expected tool, or the tools in order?"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evaldag._reader import checked_input_texts, checked_transcript
from evaldag._scorer.builder import Scorer, create_scorer
from evaldag.errors import EvalDagError
from evaldag.scorers._trajectory import unmade_calls
from evaldag.transcripts import extract_tool_calls, run_messages


def _in_order(actual: list[str], expected: Sequence[str], strict: bool) -> bool:
    """Strict: exactly these calls; else each expected tool's first call comes after the
    previous one's."""
    if strict:
        return actual == list(expected)
    positions = []
    for tool in expected:
        if tool not in actual:
            return False
        positions.append(actual.index(tool))
    return all(later > earlier for earlier, later in zip(positions, positions[1:], strict=False))


def tool_call_accuracy(
    expected_tool: str | None = None,
    strict_mode: bool = False,
    expected_tool_order: Sequence[str] | None = None,
    *,
    id: str = "code-tool-call-accuracy-scorer",
) -> Scorer:
    """1 when the output's tool calls are right, else 0 (Mastra's code tool-call accuracy).

    :param expected_tool: the tool that must be called (in strict mode: the only call).
    :param strict_mode: with ``expected_tool_order``, the calls must be exactly that list. A
        call the model asked for that was not made (waiting for approval, denied, cut off
        mid-stream: ``unfinishedTools``) is one more call then, so strict mode fails on it
        (Mastra leaves it out).
    :param expected_tool_order: tools whose first calls must come in this order; when given,
        it decides the score instead of ``expected_tool``.
    """
    if not expected_tool and expected_tool_order is None:
        raise EvalDagError(
            "EVALDAG_INVALID_SCORER_OPTION",
            "Either expectedTool or expectedToolOrder must be provided: pass "
            "tool_call_accuracy(expected_tool='search') or "
            "tool_call_accuracy(expected_tool_order=['search', 'summarize'])",
        )
    order = list(expected_tool_order) if expected_tool_order is not None else None
    if order is not None:
        description = (
            f"Evaluates whether the LLM called tools in the correct order: [{', '.join(order)}]"
        )
    else:
        description = (
            f"Evaluates whether the LLM selected the correct tool ({expected_tool}) from the "
            "available tools"
        )

    def tool_calls(run: Any) -> dict[str, Any]:
        checked_transcript(run.output, "tool_call_accuracy")
        inputs = checked_input_texts(run.input, "tool_call_accuracy")
        if not inputs or not run_messages(run.output, "assistant"):
            raise EvalDagError(
                "EVALDAG_TOOL_CALL_ACCURACY_MISSING_MESSAGES",
                "Input and output messages cannot be null or empty: tool_call_accuracy needs "
                "run.input (a prompt or Mastra input messages) and run.output (the agent's "
                "messages with their tool invocations)",
            )
        calls = extract_tool_calls(run.output)
        actual = list(calls.tools)
        unfinished = unmade_calls(run.output)
        if not expected_tool:
            correct_tool = False
        elif strict_mode:
            correct_tool = actual == [expected_tool] and not unfinished
        else:
            correct_tool = expected_tool in actual
        result: dict[str, Any] = {}
        if expected_tool is not None:
            result["expectedTool"] = expected_tool
        result.update(actualTools=actual, strictMode=strict_mode)
        if order is not None:
            result["expectedToolOrder"] = order
        result.update(
            hasToolCalls=bool(actual),
            correctToolCalled=correct_tool,
            toolCallInfos=[info.to_dict() for info in calls.tool_call_infos],
            correctOrderCalled=(
                _in_order(actual, order, strict_mode) and not (strict_mode and unfinished)
                if order is not None
                else None
            ),
        )
        if unfinished:
            result["unfinishedTools"] = unfinished
        return result

    def accuracy(preprocess_step_result: dict[str, Any]) -> float:
        actual = preprocess_step_result["actualTools"]
        if not actual or (strict_mode and preprocess_step_result.get("unfinishedTools")):
            return 0
        if order:
            return 1 if _in_order(actual, order, strict_mode) else 0
        if not expected_tool:
            return 0
        if strict_mode:
            return 1 if actual == [expected_tool] else 0
        return 1 if expected_tool in actual else 0

    return (
        create_scorer(
            id,
            name="Tool Call Accuracy Scorer",
            description=description,
            type="agent",
        )
        .preprocess(tool_calls)
        .generate_score(accuracy)
    )
