"""A run larger than the client: N items x 3 code scorers + a gate from a Parquet file, read by
the workers of a cluster row group by row group, the results written to a directory in parts.

Each run is a process of its own (``--measure``), so that its peak RSS (``ru_maxrss``) is the
client's alone: the data file is written beforehand by another, and the cluster's workers are
processes of their own (Dask's ``LocalCluster`` with 2 worker processes, Ray with 2 CPUs; a
Dask scheduler runs in the client, Ray's raylet and GCS do not). ``local`` is the same run
without a cluster (the batches read and scored by the client itself). After each run the
benchmark checks the directory without reading the items: the parts' row counts add up to N,
every part is there once, and the summary's verdict and scores are those of the other runs.

The figures go to ``benchmarks/RESULTS.md`` (its "cluster-streaming" section) and
``benchmarks/results/cluster_streaming.json``::

    python benchmarks/cluster_streaming.py [--items 1000000] [--executors dask ray local]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "tests"), str(ROOT / "benchmarks")]
os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")

from cluster_judge_limit import executors  # noqa: E402
from results_md import markers, write_section  # noqa: E402

RESULTS_JSON = ROOT / "benchmarks" / "results" / "cluster_streaming.json"
#: The client's peak RSS the issue asks for, in MB.
TARGET_MB = 500
ROW_GROUP = 20_000


def _written_data(path: Path, items: int) -> None:
    """``items`` rows (input, output, ground truth), written a row group at a time."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    with pq.ParquetWriter(path, pa.schema([(c, pa.string()) for c in COLUMNS])) as writer:
        for start in range(0, items, ROW_GROUP):
            numbers = range(start, min(items, start + ROW_GROUP))
            writer.write_table(
                pa.table(
                    {
                        "input": [f"What is item {n} about, in topic {n % 97}?" for n in numbers],
                        "output": [
                            f"Item {n} is about topic {n % 97} and its answer" for n in numbers
                        ],
                        "ground_truth": [f"topic {n % 97}" for n in numbers],
                    }
                )
            )


COLUMNS = ("input", "output", "ground_truth")


def _config() -> dict[str, Any]:
    from evaldag import checks, create_scorer

    def words(run: Any) -> float:
        return min(1.0, len(run.output.split()) / 10)

    def mentions_truth(run: Any) -> float:
        return float(run.ground_truth in run.output)

    def shorter_than_input(run: Any) -> float:
        return float(len(run.output) <= len(run.input) + 10)

    return {
        "scorers": [
            create_scorer("words").generate_score(words).with_threshold(0.5),
            create_scorer("mentions_truth").generate_score(mentions_truth),
            create_scorer("short").generate_score(shorter_than_input),
        ],
        "gates": [checks.includes("Item")],
    }


def _measured(executor: str, data: Path, out: Path) -> dict[str, Any]:
    """One run (in this process, started for it) on ``executor``'s cluster; its figures."""
    if executor == "local":
        return _run(None, data, out)
    for _, target in executors([executor]):
        return _run(target, data, out)
    raise ValueError(executor)


def _run(target: Any, data: Path, out: Path) -> dict[str, Any]:
    from evaldag import run_evals

    cpu = time.process_time()
    started = time.perf_counter()
    result = run_evals(str(data), **_config(), executor=target, out=out, progress=False)
    seconds = time.perf_counter() - started
    cpu = time.process_time() - cpu
    figures = {
        "seconds": seconds,
        "client_cpu_seconds": cpu,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "verdict": result.verdict,
        "scores": result.scores,
        "gates": [g.model_dump() for g in result.gate_results],
        "items_in_result": len(result.items),
        "result_columns": list(result.items.columns),
    }
    return figures


