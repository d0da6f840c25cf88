"""Throughput of the five text scorers through `run_evals`: the 300 public text pairs repeated to
10,000 items, one scorer per run, agent-shaped runs (one user message in, one assistant out).

Mastra's completeness scores 38–54 items/s on this machine (runEvals, shared/oracle/README.md);
ours must do at least 10× that, the other scorers at least 5,000 items/s. Prints the figures
(wall-clock items/s, and items per CPU-second of this process, which other jobs on the machine
disturb less) and writes `benchmarks/results/text_scorers.json` with the load average.

Completeness remembers the elements of the sentences it has read, so on the repeated public pairs
it mostly reads its memory; "completeness, distinct texts" scores the 1,200 held-out prose pairs
(`tests/fixtures/code_scorers/completeness-prose.heldout*.json`) with that memory emptied first.

    python benchmarks/text_scorers.py [--items 10000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "code_scorers"
PAIRS = FIXTURES / "text-pairs.public.json"
PROSE = [FIXTURES / f"completeness-prose.{part}.json" for part in ("heldout", "heldout-long")]
MASTRA_COMPLETENESS_ITEMS_PER_S = (38, 54)
TARGETS = {"completeness": 10 * MASTRA_COMPLETENESS_ITEMS_PER_S[1]}
OTHER_TARGET = 5_000


def _message(role: str, text: str) -> dict:
    return {"role": role, "content": {"format": 2, "parts": [{"type": "text", "text": text}]}}


def _items(pairs: list[dict]) -> list[dict]:
    return [
        {
            "input": {"inputMessages": [_message("user", pair["input"])]},
            "output": [_message("assistant", pair["output"])],
        }
        for pair in pairs
    ]


def dataset(items: int) -> list[dict]:
    pairs = json.loads(PAIRS.read_text(encoding="utf-8"))
    return _items([pairs[i % len(pairs)] for i in range(items)])


def prose_dataset() -> list[dict]:
    """The held-out prose pairs, each once."""
    return _items([pair for path in PROSE for pair in json.loads(path.read_text("utf-8"))])


def items_per_second(scorer, data: list[dict], repeats: int, before=None) -> dict[str, float]:
    """Median items/s of `run_evals(data, scorers=[scorer])` over `repeats` runs, by wall clock
    and by this process's CPU time (steadier when other jobs share the machine); `before` is
    called before each run."""
    from evaldag import run_evals

    wall, cpu = [], []
    for _ in range(repeats):
        if before is not None:
            before()
        start, start_cpu = time.perf_counter(), time.process_time()
        result = run_evals(data, scorers=[scorer], progress=False)
        wall.append(len(data) / (time.perf_counter() - start))
        cpu.append(len(data) / (time.process_time() - start_cpu))
        assert result.summary.total_items == len(data), result.summary
        assert not result.summary.errors, result.summary.errors
    return {"wall": statistics.median(wall), "cpu": statistics.median(cpu), "best": max(wall)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    from evaldag import scorers

    data = dataset(args.items)
    factories = {
        "completeness": scorers.completeness,
        "content-similarity": scorers.content_similarity,
        "keyword-coverage": scorers.keyword_coverage,
        "textual-difference": scorers.textual_difference,
        "tone": scorers.tone,
    }
    report: dict = {
        "machine": f"{platform.machine()}, Python {platform.python_version()}",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "items": args.items,
        "repeats": args.repeats,
        "mastra_completeness_items_per_s": MASTRA_COMPLETENESS_ITEMS_PER_S,
        "scorers": {},
    }
    report["load_average_before"] = os.getloadavg()
    for name, factory in factories.items():
        rates = items_per_second(factory(), data, args.repeats)
        target = TARGETS.get(name, OTHER_TARGET)
        report["scorers"][name] = {
            "items_per_s": round(rates["wall"]),
            "best_items_per_s": round(rates["best"]),
            "items_per_cpu_s": round(rates["cpu"]),
            "target_items_per_s": target,
            "meets_target": rates["wall"] >= target,
        }
        print(
            f"{name:20s} {rates['wall']:7.0f} items/s (best {rates['best']:.0f}, "
            f"{rates['cpu']:.0f} per CPU-second), target {target}"
        )
    from evaldag.scorers import _nlp

    prose = prose_dataset()
    rates = items_per_second(scorers.completeness(), prose, args.repeats, _nlp.forget_sentences)
    report["scorers"]["completeness, distinct texts"] = {
        "items": len(prose),
        "items_per_s": round(rates["wall"]),
        "best_items_per_s": round(rates["best"]),
        "items_per_cpu_s": round(rates["cpu"]),
    }
    print(
        f"{'completeness, distinct texts':20s} {rates['wall']:7.0f} items/s "
        f"(best {rates['best']:.0f}, {rates['cpu']:.0f} per CPU-second), {len(prose)} items"
    )
    report["load_average_after"] = os.getloadavg()
    out = ROOT / "benchmarks" / "results" / "text_scorers.json"
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
