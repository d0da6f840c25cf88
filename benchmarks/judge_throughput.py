"""Judge-call throughput: 2,000 calls against the scripted judge server, 100 ms latency, 64 at once.

The ideal is 64 / 0.1 s = 640 calls/s; the target is 0.85 of it on the http transport, and the
litellm transport no worse than before. Four ways of making the same calls are timed against the
same server (run in its own process):

- ``http_floor``: a bare aiohttp client posting the chat-completions JSON (no litellm, no
  evaldag): what this machine can do at all;
- ``litellm``: ``litellm.acompletion`` under an ``asyncio.Semaphore(64)``: the ceiling for any
  code that calls through litellm;
- ``evaldag_http`` and ``evaldag_litellm``: a scorer with one prompt ``generate_score`` step over
  2,000 runs through the scorer's DAG (engine → judging → the transport), ``concurrency=64`` and
  ``max_concurrency=64``, with ``Judge(transport="http")`` and ``transport="litellm"``.

Each prints calls/s, the ratio to the ideal, the CPU seconds this process spent
(``time.process_time``: every thread of this process, not the server's) and their share per call.
All of a path's work holds the GIL, so ``1000 / cpu_ms_per_call`` calls/s is its ceiling on one
free core whatever the concurrency: the 0.85 target means at most 1.8 ms of CPU per call, and the
http transport's budget is 1.5 ms.

Then, because CPU time on a shared box moves with its load, the work of one call is counted
exactly: the Python function calls each path makes per judge call (all threads), split by the
component they happen in (innermost of ``COMPONENTS`` on the stack). ``litellm_priced`` is the
litellm path with a model name in litellm's price table (``openai/gpt-4o-mini``, served by the
same test server). The figures and the machine's load average go to
``benchmarks/results/judge_throughput.json``; ``benchmarks/RESULTS.md`` has the latest.

    python benchmarks/judge_throughput.py [--calls 2000] [--concurrency 64] [--latency 0.1]

Findings on litellm (1.110.2 on the shared 2-core build machine, 2026-11-30), which led to the
http transport: ``litellm.acompletion`` spends 7-10 ms of CPU per call (~5,400 Python calls for a
model in litellm's price table, ~6,300 for one it cannot price) and tops out at 100-125 calls/s,
a ratio of 0.16-0.20. Where its CPU goes (py-spy ``--gil``, priced model, one call at a time,
8.4 ms per call): the OpenAI SDK building the request and parsing the reply, 1.5 ms, over httpx
over litellm's aiohttp transport, 1.3 ms; litellm's call wrapper and OpenAI handler, 1.8 ms;
litellm pricing the reply for its hidden params, 1.2 ms (2.9 ms for an unpriced model); its
success-logging payload, built although no callback is registered, 0.85 ms; its request set-up
(``completion()`` in a worker thread), 0.8 ms; the event loop and the rest, 0.9 ms. None of
litellm's settings removes any of this (each measured, see ``configured_litellm`` in
``evaldag/_judge/via_litellm.py``). A bare aiohttp client spends 0.4-0.5 ms (~340 Python calls).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TARGET_RATIO = 0.85
UNPRICED_MODEL = "openai/mock-judge"
PRICED_MODEL = "openai/gpt-4o-mini"
#: Calls counted function by function (the profiler slows them down about tenfold).
COUNTED_CALLS = 40

_TRANSPORT = "HTTP: httpx client, litellm's aiohttp transport, aiohttp"
_SDK = "OpenAI SDK: request and response objects"
TRANSPORTS = ("http", "litellm")
#: (module, qualified name) of a function -> the component that the calls under it belong to.
COMPONENTS = {
    ("httpx._client", "AsyncClient.send"): _TRANSPORT,
    ("openai._base_client", "AsyncAPIClient.post"): _SDK,
    ("openai._legacy_response", "LegacyAPIResponse.parse"): _SDK,
    (
        "litellm.litellm_core_utils.llm_response_utils.response_metadata",
        "update_response_metadata",
    ): "litellm: pricing the reply (hidden params)",
    (
        "litellm.litellm_core_utils.litellm_logging",
        "Logging.async_success_handler",
    ): "litellm: success logging payload",
    ("litellm.main", "completion"): "litellm: request set-up (completion() in a worker thread)",
    ("litellm.utils", "client.<locals>.wrapper_async"): "litellm: call wrapper, provider handler",
    ("evaldag._judge.via_http", "http_reply"): "evaldag http transport: aiohttp, orjson",
    ("evaldag._judge.transport", "judged_value"): "evaldag: judging (prompt, schema, records)",
    ("evaldag._engine.stages", "_next_state"): "evaldag: engine (row states)",
}
OTHER = "event loop, engine, the caller"


def started_server(latency: float) -> tuple[subprocess.Popen[str], str]:
    """The judge server in its own process (so it does not share this one's GIL) and its URL."""
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "tests/judge_server.py"), "--latency", str(latency),
         "--reply", '{"score": 1}'],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    return process, process.stdout.readline().strip()


