"""What live scoring adds to an app call: ``evaldag.live`` around a function, 10% sampled.

The app function stands for an LLM app: it waits ``--app-ms`` (an I/O wait, as a model call is)
and returns a text; a second run calls it back to back, without the wait. Every call is timed
around the wrapper; the time inside the function is timed too and taken off, so what remains is
the wrapper's own cost (sampling, filter, queueing). Calls are split into not sampled and queued
(sampled); the same loop over the bare function gives the timer's own cost, and the time inside
the function, with and without live scoring, shows what the background scoring costs the app.
The worker scores with the completeness scorer (CPU-bound, the heaviest code scorer) into a
SQLite store, and ``flush()`` closes each run. Each mode runs with the thread worker and with the
process worker (``worker="process"``), alternately, ``--rounds`` times, so both see the same
machine load. Targets: p99 below 50 µs not sampled, 200 µs queued. Prints the figures, writes
``benchmarks/results/live_overhead.json`` and the section of ``benchmarks/RESULTS.md`` between
its markers.

    python benchmarks/live_overhead.py [--calls 20000] [--app-ms 0.5] [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from results_md import RESULTS_MD, markers, write_section

BENCHMARKS = Path(__file__).resolve().parent
SECTION = markers("live_overhead")
TARGETS_US = {"not_sampled": 50.0, "queued": 200.0}
RATE = 0.1


def timed_calls(function, calls: int, inside: list[float]) -> tuple[list[float], list[float]]:
    """Each call's time around ``function`` minus the time spent inside it, and the time
    inside it (the app's own time, which waits for the interpreter lock too), in µs."""
    overheads, own = [], []
    clock = time.perf_counter
    for n in range(calls):
        question, context = f"request-{n:06d}", {"user": {"tier": "pro"}, "n": n}
        start = clock()
        function(question, request_context=context)
        overheads.append((clock() - start - inside[-1]) * 1e6)
        own.append(inside[-1] * 1e6)
    return overheads, own


def app_function(app_s: float, inside: list[float]):
    def answer(question: str, request_context: dict | None = None) -> str:
        entered = time.perf_counter()
        if app_s:
            time.sleep(app_s)
        text = f"The answer to {question} is a short sentence about {question}."
        inside.append(time.perf_counter() - entered)
        return text

    return answer


def run_fields(question: str, request_context: dict | None = None) -> dict:
    return {"input": question, "trace_id": question, "request_context": request_context}


def percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    at = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))]  # noqa: E731
    return {
        "count": len(values),
        "p50_us": round(statistics.median(ordered), 2),
        "p99_us": round(at(0.99), 2),
        "p999_us": round(at(0.999), 2),
        "max_us": round(ordered[-1], 2),
    }


def measure(calls: int, app_ms: float, worker: str) -> dict:
    import evaldag
    from evaldag._live.sampling import unit_interval
    from evaldag.scorers import completeness

    inside: list[float] = []
    bare = app_function(app_ms / 1000, inside)
    baseline, bare_own = timed_calls(bare, min(calls, 5000), inside)
    with tempfile.TemporaryDirectory() as folder:
        scoring = evaldag.live(
            [completeness()],
            store=Path(folder) / "scores.db",
            sampling=RATE,
            filter={
                "op": "eq",
                "left": {"path": "requestContext.user.tier"},
                "right": {"literal": "pro"},
            },  # fmt: skip
            run_fields=run_fields,
            worker=worker,
        )
        wrapped = scoring(app_function(app_ms / 1000, inside))
        timed_calls(wrapped, 200, inside)  # warm-up: the worker thread, the scorer's driver
        scoring.flush()
        load_before = os.getloadavg()
        start = time.perf_counter()
        overheads, live_own = timed_calls(wrapped, calls, inside)
        seconds = time.perf_counter() - start
        flush_start = time.perf_counter()
        scoring.flush()
        flush_seconds = time.perf_counter() - flush_start
        load_after = os.getloadavg()
        stats = scoring.stats()
        rows = len(evaldag.read_scores(Path(folder) / "scores.db"))
        scoring.close()
    sampled = [unit_interval(f"request-{n:06d}") < RATE for n in range(calls)]
    return {
        "worker": worker,
        "calls": calls,
        "app_ms": app_ms,
        "seconds": round(seconds, 2),
        "flush_seconds": round(flush_seconds, 2),
        "load_average_before": [round(v, 2) for v in load_before],
        "load_average_after": [round(v, 2) for v in load_after],
        "timer_only": percentiles(baseline),
        "not_sampled": percentiles([o for o, s in zip(overheads, sampled, strict=True) if not s]),
        "queued": percentiles([o for o, s in zip(overheads, sampled, strict=True) if s]),
        "app_time_bare": percentiles(bare_own),
        "app_time_live": percentiles(live_own),
        "stats": stats.model_dump(),
        "rows_stored": rows,
    }


def _median_of(runs: list[dict], path: tuple[str, ...]) -> float:
    values = []
    for run in runs:
        value = run
        for key in path:
            value = value[key]
        values.append(value)
    return round(statistics.median(values), 2)


