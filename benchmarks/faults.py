"""Fault tolerance: 1,000 items x 2 LLM scorers against a judge that fails a third of its calls.

The loopback judge server (``tests/judge_server.py``, in a child process so that its CPU is
not counted as evaldag's) answers each request with a fault drawn from a seeded RNG: 20% 429
with a short ``Retry-After``, 5% 500, 5% malformed JSON (half the time the HTTP body is not
JSON, half the time the judge's answer is not JSON), 2% a reply slower than the judge's
timeout; the rest get a good answer. The scorers are ``evaldag.scorers.faithfulness`` (claims,
verdicts, reason: 3 judge steps) and a relevance scorer built with
``create_scorer(...).analyze(PromptStep(...))``.

Checked: every item comes back exactly once (no row lost or duplicated), every (item, scorer)
has a score or a recorded error, and at least 99% of them scored. Prints the counts and writes
them to ``benchmarks/results/faults.json``; exits with status 1 when a check fails.

    python benchmarks/faults.py [--items 1000] [--seed 7] [--concurrency 32]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import subprocess
import sys
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from judge_server import (  # noqa: E402
    API_KEY,
    MODEL,
    JudgeServer,
    ReceivedRequest,
    Reply,
    hanging,
    malformed_body,
    rate_limited,
    server_error,
)

#: Share of judge requests answered with each fault.
FAULT_RATES = {
    "429": 0.20,
    "500": 0.05,
    "malformed_body": 0.025,
    "malformed_answer": 0.025,
    "timeout": 0.02,
}
RETRY_AFTER_SECONDS = 0.05
JUDGE_TIMEOUT_SECONDS = 1.0
MAX_RETRIES = 6
REQUIRED_SCORED_SHARE = 0.99

CLAIMS = ["The river Aare flows through Bern", "Bern is the Swiss capital"]
VERDICTS = [
    {"claim": claim, "verdict": "yes", "reason": "The context says so."} for claim in CLAIMS
]
RELEVANCE_PROMPT = "Rate how relevant the response is to the question"


class FaultPlan:
    """One seeded draw per judge request: which fault, if any, answers it."""

    def __init__(self, seed: int) -> None:
        self._random = random.Random(seed)
        self._drawn: dict[int, str | None] = {}
        self.counts: Counter[str] = Counter()

    def fault(self, request: ReceivedRequest) -> str | None:
        key = id(request)  # the server keeps every request, so ids are not reused
        if key not in self._drawn:
            draw, fault = self._random.random(), None
            for kind, rate in FAULT_RATES.items():
                if draw < rate:
                    fault = kind
                    break
                draw -= rate
            self._drawn[key] = fault
            self.counts[fault or "ok"] += 1
        return self._drawn[key]

    def rule(self, kind: str):
        return lambda request: self.fault(request) == kind


def faulty_server(plan: FaultPlan) -> JudgeServer:
    """The judge server: faults first, then the answers each scorer's prompts expect."""
    server = JudgeServer()
    faults = {
        "429": rate_limited(RETRY_AFTER_SECONDS),
        "500": server_error(500),
        "malformed_body": malformed_body(),
        "malformed_answer": Reply("Sure! {claims: [the river, Bern]}"),
        "timeout": hanging(JUDGE_TIMEOUT_SECONDS * 3),
    }
    for kind, reply in faults.items():
        server.on(plan.rule(kind), reply)
    server.on("List every claim", {"claims": CLAIMS})
    server.on("Check each claim", {"verdicts": VERDICTS})
    server.on("was scored for faithfulness", "The score is 1 because the context backs both.")
    server.on(RELEVANCE_PROMPT, {"relevance": 0.8})
    return server


def serve(seed: int) -> None:
    """The faulty judge server: prints its URL, serves until stdin closes, prints its counts."""
    plan = FaultPlan(seed)
    with faulty_server(plan) as server:
        print(server.url, flush=True)
        sys.stdin.read()
        requests = len(server.requests)
    counts = {kind: plan.counts[kind] for kind in [*FAULT_RATES, "ok"]}
    print(json.dumps({"requests": requests, "faults": counts}), flush=True)


