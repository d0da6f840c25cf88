"""What live scoring adds to an app call: ``evaldag.live`` around a function, 10% sampled.

The app function stands for an LLM app: it waits ``--app-ms`` (an I/O wait, as a model call is)
and returns a text; a second run calls it back to back, without the wait. Every call is timed
around the wrapper; the time inside the function is timed too and taken off, so what remains is
the wrapper's own cost (sampling, filter, queueing). Calls are split into not sampled and queued
(sampled); the same loop over the bare function gives the timer's own cost, and the time inside
the function, with and without live scoring, shows what the background scoring costs the app.
The worker scores with the completeness scorer (CPU-bound, the heaviest code scorer) into a
SQLite store, and ``flush()`` closes each run. Targets: p99 below 50 µs not sampled, 200 µs
queued. Prints the figures, writes ``benchmarks/results/live_overhead.json`` and the section of
``benchmarks/RESULTS.md`` between its markers.

    python benchmarks/live_overhead.py [--calls 20000] [--app-ms 0.5]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
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


def measure(calls: int, app_ms: float) -> dict:
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
            run_fields=lambda question, request_context=None: {
                "input": question,
                "trace_id": question,
                "request_context": request_context,
            },
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


def results_section(figures: dict) -> str:
    """The RESULTS.md section of these figures."""
    runs = figures["runs"]
    first, waiting = runs["back_to_back"], runs["waiting"]
    lines = [
        SECTION[0],
        "## Live scoring overhead (`benchmarks/live_overhead.py`)",
        "",
        (
            f"Measured {figures['date']} on {figures['machine']}; load average "
            f"{', '.join(map(str, first['load_average_before']))} before the runs, "
            f"{', '.join(map(str, waiting['load_average_after']))} after: a 2-core VM shared "
            "with other developers' test suites."
        ),
        "",
        (
            f"{waiting['calls']:,} calls of an app function, wrapped by `evaldag.live("
            f"[completeness()], sampling={RATE}, filter=<requestContext.user.tier == 'pro'>, "
            "store=<SQLite>)`; each call's time inside the function is taken off, leaving the "
            "wrapper's own. Back to back: the function returns at once (the wrapper's code runs "
            f"warm); waiting: it waits {waiting['app_ms']} ms first, as an app waits for its "
            "model (the wrapper then runs on cold caches, with the worker scoring meanwhile)."
        ),
        "",
        "| app function | calls | count | p50 µs | p99 µs | p99.9 µs | max µs | target p99 |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    labels = {
        "timer_only": "bare function (timer only)",
        "not_sampled": "not sampled",
        "queued": "queued (sampled)",
    }
    for mode, run in (("back to back", first), (f"waits {waiting['app_ms']} ms", waiting)):
        for name, label in labels.items():
            p = run[name]
            target = f"< {TARGETS_US[name]:.0f} µs" if name in TARGETS_US else ""
            lines.append(
                f"| {mode} | {label} | {p['count']:,} | {p['p50_us']} | {p['p99_us']} | "
                f"{p['p999_us']} | {p['max_us']} | {target} |"
            )
    stats = waiting["stats"]
    bare, live = waiting["app_time_bare"], waiting["app_time_live"]
    lines += [
        "",
        (
            f"The app's own time (inside the function: its {waiting['app_ms']} ms wait, then "
            f"taking the interpreter lock back) was p50 {bare['p50_us']} / p99 {bare['p99_us']} "
            f"µs without live scoring and p50 {live['p50_us']} / p99 {live['p99_us']} µs with "
            "it: the scorers run in the app's process, and hold the interpreter lock while they "
            "compute."
        ),
        "",
        (
            f"Scored in the background meanwhile (waiting run): {stats['sampled']:,} calls "
            f"queued, {stats['dropped']} dropped, {waiting['rows_stored']:,} rows stored (with "
            f"the warm-up's), {stats['errors']} error rows; `flush()` after the last call took "
            f"{waiting['flush_seconds']} s. Raw figures: `benchmarks/results/live_overhead.json`."
        ),
        SECTION[1],
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument("--app-ms", type=float, default=0.5)
    args = parser.parse_args()
    figures = {
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "runs": {
            "back_to_back": measure(args.calls, 0.0),
            "waiting": measure(args.calls, args.app_ms),
        },
    }
    for mode, run in figures["runs"].items():
        for name in ("timer_only", "not_sampled", "queued"):
            p = run[name]
            target = f" (target p99 < {TARGETS_US[name]:.0f} µs)" if name in TARGETS_US else ""
            print(f"{mode:>12} {name:>12}: {p['count']:>6,} calls, p50 {p['p50_us']:>7} µs, "
                  f"p99 {p['p99_us']:>7} µs, max {p['max_us']:>8} µs{target}")  # fmt: skip
        bare, live = run["app_time_bare"], run["app_time_live"]
        print(f"{mode:>12} app's own time: p50/p99 {bare['p50_us']}/{bare['p99_us']} µs bare, "
              f"{live['p50_us']}/{live['p99_us']} µs live; stats {run['stats']}")  # fmt: skip
    out = BENCHMARKS / "results" / "live_overhead.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(figures, indent=2) + "\n")
    write_section("live_overhead", results_section(figures))
    print(f"written to {out} and {RESULTS_MD}")


if __name__ == "__main__":
    main()
