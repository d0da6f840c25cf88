"""One judge limit for a whole cluster: LLM-scored items on Dask and Ray against the fake judge.

Each executor gets a real local cluster with 2 worker processes (``distributed.LocalCluster``;
Ray with 2 CPUs). The judge is the scripted server of the tests (``tests/judge_server.py``, in
this process, answering after ``--latency`` seconds), which counts the requests in flight. Two
runs per executor, one scorer with one prompt step, ``max_concurrency`` for the whole cluster:

- ``limit``: every reply a score: the most calls in flight at once (must never pass
  ``max_concurrency``) and the share of the ideal throughput the limit allows
  (``max_concurrency / latency`` calls/s; target 0.85);
- ``storm``: ``--storm`` of the replies are 429s with ``Retry-After: 0.05``: items lost (not
  scored) must be 0, and the limit's lowest point shows the coordinator's cuts.

The figures go to ``benchmarks/RESULTS.md`` (its "cluster" section)::

    python benchmarks/cluster_judge_limit.py [--items 100000] [--latency 0.05]
        [--max-concurrency 64] [--storm 0.3] [--executors dask ray] [--runs limit storm]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "tests"), str(ROOT / "benchmarks")]
os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")

from judge_server import JudgeServer, Reply, rate_limited  # noqa: E402
from results_md import markers, write_section  # noqa: E402

from evaldag import PromptStep, create_scorer, run_evals  # noqa: E402

TARGET_RATIO = 0.85


def judged(server: JudgeServer, max_concurrency: int) -> Any:
    """The LLM scorer of these benchmarks: one prompt step, the whole cluster's limit."""
    judge = server.judge(
        instructions="Grade it.", transport="http", max_concurrency=max_concurrency, max_retries=8
    )
    return create_scorer("graded", judge=judge).generate_score(
        PromptStep("Grade", lambda run: f"Grade {run.input}")
    )


def _run(executor: Any, args: argparse.Namespace, storm: float) -> dict[str, Any]:
    items = [{"input": f"q{n}", "output": "a"} for n in range(args.items)]
    ok = Reply({"score": 1})
    with JudgeServer(ok, latency=args.latency) as server:
        if storm:
            server.on(
                lambda request: True,
                lambda request: rate_limited(0.05) if random.random() < storm else ok,
            )
        started = time.perf_counter()
        result = run_evals(
            items,
            scorers=[judged(server, args.max_concurrency)],
            executor=executor,
            concurrency=args.max_concurrency,
            cache=False,
            progress=False,
        )
        seconds = time.perf_counter() - started
        in_flight, requests = server.max_in_flight, len(server.requests)
    ideal = args.items * args.latency / args.max_concurrency
    (limit,) = result.usage["total"].judge_limits
    return {
        "seconds": seconds,
        "ratio": ideal / seconds,
        "max_in_flight": in_flight,
        "requests": requests,
        "lost": int(result.items["graded.score"].isna().sum()),
        "lowest": limit.lowest,
    }


def executors(names: list[str]) -> Any:
    """Each named cluster (``dask``, ``ray``) with 2 worker processes, as ``run_evals`` takes it."""
    for name in names:
        if name == "dask":
            from distributed import Client, LocalCluster

            with (
                LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0") as c,
                Client(c) as client,
            ):
                yield name, client
        else:
            import ray

            paths = os.pathsep.join(p for p in sys.path if p)
            ray.init(
                num_cpus=2,
                include_dashboard=False,
                log_to_driver=False,
                runtime_env={"env_vars": {"PYTHONPATH": paths}},
            )
            try:
                yield name, "ray"
            finally:
                ray.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--max-concurrency", type=int, default=64)
    parser.add_argument("--storm", type=float, default=0.3)
    parser.add_argument("--executors", nargs="+", default=["dask", "ray"])
    parser.add_argument("--runs", nargs="+", default=["limit", "storm"], choices=["limit", "storm"])
    args = parser.parse_args()
    rows = []
    for name, executor in executors(args.executors):
        for label, storm in (("limit", 0.0), ("storm", args.storm)):
            if label not in args.runs:
                continue
            figures = _run(executor, args, storm)
            print(name, label, figures, flush=True)
            rows.append((name, label, figures))
    load = os.getloadavg()[0]
    start, end = markers("cluster")
    setting = (
        f"{args.items:,} items x 1 LLM scorer, fake judge at {args.latency * 1000:g} ms, "
        f"`max_concurrency` {args.max_concurrency} for the whole cluster of 2 worker processes; "
        f"storm: {args.storm:.0%} of replies are 429 (Retry-After 0.05 s). "
        f"{datetime.now(UTC):%Y-%m-%d}, load average {load:.1f} on the shared 2-core machine."
    )
    columns = "seconds | share of ideal | most in flight | requests | items lost | lowest limit"
    lines = [
        start,
        "## One judge limit for a cluster (`benchmarks/cluster_judge_limit.py`)",
        "",
        setting,
        "",
        f"| executor | run | {columns} |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, label, f in rows:
        lines.append(
            f"| {name} | {label} | {f['seconds']:.1f} | {f['ratio']:.2f} | {f['max_in_flight']} "
            f"| {f['requests']:,} | {f['lost']} | {f['lowest']} |"
        )
    lines += [
        "",
        f"Targets: most in flight <= {args.max_concurrency} (the judge counts), share of ideal "
        f">= {TARGET_RATIO} (met: "
        + ", ".join(
            f"{n} {'yes' if f['ratio'] >= TARGET_RATIO else 'no'}"
            for n, label, f in rows
            if label == "limit"
        )
        + "), 0 items lost in the storm.",
        end,
    ]
    write_section("cluster", "\n".join(lines))


if __name__ == "__main__":
    main()
