"""Throughput of the five text scorers through `run_evals`: the 300 public text pairs repeated to
10,000 items, one scorer per run, agent-shaped runs (one user message in, one assistant out).

Mastra's completeness scores 38–54 items/s on this machine (runEvals, shared/oracle/README.md);
ours must do at least 10× that, the other scorers at least 5,000 items/s. Prints the figures and
writes `benchmarks/results/text_scorers.json`.

    python benchmarks/text_scorers.py [--items 10000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAIRS = ROOT / "tests" / "fixtures" / "code_scorers" / "text-pairs.public.json"
MASTRA_COMPLETENESS_ITEMS_PER_S = (38, 54)
TARGETS = {"completeness": 10 * MASTRA_COMPLETENESS_ITEMS_PER_S[1]}
OTHER_TARGET = 5_000


def _message(role: str, text: str) -> dict:
    return {"role": role, "content": {"format": 2, "parts": [{"type": "text", "text": text}]}}


def dataset(items: int) -> list[dict]:
    pairs = json.loads(PAIRS.read_text(encoding="utf-8"))
    return [
        {
            "input": {"inputMessages": [_message("user", pair["input"])]},
            "output": [_message("assistant", pair["output"])],
        }
        for pair in (pairs[i % len(pairs)] for i in range(items))
    ]


def items_per_second(scorer, data: list[dict], repeats: int) -> tuple[float, float]:
    """Best and median items/s of `run_evals(data, scorers=[scorer])` over `repeats` runs."""
    from evaldag import run_evals

    rates = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = run_evals(data, scorers=[scorer], progress=False)
        elapsed = time.perf_counter() - start
        assert result.summary.total_items == len(data), result.summary
        assert not result.summary.errors, result.summary.errors
        rates.append(len(data) / elapsed)
    rates.sort()
    return rates[-1], rates[len(rates) // 2]


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
    for name, factory in factories.items():
        best, median = items_per_second(factory(), data, args.repeats)
        target = TARGETS.get(name, OTHER_TARGET)
        report["scorers"][name] = {
            "best_items_per_s": round(best),
            "median_items_per_s": round(median),
            "target_items_per_s": target,
            "meets_target": median >= target,
        }
        print(f"{name:20s} {median:9.0f} items/s median ({best:.0f} best), target {target}")
    out = ROOT / "benchmarks" / "results" / "text_scorers.json"
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
