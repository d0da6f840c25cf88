"""Graphviz's dot runs bounded (issue 23, case 16): a results file's ``dag_dot`` is read from
disk, so the report gives dot at most ``DOT_MAX_BYTES`` and ``DOT_SECONDS``, kills it past them
(the picture is left out with a note), and a killed ``evaldag report`` leaves no dot behind."""

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evaldag import create_scorer, run_evals
from evaldag._io import pictures
from evaldag._io.pictures import stored_picture
from evaldag._report.html import report_html
from evaldag.errors import EvalDagError

pytestmark = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz is not installed")

BIN = Path(sys.executable).parent
EVALDAG = shutil.which("evaldag", path=str(BIN))
COMMAND = [EVALDAG] if EVALDAG else [sys.executable, "-m", "evaldag"]


def _tangled_dot() -> str:
    """100 kB of DOT that dot lays out for minutes: 9,000 edges crossing between 600 nodes."""
    edges = (f"a{i}->b{(i * 7 + j * 13) % 300};" for i in range(300) for j in range(30))
    return "digraph G {\n" + "\n".join(edges) + "\n}"


def _result(dag_dot: str):
    scorer = create_scorer("always").generate_score(lambda run: 1.0)
    result = run_evals([{"input": "q", "output": "a"}], scorers=[scorer], progress=False)
    return result.model_copy(update={"dag_dot": dag_dot})


def _dot_children(parent: int) -> list[int]:
    """The live ``dot`` processes whose parent is ``parent``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            name, rest = stat[stat.index("(") + 1 : stat.rindex(")")], stat[stat.rindex(")") + 2 :]
            state, ppid = rest.split()[:2]
            if name == "dot" and int(ppid) == parent and state != "Z":
                found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"  # a zombie is dead, waiting to be reaped


def test_a_dot_that_takes_too_long_is_killed_and_the_picture_left_out(monkeypatch):
    monkeypatch.setattr(pictures, "DOT_SECONDS", 1.0)
    page = report_html(_result(_tangled_dot()))
    dag = page[page.index('<section id="dag">') :]
    assert '<p class="muted small" id="dag-not-drawn">The full Hamilton DAG is left out: ' in dag
    assert "dot took longer than 1 s to draw" in dag
    assert '<svg class="stages"' in dag  # the stages are still drawn
    assert _dot_children(os.getpid()) == []


def test_dot_text_over_the_size_limit_is_not_drawn(monkeypatch):
    monkeypatch.setattr(pictures, "DOT_MAX_BYTES", 50_000)
    page = report_html(_result(_tangled_dot()))
    assert "the DOT text is 101,413 bytes, over the 50,000 evaldag gives Graphviz" in page
    assert _dot_children(os.getpid()) == []


def test_a_picture_written_from_a_crafted_dot_is_an_error(monkeypatch, tmp_path):
    monkeypatch.setattr(pictures, "DOT_SECONDS", 1.0)
    with pytest.raises(EvalDagError) as raised:
        stored_picture(_tangled_dot(), tmp_path / "dag.svg")
    assert raised.value.id == "EVALDAG_DOT_TIMEOUT"
    assert not (tmp_path / "dag.svg").exists()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_killed_report_leaves_no_dot_behind(tmp_path):
    results = _result(_tangled_dot()).to_parquet(tmp_path / "crafted.parquet")
    report = subprocess.Popen([*COMMAND, "report", str(results)], stderr=subprocess.DEVNULL)
    try:
        children: list[int] = []
        for _ in range(600):  # the CLI imports, reads the file, then starts dot
            children = _dot_children(report.pid)
            if children or report.poll() is not None:
                break
            time.sleep(0.1)
        assert children, "evaldag report never started dot"
        report.send_signal(signal.SIGKILL)
        report.wait()
        for _ in range(100):
            if not any(_alive(pid) for pid in children):
                break
            time.sleep(0.1)
        assert not any(_alive(pid) for pid in children), "dot outlived evaldag report"
    finally:
        report.kill()
        for pid in children:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
