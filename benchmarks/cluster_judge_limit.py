"""One judge limit for a whole cluster: LLM-scored items on Dask and Ray against the fake judge.

Each executor gets a real local cluster with 2 worker processes (``distributed.LocalCluster``;
Ray with 2 CPUs). The judge answers after ``--latency`` seconds and counts the requests in
flight: by default the lean server of ``lean_judge.py`` (an asyncio protocol, 0.08 ms of CPU a
call), or with ``--judge scripted`` the tests' scripted aiohttp server (``tests/judge_server.py``:
0.25-0.27 ms a call, each request parsed and kept, and on the 2 cores it shares with the run it
held a call 51.7-52.5 ms for 50). It runs in a process of its own, as a provider does: in this
one (``--judge-in-process``) every pass of this process's garbage collector over the results it
holds stopped it too (up to 1.2 s each at 100,000 items). Runs per executor, one scorer with
one prompt step, ``max_concurrency`` for the whole cluster:

- ``limit``: every reply a score: the most calls in flight at once (must never pass
  ``max_concurrency``) and the share of the ideal throughput the limit allows
  (``max_concurrency / latency`` calls/s; target 0.85);
- ``storm``: ``--storm`` of the replies are 429s with ``Retry-After: 0.05``: items lost (not
  scored) must be 0, and the limit's lowest point shows the coordinator's cuts.
- ``tail``: ``--tail`` of the replies take ``--tail-latency`` seconds (a real provider's slow
  replies): the share of the ideal the limit allows at that mean latency, which a worker
  waiting for its batch's slowest replies before it starts the next would lose.

Each run also gives how long the judge held a call on average (from reading the request to its
reply: ``--latency`` plus its own event loop's delays on a busy machine) and the share of the
ideal at that hold (what the client side achieved, the judge's own delays set aside), the
mean of the calls in flight (the judge's count, read every 20 ms), the
share of those readings at 0 between the first call and the last (``none in flight``), and
the CPU time each part took, per judge call: the judge server (its serving thread), the
rest of this process (the client; Dask's scheduler runs here too), the worker processes (on
Dask, one of them holds the coordinator), Ray's coordinator actor, and the cluster's own
processes (Ray's GCS, raylet and agents). The machine is shared: CPU time is the steadier
figure, and it says what the ideal costs (``max_concurrency / latency`` calls/s times the CPU
per call, against the cores there are).

The figures go to ``benchmarks/RESULTS.md`` (its "cluster" section)::

    python benchmarks/cluster_judge_limit.py [--items 100000] [--latency 0.05]
        [--max-concurrency 64] [--storm 0.3] [--tail 0.01] [--tail-latency 1.0]
        [--executors dask ray] [--runs limit storm tail]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "tests"), str(ROOT / "benchmarks")]
os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")

from judge_server import API_KEY, MODEL, JudgeServer, Reply, rate_limited  # noqa: E402
from lean_judge import LeanJudge  # noqa: E402
from results_md import markers, write_section  # noqa: E402

from evaldag import PromptStep, create_scorer, run_evals  # noqa: E402

TARGET_RATIO = 0.85
#: Seconds between two readings of the calls in flight and of the processes' CPU times.
SAMPLE_SECONDS = 0.02
#: Seconds the fake judge may take to start, and to send its counts once told to stop.
JUDGE_WAIT_SECONDS = 60.0
#: The parts of a run whose CPU time is reported, in the table's order.
PARTS = ("judge server", "client", "workers", "coordinator", "cluster services")


def _part(command: str) -> str:
    """The part of the run a child process of this one is, by its command line."""
    if "RunCoordinator" in command:
        return "coordinator"
    if "spawn_main" in command or command.startswith("ray::") and "Agent" not in command:
        return "workers"
    return "cluster services"


def _scripted_judge(latency: float, storm: float, tail: float, tail_latency: float) -> Any:
    """The tests' scripted judge server, set for a run."""
    ok = Reply({"score": 1})
    slow = Reply({"score": 1}, latency=tail_latency)
    server = JudgeServer(ok, latency=latency)
    if storm:
        server.on(
            lambda request: True,
            lambda request: rate_limited(0.05) if random.random() < storm else ok,
        )
    if tail:
        server.on(lambda request: True, lambda request: slow if random.random() < tail else ok)
    return server


