"""Time and memory of the five text scorers on one big cell: an output of 10 KB, 100 KB, 1 MB and
50 MB (the input a sentence), as prose (a full stop every 18 words) and as text without sentence
breaks, both of words drawn at random from the held-out prose fixtures (so no sentence repeats).

Each case runs in its own interpreter (peak RSS is the process's, the imports' included; "before"
is the RSS with everything imported and the model loaded, before the text is built). A text over
the scorer's ``max_chars`` (1,000,000 by default) is refused as the row's error: the 50 MB cells
show what that costs. Mastra's completeness runs on the smaller cells side by side, through
``benchmarks/mastra_workloads.cjs`` (its other text scorers have no sentence tagging to be
quadratic in).

    python benchmarks/big_cells.py [--sizes 10000 100000 1000000 50000000] [--mastra-timeout 600]

Writes ``benchmarks/results/big_cells.json`` and the big-cells section of ``RESULTS.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"
PROSE = ROOT / "tests" / "fixtures" / "code_scorers" / "completeness-prose.heldout-long.json"
SCORERS = ["completeness", "content_similarity", "keyword_coverage", "textual_difference", "tone"]
KINDS = {"prose": 18, "unpunctuated": 0}
INPUT = "Summarise the report on river levels and the weather in Paris."


def text(size: int, full_stop_every: int, seed: int = 27) -> str:
    """``size`` characters of words from the held-out prose, a full stop after every
    ``full_stop_every``-th (none when 0)."""
    pairs = json.loads(PROSE.read_text(encoding="utf-8"))
    words = [w for pair in pairs for w in pair["input"].split() if w.strip(".!?")]
    words = [w.strip(".!?") for w in words]
    pick = random.Random(seed).choice
    parts, length = [], 0
    while length < size:
        word = pick(words)
        if full_stop_every and len(parts) % full_stop_every == full_stop_every - 1:
            word += "."
        parts.append(word)
        length += len(word) + 1
    return " ".join(parts)[:size]


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def case(scorer: str, kind: str, size: int) -> dict:
    """One scorer on one big output, in this process."""
    from evaldag import ScorerRunError, scorers
    from evaldag.scorers._nlp._model import model

    model()
    made = getattr(scorers, scorer)()
    made.run(input=INPUT, output="A warm-up.")
    before = _rss_mb()
    output = text(size, KINDS[kind])
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        outcome = {"score": made.run(input=INPUT, output=output).score}
    except ScorerRunError as error:
        outcome = {"refused": error.message}
    return {
        "scorer": scorer, "kind": kind, "size": size, **outcome,
        "wall_s": time.perf_counter() - wall, "cpu_s": time.process_time() - cpu,
        "rss_before_mb": before, "peak_rss_mb": _rss_mb(),
    }  # fmt: skip


def measured(scorer: str, kind: str, size: int) -> dict:
    done = subprocess.run(
        [sys.executable, __file__, "--case", scorer, kind, str(size)],
        capture_output=True, text=True, check=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src"), "LITELLM_OFFLINE_MODE": "true"},
    )  # fmt: skip
    return json.loads(done.stdout.strip().splitlines()[-1])


def mastra_completeness(kind: str, size: int, timeout: float) -> dict:
    """Mastra's completeness on the same cell (its warm-up scores a short pair first)."""
    sys.path.insert(0, str(BENCHMARKS))
    from vs_mastra import mastra_packages, node

    pairs = [{"input": INPUT, "output": text(size, KINDS[kind])}, {"input": INPUT, "output": "A."}]
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as file:
        json.dump(pairs, file)
    env = {**os.environ, "NODE_PATH": str(mastra_packages()), "MASTRA_TELEMETRY_DISABLED": "1"}
    try:
        done = subprocess.run(
            [node(), str(BENCHMARKS / "mastra_workloads.cjs"), "text:completeness", "1", file.name],
            capture_output=True, text=True, timeout=timeout, env=env,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return {"kind": kind, "size": size, "timed_out_s": timeout}
    finally:
        Path(file.name).unlink()
    found = json.loads(done.stdout.strip().splitlines()[-1])
    return {"kind": kind, "size": size, "score": found["item_scores"][0], "wall_s": found["wall_s"],
            "cpu_s": found["cpu_s"]}  # fmt: skip


def _size(size: int) -> str:
    return f"{size // 1_000_000} MB" if size >= 1_000_000 else f"{size // 1000} KB"


def markdown(report: dict) -> str:
    lines = [
        (
            f"Measured {report['measured']} on {report['machine']} (load average "
            f"{report['load']} before the run). One output cell of the size shown, the input one "
            "sentence; each case in a fresh interpreter. CPU is the scoring call's; RSS before "
            "is with everything imported and the model loaded; peak is the process's peak."
        ),
        "",
        "| scorer | text | size | outcome | wall s | CPU s | RSS before MB | peak RSS MB |",
        "|---|---|---:|---|---:|---:|---:|---:|",
    ]
    for row in report["evaldag"]:
        outcome = f"{row['score']:.4f}" if "score" in row else "refused (max_chars)"
        lines.append(
            f"| {row['scorer']} | {row['kind']} | {_size(row['size'])} | {outcome} | "
            f"{row['wall_s']:.2f} | {row['cpu_s']:.2f} | {row['rss_before_mb']:.0f} | "
            f"{row['peak_rss_mb']:.0f} |"
        )
    if report["mastra"]:
        lines += ["", "Mastra's completeness on the same cells (`mastra_workloads.cjs`):", ""]
        lines += ["| text | size | score | wall s | CPU s |", "|---|---:|---|---:|---:|"]
        for row in report["mastra"]:
            if "timed_out_s" in row:
                lines.append(f"| {row['kind']} | {_size(row['size'])} | stopped after "
                             f"{row['timed_out_s']:.0f} s | | |")  # fmt: skip
            else:
                lines.append(f"| {row['kind']} | {_size(row['size'])} | {row['score']:.4f} | "
                             f"{row['wall_s']:.2f} | {row['cpu_s']:.2f} |")  # fmt: skip
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", nargs=3, metavar=("SCORER", "KIND", "SIZE"))
    parser.add_argument("--sizes", nargs="+", type=int,
                        default=[10_000, 100_000, 1_000_000, 50_000_000])  # fmt: skip
    parser.add_argument("--scorers", nargs="+", default=SCORERS)
    parser.add_argument("--mastra-sizes", nargs="*", type=int, default=[10_000, 100_000])
    parser.add_argument("--mastra-timeout", type=float, default=600)
    parser.add_argument(
        "--evaldag-rows",
        type=Path,
        help="take evaldag's rows from the JSON lines an earlier run printed",
    )
    args = parser.parse_args()
    if args.case:
        scorer, kind, size = args.case
        print(json.dumps(case(scorer, kind, int(size))))
        return
    sys.path.insert(0, str(BENCHMARKS))
    from results_md import markers, write_section

    report = {
        "measured": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": f"{os.cpu_count()} cores, Python {sys.version.split()[0]}",
        "load": ", ".join(f"{x:.1f}" for x in os.getloadavg()),
        "evaldag": [],
        "mastra": [],
    }
    if args.evaldag_rows:
        lines = args.evaldag_rows.read_text().splitlines()
        report["evaldag"] = [json.loads(line) for line in lines if line.startswith('{"scorer"')]
        report["evaldag"].sort(key=lambda row: (SCORERS.index(row["scorer"]), row["kind"]))
    for scorer in [] if args.evaldag_rows else args.scorers:
        for kind in KINDS if scorer == "completeness" else ["prose"]:
            for size in args.sizes:
                report["evaldag"].append(row := measured(scorer, kind, size))
                print(json.dumps(row), flush=True)
    for kind in KINDS:
        for size in args.mastra_sizes:
            report["mastra"].append(row := mastra_completeness(kind, size, args.mastra_timeout))
            print(json.dumps(row), flush=True)
    report["load_after"] = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    (BENCHMARKS / "results" / "big_cells.json").write_text(json.dumps(report, indent=1) + "\n")
    body = markdown(report) + f"\n\nLoad average after the run: {report['load_after']}."
    start, end = markers("big_cells")
    heading = "## Big cells (`benchmarks/big_cells.py`)"
    write_section("big_cells", f"{start}\n{heading}\n\n{body}\n{end}")


if __name__ == "__main__":
    main()
