"""The first call's cost: a fresh interpreter that imports evaldag and runs two checks over two
items (``run_evals``), and ``evaldag --help``; CPU seconds (user + system of the whole process,
interpreter start included) and the modules imported.

Targets (issue 27): the first run at most 0.4 s of CPU, ``--help`` at most 0.2 s. Each is run
``--repeats`` times; the minimum is the figure (other jobs on a shared machine only add to it),
the median is shown beside it. The children may write bytecode (``__pycache__``), and each
command runs once unmeasured first, so modules load as from an installed package (pip compiles
them at install) rather than being compiled from source on every run, as they are where
``PYTHONDONTWRITEBYTECODE`` is set; ``--no-bytecode`` measures that case. The floor row is the
imports a ``run_evals`` cannot do without (pandas, pyarrow, pydantic, Hamilton's driver without
its extensions).

    python benchmarks/first_call.py [--repeats 7]

Writes ``benchmarks/results/first_call.json`` and the first-call section of ``RESULTS.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"

FIRST_RUN = """
import sys
import evaldag
from evaldag import checks

result = evaldag.run_evals(
    [{"input": "a", "output": "hello world"}, {"input": "b", "output": "bye"}],
    scorers=[checks.includes("hello"), checks.equals("bye")],
    progress=False,
)
assert result.summary.total_items == 2
heavy = ["litellm", "dask", "ray", "aiohttp", "scipy", "polars", "pyspark"]
print({"modules": len(sys.modules), "imported": [m for m in heavy if m in sys.modules]})
"""

FLOOR = """
import os
os.environ["HAMILTON_AUTOLOAD_EXTENSIONS"] = "0"
import sys
import pandas, pyarrow.compute, pydantic, hamilton.driver
print({"modules": len(sys.modules)})
"""


#: Whether the children may write and read bytecode (``--no-bytecode`` turns it off).
_BYTECODE = {"cached": True}


def _env(source: Path) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(source), "LITELLM_OFFLINE_MODE": "true"}
    if _BYTECODE["cached"]:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    else:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def _child_cpu(command: list[str], source: Path = ROOT / "src") -> tuple[float, str]:
    """CPU seconds (user + system) of ``command`` run to its end, and what it printed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        command, capture_output=True, text=True, check=True, env=_env(source)
    )  # fmt: skip
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return cpu, done.stdout


def measured(command: list[str], repeats: int, source: Path = ROOT / "src") -> dict:
    _child_cpu(command, source)  # writes the bytecode the measured runs read
    runs = [_child_cpu(command, source) for _ in range(repeats)]
    cpu = [c for c, _ in runs]
    return {"min_cpu_s": min(cpu), "median_cpu_s": statistics.median(cpu), "stdout": runs[0][1]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument(
        "--before", type=Path, help="another checkout's src/ to measure the first run of beside"
    )
    parser.add_argument("--before-label", help="what --before is, for RESULTS.md")
    parser.add_argument(
        "--no-bytecode", action="store_true", help="compile every module on every run"
    )
    args = parser.parse_args()
    _BYTECODE["cached"] = not args.no_bytecode
    python = [sys.executable]
    load = os.getloadavg()
    empty = measured([*python, "-c", "pass"], args.repeats)
    first = measured([*python, "-c", FIRST_RUN], args.repeats)
    found = eval(first["stdout"].strip().splitlines()[-1])  # the child's own dict literal
    cli = measured([*python, "-m", "evaldag", "--help"], args.repeats)
    floor = measured([*python, "-c", FLOOR], args.repeats)
    before = args.before and measured([*python, "-c", FIRST_RUN], args.repeats, args.before)
    report = {
        "measured": datetime.now(UTC).isoformat(timespec="seconds"),
        "python": sys.version.split()[0],
        "load": [round(x, 1) for x in load],
        "load_after": [round(x, 1) for x in os.getloadavg()],
        "interpreter_cpu_s": empty["min_cpu_s"],
        "first_run_cpu_s": first["min_cpu_s"],
        "first_run_median_cpu_s": first["median_cpu_s"],
        "first_run_modules": found["modules"],
        "first_run_heavy_imports": found["imported"],
        "help_cpu_s": cli["min_cpu_s"],
        "help_median_cpu_s": cli["median_cpu_s"],
        "floor_cpu_s": floor["min_cpu_s"],
        "floor_median_cpu_s": floor["median_cpu_s"],
        "floor_modules": eval(floor["stdout"].strip().splitlines()[-1])["modules"],
        "bytecode_cached": _BYTECODE["cached"],
    }
    if before:
        report["before"] = {
            "src": args.before_label or str(args.before),
            "first_run_cpu_s": before["min_cpu_s"],
            "first_run_median_cpu_s": before["median_cpu_s"],
            **eval(before["stdout"].strip().splitlines()[-1]),
        }
    print(json.dumps(report, indent=1))
    (BENCHMARKS / "results" / "first_call.json").write_text(json.dumps(report, indent=1) + "\n")
    sys.path.insert(0, str(BENCHMARKS))
    from results_md import markers, write_section

    start, end = markers("first_call")
    body = (
        f"Measured {report['measured']} (Python {report['python']}, load average "
        f"{', '.join(map(str, report['load']))} before, "
        f"{', '.join(map(str, report['load_after']))} after; CPU of the whole process, the "
        f"interpreter's start included, minimum of {args.repeats} runs, median beside it; "
        + (
            "bytecode cached, as in an installed package"
            if report["bytecode_cached"]
            else "every module compiled from source on every run (PYTHONDONTWRITEBYTECODE)"
        )
        + ").\n\n"
        "| figure | CPU s (min) | CPU s (median) | target |\n|---|---:|---:|---:|\n"
        f"| `python -c pass` | {empty['min_cpu_s']:.3f} | {empty['median_cpu_s']:.3f} | |\n"
        f"| first run: `import evaldag`, `run_evals` of 2 checks over 2 items | "
        f"{report['first_run_cpu_s']:.3f} | {report['first_run_median_cpu_s']:.3f} | 0.4 |\n"
        f"| `python -m evaldag --help` | {report['help_cpu_s']:.3f} | "
        f"{report['help_median_cpu_s']:.3f} | 0.2 |\n"
        "| the floor: `import pandas, pyarrow.compute, pydantic, hamilton.driver` "
        f"({report['floor_modules']} modules) | {report['floor_cpu_s']:.3f} | "
        f"{report['floor_median_cpu_s']:.3f} | |\n\n"
        f"The first run imported {report['first_run_modules']} modules; of litellm, dask, ray, "
        f"aiohttp, scipy, polars and pyspark: {report['first_run_heavy_imports'] or 'none'}."
    )
    if before:
        was = report["before"]
        body += (
            f"\n\nThe same first run on {was['src']}, in the same session: "
            f"{was['first_run_cpu_s']:.3f} s (median {was['first_run_median_cpu_s']:.3f}), "
            f"{was['modules']} modules, of those named: {was['imported'] or 'none'}."
        )
    heading = "## The first call (`benchmarks/first_call.py`)"
    write_section("first_call", f"{start}\n{heading}\n\n{body}\n{end}")


if __name__ == "__main__":
    main()