def _judge_serving(
    conn: Any, latency: float, storm: float, tail: float, tail_latency: float, judge: str
) -> None:
    """Serve the fake judge (``judge``: ``lean`` or ``scripted``) until told to stop (in a
    process of its own, or a thread): send its URL, read its calls in flight every
    ``SAMPLE_SECONDS`` between "start" and "stop", then send its counts and its serving thread's
    CPU seconds between the two."""
    import psutil

    if judge == "lean":
        served = LeanJudge(latency, storm=storm, tail=tail, tail_latency=tail_latency)
    else:
        served = _scripted_judge(latency, storm, tail, tail_latency)
    with served as server:

        def cpu() -> float:
            native_id = None if server._thread is None else server._thread.native_id
            found = (t for t in psutil.Process().threads() if t.id == native_id)
            return next((t.user_time + t.system_time for t in found), 0.0)

        conn.send(server.url)
        conn.recv()  # "start"
        first, in_flight = cpu(), []
        while not conn.poll(SAMPLE_SECONDS):
            in_flight.append(server._in_flight)
        conn.recv()  # "stop"
        requests = server.requests  # the lean judge's count, or the scripted one's list (a copy)
        conn.send(
            {
                "in_flight": in_flight,
                "max_in_flight": server.max_in_flight,
                "requests": requests if isinstance(requests, int) else len(requests),
                "cpu": cpu() - first,
                "held": server.held_seconds,
            }
        )


class Judging:
    """The fake judge of a run, in a process of its own (``in_process``: a thread of this one)."""

    def __init__(self, args: argparse.Namespace, storm: float, tail: float) -> None:
        import multiprocessing

        options = (args.latency, storm, tail, args.tail_latency, args.judge)
        self.conn, there = multiprocessing.Pipe()
        if args.judge_in_process:
            self.server: Any = threading.Thread(
                target=_judge_serving, args=(there, *options), daemon=True
            )
        else:
            spawned = multiprocessing.get_context("spawn")
            self.server = spawned.Process(target=_judge_serving, args=(there, *options))
        self.server.start()
        self.url: str = self._answer("its URL")
        #: What the judge counted: calls in flight (every reading, the most), requests, CPU.
        self.figures: dict[str, Any] = {}

    @property
    def pid(self) -> int | None:
        """The judge's process, if it has one of its own."""
        return getattr(self.server, "pid", None)

    def judge(self, **settings: Any) -> Any:
        from evaldag import Judge

        return Judge(f"openai/{MODEL}", api_base=self.url, api_key=API_KEY, **settings)

    def start(self) -> None:
        self.conn.send("start")

    def stop(self) -> None:
        self.conn.send("stop")
        self.figures = self._answer("its counts")
        self.server.join(JUDGE_WAIT_SECONDS)

    def _answer(self, what: str) -> Any:
        """The judge's next message, or an error past ``JUDGE_WAIT_SECONDS``."""
        if not self.conn.poll(JUDGE_WAIT_SECONDS):
            raise RuntimeError(f"the fake judge sent no {what} within {JUDGE_WAIT_SECONDS:g} s")
        return self.conn.recv()


class Sampled:
    """The judge's counts, and the CPU times of this process and every process below it but the
    judge's, read every ``10 * SAMPLE_SECONDS`` while the run lasts (a process that ends within
    the run counts to its last reading)."""

    def __init__(self, judging: Judging) -> None:
        import psutil

        self.judging, self.me = judging, psutil.Process()
        self.cpu: dict[int, tuple[str, float]] = {}
        self._first = self._children()
        self._first_own = self._own()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _own(self) -> float:
        times = self.me.cpu_times()
        return times.user + times.system

    def _children(self) -> dict[int, tuple[str, float]]:
        import psutil

        found = {}
        for child in self.me.children(recursive=True):
            if child.pid == self.judging.pid:
                continue
            try:
                times = child.cpu_times()
                found[child.pid] = (_part(" ".join(child.cmdline())), times.user + times.system)
            except psutil.Error:  # ended meanwhile
                continue
        return found

    def _sample(self) -> None:
        while not self._stop.wait(10 * SAMPLE_SECONDS):
            self.cpu.update(self._children())

    def __enter__(self) -> Sampled:
        self.judging.start()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.judging.stop()
        self._stop.set()
        self._thread.join()
        self.cpu.update(self._children())
        judged = self.judging.figures
        self.in_flight: list[int] = judged["in_flight"]
        self.seconds = {part: 0.0 for part in PARTS}
        self.seconds["judge server"] = judged["cpu"]
        self.seconds["client"] = self._own() - self._first_own
        if self.judging.pid is None:  # its thread's time is this process's
            self.seconds["client"] -= judged["cpu"]
        for pid, (part, seconds) in self.cpu.items():
            self.seconds[part] += seconds - self._first.get(pid, (part, 0.0))[1]


def judged(judging: Judging, max_concurrency: int) -> Any:
    """The LLM scorer of these benchmarks: one prompt step, the whole cluster's limit."""
    judge = judging.judge(
        instructions="Grade it.", transport="http", max_concurrency=max_concurrency, max_retries=8
    )
    return create_scorer("graded", judge=judge).generate_score(
        PromptStep("Grade", lambda run: f"Grade {run.input}")
    )


