"""The five text scorers on text neither side has seen, evaldag and Mastra in the same run: the
1,200 held-out prose pairs (``tests/fixtures/code_scorers/completeness-prose.heldout*.json``),
each scored once, through ``run_evals`` and Mastra's ``runEvals`` (agent-shaped items: one user
message in, one assistant message out), item by item scores compared.

Each side runs in a fresh process with a warm-up first on other text (evaldag: 50 fit pairs, so
its sentence memory holds none of the measured sentences; Mastra: 50 pairs from the end of the
file, as ``mastra_workloads.cjs`` does; it has no memory). CPU is the measuring process's
(user + system) around the measured call; the ratio is Mastra's CPU over evaldag's.

Targets (issue 27): completeness at least 20x Mastra, the other text scorers 50x, same scores.
With ``--repeats N`` each side runs N times, alternately, each in a fresh process, and the run
with the least CPU is the figure (on a shared machine Mastra's CPU for the same work moved 2x
between single runs).

    python benchmarks/unseen_text.py [--scorers completeness tone ...] [--items 1200] [--repeats 3]

Writes ``benchmarks/results/unseen_text.json`` and the unseen-text section of ``RESULTS.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"
FIXTURES = ROOT / "tests" / "fixtures" / "code_scorers"
HELD_OUT = [FIXTURES / f"completeness-prose.{part}.json" for part in ("heldout", "heldout-long")]
WARM_UP = FIXTURES / "completeness-prose.fit.json"
SCORERS = {
    "completeness": 20,
    "content-similarity": 50,
    "keyword-coverage": 50,
    "textual-difference": 50,
    "tone": 50,
}


def _pairs(paths: list[Path]) -> list[dict]:
    return [
        {"input": pair["input"], "output": pair["output"]}
        for path in paths
        for pair in json.loads(path.read_text(encoding="utf-8"))
    ]


def _items(pairs: list[dict]) -> list[dict]:
    def message(role: str, text: str) -> dict:
        return {"role": role, "content": {"format": 2, "parts": [{"type": "text", "text": text}]}}

    return [
        {"input": {"inputMessages": [message("user", p["input"])]},
         "output": [message("assistant", p["output"])]}
        for p in pairs
    ]  # fmt: skip


def evaldag_side(scorer: str, items: int) -> dict:
    """This process: the warm-up, then the measured run."""
    from evaldag import run_evals, scorers
    from evaldag._results.item_columns import ScorerColumns

    made = getattr(scorers, scorer.replace("-", "_"))()
    run_evals(_items(_pairs([WARM_UP])[:50]), scorers=[made], progress=False)
    data = _items(_pairs(HELD_OUT)[:items])
    wall, cpu = time.perf_counter(), time.process_time()
    result = run_evals(data, scorers=[made], progress=False)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    column = result.items[ScorerColumns(made.id).score]
    return {"wall_s": wall, "cpu_s": cpu, "item_scores": [float(s) for s in column]}


def _evaldag(scorer: str, items: int) -> dict:
    done = subprocess.run(
        [sys.executable, __file__, "--evaldag-side", scorer, "--items", str(items)],
        capture_output=True, text=True, check=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src"), "LITELLM_OFFLINE_MODE": "true"},
    )  # fmt: skip
    return json.loads(done.stdout.strip().splitlines()[-1])


def _mastra(scorer: str, items: int) -> dict:
    sys.path.insert(0, str(BENCHMARKS))
    from vs_mastra import mastra_packages, node

    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as file:
        json.dump(_pairs(HELD_OUT)[:items], file)
    env = {**os.environ, "NODE_PATH": str(mastra_packages()), "MASTRA_TELEMETRY_DISABLED": "1"}
    try:
        done = subprocess.run(
            [node(), str(BENCHMARKS / "mastra_workloads.cjs"), f"text:{scorer}", str(items),
             file.name],
            capture_output=True, text=True, check=True, env=env,
        )  # fmt: skip
    finally:
        Path(file.name).unlink()
    return json.loads(done.stdout.strip().splitlines()[-1])


def markdown(report: dict) -> str:
    lines = [
        (
            f"Measured {report['measured']} ({report['machine']}; load average "
            f"{report['load']} before, {report['load_after']} after), {report['items']} held-out "
            "prose pairs, each scored once on each side in a run; CPU of the measuring process "
            f"around the measured call, the least of {report.get('repeats', 1)} runs of each "
            "side. Ratio: Mastra's CPU over evaldag's."
        ),
        "",
        (
            "| scorer | Mastra items/s | Mastra CPU s | evaldag items/s | evaldag CPU s | "
            "CPU ratio | target | identical scores |"
        ),
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, row in report["scorers"].items():
        lines.append(
            f"| {name} | {row['mastra_items_per_s']:.0f} | {row['mastra_cpu_s']:.2f} | "
            f"{row['evaldag_items_per_s']:.0f} | {row['evaldag_cpu_s']:.2f} | "
            f"**{row['cpu_ratio']:.1f}x** | {row['target']}x | {row['identical']} / "
            f"{report['items']} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scorers", nargs="+", default=list(SCORERS))
    parser.add_argument("--items", type=int, default=len(_pairs(HELD_OUT)))
    parser.add_argument("--evaldag-side", metavar="SCORER")
    parser.add_argument("--repeats", type=int, default=1, help="runs of each side; least CPU")
    args = parser.parse_args()
    if args.evaldag_side:
        print(json.dumps(evaldag_side(args.evaldag_side, args.items)))
        return
    report: dict = {
        "measured": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": f"{os.cpu_count()} cores, Python {sys.version.split()[0]}",
        "load": ", ".join(f"{x:.1f}" for x in os.getloadavg()),
        "items": args.items,
        "repeats": args.repeats,
        "scorers": {},
    }
    for scorer in args.scorers:
        runs = [(_mastra(scorer, args.items), _evaldag(scorer, args.items))
                for _ in range(args.repeats)]  # fmt: skip
        mastra = min((m for m, _ in runs), key=lambda run: run["cpu_s"])
        ours = min((o for _, o in runs), key=lambda run: run["cpu_s"])
        identical = sum(
            abs(a - b) < 1e-12
            for a, b in zip(mastra["item_scores"], ours["item_scores"], strict=True)
        )
        report["scorers"][scorer] = row = {
            "mastra_items_per_s": args.items / mastra["wall_s"],
            "mastra_cpu_s": mastra["cpu_s"],
            "evaldag_items_per_s": args.items / ours["wall_s"],
            "evaldag_cpu_s": ours["cpu_s"],
            "cpu_ratio": mastra["cpu_s"] / ours["cpu_s"],
            "target": SCORERS[scorer],
            "identical": identical,
        }
        print(scorer, json.dumps(row), flush=True)
    report["load_after"] = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    (BENCHMARKS / "results" / "unseen_text.json").write_text(json.dumps(report, indent=1) + "\n")
    sys.path.insert(0, str(BENCHMARKS))
    from results_md import markers, write_section

    start, end = markers("unseen_text")
    heading = (
        "## Text scorers on unseen text, side by side with Mastra (`benchmarks/unseen_text.py`)"
    )
    write_section("unseen_text", f"{start}\n{heading}\n\n{markdown(report)}\n{end}")


if __name__ == "__main__":
    main()
