"""CPU seconds per test file, child processes included: a pytest plugin for finding where the
suite's CPU goes.

    PYTHONPATH=src:benchmarks pytest -p file_cpu [-n 2 --dist loadfile] tests/...

Around each test (setup, call and teardown: a module's fixtures start in its first test and stop
in its last) it takes the CPU (user + system) of the pytest process, of the children it has
reaped and of every process still running below it (psutil), and the wall time: a Ray or Dask
cluster's processes and the CLIs a test starts count towards the test that ran them. A process
that dies unreaped by the tree (orphaned to init) is missed. Each process (an xdist worker, or
pytest alone) appends one JSON line per test file to ``$FILE_CPU_OUT`` (default
``file_cpu.jsonl`` in the directory pytest was started in), with its slowest tests by CPU.
"""

from __future__ import annotations

import json
import os
import resource
import time
from collections.abc import Generator
from pathlib import Path

import psutil
import pytest

_OUT = Path(os.environ.get("FILE_CPU_OUT", "file_cpu.jsonl")).resolve()


def _tree_cpu() -> float:
    """CPU seconds of this process, its reaped children and its live descendants."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = own.ru_utime + own.ru_stime + reaped.ru_utime + reaped.ru_stime
    for child in psutil.Process().children(recursive=True):
        try:
            times = child.cpu_times()
        except psutil.Error:
            continue
        total += times.user + times.system
    return total


class _PerFile:
    def __init__(self) -> None:
        self.files: dict[str, dict] = {}

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Generator[None, None, None]:
        cpu, wall = _tree_cpu(), time.monotonic()
        yield
        cpu, wall = _tree_cpu() - cpu, time.monotonic() - wall
        path = item.nodeid.split("::")[0]
        entry = self.files.setdefault(path, {"cpu_s": 0.0, "wall_s": 0.0, "tests": []})
        entry["cpu_s"] += cpu
        entry["wall_s"] += wall
        entry["tests"].append((round(cpu, 2), round(wall, 2), item.nodeid.split("::", 1)[1]))

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self) -> None:
        with _OUT.open("a") as out:
            for path, entry in self.files.items():
                slowest = sorted(entry["tests"], reverse=True)[:8]
                line = {"file": path, "cpu_s": round(entry["cpu_s"], 2),
                        "wall_s": round(entry["wall_s"], 2), "tests": len(entry["tests"]),
                        "slowest_tests": slowest}  # fmt: skip
                out.write(json.dumps(line) + "\n")


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(_PerFile(), "file_cpu_per_file")
