"""Score an agent's tool use: tool checks as gates, tool-call accuracy with a threshold.

The gates see each whole agent run (a forbidden tool must not hide anywhere); tool-call accuracy
sees the run through ``filter_run``, trimmed to the tools the task is about, so that bookkeeping
tools (memory, logging) do not count against a strict expected order.
"""

import logging
from typing import Any

from hamilton import contrib
from hamilton.function_modifiers import config

logger = logging.getLogger(__name__)

with contrib.catch_import_errors(__name__, __file__, logger):
    import pandas as pd

    import evaldag
    from evaldag import EvalResult, Scorer, ScorerWithThreshold, checks, filter_run
    from evaldag._scorer.run_filter import RunFilter
    from evaldag.messages import as_run_input, as_run_output
    from evaldag.scorers import tool_call_accuracy


def raw_agent_runs(agent_runs_path: str) -> pd.DataFrame:
    """The agent runs as stored: a JSON Lines file with ``input`` and ``output`` per line.

    ``input`` is the user's prompt (or Mastra's ``{"inputMessages": ...}``); ``output`` is the
    agent's messages, as Mastra stores them or in the compact form ``{"role": "assistant",
    "content": "...", "toolInvocations": [{"toolName": ..., "args": ..., "result": ...}]}``.
    """
    return pd.read_json(agent_runs_path, lines=True, dtype=False)


def agent_runs(raw_agent_runs: pd.DataFrame) -> pd.DataFrame:
    """The runs with ``input`` and ``output`` in Mastra's message shape, other columns kept."""
    runs = raw_agent_runs.copy()
    runs["input"] = [as_run_input(value).to_dict() for value in runs["input"]]
    runs["output"] = [[m.to_dict() for m in as_run_output(value)] for value in runs["output"]]
    return runs


def run_filter(scored_tools: list[str] | None = None) -> RunFilter:
    """What tool-call accuracy sees of a run: only calls to tools named with these prefixes.

    :param scored_tools: tool-name prefixes the task is about; None keeps every tool call.
    """
    return filter_run(tool_names=scored_tools, drop_request_context=True)


def _scoped(scorer: Scorer, prepare_run: RunFilter) -> Scorer:
    """``scorer`` with ``prepare_run`` applied to each run before its steps."""
    return Scorer(
        scorer.id,
        name=scorer.name,
        description=scorer.description,
        type=scorer.type,
        judge=scorer.judge,
        prepare_run=prepare_run,
        steps=scorer.steps,
    )


@config.when_not(tool_check="order")
def tool_call_scorer__tool(
    run_filter: RunFilter,
    expected_tool: str,
    strict_mode: bool = False,
    min_tool_call_accuracy: float = 0.9,
) -> ScorerWithThreshold:
    """Tool-call accuracy: was ``expected_tool`` called (in strict mode: the only call)?"""
    scorer = tool_call_accuracy(expected_tool=expected_tool, strict_mode=strict_mode)
    return _scoped(scorer, run_filter).with_threshold(min_tool_call_accuracy)


@config.when(tool_check="order")
def tool_call_scorer__order(
    run_filter: RunFilter,
    expected_tool_order: list[str],
    strict_mode: bool = False,
    min_tool_call_accuracy: float = 0.9,
) -> ScorerWithThreshold:
    """Tool-call accuracy: were the tools called in ``expected_tool_order``?

    :param strict_mode: the calls must be exactly this list, nothing in between.
    """
    scorer = tool_call_accuracy(expected_tool_order=expected_tool_order, strict_mode=strict_mode)
    return _scoped(scorer, run_filter).with_threshold(min_tool_call_accuracy)


def tool_gates(forbidden_tools: list[str] | None = None, max_calls: int = 10) -> list[Scorer]:
    """Checks every run must pass: no failed tool call, no forbidden tool, at most ``max_calls``.

    :param forbidden_tools: tools the agent must never call (one gate each).
    """
    gates = [checks.no_tool_errors(), checks.max_tool_calls(max_calls)]
    gates += [
        checks.did_not_call(name, id=f"check-did-not-call-{name}") for name in forbidden_tools or []
    ]
    return gates


def eval_result(
    agent_runs: pd.DataFrame, tool_call_scorer: ScorerWithThreshold, tool_gates: list[Scorer]
) -> EvalResult:
    """Every run scored by tool-call accuracy and checked by every gate."""
    return evaldag.run_evals(agent_runs, scorers=[tool_call_scorer], gates=tool_gates)


def verdict(eval_result: EvalResult) -> str:
    """``failed`` if a gate failed, ``scored`` if accuracy missed its threshold, else ``passed``."""
    return eval_result.verdict


def tool_call_accuracy_average(eval_result: EvalResult) -> float:
    """The share of runs whose tool calls were right."""
    return eval_result.scores["code-tool-call-accuracy-scorer"]


def gate_failures(eval_result: EvalResult, tool_gates: list[Scorer]) -> pd.DataFrame:
    """One row per (run, gate) that failed: the user's prompt, the gate and what it found."""
    items = eval_result.items
    rows: list[dict[str, Any]] = []
    for gate in tool_gates:
        failed = items[f"{gate.id}.score"].fillna(0) < 1
        for index in items.index[failed]:
            rows.append(
                {
                    "item": index,
                    "prompt": _prompt(items.at[index, "input"]),
                    "gate": gate.id,
                    "found": items.at[index, f"{gate.id}.steps"],
                    "error": items.at[index, f"{gate.id}.error"],
                }
            )
    return pd.DataFrame(rows, columns=["item", "prompt", "gate", "found", "error"])


def _prompt(run_input: dict[str, Any]) -> str:
    messages = run_input.get("inputMessages") or []
    return messages[0]["content"].get("content", "") if messages else ""


if __name__ == "__main__":
    import sys
    from pathlib import Path

    from hamilton import driver

    dr = (
        driver.Builder()
        .with_modules(sys.modules[__name__])
        .with_config({"tool_check": "order"})
        .build()
    )
    dr.display_all_functions(
        str(Path(__file__).with_name("dag.png")), deduplicate_inputs=True, show_legend=False
    )

    def call(tool: str, result: Any) -> dict[str, Any]:
        """An assistant message with one finished tool call, as Mastra stores it."""
        invocation = {
            "toolCallId": f"call-{tool}",
            "state": "result",
            "toolName": tool,
            "args": {},
            "result": result,
        }
        return {
            "content": "",
            "parts": [{"type": "tool-invocation", "toolInvocation": invocation}],
            "toolInvocations": [invocation],
        }

    runs = pd.DataFrame(
        [
            {
                "input": "Book me a table for two in Lyon tonight",
                "output": [
                    call("memory_read", {}),
                    call("search_restaurants", ["Le Bec"]),
                    call("book_table", {"ok": True}),
                    {"content": "Booked Le Bec for two at 8pm."},
                ],
            },
            {
                "input": "Find a sushi place in Paris and book it",
                "output": [
                    call("book_table", {"ok": False}),
                    call("delete_booking", {"ok": True}),
                    {"content": "I booked a table."},
                ],
            },
        ]
    )
    outputs = dr.execute(
        ["verdict", "tool_call_accuracy_average", "gate_failures"],
        overrides={"raw_agent_runs": runs},
        inputs={
            "expected_tool_order": ["search_restaurants", "book_table"],
            "scored_tools": ["search_", "book_"],
            "strict_mode": True,
            "forbidden_tools": ["delete_booking"],
        },
    )
    print(f"verdict: {outputs['verdict']}, accuracy: {outputs['tool_call_accuracy_average']}")
    print(outputs["gate_failures"][["prompt", "gate", "found"]].to_string())
