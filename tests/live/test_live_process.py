"""Live scoring with ``worker="process"``: the scorers run in a process of their own, with a real
SQLite store; error rows, drops and skips never reach the app; flush and close end the process,
and it ends by itself with an app that exits or is killed, leaving no orphan."""

import math
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from evaldag import EvalDagError, create_scorer, live, not_scorable, read_scores

pytestmark = pytest.mark.slow  # each test starts a Python process that imports evaldag


def scoring_pid(run):
    """The process that scores: the score 1, and its pid as the reason."""
    if run.output == "empty":
        return not_scorable("nothing to score")
    if run.output == "boom":
        raise ValueError("the scorer broke")
    return 1.0


def _pid_reason(score):
    return str(os.getpid())


def waits_for_release(run):
    """Scores 1 once the file named by the input's folder has a ``release`` file."""
    folder = Path(run.input["folder"])
    (folder / f"started-{run.input['n']}").touch()
    deadline = time.monotonic() + 60
    while not (folder / "release").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    return 1.0


def _running(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie no one reaped has ended)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def _ended(pid: int, seconds: float = 60) -> bool:
    deadline = time.monotonic() + seconds
    while _running(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not _running(pid)


def test_a_process_worker_scores_in_its_own_process_with_error_rows(tmp_path):
    store = tmp_path / "scores.db"
    scorer = create_scorer("picky").generate_score(scoring_pid).generate_reason(_pid_reason)
    scoring = live(scorer, store=store, worker="process")
    answer = scoring(lambda text: text if text != "unpicklable" else (lambda: text))
    for text in ("fine", "empty", "boom", "unpicklable"):
        assert answer(text) is not None
    process = scoring._worker._process
    assert scoring.flush(timeout=120)
    stats = scoring.stats()
    rows = read_scores(store).set_index("input")
    assert scoring.close(timeout=60)
    assert not process.is_alive()
    assert (stats.calls, stats.sampled, stats.skipped, stats.pending) == (4, 4, 0, 0)
    assert (stats.scored, stats.errors, stats.not_scorable) == (1, 2, 1)
    assert sorted(rows.index) == ["boom", "fine", "unpicklable"]
    assert rows.loc["fine", "reason"] == str(process.pid) != str(os.getpid())
    assert "the scorer broke" in rows.loc["boom", "error"]
    assert rows.loc["boom", "failed_step"] == "generate_score"
    assert math.isnan(rows.loc["boom", "score"])
    unpicklable = rows.loc["unpicklable"]  # the process's snapshot is the pickle
    assert unpicklable.output is None and math.isnan(unpicklable.score)
    assert "the call's output could not be copied when the call returned" in unpicklable.error
    assert set(rows.source) == {"LIVE"}
    assert answer("after") == "after" and scoring.stats().dropped == 1


def _held_in_call_0(tmp_path, queue_size):
    """A process worker's live scoring and its wrapped function, once the process scores call
    0 and waits in its scorer for the ``release`` file."""
    slow = create_scorer("slow").generate_score(waits_for_release)
    scoring = live(slow, store=tmp_path / "scores.db", queue_size=queue_size, batch_size=1,
                   worker="process")  # fmt: skip
    answer = scoring(lambda n: n)
    answer({"folder": str(tmp_path), "n": 0})
    deadline = time.monotonic() + 120
    while not (tmp_path / "started-0").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    return scoring, answer


def test_a_full_queue_drops_and_counts_without_waiting_for_the_process(tmp_path):
    scoring, answer = _held_in_call_0(tmp_path, queue_size=2)
    for n in range(1, 11):
        assert answer({"folder": str(tmp_path), "n": n})["n"] == n
    assert scoring.stats().pending == 3
    (tmp_path / "release").touch()
    assert scoring.flush(timeout=60)
    stats = scoring.stats()
    rows = read_scores(tmp_path / "scores.db")
    scoring.close()
    assert (stats.calls, stats.sampled, stats.dropped, stats.scored) == (11, 3, 8, 3)
    assert sorted(row["n"] for row in rows.input) == [0, 1, 2]


def test_a_pipe_that_fills_before_its_capacity_drops_calls_and_never_blocks(tmp_path):
    # A pipe holds fewer bytes than its capacity when writes do not fill its pages (1 MiB takes
    # 128 messages of 6.7 KB): the write must not block the app, and a message the pipe took
    # in part must reach the process whole.
    scoring, answer = _held_in_call_0(tmp_path, queue_size=10_000)
    padding = "x" * 6_600
    for n in range(1, 401):
        assert answer({"folder": str(tmp_path), "n": n, "padding": padding})["n"] == n
    held = scoring.stats()
    (tmp_path / "release").touch()
    assert scoring.flush(timeout=120)
    stats = scoring.stats()
    rows = read_scores(tmp_path / "scores.db")
    scoring.close()
    assert held.dropped > 0 and held.sampled + held.dropped == 401
    assert (stats.sampled, stats.scored) == (held.sampled, held.sampled)
    assert sorted(row["n"] for row in rows.input) == list(range(held.sampled))


def test_scorers_that_cannot_be_sent_are_refused_when_wrapping(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "cloudpickle", None)  # pickle alone: no lambdas
    scoring = live(create_scorer("l").generate_score(lambda run: 1.0), store=tmp_path / "s.db",
                   worker="process")  # fmt: skip
    with pytest.raises(EvalDagError) as raised:
        scoring(lambda text: text)
    assert raised.value.id == "EVALDAG_LIVE_SCORERS_NOT_PICKLABLE"
    with pytest.raises(EvalDagError, match="worker must be 'thread' or 'process'"):
        live(create_scorer("l").generate_score(scoring_pid), store=tmp_path / "s.db",
             worker="fiber")  # fmt: skip


def length(run):
    return len(run.output) / 10


def test_a_forked_child_scores_in_a_scoring_process_of_its_own(tmp_path):
    scoring = live(create_scorer("length").generate_score(length), store=tmp_path / "s.db",
                   worker="process")  # fmt: skip
    answer = scoring(lambda text: text)
    answer("parent")
    assert scoring.flush(timeout=120)
    parents = scoring._worker._process.pid
    pid = os.fork()  # as a server that imports the app, then forks its workers
    if pid == 0:
        code = 1
        try:
            answer("child")
            child_process = scoring._worker._process.pid
            flushed = scoring.close(timeout=120)
            code = 0 if flushed and child_process != parents else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    answer("parent again")
    assert scoring.flush(timeout=60)
    rows = read_scores(tmp_path / "s.db")
    scoring.close()
    assert sorted(rows.input) == ["child", "parent", "parent again"]


APP = """
import os, signal, sys
import evaldag
from evaldag import create_scorer

def length(run):
    return len(run.output) / 10

scoring = evaldag.live(create_scorer("length").generate_score(length), store=sys.argv[1],
                       worker="process")

@scoring
def answer(question):
    return question.upper()

if __name__ == "__main__":
    for n in range(20):
        answer(f"q{n}")
    print(scoring._worker._process.pid, flush=True)
    if sys.argv[2] == "killed":
        os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.parametrize("end", ["exit", "killed"])
def test_the_scoring_process_ends_with_the_app(tmp_path, end):
    """An app that exits without close() has its calls scored first (at exit); one killed
    leaves a process that notices and ends: no orphan either way."""
    script = tmp_path / "app.py"
    script.write_text(textwrap.dedent(APP))
    store = tmp_path / "scores.db"
    done = subprocess.run(
        [sys.executable, str(script), str(store), end], capture_output=True, text=True, timeout=300
    )
    expected = -signal.SIGKILL if end == "killed" else 0
    assert done.returncode == expected, done.stderr
    pid = int(done.stdout.split()[0])
    assert _ended(pid), f"the scoring process {pid} outlived the app"
    if end == "exit":
        assert sorted(read_scores(store).input) == sorted(f"q{n}" for n in range(20))


SLOW_START = """
import multiprocessing, time

if multiprocessing.current_process().name == "evaldag-live-scoring":
    time.sleep(8)  # a loaded machine: the scoring process takes long to import the app

def length(run):
    return len(run.output) / 10
"""


def test_the_exit_waits_for_a_scoring_process_that_starts_slowly(tmp_path):
    """At exit the queue is drained while the worker makes progress (a process still starting
    counts), not for a fixed time: the app's exit gives up on a worker that makes none for 3 s
    (``EXIT_STALL``, 30 s by default), and its scoring process takes 8 s to start."""
    (tmp_path / "slow_start.py").write_text(SLOW_START)
    script = tmp_path / "app.py"
    script.write_text(
        textwrap.dedent(APP)
        .replace("def length(run):\n    return len(run.output) / 10\n", "")
        .replace(
            "import evaldag\n",
            "import evaldag\nfrom evaldag._live import worker\nfrom slow_start import length\n"
            "worker.EXIT_STALL = 3.0\n",
        )
    )
    store = tmp_path / "scores.db"
    done = subprocess.run(
        [sys.executable, str(script), str(store), "exit"], capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "not scored" not in done.stderr, done.stderr
    assert sorted(read_scores(store).input) == sorted(f"q{n}" for n in range(20))


def test_a_script_without_a_main_guard_runs_its_calls_once_and_says_why_none_was_scored(tmp_path):
    # the scoring process imports the app's main module: calls outside the guard would run
    # there a second time (an LLM app's paid calls); they raise before the app's code runs
    script = tmp_path / "app.py"
    calls = tmp_path / "calls.log"
    script.write_text(
        APP.replace(
            'if __name__ == "__main__":\n    for n in range(20):',
            "if True:\n    for n in range(20):",
        ).replace(
            "    return question.upper()",
            f"    open({str(calls)!r}, 'a').write(question + '\\n')\n    return question.upper()",
        )
    )
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "scores.db"), "exit"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr  # the app is not failed
    assert calls.read_text().splitlines() == [f"q{n}" for n in range(20)]  # once each
    assert "answer was called while evaldag's scoring process (worker='process') imported" in (
        done.stderr
    )
    assert "the scoring process ended (exit code 1) with 20 calls not scored" in done.stderr