def _directory_check(out: Path, items: int) -> dict[str, Any]:
    """The parts' rows (from their metadata) and the summary, without reading the items."""
    import pyarrow.parquet as pq

    parts = sorted(out.glob("part-*.parquet"))
    rows = [pq.read_metadata(p).num_rows for p in parts]
    numbers = [int(p.name[5:-8]) for p in parts]
    summary = json.loads((out / "summary.json").read_text())
    return {
        "parts": len(parts),
        "rows_in_parts": sum(rows),
        "parts_once_each": numbers == list(range(len(parts))),
        "lost_or_duplicated": sum(rows) - items,
        "summary_verdict": summary["verdict"],
        "summary_total_items": summary["summary"]["total_items"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--items", type=int, default=1_000_000)
    parser.add_argument("--executors", nargs="+", default=["dask", "ray", "local"])
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    parser.add_argument("--data", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--no-write", action="store_true", help="print, write no results")
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(_measured(args.measure, args.data, args.out)))
        return
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="evaldag-streaming-"))
    workdir.mkdir(parents=True, exist_ok=True)
    data = workdir / f"items-{args.items}.parquet"
    if not data.exists():
        _written_data(data, args.items)
    runs = {}
    for executor in args.executors:
        out = workdir / f"out-{executor}"
        shutil.rmtree(out, ignore_errors=True)
        load_before = os.getloadavg()[0]
        child = subprocess.run(
            [
                sys.executable,
                __file__,
                "--measure",
                executor,
                "--data",
                str(data),
                "--out",
                str(out),
            ],
            capture_output=True,
            text=True,
        )
        if child.returncode:
            print(child.stderr[-3000:], file=sys.stderr)
            raise SystemExit(f"the {executor} run failed")
        figures = json.loads(child.stdout.strip().splitlines()[-1])
        figures.update(_directory_check(out, args.items))
        figures["load_average"] = [load_before, os.getloadavg()[0]]
        runs[executor] = figures
        print(executor, json.dumps(figures), flush=True)
    same = (
        len({json.dumps([f["verdict"], f["scores"]], sort_keys=True) for f in runs.values()}) == 1
    )
    record = {
        "date": f"{datetime.now(UTC):%Y-%m-%d}",
        "items": args.items,
        "row_group": ROW_GROUP,
        "cpus": os.cpu_count(),
        "runs": runs,
        "same_scores_and_verdict": same,
    }
    if args.no_write:
        return
    RESULTS_JSON.write_text(json.dumps(record, indent=2) + "\n")
    _write_markdown(record)


def _write_markdown(record: dict[str, Any]) -> None:
    start, end = markers("cluster-streaming")
    setting = (
        f"{record['items']:,} items x 3 code scorers + a gate from one Parquet file (row "
        f"groups of {record['row_group']:,}), read by the workers batch by batch (20,000 "
        "items), the results written to a directory in parts (`out=`), each run in a process "
        "of its own; Dask `LocalCluster` with 2 worker processes, Ray with 2 CPUs, and the "
        f"same run without a cluster. {record['date']}, on the shared 2-core machine (load "
        "average before and after each run below; a long judge benchmark ran beside with "
        "priority, so the seconds are the machine's, the client's CPU seconds and RSS are the "
        "run's)."
    )
    columns = "client peak RSS (MB) | client CPU s | wall s | load avg | parts | rows in parts"
    lines = [
        start,
        "## A run larger than the client (`benchmarks/cluster_streaming.py`)",
        "",
        setting,
        "",
        f"| executor | {columns} | lost or duplicated | verdict |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, f in record["runs"].items():
        before, after = f["load_average"]
        lines.append(
            f"| {name} | {f['peak_rss_mb']:.0f} | {f['client_cpu_seconds']:.0f} | "
            f"{f['seconds']:.0f} | {before:.1f} / {after:.1f} | {f['parts']} | "
            f"{f['rows_in_parts']:,} | {f['lost_or_duplicated']} | {f['verdict']} |"
        )
    met = all(f["peak_rss_mb"] < TARGET_MB for f in record["runs"].values())
    lines += [
        "",
        (
            f"Target: client peak RSS < {TARGET_MB} MB ({'met' if met else 'not met'} on every "
            f"run). Same scores and verdict on every run: "
            f"{'yes' if record['same_scores_and_verdict'] else 'NO'}. The client holds each "
            "scorer's and gate's score, error, not-scorable and judge columns (`result.items`), "
            "the items are in the parts."
        ),
        end,
    ]
    write_section("cluster-streaming", "\n".join(lines))


if __name__ == "__main__":
    main()
