"""The ``evaldag`` command: ``run``'s exit codes in real subprocesses, eval files and modules,
error messages without tracebacks, the summary table, ``--out`` and ``--dag``."""

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from cli_runs import evaldag_here
from judge_server import API_KEY, MODEL
from repo_paths import FIXTURES

from evaldag import EvalResult, checks, create_scorer, run_evals
from evaldag._cli.main import main
from evaldag._cli.summary import summary_table
from evaldag._results.eval_result import JudgeLimit, ScorerUsage

BIN = Path(sys.executable).parent
EVALDAG = shutil.which("evaldag", path=str(BIN))
COMMAND = [EVALDAG] if EVALDAG else [sys.executable, "-m", "evaldag"]

#: Three items; ``exact`` scores 1 when the output equals the ground truth: 2 of 3 do.
ITEMS = [
    {"input": "capital of France?", "output": "Paris", "ground_truth": "Paris"},
    {"input": "capital of Italy?", "output": "Rome", "ground_truth": "Rome"},
    {"input": "capital of Spain?", "output": "Lisbon", "ground_truth": "Madrid"},
]

EVAL_FILE = """\
import evaldag
from evaldag import checks

exact = evaldag.create_scorer("exact", description="output equals the ground truth")
exact = exact.generate_score(lambda run: 1.0 if run.output == run.ground_truth else 0.0)

scorers = [{scorers}]
gates = [{gates}]
"""


def _write_eval(folder: Path, *, scorers: str, gates: str = "", name: str = "eval.py") -> Path:
    path = folder / name
    path.write_text(EVAL_FILE.format(scorers=scorers, gates=gates))
    return path


def _write_data(folder: Path, items: list[dict] = ITEMS) -> Path:
    path = folder / "items.jsonl"
    path.write_text("".join(json.dumps(item) + "\n" for item in items))
    return path