def _run(executor: Any, args: argparse.Namespace, storm: float, tail: float) -> dict[str, Any]:
    items = [{"input": f"q{n}", "output": "a"} for n in range(args.items)]
    judging = Judging(args, storm, tail)
    with Sampled(judging) as sampled:
        started = time.perf_counter()  # the run alone, not the readings of its processes
        result = run_evals(
            items,
            scorers=[judged(judging, args.max_concurrency)],
            executor=executor,
            concurrency=args.max_concurrency,
            cache=False,
            progress=False,
        )
        seconds = time.perf_counter() - started
    in_flight, requests = judging.figures["max_in_flight"], judging.figures["requests"]
    latency = (1 - tail) * args.latency + tail * args.tail_latency
    ideal = args.items * latency / args.max_concurrency
    (limit,) = result.usage["total"].judge_limits
    busy = [n for n, count in enumerate(sampled.in_flight) if count]
    readings = sampled.in_flight[busy[0] : busy[-1] + 1] if busy else []
    held = judging.figures["held"] / max(1, requests)
    return {
        "seconds": seconds,
        "ratio": ideal / seconds,
        "held_ms": 1000 * held,
        "ratio_at_hold": args.items * held / args.max_concurrency / seconds,
        "max_in_flight": in_flight,
        "requests": requests,
        "lost": int(result.items["graded.score"].isna().sum()),
        "lowest": limit.lowest,
        "mean_in_flight": sum(sampled.in_flight) / max(1, len(sampled.in_flight)),
        "none_in_flight": readings.count(0) / max(1, len(readings)),
        "cpu_ms": {part: 1000 * cpu / args.items for part, cpu in sampled.seconds.items()},
        "load": os.getloadavg()[0],
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
    parser.add_argument("--tail", type=float, default=0.01)
    parser.add_argument("--tail-latency", type=float, default=1.0)
    parser.add_argument("--executors", nargs="+", default=["dask", "ray"])
    parser.add_argument(
        "--judge-in-process",
        action="store_true",
        help="serve the fake judge in a thread of this process, not in a process of its own",
    )
    parser.add_argument(
        "--judge",
        choices=["lean", "scripted"],
        default="lean",
        help="the fake judge: a lean asyncio server (lean_judge.py) or the tests' scripted "
        "aiohttp server (tests/judge_server.py), which costs more CPU a call and holds longer",
    )
    parser.add_argument(
        "--runs", nargs="+", default=["limit", "storm"], choices=["limit", "storm", "tail"]
    )
    args = parser.parse_args()
    rows = []
    for name, executor in executors(args.executors):
        for label, storm, tail in (
            ("limit", 0.0, 0.0),
            ("storm", args.storm, 0.0),
            ("tail", 0.0, args.tail),
        ):
            if label not in args.runs:
                continue
            figures = _run(executor, args, storm, tail)
            print(name, label, figures, flush=True)
            rows.append((name, label, figures))
    load = os.getloadavg()[0]
    start, end = markers("cluster")
    where = "in a thread of the client" if args.judge_in_process else "in a process of its own"
    where = f"the {args.judge} judge, {where}"
    setting = (
        f"{args.items:,} items x 1 LLM scorer, fake judge at {args.latency * 1000:g} ms, "
        f"`max_concurrency` {args.max_concurrency} for the whole cluster of 2 worker processes "
        f"({where}); "
        f"storm: {args.storm:.0%} of replies are 429 (Retry-After 0.05 s); tail: {args.tail:.0%} "
        f"take {args.tail_latency:g} s. "
        f"{datetime.now(UTC):%Y-%m-%d}, load average {load:.1f} on the shared 2-core machine."
    )
    columns = (
        "seconds | share of ideal | the judge's mean hold, ms | share of ideal at that hold "
        "| most in flight | mean in flight | none in flight | requests "
        "| items lost "
        "| lowest limit | CPU ms per call: judge server, client, workers, coordinator, cluster "
        "services | all"
    )
    lines = [
        start,
        "## One judge limit for a cluster (`benchmarks/cluster_judge_limit.py`)",
        "",
        setting,
        "",
        f"| executor | run | {columns} |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, label, f in rows:
        cpu = f["cpu_ms"]
        lines.append(
            f"| {name} | {label} | {f['seconds']:.1f} | {f['ratio']:.3f} | {f['held_ms']:.1f} "
            f"| {f['ratio_at_hold']:.3f} | {f['max_in_flight']} "
            f"| {f['mean_in_flight']:.0f} | {f['none_in_flight']:.1%} | {f['requests']:,} "
            f"| {f['lost']} | {f['lowest']} "
            f"| {', '.join(f'{cpu[part]:.2f}' for part in PARTS)} | {sum(cpu.values()):.2f} |"
        )
    lines += [
        "",
        f"Targets: most in flight <= {args.max_concurrency} (the judge counts), share of ideal "
        f">= {TARGET_RATIO} (met: "
        + ", ".join(
            f"{n} {label} {'yes' if f['ratio'] >= TARGET_RATIO else 'no'}"
            for n, label, f in rows
            if label in ("limit", "tail")
        )
        + "), 0 items lost in the storm.",
        end,
    ]
    write_section("cluster", "\n".join(lines))


if __name__ == "__main__":
    main()
