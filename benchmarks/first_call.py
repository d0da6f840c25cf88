"""The first call's cost: a fresh interpreter that imports evaldag and runs two checks over two
items (``run_evals``), and ``evaldag --help``; CPU seconds (user + system of the whole process,
interpreter start included) and the modules imported.

Targets (issue 27): the first run at most 0.4 s of CPU, ``--help`` at most 0.2 s. Each is run
``--repeats`` times; the minimum is the figure (other jobs on a shared machine only add to it),
the median is shown beside it; the commands take turns, so the load weighs on each alike. The
children may write bytecode (``__pycache__``), and each command runs once unmeasured first, so
modules load as from an installed package (pip compiles them at install) rather than being
compiled from source on every run, as they are where ``PYTHONDONTWRITEBYTECODE`` is set;
``--no-bytecode`` measures that case. ``--instructions`` also counts the instructions each run
executes under valgrind's callgrind (slow: a minute or two a run), which, unlike CPU seconds,
the machine's load does not change. The floor row is what a
``run_evals`` cannot do without: pandas (which imports pyarrow and ``pyarrow.compute`` itself),
Hamilton's driver without its extensions, and pydantic with one model built and validated (the
results are pydantic models; ``import pydantic`` alone loads almost none of it). The first run's
modules are counted as the floor's and the rest, evaldag's own apart.

    python benchmarks/first_call.py [--repeats 7]

Writes ``benchmarks/results/first_call.json`` and the first-call section of ``RESULTS.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
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
print({"modules": sorted(sys.modules), "imported": [m for m in heavy if m in sys.modules]})
"""

FLOOR = """
import os
os.environ["HAMILTON_AUTOLOAD_EXTENSIONS"] = "0"
import sys
import pandas, pyarrow.compute, hamilton.driver
from pydantic import BaseModel, Field

class Floor(BaseModel):
    value: int = Field(description="a field")

Floor(value=1)
print({"modules": sorted(sys.modules)})
"""


PANDAS = "import pandas"

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


def instructions(command: list[str], source: Path) -> int:
    """The instructions ``command`` executes under valgrind's callgrind (hash randomisation off,
    so the same run executes the same instructions)."""
    with tempfile.TemporaryDirectory() as scratch:
        done = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={scratch}/out", *command],
            capture_output=True, text=True, check=True,
            env={**_env(source), "PYTHONHASHSEED": "0"},
        )  # fmt: skip
    found = re.search(r"Collected : (\d+)", done.stderr)
    assert found, done.stderr[-2000:]
    return int(found.group(1))