def _evaldag(*args: str, cwd: Path, path: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    if path is not None:
        env["PATH"] = path
    return subprocess.run(
        [*COMMAND, *map(str, args)], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


@pytest.mark.parametrize(
    ("scorers", "gates", "code", "verdict", "in_a_process"),
    [
        ("exact.with_threshold(0.5)", "checks.matches(r'^[A-Z]')", 0, "verdict: PASSED", False),
        ("exact.with_threshold(0.9)", "checks.matches(r'^[A-Z]')", 1, "verdict: SCORED", False),
        # one verdict in a real process: main()'s code is the process's exit status
        ("exact.with_threshold(0.5)", "checks.excludes('Lisbon')", 2, "verdict: FAILED", True),
        ("exact", "", 0, "verdict: none (no gates or thresholds, so no verdict)", False),
    ],
    ids=["passed", "scored", "failed", "no-verdict"],
)
def test_run_exit_code_follows_the_verdict(
    tmp_path, capsys, monkeypatch, scorers, gates, code, verdict, in_a_process
):
    eval_file = _write_eval(tmp_path, scorers=scorers, gates=gates)
    args = ("run", eval_file, "--data", _write_data(tmp_path))
    if in_a_process:
        done = _evaldag(*args, cwd=tmp_path)
    else:
        done = evaldag_here(capsys, monkeypatch, *args, cwd=tmp_path)
    assert done.returncode == code, done.stderr
    assert verdict in done.stdout
    assert "eval.py on items.jsonl: 3 items" in done.stdout
    assert done.stderr == ""


@pytest.mark.slow
def test_run_configuration_error_exits_3_with_a_message_and_no_traceback(tmp_path):
    eval_file = _write_eval(tmp_path, scorers="exact, exact")
    done = _evaldag("run", eval_file, "--data", _write_data(tmp_path), cwd=tmp_path)
    assert done.returncode == 3
    assert done.stdout == ""
    assert done.stderr.startswith("evaldag: error: scorers[0] and scorers[1] share the id 'exact'")
    assert "Traceback" not in done.stderr


def test_run_writes_results_and_dot_dag(tmp_path, capsys, monkeypatch):
    eval_file = _write_eval(
        tmp_path, scorers="exact.with_threshold(0.5)", gates="checks.matches(r'^[A-Z]')"
    )
    out = tmp_path / "out" / "results.parquet"
    dag = tmp_path / "dag.dot"
    done = evaldag_here(
        capsys, monkeypatch, "run", eval_file, "--data", _write_data(tmp_path), "--out", out,
        "--dag", dag, "--concurrency", "2", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert f"results: {out}" in done.stdout
    assert f"DAG: {dag}" in done.stdout
    result = EvalResult.read_parquet(out)
    assert result.verdict == "passed"
    assert result.scores == {"exact": pytest.approx(2 / 3)}
    assert list(result.items["exact.score"]) == [1.0, 1.0, 0.0]
    dot = dag.read_text()
    assert dot.lstrip().startswith(("digraph", "//"))
    assert "exact.scored" in dot
    assert "check-matches.gate_result" in dot
    assert "verdict" in dot


def test_run_png_dag_without_graphviz_fails_before_scoring(tmp_path, capsys, monkeypatch):
    """Without Graphviz's ``dot`` on PATH a PNG cannot be drawn: exit 3 before any scoring."""
    eval_file = tmp_path / "eval.py"
    marker = tmp_path / "scored.txt"
    eval_file.write_text(
        textwrap.dedent(f"""\
        import pathlib
        import evaldag

        def _scored(run):
            pathlib.Path({str(marker)!r}).write_text("scored")
            return 1.0

        scorers = [evaldag.create_scorer("s").generate_score(_scored)]
        """)
    )
    monkeypatch.setenv("PATH", str(BIN))
    done = evaldag_here(
        capsys, monkeypatch, "run", eval_file, "--data", _write_data(tmp_path),
        "--dag", tmp_path / "dag.png", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 3
    assert "needs Graphviz's 'dot' program" in done.stderr
    assert "write a .dot file instead" in done.stderr
    assert not marker.exists()
    assert not (tmp_path / "dag.png").exists()


@pytest.mark.slow
def test_run_eval_module_with_a_target(tmp_path):
    """EVAL as a module importable from the working directory; its target makes the outputs."""
    package = tmp_path / "evals"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "shout.py").write_text(
        textwrap.dedent("""\
        from evaldag import checks

        def target(input):
            return input.upper()

        gates = [checks.matches(r"^[A-Z ?]+$")]
        """)
    )
    data = _write_data(tmp_path, [{"input": "hello?"}, {"input": "good morning"}])
    done = _evaldag("run", "evals.shout", "--data", data, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "evals.shout on items.jsonl: 2 items" in done.stdout
    assert "verdict: PASSED" in done.stdout


def test_usage_errors_exit_3_not_argparse_2(tmp_path):
    done = _evaldag("run", cwd=tmp_path)
    assert done.returncode == 3
    assert "the following arguments are required: EVAL" in done.stderr


# The eval file's data: what `evaldag run` scores without --data.


def test_run_scores_the_data_the_eval_file_defines_read_beside_it(tmp_path, capsys, monkeypatch):
    evals = tmp_path / "evals"
    evals.mkdir()
    _write_data(evals)
    eval_file = _write_eval(evals, scorers="exact.with_threshold(0.9)")
    eval_file.write_text(eval_file.read_text() + "data = 'items.jsonl'  # beside this file\n")
    done = evaldag_here(capsys, monkeypatch, "run", "evals/eval.py", cwd=tmp_path)  # elsewhere
    assert done.returncode == 1, done.stderr  # 2 of 3 exact: the threshold is missed
    assert "eval.py on items.jsonl: 3 items" in done.stdout
    other = _write_data(tmp_path, ITEMS[:2])  # --data overrides it
    done = evaldag_here(capsys, monkeypatch, "run", "evals/eval.py", "--data", other, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "eval.py on items.jsonl: 2 items" in done.stdout


def test_run_scores_an_eval_files_data_with_its_columns(tmp_path, capsys):
    eval_file = _write_eval(tmp_path, scorers="exact.with_threshold(1)", name="mapped_eval.py")
    rows = [
        {"question": i["input"], "answer": i["output"], "gold": i["ground_truth"]} for i in ITEMS
    ]
    eval_file.write_text(
        eval_file.read_text()
        + f"data = {rows[:2]!r}\n"
        + "columns = {'input': 'question', 'output': 'answer', 'ground_truth': 'gold'}\n"
    )
    code, out, err = _main(capsys, "run", eval_file)
    assert (code, err) == (0, "")
    assert "mapped_eval.py on its data: 2 items" in out
    code, out, _ = _main(capsys, "run", eval_file, "--estimate")
    assert code == 0 and "mapped_eval.py on its data: 2 items; no judge called" in out


def test_a_relative_data_path_not_beside_the_eval_file_is_read_from_the_working_directory(
    tmp_path, capsys, monkeypatch
):
    (tmp_path / "evals").mkdir()
    eval_file = _write_eval(tmp_path / "evals", scorers="exact", name="cwd_eval.py")
    eval_file.write_text(eval_file.read_text() + "data = 'data/items.jsonl'\n")
    (tmp_path / "data").mkdir()
    _write_data(tmp_path / "data")
    monkeypatch.chdir(tmp_path)
    code, out, _ = _main(capsys, "run", eval_file)
    assert code == 0 and "cwd_eval.py on items.jsonl: 3 items" in out
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    code, _, err = _main(capsys, "run", eval_file)
    assert code == 3
    assert err == (
        "evaldag: error: cwd_eval.py defines data = 'data/items.jsonl', which is neither beside "
        f"it ('{tmp_path / 'evals' / 'data' / 'items.jsonl'}') nor in the working directory "
        f"('{tmp_path / 'elsewhere' / 'data' / 'items.jsonl'}')\n"
    )


def test_run_without_data_names_both_ways_to_give_it(tmp_path, capsys):
    eval_file = _write_eval(tmp_path, scorers="exact", name="nodata_eval.py")
    code, out, err = _main(capsys, "run", eval_file)
    assert (code, out) == (3, "")
    assert err == (
        "evaldag: error: no data to score: give --data FILE, or define data in nodata_eval.py "
        "(a path read beside it, such as data = 'items.jsonl', a list of dicts or a DataFrame)\n"
    )


# In-process: the messages of configuration and input errors (main() returns the exit code).


def _main(capsys, *args) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_missing_eval_file(tmp_path, capsys):
    code, out, err = _main(capsys, "run", tmp_path / "nope.py", "--data", _write_data(tmp_path))
    assert (code, out) == (3, "")
    assert err == f"evaldag: error: eval file '{tmp_path / 'nope.py'}' does not exist\n"


def test_missing_eval_module(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = _main(capsys, "run", "no_such_evals.rag", "--data", _write_data(tmp_path))
    assert code == 3
    assert "no eval file or module named 'no_such_evals.rag'" in err


def test_eval_file_that_raises_names_the_line(tmp_path, capsys):
    eval_file = tmp_path / "broken_eval.py"
    eval_file.write_text("import evaldag\n\nscorers = [undefined_scorer]\n")
    code, _, err = _main(capsys, "run", eval_file, "--data", _write_data(tmp_path))
    assert code == 3
    assert (
        f"loading {eval_file} raised NameError: name 'undefined_scorer' is not defined "
        f"({eval_file}, line 3)"
    ) in err
    assert "Traceback" not in err


def test_eval_file_without_scorers(tmp_path, capsys):
    eval_file = tmp_path / "empty_eval.py"
    eval_file.write_text("x = 1\n")
    code, _, err = _main(capsys, "run", eval_file, "--data", _write_data(tmp_path))
    assert code == 3
    assert "defines neither 'scorers' nor 'gates'" in err


def test_scorers_must_be_a_list(tmp_path, capsys):
    eval_file = tmp_path / "single_eval.py"
    eval_file.write_text(
        "import evaldag\nscorers = evaldag.create_scorer('s').generate_score(lambda: 1)\n"
    )
    code, _, err = _main(capsys, "run", eval_file, "--data", _write_data(tmp_path))
    assert code == 3
    assert "'scorers' must be a list, got Scorer; write scorers = [...]" in err


@pytest.mark.parametrize(
    ("source", "message"),
    [
        # `from evaldag import scorers` binds the module: a misspelt list is named
        (
            "from evaldag import scorers\nscorer = [scorers.completeness()]\n",
            "defines 'scorer', which evaldag does not read (did you mean scorers?)",
        ),
        (
            "from evaldag import scorers\nx = 1\n",
            (
                "defines neither 'scorers' nor 'gates' ('scorers' is only the imported module "
                "evaldag.scorers)"
            ),
        ),
    ],
)
def test_the_imported_scorers_module_is_not_a_list_of_scorers(tmp_path, capsys, source, message):
    eval_file = tmp_path / "module_eval.py"
    eval_file.write_text(source)
    code, _, err = _main(capsys, "run", eval_file, "--data", _write_data(tmp_path))
    assert code == 3 and message in err


def test_gates_beside_the_imported_scorers_module_run(tmp_path, capsys):
    eval_file = tmp_path / "gates_eval.py"
    eval_file.write_text(
        "from evaldag import checks, scorers\ngates = [checks.excludes('as an AI')]\n"
    )
    code, out, _ = _main(capsys, "run", eval_file, "--data", _write_data(tmp_path))
    assert code == 0 and "verdict: PASSED" in out


def test_missing_data_file(tmp_path, capsys):
    eval_file = _write_eval(tmp_path, scorers="exact", name="data_eval.py")
    code, _, err = _main(capsys, "run", eval_file, "--data", tmp_path / "missing.jsonl")
    assert code == 3
    assert f"Data file '{tmp_path / 'missing.jsonl'}' does not exist" in err


def test_data_without_outputs(tmp_path, capsys):
    eval_file = _write_eval(tmp_path, scorers="exact", name="nooutput_eval.py")
    data = _write_data(tmp_path, [{"input": "q"}])
    code, _, err = _main(capsys, "run", eval_file, "--data", data)
    assert code == 3
    assert "without a target, every item needs an 'output'" in err


def test_report_of_a_missing_results_file(tmp_path, capsys):
    code, _, err = _main(capsys, "report", tmp_path / "results.parquet")
    assert code == 3
    assert "results file" in err and "does not exist" in err


def test_report_of_a_results_directory(tmp_path, capsys):
    # 'evaldag run --out results/' writes a directory, which 'evaldag report' called missing.
    eval_file = _write_eval(tmp_path, scorers="exact.with_threshold(0.5)")
    results = tmp_path / "results"
    code, _, err = _main(
        capsys, "run", eval_file, "--data", _write_data(tmp_path), "--out", results
    )
    assert code == 0, err
    code, out, err = _main(capsys, "report", results)
    assert code == 0, err
    assert out.strip() == f"report: {tmp_path / 'report.html'}"
    assert "PASSED" in (tmp_path / "report.html").read_text()


def test_report_out_never_replaces_its_results_nor_unless_forced_a_file_not_a_report(
    tmp_path, capsys
):
    exact = create_scorer("exact").generate_score(lambda run: 1.0)
    results = run_evals(ITEMS, scorers=[exact]).to_parquet(tmp_path / "results.parquet")
    eval_file, data = _write_eval(tmp_path, scorers="exact"), _write_data(tmp_path)
    (tmp_path / "link.parquet").symlink_to(results)
    kept = {path: path.read_bytes() for path in (results, eval_file, data)}
    for target in (results, tmp_path / "link.parquet"):  # never, --force or not
        for force in ([], ["--force"]):
            code, _, err = _main(capsys, "report", results, "--out", target, *force)
            assert code == 3
            assert "is the results this report reads; give the report another path" in err
    for target in (eval_file, data):
        code, _, err = _main(capsys, "report", results, "--out", target)
        assert code == 3
        assert f"--out '{target}' exists and is not an evaldag report" in err
        assert "or --force to replace it" in err
    assert {path: path.read_bytes() for path in kept} == kept
    (tmp_path / "report.html").write_text("<p>my notes</p>")  # the default --out
    assert _main(capsys, "report", results)[0] == 3
    assert (tmp_path / "report.html").read_text() == "<p>my notes</p>"
    assert _main(capsys, "report", results, "--force")[0] == 0  # replaced when asked
    assert _main(capsys, "report", results)[0] == 0  # a report is replaced without asking
    assert "Eval results: results.parquet" in (tmp_path / "report.html").read_text()


def test_bad_concurrency_is_a_usage_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as exited:
        main(["run", "eval.py", "--data", "x.jsonl", "--concurrency", "0"])
    assert exited.value.code == 3
    assert "--concurrency: must be an integer >= 1, got '0'" in capsys.readouterr().err


# The summary table.


def test_summary_table():
    exact = create_scorer("exact").generate_score(
        lambda run: 1.0 if run.output == run.ground_truth else 0.0
    )
    flaky = create_scorer("flaky").generate_score(
        lambda run: 1 / 0 if run.output == "Lisbon" else 0.5
    )
    result = run_evals(
        ITEMS,
        scorers=[exact.with_threshold(0.9), flaky],
        gates=[checks.matches(r"^[A-Z]"), checks.excludes("Lisbon", id="no-lisbon")],
    )
    assert summary_table(result, "capitals") == textwrap.dedent("""\
    capitals: 3 items

      id             kind    average  95% interval  scored  not scorable  errors  required  result
      exact          scorer     0.67  [0.00, 1.00]       3             0       0   >= 0.90  MISSED
      flaky          scorer     0.50  [0.50, 0.50]       2             0       1
      check-matches  gate       1.00  [1.00, 1.00]       3             0       0    = 1.00  passed
      no-lisbon      gate       0.67  [0.00, 1.00]       3             0       0    = 1.00  FAILED

    verdict: FAILED (gate failed: no-lisbon; 1 of 1 thresholds missed (exact))""")


def test_summary_table_says_how_a_judge_limit_adapted():
    result = run_evals(ITEMS, scorers=[create_scorer("s").generate_score(lambda run: 1.0)])
    limits = [
        JudgeLimit(
            endpoint="openai/x at http://127.0.0.1:9/v1",
            max_concurrency=16,
            lowest=4,
            final=12,
            changes=[(0.0, 16), (1.0, 8), (1.5, 4), (3.0, 5), (4.0, 6), (5.0, 8), (6, 10), (7, 12)],
        ),
        JudgeLimit(endpoint="openai/y", max_concurrency=8, lowest=8, final=8, changes=[(0.0, 8)]),
        JudgeLimit(  # left cut by an earlier run in the process, grown back in this one
            endpoint="openai/z",
            max_concurrency=8,
            lowest=6,
            final=8,
            changes=[(0, 6), (1, 7), (2, 8)],
        ),
    ]
    total = ScorerUsage(calls=30, total_tokens=450, judge_limits=limits)
    table = summary_table(result.model_copy(update={"usage": {"total": total}}), "capitals")
    assert table.splitlines()[-4:] == [
        "judge: 30 calls, 450 tokens, $0.0000",
        (
            "judge limit for openai/x at http://127.0.0.1:9/v1: 16 → lowest 4 after 429s, "
            "ended 12 (7 changes)"
        ),
        "judge limit for openai/z: 6 (of 8), ended 8 (2 changes)",
        "verdict: none (no gates or thresholds, so no verdict)",
    ]


SLOW_EVAL = """\
import asyncio, os, sys
import evaldag

LOG = open(os.environ["CALLS_LOG"], "a")

async def judged(run):
    await asyncio.sleep(float(os.environ["DELAY"]))
    LOG.write(run.input + "\\n")
    LOG.flush()
    os.fsync(LOG.fileno())
    return 1.0

scorers = [evaldag.create_scorer("slow").analyze(judged).generate_score(lambda: 1.0)]
"""


def _checkpoint_parts(out: Path) -> Path:
    """Where ``evaldag run --out OUT`` keeps its finished batches while it runs."""
    return out.parent / ".evaldag" / f"{out.name}.checkpoint.parquet.partial"


def _wait_for_batches(job: subprocess.Popen, parts: Path, count: int) -> None:
    deadline = time.monotonic() + 120
    while len(list(parts.glob("batch-*.parquet"))) < count and time.monotonic() < deadline:
        assert job.poll() is None, "the run ended before it could be stopped"
        time.sleep(0.02)


@pytest.mark.slow
def test_run_resume_after_sigkill_repeats_no_finished_item(tmp_path, capsys, monkeypatch):
    eval_file = tmp_path / "slow_eval.py"
    eval_file.write_text(SLOW_EVAL)
    data = _write_data(tmp_path, [{"input": str(i), "output": "o"} for i in range(200)])
    log, out = tmp_path / "calls.log", tmp_path / "run.parquet"
    args = ["run", str(eval_file), "--data", str(data), "--out", str(out)]
    args += ["--concurrency", "1"]  # batches of 64 items
    env = {**os.environ, "CALLS_LOG": str(log), "DELAY": "0.01"}
    job = subprocess.Popen([*COMMAND, *args], cwd=tmp_path, env=env, stdout=subprocess.DEVNULL)
    parts = _checkpoint_parts(out)  # every run keeps a checkpoint
    _wait_for_batches(job, parts, 2)
    os.kill(job.pid, signal.SIGKILL)
    job.wait()
    saved = {row for part in parts.glob("batch-*.parquet") for row in _inputs(part)}
    before = log.read_text().split()
    # the process killed is the subject; the run that resumes it can be this one
    monkeypatch.setenv("CALLS_LOG", str(log))
    monkeypatch.setenv("DELAY", "0")
    again = evaldag_here(capsys, monkeypatch, *args, "--resume", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    after = log.read_text().split()[len(before) :]
    assert saved and saved.isdisjoint(after)
    assert set(before) | set(after) == {str(i) for i in range(200)}
    result = EvalResult.read_parquet(out)
    assert result.items["input"].tolist() == [str(i) for i in range(200)]
    assert result.scores == {"slow": 1.0}
    assert (out.parent / ".evaldag" / ".gitignore").read_text().endswith("*\n")


def _inputs(part: Path) -> list[str]:
    import pandas as pd

    return pd.read_parquet(part)["input"].tolist()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("stop", "code", "said"),
    [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")],
    ids=["ctrl-c", "sigterm"],
)
def test_a_stopped_run_says_how_to_go_on_and_going_on_gives_the_whole_run(
    tmp_path, capsys, monkeypatch, stop, code, said
):
    """Ctrl-C or SIGTERM mid-run: the conventional exit code, the batches scored so far kept,
    and the command line that goes on from them; run, it gives what an uninterrupted run
    gives, scoring no saved item again."""
    eval_file = tmp_path / "slow_eval.py"
    eval_file.write_text(SLOW_EVAL.replace("return 1.0", "return int(run.input) % 3 / 2"))
    data = _write_data(tmp_path, [{"input": str(i), "output": "o"} for i in range(200)])
    log = tmp_path / "calls.log"
    args = ["run", "slow_eval.py", "--data", "items.jsonl", "--out", "run.parquet"]
    args += ["--concurrency", "1"]
    env = {**os.environ, "CALLS_LOG": str(log), "DELAY": "0.01", "PYTHONUNBUFFERED": "1"}
    job = subprocess.Popen(
        [*COMMAND, *args],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        # a shell may start background jobs with SIGINT ignored; Ctrl-C reaches a foreground one
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    parts = _checkpoint_parts(tmp_path / "run.parquet")
    _wait_for_batches(job, parts, 1)
    job.send_signal(stop)
    _, stderr = job.communicate(timeout=60)
    assert job.returncode == code, stderr
    saved = {row for part in parts.glob("batch-*.parquet") for row in _inputs(part)}
    kept = f"{len(saved)} items scored so far are kept in {parts.relative_to(tmp_path)}"
    assert f"evaldag: {said}; {kept}. To go on from there:" in stderr
    go_on = stderr.strip().splitlines()[-1].strip()
    assert go_on == shlex.join(["evaldag", *args, "--resume"])
    assert saved
    before = log.read_text().split()
    # the stopped process is the subject; the runs that go on and compare can be this one
    monkeypatch.setenv("CALLS_LOG", str(log))
    monkeypatch.setenv("DELAY", "0")
    again = evaldag_here(capsys, monkeypatch, *shlex.split(go_on)[1:], cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert saved.isdisjoint(log.read_text().split()[len(before) :])
    whole = ["run", str(eval_file), "--data", str(data), "--out", "whole.parquet"]
    done = evaldag_here(capsys, monkeypatch, *whole, "--no-checkpoint", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    resumed = EvalResult.read_parquet(tmp_path / "run.parquet")
    uninterrupted = EvalResult.read_parquet(tmp_path / "whole.parquet")
    assert resumed.to_dict() == uninterrupted.to_dict()
    columns = ["input", "slow.score", "slow.error"]
    assert resumed.items[columns].equals(uninterrupted.items[columns])
    assert not parts.exists()


def test_the_command_that_goes_on_replaces_any_resume_option():
    from evaldag._cli.resume import resume_command

    start = ["run", "e.py", "--data", "d.jsonl"]
    assert resume_command(start) == "evaldag run e.py --data d.jsonl --resume"
    assert resume_command([*start, "--resume=refresh"]) == resume_command(start)
    assert resume_command(["run", "e.py", "--resume", "refresh", "--data", "d.jsonl"]) == (
        resume_command(start)
    )
    assert resume_command(["run", "e.py", "--res", "--data", "d.jsonl"]) == resume_command(start)
    assert resume_command(["run", "my eval.py"]) == "evaldag run 'my eval.py' --resume"
    url = "postgresql://evals:hunter2-s3cret@db/evals"  # a password never reaches the output
    assert resume_command(["run", "e.py", "--cache", url, f"--store={url}"]) == (
        "evaldag run e.py --cache 'postgresql://**********@db/evals' "
        "'--store=postgresql://**********@db/evals' --resume"
    )


def test_a_value_resume_does_not_take_is_named_without_its_credentials(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["run", "--resume", "postgresql://evals:hunter2-s3cret@db/evals", "e.py"])
    assert exited.value.code == 3
    refused = capsys.readouterr().err
    assert "got 'postgresql://**********@db/evals'; put --resume after EVAL" in refused
    assert "hunter2" not in refused


def test_run_keeps_a_checkpoint_beside_out_and_resume_reads_a_finished_run_back(tmp_path, capsys):
    eval_file = _write_eval(tmp_path, scorers="exact")
    data = _write_data(tmp_path)
    out = tmp_path / "results.csv"
    code, _, err = _main(capsys, "run", eval_file, "--data", data, "--out", out)
    assert (code, err) == (0, "")
    checkpoint = tmp_path / ".evaldag" / "results.csv.checkpoint.parquet"
    assert EvalResult.read_parquet(checkpoint).scores == {"exact": 2 / 3}
    out.unlink()
    code, _, err = _main(capsys, "run", eval_file, "--data", data, "--out", out, "--resume")
    assert code == 0 and "its results were read back from" in err
    assert out.read_text().count("\n") == 4  # written again: a header and three items


def test_a_changed_eval_is_refused_naming_the_change_and_refreshed_on_demand(tmp_path, capsys):
    eval_file = _write_eval(tmp_path, scorers="exact")
    data = _write_data(tmp_path)
    assert _main(capsys, "run", eval_file, "--data", data)[0] == 0
    eval_file.write_text(eval_file.read_text().replace("1.0 if", "0.5 if"))
    code, _, err = _main(capsys, "run", eval_file, "--data", data, "--resume")
    assert code == 3
    assert "step 'generate_score' of scorer 'exact': its code changed" in err
    assert "--resume=refresh" in err and "without --resume" in err
    code, out, _ = _main(capsys, "run", eval_file, "--data", data, "--resume=refresh")
    assert code == 0 and "0.33" in out  # two of three at 0.5


def test_run_without_out_keeps_its_checkpoint_here(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    eval_file = _write_eval(tmp_path, scorers="exact")
    data = _write_data(tmp_path)
    code, _, err = _main(capsys, "run", "eval.py", "--data", "items.jsonl", "--resume")
    assert code == 0 and "no checkpoint in .evaldag to resume; scoring every item" in err
    assert (tmp_path / ".evaldag" / "eval.py-items.jsonl.checkpoint.parquet").exists()
    code, _, err = _main(capsys, "run", eval_file, "--data", data, "--no-checkpoint")
    assert (code, err) == (0, "")


def test_no_checkpoint_keeps_none_and_cannot_be_resumed(tmp_path, capsys):
    eval_file = _write_eval(tmp_path, scorers="exact")
    data = _write_data(tmp_path)
    args = ["run", eval_file, "--data", data, "--out", tmp_path / "r.parquet"]
    assert _main(capsys, *args, "--no-checkpoint")[0] == 0
    assert not (tmp_path / ".evaldag").exists()
    code, _, err = _main(capsys, *args, "--no-checkpoint", "--resume")
    assert code == 3 and "--resume goes on from a checkpoint: drop --no-checkpoint" in err


def test_a_long_out_name_gives_a_checkpoint_name_that_fits(tmp_path, capsys):
    eval_file = _write_eval(tmp_path, scorers="exact")
    out = tmp_path / ("r" * 240 + ".parquet")  # 248 bytes: with the suffixes, too long
    assert _main(capsys, "run", eval_file, "--data", _write_data(tmp_path), "--out", out)[0] == 0
    (checkpoint,) = (tmp_path / ".evaldag").glob("*.checkpoint.parquet")
    assert checkpoint.name.startswith("r" * 100) and len(checkpoint.name) < 220
    assert EvalResult.read_parquet(checkpoint).scores == EvalResult.read_parquet(out).scores


def test_run_cache_keeps_the_judges_replies_in_a_database(
    tmp_path, capsys, judge_server, postgres_url
):
    judge_server.on("Score", {"score": 1})
    eval_file = tmp_path / "eval_cached.py"
    eval_file.write_text(
        textwrap.dedent(f"""\
        from evaldag import Judge, PromptStep, create_scorer

        judge = Judge(
            "openai/{MODEL}",
            api_base="{judge_server.url}",
            api_key="{API_KEY}",
            instructions="Grade it.",
        )
        step = PromptStep("score", lambda run: f"Score {{run.output}}")
        scorers = [create_scorer("graded", judge=judge).generate_score(step)]
        """)
    )
    args = ["run", eval_file, "--data", _write_data(tmp_path), "--no-checkpoint", "--cache"]
    for _ in range(2):
        code, out, err = _main(capsys, *args, postgres_url)
        assert code == 0, err
    assert len(judge_server.requests) == len(ITEMS)  # the second run asked nothing
    code, out, err = _main(capsys, *args, "postgresql://evals:hunter2-s3cret@127.0.0.1:9/evals")
    assert code == 3 and "the judge cache cache='postgresql://**********@127.0.0.1:9/" in err
    assert "hunter2-s3cret" not in out + err and len(judge_server.requests) == len(ITEMS)


TRACES_EVAL = """\
from evaldag import checks

scorers = [checks.called_tool("get_weather")]
gates = [checks.did_not_call("delete_db"), checks.no_error_spans()]
"""


@pytest.mark.parametrize(
    ("conversation", "code", "verdict"),
    [("one_tool", 0, "verdict: PASSED"), ("forbidden_tool", 2, "verdict: FAILED")],
)
def test_run_scores_the_traces_openllmetry_wrote(
    tmp_path, capsys, monkeypatch, conversation, code, verdict
):
    """``--traces`` on OpenLLMetry's OTLP JSON (fixtures/traces/openllmetry): the tool its @tool
    span recorded is a call the gates see."""
    (tmp_path / "traces_eval.py").write_text(TRACES_EVAL)
    traces = FIXTURES / "traces" / "openllmetry" / f"{conversation}.jsonl"
    done = evaldag_here(
        capsys, monkeypatch, "run", "traces_eval.py", "--traces", traces, cwd=tmp_path
    )
    assert (done.returncode, done.stderr) == (code, "")
    assert verdict in done.stdout
