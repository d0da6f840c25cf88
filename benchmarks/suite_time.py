"""The test suite's time: wall seconds, CPU seconds and the machine's load while it ran.

Runs pytest (the README's test command, with any extra arguments given after ``--``) in a child
process and measures it: wall time, CPU time (user + system of pytest and every process it
waited for: its xdist workers, the CLIs and servers the tests start), the load average sampled
every 10 s, and the outcome counts from pytest's JUnit XML. On a shared machine the wall time
says as much about the other jobs as about the suite: read the CPU time, and the wall time with
the load beside it.

    python benchmarks/suite_time.py --label after [--per-file] [-- -x tests/judge]

With ``--per-file`` the run also loads ``benchmarks/file_cpu.py`` (a pytest plugin) and keeps
the test files that took most CPU, child processes included, with their wall seconds.

Keeps every label's latest run in ``benchmarks/results/suite_time.json`` and writes the suite
time section of ``RESULTS.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"
RESULTS = BENCHMARKS / "results" / "suite_time.json"


def outcomes(junit: Path) -> dict[str, int]:
    """Tests passed, skipped, failed and errored, from pytest's JUnit XML."""
    suite = ET.parse(junit).getroot()
    suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
    counts = {k: int(suite.get(k, 0)) for k in ("tests", "skipped", "failures", "errors")}
    counts["passed"] = counts["tests"] - counts["skipped"] - counts["failures"] - counts["errors"]
    return counts


def slowest(junit: Path, count: int = 15) -> list[list]:
    """The test files that took longest, summed over their tests (wall seconds)."""
    files: dict[str, float] = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        parts = case.get("classname", "").split(".")
        while len(parts) > 1 and parts[-1][:1].isupper():  # a test class, not the file
            parts.pop()
        name = "/".join(parts) + ".py"
        files[name] = files.get(name, 0.0) + float(case.get("time", 0))
    return [[n, round(t, 1)] for n, t in sorted(files.items(), key=lambda x: -x[1])[:count]]


def cpu_files(lines: Path, count: int = 20) -> list[list]:
    """The test files that took most CPU (``file_cpu.py``'s lines): file, CPU s, wall s."""
    files = [json.loads(line) for line in lines.read_text().splitlines()] if lines.exists() else []
    files.sort(key=lambda f: -f["cpu_s"])
    return [[f["file"], round(f["cpu_s"], 1), round(f["wall_s"], 1)] for f in files[:count]]


def measured_run(arguments: list[str], per_file: bool = False) -> dict:
    """One pytest run: wall and CPU seconds, the load it ran under, its outcomes."""
    samples: list[float] = []
    done = threading.Event()

    def sample_load() -> None:
        while not done.wait(10):
            samples.append(os.getloadavg()[0])

    with tempfile.TemporaryDirectory() as folder:
        junit, per_file_lines = Path(folder) / "junit.xml", Path(folder) / "file_cpu.jsonl"
        command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                   f"--junitxml={junit}", *arguments]  # fmt: skip
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "LITELLM_OFFLINE_MODE": "true"}
        if per_file:
            command[3:3] = ["-p", "file_cpu"]
            env["PYTHONPATH"] += os.pathsep + str(BENCHMARKS)
            env["FILE_CPU_OUT"] = str(per_file_lines)
        load_before = os.getloadavg()
        sampler = threading.Thread(target=sample_load, daemon=True)
        sampler.start()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.monotonic()
        returncode = subprocess.run(command, cwd=ROOT, env=env).returncode
        wall = time.monotonic() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        done.set()
        counts = outcomes(junit) if junit.exists() else {}
        files = slowest(junit) if junit.exists() else []
        most_cpu = cpu_files(per_file_lines)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                            capture_output=True, text=True).stdout.strip()  # fmt: skip
    return {
        "measured": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": commit,
        "command": " ".join(["pytest", *arguments]),
        "returncode": returncode,
        "wall_s": round(wall, 1),
        "cpu_s": round(cpu, 1),
        "cores": os.cpu_count(),
        "load_before": [round(x, 1) for x in load_before],
        "load_after": [round(x, 1) for x in os.getloadavg()],
        "load_mean": round(sum(samples) / len(samples), 1) if samples else None,
        **counts,
        "slowest_files": files,
        **({"cpu_files": most_cpu} if per_file else {}),
    }


def section(runs: dict[str, dict]) -> str:
    rows = "".join(
        f"| {label} | {r.get('commit', '')} | `{r['command']}` | {r['wall_s'] / 60:.1f} | "
        f"{r['cpu_s'] / 60:.1f} | "
        f"{r['load_mean']} | {r.get('passed')} / {r.get('skipped')} / "
        f"{r.get('failures', 0) + r.get('errors', 0)} | {r['measured']} |\n"
        for label, r in runs.items()
    )
    return (
        "## The test suite's time (`benchmarks/suite_time.py`)\n\n"
        f"{os.cpu_count()} cores shared with other jobs; CPU is user + system of pytest and "
        "every process it waited for; the load is the 1-minute load average sampled every "
        "10 s while the suite ran.\n\n"
        "| run | commit | command | wall min | CPU min | mean load | passed / skipped / failed "
        "| measured |\n|---|---|---|---:|---:|---:|---|---|\n" + rows
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", required=True, help="the run's name in the results")
    parser.add_argument(
        "--per-file", action="store_true", help="also measure each test file's CPU (file_cpu.py)"
    )
    parser.add_argument("pytest_args", nargs="*", help="after --: arguments for pytest")
    args = parser.parse_args()
    run = measured_run(args.pytest_args, per_file=args.per_file)
    print(json.dumps(run, indent=1))
    runs = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    runs[args.label] = run
    RESULTS.write_text(json.dumps(runs, indent=1) + "\n")
    sys.path.insert(0, str(BENCHMARKS))
    from results_md import markers, write_section

    start, end = markers("suite_time")
    write_section("suite_time", f"{start}\n{section(runs)}{end}")


if __name__ == "__main__":
    main()