def timed(calls: int, make: Callable[[], Awaitable[int]]) -> dict[str, float]:
    """Run ``make()`` (which makes ``calls`` calls and returns how many succeeded); its figures."""
    wall, cpu = time.perf_counter(), time.process_time()
    succeeded = make()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {"calls": calls, "succeeded": succeeded, "seconds": wall, "calls_per_s": calls / wall,
            "cpu_seconds": cpu, "cpu_ms_per_call": cpu / calls * 1000,
            "one_core_calls_per_s": calls / cpu}  # fmt: skip


def counted(calls: int, make: Callable[[], int]) -> dict[str, float]:
    """Python function calls per call of ``make()`` (all threads), by component."""
    parts: Counter[str] = Counter()

    def profiler(frame: Any, event: str, arg: Any) -> None:
        if event != "call":
            return
        while frame is not None:
            part = COMPONENTS.get((frame.f_globals.get("__name__"), frame.f_code.co_qualname))
            if part is not None:
                parts[part] += 1
                return
            frame = frame.f_back
        parts[OTHER] += 1

    threading.setprofile(profiler)  # threads started from now on (litellm's workers)
    sys.setprofile(profiler)
    on_engine_thread(profiler)  # evaldag's event loop runs in a thread of its own
    try:
        succeeded = make()
    finally:
        on_engine_thread(None)
        sys.setprofile(None)
        threading.setprofile(None)
    assert succeeded == calls, f"{succeeded} of {calls} counted calls succeeded"
    per_call = {part: count / calls for part, count in parts.most_common()}
    return {"python_calls_per_call": sum(per_call.values()), "by_component": per_call}


def on_engine_thread(profiler: Callable[..., Any] | None) -> None:
    """Set ``profiler`` on evaldag's engine loop thread, which runs every judge call."""
    from evaldag._util.event_loop import on_engine_loop

    async def profiled() -> None:
        sys.setprofile(profiler)

    on_engine_loop(profiled())


def http_floor(url: str, calls: int, concurrency: int) -> int:
    import aiohttp

    async def all_calls() -> int:
        limit = asyncio.Semaphore(concurrency)
        connector = aiohttp.TCPConnector(limit=concurrency)
        async with aiohttp.ClientSession(connector=connector) as session:

            async def one(i: int) -> bool:
                body = {"model": "mock-judge", "messages": [{"role": "user", "content": str(i)}]}
                async with limit, session.post(f"{url}/chat/completions", json=body) as response:
                    reply = await response.json()
                return json.loads(reply["choices"][0]["message"]["content"])["score"] == 1

            return sum(await asyncio.gather(*(one(i) for i in range(calls))))

    return asyncio.run(all_calls())


def litellm_ceiling(url: str, calls: int, concurrency: int, model: str = UNPRICED_MODEL) -> int:
    import litellm

    async def all_calls() -> int:
        limit = asyncio.Semaphore(concurrency)

        async def one(i: int) -> bool:
            async with limit:
                response = await litellm.acompletion(
                    model=model, api_base=url, api_key="sk-bench", max_retries=0,
                    messages=[{"role": "system", "content": "Grade."},
                              {"role": "user", "content": f"Score {i}"}],
                )  # fmt: skip
            return json.loads(response.choices[0].message.content)["score"] == 1

        return sum(await asyncio.gather(*(one(i) for i in range(calls))))

    return asyncio.run(all_calls())


def judge_scorer(url: str, concurrency: int, transport: str):
    from evaldag import Judge, PromptStep, create_scorer

    judge = Judge(UNPRICED_MODEL, api_base=url, api_key="sk-bench", instructions="Grade.",
                  max_concurrency=concurrency, transport=transport)  # fmt: skip
    return create_scorer("throughput", judge=judge).generate_score(
        PromptStep("score", lambda run: f"Score {run.output}")
    )


