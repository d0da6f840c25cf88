"""The cost of a checkpoint's fingerprint: what 20 scorers and a target reach, found per run.

``run_evals(checkpoint=...)`` fingerprints the run before its first batch: evaldag's and
Python's versions, the target, and for each scorer its options, judge settings and what each
step reaches in the user's modules (helpers, classes, module constants, closure values,
recursively). Workload: 10 prebuilt scorers (code, checks, LLM-judged with a judge) and 10
scorers of a user's eval file whose steps call helpers of another module, read module
constants (a word list, a regular expression, a table of weights) and close over options; the
target is a function using helpers of its own. Each repeat builds the plan afresh, as a run
does, so nothing is cached between them. Target: well under 100 ms.

    python benchmarks/checkpoint_fingerprint.py [--repeats 50]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from results_md import write_section

HELPERS = """\
import re

STOP_WORDS = frozenset("a an the of to in on for and or but".split())
TOKEN = re.compile(r"[a-z0-9']+")


def tokens(text):
    return [t for t in TOKEN.findall(str(text).lower()) if t not in STOP_WORDS]


def overlap(left, right):
    a, b = set(tokens(left)), set(tokens(right))
    return len(a & b) / max(1, len(a | b))
"""

EVAL = """\
import evaldag
from evaldag import Judge, scorers as prebuilt
from evaldag import checks

import helpers

WEIGHTS = {{f"word{{i}}": i / 100 for i in range(200)}}
BANNED = ["sorry", "cannot", "as an ai"]


class Rubric:
    scale = 10

    def grade(self, text):
        return min(self.scale, len(helpers.tokens(text))) / self.scale


def _weighted(text):
    return sum(WEIGHTS.get(t, 0.01) for t in helpers.tokens(text))


def _scorer(i, factor):
    rubric = Rubric()

    def preprocess(run):
        return {{"tokens": helpers.tokens(run.output), "weight": _weighted(run.output)}}

    def score(run, preprocess_step_result):
        banned = any(b in str(run.output).lower() for b in BANNED)
        value = helpers.overlap(run.input, run.output) * factor + rubric.grade(run.output)
        return 0.0 if banned else min(1.0, value / (1 + factor))

    return evaldag.create_scorer(f"user-{{i}}").preprocess(preprocess).generate_score(score)


def shout(text):
    return " ".join(helpers.tokens(text)).upper()


def target(input):
    return shout(input)


judge = Judge("openai/gpt-4o-mini", api_key="sk-not-used", temperature=0)
scorers = [_scorer(i, factor=i + 1) for i in range(10)] + [
    prebuilt.completeness(),
    prebuilt.content_similarity(),
    prebuilt.keyword_coverage(),
    prebuilt.textual_difference(),
    prebuilt.tone(),
    prebuilt.faithfulness(judge, context=["Paris is the capital of France."]),
    prebuilt.answer_relevancy(judge),
    prebuilt.toxicity(judge),
]
gates = [checks.includes("Paris"), checks.matches(r"^[A-Z]")]
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=50)
    args = parser.parse_args()

    from evaldag._eval.checkpoint import run_fingerprint
    from evaldag._eval.eval_file import eval_definition
    from evaldag._eval.eval_plan import eval_plan

    folder = Path(tempfile.mkdtemp(prefix="evaldag-fingerprint-"))
    (folder / "helpers.py").write_text(HELPERS)
    (folder / "eval_bench.py").write_text(EVAL.format())
    sys.path.insert(0, str(folder))
    definition = eval_definition(str(folder / "eval_bench.py"))
    count = len(definition.scorers) + len(definition.gates)
    milliseconds, cpu_milliseconds, collected = [], [], []
    full_collections = []  # the garbage collector's full passes (tens of ms in this process)
    gc.callbacks.append(lambda phase, info: phase == "stop" and info["generation"] == 2
                        and full_collections.append(1))  # fmt: skip
    for _ in range(args.repeats):
        plan = eval_plan(definition.scorers, definition.gates, definition.target)
        before = len(full_collections)
        started, cpu_started = time.perf_counter(), time.process_time()
        fingerprint = run_fingerprint(plan)
        milliseconds.append((time.perf_counter() - started) * 1000)
        cpu_milliseconds.append((time.process_time() - cpu_started) * 1000)
        if len(full_collections) > before:
            collected.append(milliseconds[-1])
    parts = sum(len(p) for s in fingerprint["scorers"].values() for p in s.values())
    figures = {
        "machine": f"{platform.machine()}, Python {platform.python_version()}",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "scorers_and_gates": count,
        "parts": parts + sum(len(p) for p in fingerprint["target"].values()),
        "median_ms": statistics.median(milliseconds),
        "median_cpu_ms": statistics.median(cpu_milliseconds),
        "load_average": list(os.getloadavg()),
        "max_ms": max(milliseconds),
        "max_ms_without_full_gc": max(m for m in milliseconds if m not in collected),
        "runs_with_full_gc": collected,
        "first_ms": milliseconds[0],
        "repeats": args.repeats,
    }
    print(
        f"fingerprint of {count} scorers and gates and a target ({figures['parts']} parts): "
        f"median {figures['median_ms']:.1f} ms ({figures['median_cpu_ms']:.1f} ms of CPU), "
        f"first {figures['first_ms']:.1f} ms, slowest "
        f"{figures['max_ms_without_full_gc']:.1f} ms over {args.repeats} runs, "
        f"{len(collected)} run(s) with a full garbage collection: {collected} ms "
        "(target: well under 100 ms)"
    )
    out = Path(__file__).parent / "results" / "checkpoint_fingerprint.json"
    out.write_text(json.dumps(figures, indent=2) + "\n")
    write_section(
        "checkpoint_fingerprint",
        "<!-- checkpoint_fingerprint: start -->\n"
        "## Checkpoint fingerprint (`benchmarks/checkpoint_fingerprint.py`)\n\n"
        f"Measured {figures['date']} ({figures['machine']}): the fingerprint of a run with "
        f"{count} scorers and gates (10 of a user's eval file calling helpers of another module, "
        "reading module constants and closing over options; 8 prebuilt, 3 of them LLM-judged; "
        f"2 checks) and a function target, {figures['parts']} named parts: median "
        f"**{figures['median_ms']:.1f} ms** ({figures['median_cpu_ms']:.1f} ms of CPU; load "
        f"average {figures['load_average'][0]:.1f} on 2 cores), first run "
        f"{figures['first_ms']:.1f} ms, slowest "
        f"{figures['max_ms_without_full_gc']:.1f} ms over {args.repeats} runs, leaving out "
        f"the {len(collected)} during which Python's garbage collector made a full pass over "
        f"the process's objects ({', '.join(f'{m:.0f}' for m in collected)} ms: the "
        "collector's, not the fingerprint's). Target: well under 100 ms.\n"
        "<!-- checkpoint_fingerprint: end -->",
    )
    print(f"written to {out}")


if __name__ == "__main__":
    main()
