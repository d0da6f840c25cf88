"""Checks over a 10,000-row dataset of agent runs: the check's own steps, and through the engine.

Each row is an agent run as Mastra records it (a user message in; two assistant messages out,
with tool calls in parts and in the legacy array). The same rows are also given as plain strings
and as ``evaldag.messages`` models, which the text helpers read too. Prints the figures and writes
``benchmarks/results/checks_10k.json``. For scale: one Mastra ``scorer.run`` of a two-step scorer
costs 0.3–0.5 ms on this machine (``../shared/oracle/README.md``, Node 22).

    python benchmarks/checks_10k.py [--rows 10000]
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

MASTRA_RUN_MS = (0.3, 0.5)


def agent_row(i: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One run: Mastra's agent input and output JSON."""

    def message(id: str, role: str, parts: list[dict[str, Any]], **content: Any) -> dict:
        return {
            "id": id,
            "role": role,
            "content": {"format": 2, "parts": parts, **content},
            "createdAt": "2025-01-01T00:00:00.000Z",
        }

    def call(call_id: str, name: str, **fields: Any) -> dict[str, Any]:
        return {"state": "result", "toolCallId": call_id, "toolName": name, "args": {}, **fields}

    weather = call(f"c{i}-0", "get_weather", result={"t": 20 + i % 10})
    search = call(f"c{i}-1", "search", result={"hits": i % 3})
    run_input = {
        "inputMessages": [message(f"u{i}", "user", [{"type": "text", "text": f"Weather {i}?"}])],
        "rememberedMessages": [],
        "systemMessages": [],
        "taggedSystemMessages": {},
    }
    output = [
        message(
            f"a{i}",
            "assistant",
            [
                {"type": "step-start"},
                {"type": "tool-invocation", "toolInvocation": weather},
                {"type": "tool-invocation", "toolInvocation": search},
                {"type": "text", "text": f"It is sunny and {20 + i % 10} degrees."},
            ],
            toolInvocations=[weather],
        ),
        message(f"b{i}", "assistant", [{"type": "text", "text": "Anything else?"}]),
    ]
    return run_input, output


def the_checks() -> list:
    from evaldag import checks

    return [
        checks.includes("sunny"),
        checks.similarity("it is sunny and 25 degrees. anything else?"),
        checks.matches(r"\d+ degrees"),
        checks.called_tool("get_weather"),
        checks.tool_order(["get_weather", "search"]),
        checks.no_tool_errors(),
    ]


def datasets(rows: int) -> dict[str, list]:
    from evaldag import ScorerRun
    from evaldag.messages import as_run_input, as_run_output

    mastra = [agent_row(i) for i in range(rows)]
    return {
        "mastra_json": [ScorerRun(input=i, output=o) for i, o in mastra],
        "strings": [
            ScorerRun(input=f"Weather {i}?", output=f"It is sunny and {20 + i % 10} degrees.")
            for i in range(rows)
        ],
        "models": [ScorerRun(input=as_run_input(i), output=as_run_output(o)) for i, o in mastra],
    }


def step_seconds(scorer, runs: list) -> float:
    """Wall time of the check's own steps (preprocess + generate_score) over ``runs``."""
    preprocess, generate_score = (step.definition.fn for step in scorer.steps)
    start = time.perf_counter()
    for run in runs:
        generate_score(preprocess_step_result=preprocess(run=run))
    return time.perf_counter() - start


def engine_seconds(scorers: list, runs: list) -> tuple[float, Any]:
    """Wall time of one columnar execution of all ``scorers`` over ``runs``."""
    import pandas as pd

    from evaldag._graph.drivers import scorers_driver

    dr = scorers_driver(scorers)
    start = time.perf_counter()
    frames = dr.execute(
        [s.id for s in scorers], inputs={"runs": pd.Series(runs, dtype=object), "concurrency": 1}
    )
    return time.perf_counter() - start, frames


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000)
    args = parser.parse_args()

    scorers = the_checks()
    data = datasets(args.rows)
    figures: dict[str, Any] = {
        "machine": f"{platform.machine()}, Python {platform.python_version()}",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "rows": args.rows,
        "steps_us_per_run": {},
        "engine": {},
    }
    for shape, runs in data.items():
        figures["steps_us_per_run"][shape] = {
            scorer.id: step_seconds(scorer, runs) / len(runs) * 1e6 for scorer in scorers
        }
    for shape in ("mastra_json", "strings"):
        seconds, frames = engine_seconds(scorers, data[shape])
        assert all(frames[s.id]["error"].isna().all() for s in scorers), "a check failed a run"
        figures["engine"][shape] = {
            "checks": len(scorers),
            "seconds": seconds,
            "rows_per_s": args.rows / seconds,
            "us_per_check_run": seconds / (args.rows * len(scorers)) * 1e6,
        }
    figures["mastra_scorer_run_ms"] = list(MASTRA_RUN_MS)
    scores = frames["check-includes"]["score"]
    assert scores.eq(1.0).all()

    print(f"{args.rows} rows; each check's own steps, µs per run:")
    for shape, per_check in figures["steps_us_per_run"].items():
        cells = ", ".join(
            f"{check.removeprefix('check-')} {us:.1f}" for check, us in per_check.items()
        )
        print(f"  {shape:12} {cells}")
    for shape, engine in figures["engine"].items():
        print(
            f"engine, {engine['checks']} checks, {shape}: {engine['seconds']:.2f} s = "
            f"{engine['rows_per_s']:.0f} rows/s, {engine['us_per_check_run']:.1f} µs per check run "
            f"(Mastra's scorer.run: {MASTRA_RUN_MS[0] * 1000:.0f}–{MASTRA_RUN_MS[1] * 1000:.0f} µs)"
        )
    out = Path(__file__).parent / "results" / "checks_10k.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(figures, indent=2) + "\n")
    print(f"written to {out}")


if __name__ == "__main__":
    main()