def measured(commands: dict[str, tuple[list[str], Path]], repeats: int) -> dict[str, dict]:
    """Each of ``commands`` (name: the command and the source it runs) ``repeats`` times, taking
    turns (one run of each, then again), so a change in the machine's load weighs on all alike."""
    for command, source in commands.values():
        _child_cpu(command, source)  # writes the bytecode the measured runs read
    runs: dict[str, list[tuple[float, str]]] = {name: [] for name in commands}
    for _ in range(repeats):
        for name, (command, source) in commands.items():
            runs[name].append(_child_cpu(command, source))
    return {
        name: {
            "min_cpu_s": min(cpu for cpu, _ in done),
            "median_cpu_s": statistics.median(cpu for cpu, _ in done),
            "stdout": done[0][1],
        }
        for name, done in runs.items()
    }


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
    parser.add_argument(
        "--instructions", action="store_true", help="count instructions with valgrind too"
    )
    args = parser.parse_args()
    _BYTECODE["cached"] = not args.no_bytecode
    python = [sys.executable]
    load = os.getloadavg()
    source = ROOT / "src"
    commands = {
        "empty": ([*python, "-c", "pass"], source),
        "first": ([*python, "-c", FIRST_RUN], source),
        "cli": ([*python, "-m", "evaldag", "--help"], source),
        "floor": ([*python, "-c", FLOOR], source),
    }
    if args.before:
        commands["before"] = ([*python, "-c", FIRST_RUN], args.before)
    figures = measured(commands, args.repeats)
    empty, first, cli, floor = (figures[name] for name in ("empty", "first", "cli", "floor"))
    before = figures.get("before")
    found = eval(first["stdout"].strip().splitlines()[-1])  # the child's own dict literal
    counted = {}
    if args.instructions:
        counted = {
            name: instructions(command, source)
            for name, (command, source) in {
                **commands,
                "pandas": ([*python, "-c", PANDAS], source),
            }.items()
            if name != "cli"
        }
    floor_modules = set(eval(floor["stdout"].strip().splitlines()[-1])["modules"])
    beyond = set(found["modules"]) - floor_modules
    own = {m for m in beyond if m == "evaldag" or m.startswith("evaldag.")}
    report = {
        "measured": datetime.now(UTC).isoformat(timespec="seconds"),
        "python": sys.version.split()[0],
        "load": [round(x, 1) for x in load],
        "load_after": [round(x, 1) for x in os.getloadavg()],
        "interpreter_cpu_s": empty["min_cpu_s"],
        "first_run_cpu_s": first["min_cpu_s"],
        "first_run_median_cpu_s": first["median_cpu_s"],
        "first_run_modules": len(found["modules"]),
        "first_run_modules_beyond_floor": len(beyond),
        "first_run_evaldag_modules": len(own),
        "first_run_other_modules_beyond_floor": sorted({m.split(".")[0] for m in beyond - own}),
        "first_run_heavy_imports": found["imported"],
        "help_cpu_s": cli["min_cpu_s"],
        "help_median_cpu_s": cli["median_cpu_s"],
        "floor_cpu_s": floor["min_cpu_s"],
        "floor_median_cpu_s": floor["median_cpu_s"],
        "floor_modules": len(floor_modules),
        "bytecode_cached": _BYTECODE["cached"],
    }
    if counted:
        report["instructions"] = counted
    if before:
        report["before"] = {
            "src": args.before_label or str(args.before),
            "first_run_cpu_s": before["min_cpu_s"],
            "first_run_median_cpu_s": before["median_cpu_s"],
            "modules": len(eval(before["stdout"].strip().splitlines()[-1])["modules"]),
            "imported": eval(before["stdout"].strip().splitlines()[-1])["imported"],
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
        "| the floor: `import pandas, pyarrow.compute, hamilton.driver` (no extensions), one "
        f"pydantic model built ({report['floor_modules']} modules) | {report['floor_cpu_s']:.3f} | "
        f"{report['floor_median_cpu_s']:.3f} | |\n"
        "| the first run beyond the floor (evaldag's own modules and the run) | "
        f"{report['first_run_cpu_s'] - report['floor_cpu_s']:.3f} | "
        f"{report['first_run_median_cpu_s'] - report['floor_median_cpu_s']:.3f} | |\n\n"
        f"The first run imported {report['first_run_modules']} modules, "
        f"{report['first_run_modules_beyond_floor']} beyond the floor's: "
        f"{report['first_run_evaldag_modules']} of evaldag and "
        f"{report['first_run_modules_beyond_floor'] - report['first_run_evaldag_modules']} of "
        f"{', '.join(report['first_run_other_modules_beyond_floor']) or 'nothing else'}; of "
        "litellm, dask, ray, aiohttp, scipy, polars and pyspark: "
        f"{report['first_run_heavy_imports'] or 'none'}."
    )
    if before:
        was = report["before"]
        body += (
            f"\n\nThe same first run on {was['src']}, in the same session: "
            f"{was['first_run_cpu_s']:.3f} s (median {was['first_run_median_cpu_s']:.3f}), "
            f"{was['modules']} modules, of those named: {was['imported'] or 'none'}."
        )
    if counted:
        shown = {
            "pandas": "`import pandas`",
            "floor": "the floor",
            "first": "first run",
            **({"before": f"first run on {report['before']['src']}"} if before else {}),
        }
        body += (
            "\n\nInstructions executed (valgrind's callgrind, the same whatever the load; "
            "`python -c pass` "
            f"{counted['empty'] / 1e9:.3f} G): "
            + "; ".join(f"{text} {counted[name] / 1e9:.3f} G" for name, text in shown.items())
            + f". Beyond the floor: {(counted['first'] - counted['floor']) / 1e9:.3f} G"
            + (f" (was {(counted['before'] - counted['floor']) / 1e9:.3f} G)" if before else "")
            + "."
        )
    heading = "## The first call (`benchmarks/first_call.py`)"
    write_section("first_call", f"{start}\n{heading}\n\n{body}\n{end}")


if __name__ == "__main__":
    main()