def evaldag_path(scorer, calls: int, concurrency: int) -> int:
    from evaldag import ScorerRun
    from evaldag._graph.drivers import scorer_outcomes, scorers_driver

    runs = [ScorerRun(output=str(i)) for i in range(calls)]
    outcomes = scorer_outcomes(scorers_driver([scorer]), scorer, runs, concurrency=concurrency)
    return sum(getattr(outcome, "score", None) == 1 for outcome in outcomes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency", type=float, default=0.1)
    args = parser.parse_args()
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    ideal = args.concurrency / args.latency
    process, url = started_server(args.latency)
    try:
        warm = 2 * args.concurrency  # imports, connection pools, price table, driver build
        http_floor(url, warm, args.concurrency)
        litellm_ceiling(url, warm, args.concurrency)
        litellm_ceiling(url, warm, args.concurrency, PRICED_MODEL)
        scorers = {t: judge_scorer(url, args.concurrency, t) for t in TRANSPORTS}
        for scorer in scorers.values():
            evaldag_path(scorer, warm, args.concurrency)
        load_before = os.getloadavg()
        calls, concurrency = args.calls, args.concurrency
        figures = {
            "http_floor": timed(calls, lambda: http_floor(url, calls, concurrency)),
            "litellm": timed(calls, lambda: litellm_ceiling(url, calls, concurrency)),
            **{
                f"evaldag_{t}": timed(calls, lambda s=s: evaldag_path(s, calls, concurrency))
                for t, s in scorers.items()
            },
        }
        load_after = os.getloadavg()
        counted_calls = COUNTED_CALLS
        work = {
            "http_floor": counted(counted_calls, lambda: http_floor(url, counted_calls, 8)),
            "litellm": counted(counted_calls, lambda: litellm_ceiling(url, counted_calls, 8)),
            "litellm_priced": counted(
                counted_calls, lambda: litellm_ceiling(url, counted_calls, 8, PRICED_MODEL)
            ),
            **{
                f"evaldag_{t}": counted(
                    counted_calls, lambda s=s: evaldag_path(s, counted_calls, 8)
                )
                for t, s in scorers.items()
            },
        }
    finally:
        process.stdin.close()
        process.wait(10)
    for name, row in figures.items():
        row["ratio_to_ideal"] = row["calls_per_s"] / ideal
        row["one_core_ratio_to_ideal"] = row["one_core_calls_per_s"] / ideal
        print(
            f"{name:>15}: {row['calls_per_s']:7.1f} calls/s  ratio {row['ratio_to_ideal']:.3f}  "
            f"CPU {row['cpu_seconds']:6.2f} s = {row['cpu_ms_per_call']:.2f} ms/call "
            f"(one free core: at most ratio {row['one_core_ratio_to_ideal']:.2f})  "
            f"({row['succeeded']}/{row['calls']} ok)"
        )
    ours = figures["evaldag_litellm"]["calls_per_s"] / figures["litellm"]["calls_per_s"]
    verdict = "met" if figures["evaldag_http"]["ratio_to_ideal"] >= TARGET_RATIO else "NOT met"
    print(f"ideal {ideal:.0f} calls/s; target ratio {TARGET_RATIO} on http: {verdict}; evaldag "
          f"on litellm reaches {ours:.3f} of bare litellm's throughput")  # fmt: skip
    print("\nPython function calls per judge call (exact, whatever the load):")
    print(f"{'':>58}" + "".join(f"{name:>16}" for name in work))
    parts = dict.fromkeys(part for row in work.values() for part in row["by_component"])
    for part in [*parts, "total"]:
        counts = [
            row["python_calls_per_call"] if part == "total" else row["by_component"].get(part, 0)
            for row in work.values()
        ]
        print(f"{part:>58}" + "".join(f"{count:16.0f}" for count in counts))
    result = {
        "benchmark": "judge_throughput",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "litellm": _version("litellm"),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "load_average_before": load_before,
        "load_average_after": load_after,
        "calls": args.calls,
        "concurrency": args.concurrency,
        "latency_s": args.latency,
        "ideal_calls_per_s": ideal,
        "target_ratio": TARGET_RATIO,
        "target_met": verdict == "met",
        "evaldag_litellm_to_litellm": ours,
        "figures": figures,
        "counted_calls": COUNTED_CALLS,
        "python_calls_per_judge_call": work,
    }
    out = ROOT / "benchmarks/results/judge_throughput.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")


def _version(package: str) -> str:
    from importlib.metadata import version

    return version(package)


if __name__ == "__main__":
    main()