def results_section(figures: dict) -> str:
    """The RESULTS.md section of these figures."""
    runs = figures["runs"]
    waiting = [r for r in runs if r["app_ms"] > 0]
    app_ms = waiting[0]["app_ms"] if waiting else 0.0
    lines = [
        SECTION[0],
        "## Live scoring overhead (`benchmarks/live_overhead.py`)",
        "",
        (
            f"Measured {figures['date']} on {figures['machine']}; load average (1, 5, 15 min) "
            f"{', '.join(map(str, runs[0]['load_average_before']))} before the runs, "
            f"{', '.join(map(str, runs[-1]['load_average_after']))} after (`uptime` before: "
            f"`{figures['uptime_before']}`): a 2-core VM shared with other developers' test "
            "suites."
        ),
        "",
        (
            f"{runs[0]['calls']:,} calls of an app function per run, wrapped by `evaldag.live("
            f"[completeness()], sampling={RATE}, filter=<requestContext.user.tier == 'pro'>, "
            "store=<SQLite>, worker=...)`; each call's time inside the function is taken off, "
            "leaving the wrapper's own. Back to back: the function returns at once (the "
            f"wrapper's code runs warm); waits {app_ms} ms: it waits first, as an app waits for "
            "its model (the wrapper then runs on cold caches, with the worker scoring "
            "meanwhile). The thread and process workers ran alternately, "
            f"{figures['rounds']} rounds of each. Wrapper overhead p99 targets: < "
            f"{TARGETS_US['not_sampled']:.0f} µs not sampled, < {TARGETS_US['queued']:.0f} µs "
            "queued. The app's own time is the time inside the function (its wait, then taking "
            "the interpreter lock back), without live scoring (bare) and with it."
        ),
        "",
        (
            "| app function | worker | round | timer only p99 µs | not sampled p50 / p99 µs | "
            "queued p50 / p99 µs | app's own p99 µs, bare → live | queued / dropped / rows |"
        ),
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for run in runs:
        mode = f"waits {run['app_ms']} ms" if run["app_ms"] else "back to back"
        ns, q = run["not_sampled"], run["queued"]
        bare, live, stats = run["app_time_bare"], run["app_time_live"], run["stats"]
        lines.append(
            f"| {mode} | {run['worker']} | {run['round']} | {run['timer_only']['p99_us']} | "
            f"{ns['p50_us']} / {ns['p99_us']} | {q['p50_us']} / {q['p99_us']} | "
            f"{bare['p99_us']} → {live['p99_us']} | {stats['sampled']:,} / "
            f"{stats['dropped']:,} / {run['rows_stored']:,} |"
        )
    summary, verdicts = [], []
    for worker in ("thread", "process"):
        mine = [r for r in waiting if r["worker"] == worker]
        if not mine:
            continue
        summary.append(
            f"{worker} worker: not sampled p99 {_median_of(mine, ('not_sampled', 'p99_us'))}"
            f" µs, queued p99 {_median_of(mine, ('queued', 'p99_us'))} µs, the app's own "
            f"p99 {_median_of(mine, ('app_time_bare', 'p99_us'))} µs bare → "
            f"{_median_of(mine, ('app_time_live', 'p99_us'))} µs live"
        )
        for name, target in TARGETS_US.items():
            p99 = _median_of(mine, (name, "p99_us"))
            met = "meets" if p99 < target else "misses"
            verdicts.append(f"{worker} {name.replace('_', ' ')} {met} it ({p99} µs)")
    lines += [
        "",
        (
            f"Medians of the waiting runs: {'; '.join(summary)}. Rows include the warm-up's; "
            "a sampled call the full queue (1,000) did not take is dropped and counted, as "
            "designed (back to back, the app makes calls faster than they are scored). Raw "
            "figures: `benchmarks/results/live_overhead.json`."
        ),
        "",
        (
            "Reading: a call not sampled only reads its ids and hashes one, with CPython's own "
            "sha256 (hashlib's goes through an OpenSSL digest context made per call, 10-20 µs "
            "on the cold caches a wait leaves), and is counted without a lock. A queued call "
            "also takes its request-context snapshot (a module-level function testing exact "
            "types first: as a closure testing `str | bool` unions it took 65 µs at the p99 on "
            "cold caches, now 14-18), the filter and the hand-over: one "
            "notify for the thread worker; for the process worker, pickling the call and one "
            "write to a pipe, a few µs more, while the scoring process computes at the same "
            "time instead of waiting for the lock, which lengthens the tail on this VM. After "
            f"the wait, by the p99 targets: {'; '.join(verdicts)}. The app's own p99 with "
            "live scoring is what the worker costs it: the thread worker's scoring (the "
            "completeness scorer, and Hamilton's and pandas' work for each batch) holds the "
            "interpreter lock in the app's process; the process worker's runs elsewhere at "
            "nice 10, so what remains is the two cores it shares with the app and the "
            "machine's other load (the bare p99 moves with that load from run to run)."
        ),
        SECTION[1],
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument("--app-ms", type=float, default=0.5)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    print(uptime)
    runs = []
    for app_ms in (0.0, args.app_ms):
        for round_ in range(1, args.rounds + 1):
            for worker in ("thread", "process"):
                run = {"round": round_, **measure(args.calls, app_ms, worker)}
                runs.append(run)
                ns, q = run["not_sampled"], run["queued"]
                bare, live = run["app_time_bare"], run["app_time_live"]
                print(f"app {app_ms} ms {worker:>7} round {round_}: not sampled p50/p99 "
                      f"{ns['p50_us']}/{ns['p99_us']} µs, queued {q['p50_us']}/{q['p99_us']} µs, "
                      f"app's own p99 {bare['p99_us']} -> {live['p99_us']} µs, "
                      f"stats {run['stats']}", flush=True)  # fmt: skip
    figures = {
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "uptime_before": uptime,
        "rounds": args.rounds,
        "runs": runs,
    }
    out = BENCHMARKS / "results" / "live_overhead.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(figures, indent=2) + "\n")
    write_section("live_overhead", results_section(figures))
    print(f"written to {out} and {RESULTS_MD}")


if __name__ == "__main__":
    main()