def started_server(seed: int) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [sys.executable, __file__, "--serve", str(seed)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    return process, process.stdout.readline().strip()


def scorers(url: str) -> list:
    from pydantic import BaseModel

    from evaldag import Judge, PromptStep, create_scorer
    from evaldag.scorers import faithfulness

    class Relevance(BaseModel):
        relevance: float

    settings = {
        "model": f"openai/{MODEL}",
        "api_base": url,
        "api_key": API_KEY,
        "timeout": JUDGE_TIMEOUT_SECONDS,
        "max_retries": MAX_RETRIES,
        "max_concurrency": 32,
        "cache": False,
    }
    relevance = (
        create_scorer("relevance", judge=Judge(instructions="Be strict.", **settings))
        .analyze(
            PromptStep(
                "Rate relevance",
                lambda run: f"{RELEVANCE_PROMPT}.\nQuestion: {run.input}\nResponse: {run.output}",
                output_schema=Relevance,
            )
        )
        .generate_score(lambda analyze_step_result: analyze_step_result["relevance"])
    )
    context = ["Bern is the capital of Switzerland.", "The Aare flows through Bern."]
    return [faithfulness(Judge(**settings), context=context), relevance]


def dataset(n: int):
    import pandas as pd

    return pd.DataFrame(
        {
            "id": [f"item-{i:05d}" for i in range(n)],
            "input": [f"Question {i}: what flows through Bern?" for i in range(n)],
            "output": [f"Answer {i}: the Aare flows through Bern, the capital." for i in range(n)],
        }
    )


def counts(result, data, scorer_ids: list[str]) -> dict:
    """What came back: rows, and scores and errors per scorer."""
    import pandas as pd

    from evaldag._results.item_columns import ScorerColumns, item_states

    items = result.items
    per_scorer = {}
    fully_scored = pd.Series(True, index=items.index)
    for sid in scorer_ids:
        states = item_states(items, sid)
        fully_scored &= states.scored
        per_scorer[sid] = {
            "scored": int(states.scored.sum()),
            "errors": int(states.failed.sum()),
            "neither": int((~states.scored & ~states.failed).sum()),
            "error_messages": dict(Counter(items[ScorerColumns(sid).error].dropna())),
        }
    pairs = len(data) * len(scorer_ids)
    scored_pairs = sum(s["scored"] for s in per_scorer.values())
    return {
        "items_in": len(data),
        "rows_out": len(items),
        "ids_lost": sorted(set(data["id"]) - set(items["id"]))[:20],
        "ids_duplicated": sorted(items["id"][items["id"].duplicated()].unique())[:20],
        "per_scorer": per_scorer,
        "scored_share": scored_pairs / pairs,
        "items_fully_scored": int(fully_scored.sum()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve is not None:
        serve(args.serve)
        return

    from evaldag import run_evals

    data = dataset(args.items)
    server, url = started_server(args.seed)
    try:
        chosen = scorers(url)
        wall, cpu = time.perf_counter(), time.process_time()
        result = run_evals(data, scorers=chosen, concurrency=args.concurrency, progress=False)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    finally:
        served = json.loads(server.communicate("")[0].strip().splitlines()[-1])
    requests = served["requests"]
    figures = counts(result, data, [s.id for s in chosen])
    figures |= {
        "judge_requests": requests,
        "faults_injected": served["faults"],
        "fault_rates": FAULT_RATES,
        "judge": {
            "timeout_s": JUDGE_TIMEOUT_SECONDS,
            "max_retries": MAX_RETRIES,
            "retry_after_s": RETRY_AFTER_SECONDS,
        },
        "concurrency": args.concurrency,
        "seed": args.seed,
        "seconds": wall,
        "cpu_seconds": cpu,
        "machine": f"{platform.machine()}, Python {platform.python_version()}",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    checks = {
        "no_row_lost_or_duplicated": figures["rows_out"] == figures["items_in"]
        and not figures["ids_lost"]
        and not figures["ids_duplicated"],
        "every_pair_scored_or_error": all(
            s["neither"] == 0 for s in figures["per_scorer"].values()
        ),
        "at_least_99_percent_scored": figures["scored_share"] >= REQUIRED_SCORED_SHARE,
    }
    figures["checks"] = checks

    injected = ", ".join(f"{k} {v}" for k, v in figures["faults_injected"].items())
    print(f"{args.items} items x {len(chosen)} LLM scorers, {requests} judge requests "
          f"({injected}) in {wall:.1f} s ({cpu:.1f} CPU s)")  # fmt: skip
    lost, duplicated = len(figures["ids_lost"]), len(figures["ids_duplicated"])
    print(f"rows out {figures['rows_out']} of {figures['items_in']}; "
          f"lost {lost}, duplicated {duplicated}")  # fmt: skip
    for sid, s in figures["per_scorer"].items():
        print(f"  {sid}: scored {s['scored']}, errors {s['errors']}, "
              f"neither {s['neither']}")  # fmt: skip
        for message, count in s["error_messages"].items():
            print(f"    {count} x {message}")
    print(f"scored {figures['scored_share']:.2%} of (item, scorer) pairs; "
          f"{figures['items_fully_scored']} items scored by both")  # fmt: skip
    for name, passed in checks.items():
        print(f"  {'PASS' if passed else 'FAIL'} {name}")
    out = ROOT / "benchmarks" / "results" / "faults.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(figures, indent=2) + "\n")
    print(f"written to {out}")
    if not all(checks.values()):
        sys.exit(1)


if __name__ == "__main__":
    main()
