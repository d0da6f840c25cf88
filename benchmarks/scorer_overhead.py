"""Engine overhead: `import evaldag`, 10,000 `scorer.run` calls, and one columnar execution.

Mastra's `scorer.run` costs 0.3–0.5 ms per call on this machine (oracle README, Node 22); the
columnar path (`run_evals` over a DataFrame: one execute() for all rows) must be at least 20×
faster per scored item (one scorer on one row). Prints the figures and writes
`benchmarks/results/scorer_overhead.json`.

    python benchmarks/scorer_overhead.py [--runs 10000] [--rows 10000]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

MASTRA_RUN_MS = (0.3, 0.5)  # 2-step scorer.run, Node 22 (shared/oracle/README.md)


def import_seconds(repeats: int = 5) -> float:
    """Median wall time of `python -c "import evaldag"` in a fresh interpreter."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import evaldag"], check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def two_step_scorer(scorer_id: str):
    from evaldag import create_scorer

    return (
        create_scorer(scorer_id)
        .preprocess(lambda run: run.output.lower().split())
        .generate_score(
            lambda run, preprocess_step_result: float(run.input.lower() in preprocess_step_result)
        )
    )


def single_runs(n: int) -> dict[str, float]:
    scorer = two_step_scorer("contains")
    scorer.run(input="sun", output="warm")  # builds the scorer's driver once
    start = time.perf_counter()
    for i in range(n):
        scorer.run(input="sun", output=f"the sun is out {i}")
    seconds = time.perf_counter() - start
    return {"runs": n, "seconds": seconds, "ms_per_run": seconds / n * 1000}


def columnar(rows: int) -> dict[str, float]:
    """``run_evals`` over a DataFrame: one execute() of the columnar scorer nodes for all rows."""
    import pandas as pd

    from evaldag import run_evals

    scorers = [two_step_scorer(f"s{i}") for i in range(3)]
    dataset = pd.DataFrame(
        {"input": ["sun"] * rows, "output": [f"the sun is out {i}" for i in range(rows)]}
    )
    run_evals(dataset.head(50), scorers=scorers, progress=False)  # warm-up
    wall, cpu = [], []
    for _ in range(3):
        start, start_cpu = time.perf_counter(), time.process_time()
        result = run_evals(dataset, scorers=scorers, progress=False)
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    assert result.scores == {s.id: 1.0 for s in scorers}
    evaluations = rows * len(scorers)
    return {
        "rows": rows,
        "scorers": len(scorers),
        "seconds": wall,
        "cpu_seconds": cpu,
        "rows_per_s": rows / min(wall),
        "us_per_scorer_run": min(wall) / evaluations * 1e6,
        "cpu_us_per_scorer_run": min(cpu) / evaluations * 1e6,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--rows", type=int, default=10_000)
    args = parser.parse_args()

    figures = {
        "machine": f"{platform.machine()}, {platform.processor() or 'cpu'}, Python "
        f"{platform.python_version()}",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "import_evaldag_s": import_seconds(),
        "scorer_run": single_runs(args.runs),
        "columnar": columnar(args.rows),
    }
    best_mastra_us = MASTRA_RUN_MS[0] * 1000
    figures["columnar_speedup_vs_mastra_run"] = (
        best_mastra_us / figures["columnar"]["us_per_scorer_run"]
    )
    figures["scorer_run_speedup_vs_mastra_run"] = (
        MASTRA_RUN_MS[0] / figures["scorer_run"]["ms_per_run"]
    )

    print(f"import evaldag:            {figures['import_evaldag_s']:.2f} s (target < 1.5 s)")
    run = figures["scorer_run"]
    print(
        f"scorer.run x{run['runs']}:     {run['ms_per_run']:.3f} ms/run "
        f"({1000 / run['ms_per_run']:.0f} runs/s; Mastra {MASTRA_RUN_MS[0]}–{MASTRA_RUN_MS[1]} ms)"
    )
    col = figures["columnar"]
    print(
        f"columnar {col['rows']} rows x {col['scorers']} scorers: {min(col['seconds']):.3f} s, "
        f"{col['us_per_scorer_run']:.1f} µs per scorer run ({col['cpu_us_per_scorer_run']:.1f} "
        "µs of CPU) "
        f"= {figures['columnar_speedup_vs_mastra_run']:.0f}x faster than Mastra's best "
        f"(target >= 20x)"
    )
    out = Path(__file__).parent / "results" / "scorer_overhead.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(figures, indent=2) + "\n")
    print(f"written to {out}")


if __name__ == "__main__":
    main()
