"""A worker killed mid-run: LLM-scored items from Parquet on Dask and Ray, results in parts.

Each executor gets a real local cluster with 2 worker processes (``distributed.LocalCluster``;
Ray with 2 CPUs, the same clusters as ``cluster_judge_limit.py``). The data is one Parquet file
the workers read row group by row group; the results go to a directory (``out=``), each batch's
items to its part. The judge is the scripted server of the tests (``tests/judge_server.py``,
answering after ``--latency`` seconds). Once a third of the items were judged, one worker
process is killed (SIGKILL): on Dask once a worker that does not hold the run's coordinator
actor, once the one that does (the other workers then find the coordinator lost and keep to
their share of the limit); on Ray one running a batch. Dask's nanny starts another process and
the scheduler runs the dead worker's batches again; Ray retries the task.

Checked from the parts written (not from the client's result): items lost (a row missing, or
a row without a score) and rows duplicated must both be 0. The judge requests beyond one per
item are the calls the killed worker had in flight, asked again (the rest of its batches'
calls are answered from the run's journal).

The figures go to ``benchmarks/RESULTS.md`` (its "cluster-faults" section)::

    python benchmarks/cluster_faults.py [--items 20000] [--latency 0.05]
        [--max-concurrency 64] [--executors dask ray]
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "tests"), str(ROOT / "benchmarks")]
os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")

from cluster_judge_limit import executors, judged  # noqa: E402
from judge_server import JudgeServer, Reply  # noqa: E402
from results_md import markers, write_section  # noqa: E402

from evaldag import EvalResult, run_evals  # noqa: E402

ROW_GROUP = 1_000
#: How long the killer waits for a third of the items to be judged, at most.
KILL_WITHIN_SECONDS = 600


def _written_data(path: Path, items: int) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = {"input": [f"q{n}" for n in range(items)], "output": ["a"] * items}
    pq.write_table(pa.table(rows), path, row_group_size=ROW_GROUP)


def _victim_pid(name: str, executor: Any, victim: str) -> int | None:
    """The pid of the worker process to kill: on Dask the one holding the run's coordinator
    actor (``coordinator``) or another (``worker``); on Ray one running a batch now."""
    if name == "dask":
        pids = executor.run(os.getpid)
        holders = {
            w for key, ws in executor.who_has().items() if "RunCoordinator" in key for w in ws
        }
        for address, pid in pids.items():
            if (victim == "coordinator") == (address in holders):
                return pid
        return None
    import psutil

    for process in psutil.process_iter(["cmdline"]):
        title = " ".join(process.info["cmdline"] or [])
        if title.startswith("ray::_on_worker"):  # Ray names a worker after its task
            return process.pid
    return None


def _killed_run(
    name: str, victim: str, executor: Any, args: argparse.Namespace, folder: Path
) -> dict:
    data, out = folder / "data.parquet", folder / f"out-{name}-{victim}"
    killed: list[int] = []
    with JudgeServer(Reply({"score": 1}), latency=args.latency) as server:

        def kill_a_worker() -> None:
            deadline = time.monotonic() + KILL_WITHIN_SECONDS
            while len(server.requests) < args.items // 3 and time.monotonic() < deadline:
                time.sleep(0.05)
            while not killed and time.monotonic() < deadline:
                pid = _victim_pid(name, executor, victim)
                if pid is not None:
                    os.kill(pid, signal.SIGKILL)
                    killed.append(pid)
                time.sleep(0.05)

        killer = threading.Thread(target=kill_a_worker, daemon=True)
        killer.start()
        started = time.perf_counter()
        result = run_evals(
            data,
            scorers=[judged(server, args.max_concurrency).with_threshold(0.5)],
            executor=executor,
            concurrency=args.max_concurrency,
            cache=False,
            out=out,
            progress=False,
        )
        seconds = time.perf_counter() - started
        killer.join(timeout=1)
        requests = len(server.requests)
    written = EvalResult.read_parquet(out).items
    inputs = written["input"]
    return {
        "killed": bool(killed),
        "seconds": seconds,
        "requests": requests,
        "asked_again": requests - args.items,
        "rows": len(written),
        "lost": args.items - inputs.nunique() + int(written["graded.score"].isna().sum()),
        "duplicated": len(written) - inputs.nunique(),
        "verdict": result.verdict,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--items", type=int, default=20_000)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--max-concurrency", type=int, default=64)
    parser.add_argument("--executors", nargs="+", default=["dask", "ray"])
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="evaldag-faults-") as folder:
        _written_data(Path(folder) / "data.parquet", args.items)
        for name, executor in executors(args.executors):
            for victim in ("worker", "coordinator") if name == "dask" else ("worker",):
                figures = _killed_run(name, victim, executor, args, Path(folder))
                print(name, victim, figures, flush=True)
                rows.append((f"{name} ({victim}'s)" if victim != "worker" else name, figures))
    load = os.getloadavg()[0]
    start, end = markers("cluster-faults")
    setting = (
        f"{args.items:,} items x 1 LLM scorer from one Parquet file (row groups of "
        f"{ROW_GROUP:,}), results in parts (`out=` a directory), fake judge at "
        f"{args.latency * 1000:g} ms, `max_concurrency` {args.max_concurrency}, 2 worker "
        "processes; one worker process is killed (SIGKILL) once a third of the items were "
        "judged (Dask: a worker, then in a second run the one holding the coordinator actor; "
        f"Ray: one running a batch). {datetime.now(UTC):%Y-%m-%d}, load average {load:.1f} on the "
        "shared 2-core machine."
    )
    columns = "worker killed | seconds | judge requests | asked again | rows in parts | lost"
    lines = [
        start,
        "## A worker killed mid-run (`benchmarks/cluster_faults.py`)",
        "",
        setting,
        "",
        f"| executor | {columns} | duplicated | verdict |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, f in rows:
        lines.append(
            f"| {name} | {'yes' if f['killed'] else 'no'} | {f['seconds']:.1f} "
            f"| {f['requests']:,} | {f['asked_again']:,} | {f['rows']:,} | {f['lost']} "
            f"| {f['duplicated']} | {f['verdict']} |"
        )
    lines += [
        "",
        "Targets: 0 lost, 0 duplicated (met: "
        + ", ".join(
            f"{n} {'yes' if f['killed'] and not f['lost'] and not f['duplicated'] else 'no'}"
            for n, f in rows
        )
        + "). The requests asked again are the calls the killed worker had in flight: its "
        "batches run again elsewhere, their completed calls answered from the run's journal "
        "(`judge-replies/` in `out=`).",
        end,
    ]
    write_section("cluster-faults", "\n".join(lines))


if __name__ == "__main__":
    main()
