"""Bad input everywhere: malformed datasets, files and options fed to run_evals and `evaldag run`.

Each case ends one of two ways: an ``EvalDagError`` whose message names the column, row, file or
option at fault (never a bare pandas, pyarrow or Hamilton exception; for the CLI, exit code 3 and
one ``evaldag: error:`` line, no traceback), or, where the input is legitimately acceptable (a
non-string output, nested junk in a carried-through column, a 1 MB text), a successful run.
Either way ``out=`` / ``--out`` ends up holding a complete results file or nothing: no partial
file, no temporary file left beside it, and an earlier file untouched by a failed run.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st
from small_disks import filled

from evaldag import EvalDagError, EvalResult, create_scorer, read_results, run_evals
from evaldag._cli.main import main as cli_main

FAST = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])

#: Scores any output: the length of its text, capped.
LENGTH = create_scorer("length").generate_score(lambda run: min(1.0, len(str(run.output)) / 100))
FORMS = ("records", "frame", "jsonl", "csv", "parquet")
NEAR_MISSES = {
    "input": ["Input", "INPUT", "prompt", "question", "query", " input", "input "],
    "output": ["Output", "outputs", "response", "answer", "completion", "output "],
}
EVAL_FILE = """\
from evaldag import create_scorer
scorers = [create_scorer("length").generate_score(lambda run: min(1.0, len(str(run.output)) / 100))]
"""

texts = st.text(st.characters(exclude_categories=("Cc", "Cs")), max_size=30)
rows = st.lists(st.fixed_dictionaries({"input": texts, "output": texts}), min_size=1, max_size=4)
scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | texts
junk = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=8,
)
missing_values = st.sampled_from([None, float("nan"), pd.NA, pd.NaT])


@contextlib.contextmanager
def _folder() -> Iterator[Path]:
    # hypothesis runs a test body many times; a function-scoped tmp_path would be shared
    with tempfile.TemporaryDirectory() as name:
        yield Path(name)


def _written(records: list[dict[str, Any]], form: str, folder: Path) -> Any:
    """``records`` as run_evals' ``data`` in ``form``: a list, a DataFrame or a file."""
    if form == "records":
        return records
    frame = pd.DataFrame.from_records(records)
    if form == "frame":
        return frame
    path = folder / f"data.{form}"
    if form == "jsonl":
        path.write_text("".join(json.dumps(r, default=str) + "\n" for r in records))
    elif form == "csv":
        frame.to_csv(path, index=False)
    else:
        frame.to_parquet(path)
    return path


def _refused(call: Callable[[], Any], *names: str) -> EvalDagError:
    """The EvalDagError ``call`` raises; its message must contain each of ``names``."""
    with pytest.raises(EvalDagError) as raised:
        call()
    message = raised.value.message
    for name in names:
        assert name in message, f"{name!r} not named in: {message}"
    assert "Traceback" not in message
    return raised.value


def _temporary_files(out: Path) -> list[str]:
    return [p.name for p in out.parent.iterdir() if p.name.startswith(f".{out.name}.")]


def _nothing_left(out: Path, before: bytes | None = None) -> None:
    """No results file at ``out`` (or the earlier one, unchanged) and no temporary file."""
    if before is None:
        assert not out.exists()
    else:
        assert out.read_bytes() == before
    assert _temporary_files(out) == []


def _complete(out: Path, result: EvalResult) -> None:
    """``out`` holds the whole result, and no temporary file was left beside it."""
    written = EvalResult.read_parquet(out)
    assert len(written.items) == len(result.items)
    assert written.scores == result.scores
    assert _temporary_files(out) == []


# --- missing, renamed and empty columns ---------------------------------------------------------


@pytest.mark.slow
@FAST
@given(rows, st.sampled_from(["input", "output"]), st.sampled_from(FORMS))
def test_a_missing_column_is_named(records, column, form):
    with _folder() as folder:
        data = _written(
            [{k: v for k, v in r.items() if k != column} for r in records], form, folder
        )
        out = folder / "out.parquet"
        _refused(lambda: run_evals(data, scorers=[LENGTH], out=out), f"'{column}'")
        _nothing_left(out)


@FAST
@given(rows, st.sampled_from(["input", "output"]), st.data())
def test_a_renamed_column_is_named_with_the_columns_found(records, column, data):
    wrong = data.draw(st.sampled_from(NEAR_MISSES[column]))
    renamed = [{(wrong if k == column else k): v for k, v in r.items()} for r in records]
    error = _refused(lambda: run_evals(renamed, scorers=[LENGTH]), f"'{column}'")
    if column == "input":
        assert repr(wrong) in error.message  # "columns found: [...]" shows the near miss


@FAST
@given(rows, st.data())
def test_an_item_without_an_input_key_is_named_by_index(records, data):
    index = data.draw(st.integers(0, len(records) - 1))
    records[index] = {"output": "an answer", "prompt": "the input under another name"}
    _refused(lambda: run_evals(records, scorers=[LENGTH]), f"index {index}", "'input'")


@FAST
@given(rows, st.data())
def test_a_jsonl_line_without_an_input_is_named_by_line(records, data):
    index = data.draw(st.integers(0, len(records) - 1))
    records[index] = {"output": "an answer"}
    with _folder() as folder:
        path = _written(records, "jsonl", folder)
        _refused(lambda: run_evals(path, scorers=[LENGTH]), str(path), f"line {index + 1}")


@pytest.mark.parametrize(
    "data",
    [
        [],
        pd.DataFrame({"input": [], "output": []}),
        pd.DataFrame(),
    ],
    ids=["empty-list", "no-rows", "no-columns"],
)
def test_empty_data(data):
    _refused(lambda: run_evals(data, scorers=[LENGTH]), "empty")


# --- NaN and None -------------------------------------------------------------------------------


def _missing(form: str) -> st.SearchStrategy[Any]:
    """The missing markers a form can hold: files have one, lists and DataFrames four."""
    return missing_values if form in ("records", "frame") else st.none()


@FAST
@given(rows, st.sampled_from(["records", "frame", "jsonl", "csv", "parquet"]), st.data())
def test_a_missing_output_is_named_with_its_row(records, form, data):
    index = data.draw(st.integers(0, len(records) - 1))
    for record in records:
        record["output"] = record["output"] or "text"  # an empty CSV cell is a missing one
    records[index]["output"] = data.draw(_missing(form))
    with _folder() as folder:
        source = _written(records, form, folder)
        _refused(lambda: run_evals(source, scorers=[LENGTH]), "'output'", f"index {index}")


@pytest.mark.slow
@FAST
@given(rows, st.sampled_from(["records", "frame", "jsonl", "parquet"]), st.data())
def test_a_missing_input_value_is_scored_as_none(records, form, data):
    # Mastra takes {input: null}; only an item without the key is refused (see above).
    index = data.draw(st.integers(0, len(records) - 1))
    records[index]["input"] = data.draw(_missing(form))
    seen = []
    scorer = create_scorer("input-seen").generate_score(lambda run: seen.append(run.input) or 1)
    with _folder() as folder:
        result = run_evals(_written(records, form, folder), scorers=[scorer])
    assert result.scores == {"input-seen": 1}
    assert seen[index] is None


# --- non-string outputs and nested junk ---------------------------------------------------------


@pytest.mark.slow
@FAST
@given(st.lists(junk.filter(lambda v: v is not None), min_size=1, max_size=4))
def test_any_output_value_is_scored(outputs):
    records = [{"input": f"q{i}", "output": o} for i, o in enumerate(outputs)]
    result = run_evals(records, scorers=[LENGTH])
    assert len(result.items) == len(outputs)
    assert result.items["length.error"].isna().all()
    assert 0 <= result.scores["length"] <= 1


@pytest.mark.slow
@FAST
@given(rows, st.sampled_from(["ground_truth", "request_context", "expected_trajectory", "meta"]))
@example([{"input": "q", "output": "a"}, {"input": "r", "output": "b"}], "meta")
def test_nested_junk_in_other_columns_is_carried_through(records, column):
    values = [{"deep": [1, {"er": [None, "x", 2.5]}]}, ["a", {"b": {}}], {(): "tuple key"}, "t"]
    for i, record in enumerate(records):
        record[column] = values[i % len(values)]
    with _folder() as folder:
        out = folder / "out.parquet"
        result = run_evals(records, scorers=[LENGTH], out=out)
        _complete(out, result)
    assert result.items["length.error"].isna().all()


@pytest.mark.slow
@FAST
@given(st.lists(junk.filter(lambda v: v is not None) | st.binary(max_size=4), max_size=4))
@example([1, "x"])
@example([True, "x"])
@example([b"\xff"])
def test_any_output_value_is_written_to_out(outputs):
    records = [{"input": "q", "output": "text"}] + [
        {"input": f"q{i}", "output": o} for i, o in enumerate(outputs)
    ]
    with _folder() as folder:
        out = folder / "out.parquet"
        result = run_evals(records, scorers=[LENGTH], out=out)
        _complete(out, result)


@pytest.mark.slow
def test_a_one_megabyte_text_round_trips(tmp_path):
    big = "é" + "x" * (2**20) + "🙂"
    records = [{"input": big, "output": big[::-1]}, {"input": "small", "output": "small"}]
    for form in ("records", "jsonl", "csv", "parquet"):
        out = tmp_path / f"{form}.parquet"
        result = run_evals(_written(records, form, tmp_path), scorers=[LENGTH], out=out)
        written = EvalResult.read_parquet(out)
        assert written.items["input"].tolist() == [big, "small"], form
        assert written.items["output"].tolist() == [big[::-1], "small"], form
        assert result.scores == {"length": pytest.approx((1.0 + 0.05) / 2)}


def test_text_in_files_is_read_as_written(tmp_path):
    # pandas' readers would turn "001" into 1 and "NA" into a missing value
    records = [{"input": "001", "output": "NA"}, {"input": "1e5", "output": "null"}]
    seen = []
    scorer = create_scorer("seen").generate_score(lambda run: seen.append(run.input) or 1)
    for form in ("jsonl", "csv"):
        seen.clear()
        run_evals(_written(records, form, tmp_path), scorers=[scorer])
        assert seen == ["001", "1e5"], form


# --- duplicate ids and columns ------------------------------------------------------------------


@FAST
@given(st.lists(st.integers(0, 3) | st.sampled_from(["a", "b"]), min_size=2, max_size=6))
def test_duplicate_item_ids_are_named(ids):
    records = [{"id": i, "input": "q", "output": "a"} for i in ids]
    if len({repr(i) for i in ids}) == len(ids):
        assert len(run_evals(records, scorers=[LENGTH]).items) == len(ids)
        return
    first = next(i for i in ids if ids.count(i) > 1)
    rows_of_first = [n for n, i in enumerate(ids) if i == first]
    error = _refused(lambda: run_evals(records, scorers=[LENGTH]), "'id'", str(first))
    assert set(rows_of_first) <= set(error.details["rows"])


@pytest.mark.parametrize("role", ["scorers", "gates", "both"])
def test_duplicate_scorer_ids_are_named(role):
    twin = create_scorer("length").generate_score(lambda: 1)
    scorers, gates = {
        "scorers": ([LENGTH, twin], []),
        "gates": ([], [LENGTH, twin]),
        "both": ([LENGTH], [twin]),
    }[role]
    _refused(
        lambda: run_evals([{"input": "q", "output": "a"}], scorers=scorers, gates=gates), "'length'"
    )


@pytest.mark.parametrize(
    "columns",
    [["input", "output", "output"], ["input", "output", "groundTruth", "ground_truth"]],
)
def test_duplicate_columns_are_named(columns):
    frame = pd.DataFrame([["q", "a", "x", "y"][: len(columns)]], columns=columns)
    _refused(lambda: run_evals(frame, scorers=[LENGTH]), "duplicate columns")


def test_multi_level_columns_are_refused():
    frame = pd.DataFrame(
        [["q", "a"]], columns=pd.MultiIndex.from_tuples([("input", "x"), ("output", "y")])
    )
    _refused(lambda: run_evals(frame, scorers=[LENGTH]), "multi-level columns")


def test_multi_turn_columns_are_named():
    _refused(lambda: run_evals([{"inputs": ["a", "b"], "output": "c"}], scorers=[LENGTH]), "inputs")


# --- thresholds ---------------------------------------------------------------------------------


def _valid_bound(value: Any) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and 0 <= value <= 1
    )


def _valid_threshold(threshold: Any) -> bool:
    """Mastra's rule (spec §6.2), written independently of evaldag._scorer.thresholds."""
    if not isinstance(threshold, dict):
        return _valid_bound(threshold)
    if set(threshold) - {"min", "max"}:
        return False
    bounds = {k: v for k, v in threshold.items() if v is not None}
    if not bounds or not all(_valid_bound(v) for v in bounds.values()):
        return False
    return bounds.get("min", 0) <= bounds.get("max", 1)


numbers = st.floats() | st.integers(-2, 2) | st.sampled_from([0, 1, 0.0, 1.0, -0.0])
bounds = numbers | st.none() | st.booleans() | st.sampled_from(["0.5", [0.5], {}])
thresholds = (
    numbers
    | st.none()
    | st.booleans()
    | st.text(max_size=4)
    | st.lists(numbers, max_size=2)
    | st.dictionaries(st.sampled_from(["min", "max"]), bounds, max_size=2)
    | st.dictionaries(st.sampled_from(["min", "max", "low", 1, None]), bounds, max_size=3)
)


@pytest.mark.slow
@FAST
@given(thresholds)
@example({"min": 0.8, "max": 0.2})
@example({"x": 1, 2: 3})
def test_thresholds_are_checked_as_mastra_does(threshold):
    entry = {"scorer": LENGTH, "threshold": threshold}
    data = [{"input": "q", "output": "a" * 50}]
    if _valid_threshold(threshold):
        result = run_evals(data, scorers=[entry])
        assert [t.id for t in result.threshold_results] == ["length"]
        return
    error = _refused(lambda: run_evals(data, scorers=[entry]), '"length"')
    assert error.id == "INVALID_SCORER_THRESHOLD"


@FAST
@given(numbers | st.none() | st.booleans() | st.text(max_size=3))
def test_with_threshold_checks_its_minimum(minimum):
    if minimum is not None and _valid_threshold(minimum):
        assert LENGTH.with_threshold(minimum).threshold == minimum
        return
    error = _refused(lambda: LENGTH.with_threshold(minimum), '"length"')
    assert error.id == "INVALID_SCORER_THRESHOLD"


# --- data that is not a dataset, options that are not options -----------------------------------


@pytest.mark.parametrize(
    ("data", "named"),
    [
        (None, "got NoneType"),
        (42, "got int"),
        ({"input": ["q"], "output": ["a"]}, "got dict"),
        (pd.Series(["q"]), "got Series"),
        (({"input": "q", "output": "a"} for _ in range(1)), "got generator"),
        (["q", "a"], "index 0"),
        ([{"input": "q", "output": "a"}, ["q", "a"]], "index 1"),
    ],
    ids=["none", "int", "dict", "series", "generator", "strings", "list-item"],
)
def test_data_that_is_not_a_dataset(data, named):
    _refused(lambda: run_evals(data, scorers=[LENGTH]), named)


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("concurrency", 0),
        ("concurrency", -3),
        ("concurrency", 2.5),
        ("concurrency", "8"),
        ("concurrency", True),
        ("batch_size", 0),
        ("batch_size", "10"),
        ("on_error", "ignore"),
        ("step_timeout", 0),
        ("step_timeout", -1),
        ("step_timeout", math.inf),
        ("step_timeout", math.nan),
        ("step_timeout", "30"),
        ("step_timeout", True),
        ("target_timeout", 0.0),
        ("target_timeout", math.inf),
        ("target_timeout", [5]),
    ],
)
def test_invalid_options_are_named(tmp_path, option, value):
    out = tmp_path / "out.parquet"
    _refused(
        lambda: run_evals(
            [{"input": "q", "output": "a"}], scorers=[LENGTH], out=out, **{option: value}
        ),
        option,
    )
    _nothing_left(out)


@pytest.mark.parametrize("value", [0, -0.5, math.inf, math.nan, "1", False])
def test_an_invalid_scorer_step_timeout_is_named(value):
    _refused(lambda: create_scorer("slow", step_timeout=value), "step_timeout of scorer 'slow'")
    _refused(lambda: LENGTH.with_step_timeout(value), "step_timeout of scorer 'length'")


@pytest.mark.parametrize(
    "entry",
    [None, "length", lambda run: 1, {"scorer": "length", "threshold": 0.5}, {"scorer": LENGTH}],
)
def test_invalid_scorer_entries_are_named(entry):
    _refused(
        lambda: run_evals(
            [{"input": "q", "output": "a"}], scorers=[LENGTH.with_threshold(0.1), entry]
        ),
        "scorers[1]",
    )


def test_a_scorer_without_a_score_step_is_named():
    unfinished = create_scorer("unfinished").preprocess(lambda run: 1)
    _refused(
        lambda: run_evals([{"input": "q", "output": "a"}], scorers=[unfinished]), "'unfinished'"
    )


# --- unreadable files ---------------------------------------------------------------------------


def _file_problem(error: EvalDagError, path: Path) -> None:
    """A file error names the file; an item error names the column or row."""
    if error.id == "INVALID_DATA_FILE":
        assert str(path) in error.message
    elif error.id == "INVALID_DATA_ITEM":
        assert "'input'" in error.message or "'output'" in error.message
    else:
        assert error.id == "RUN_EXPERIMENT_FAILED_NO_DATA_PROVIDED", error.id


@FAST
@given(st.binary(max_size=200), st.sampled_from([".parquet", ".csv", ".jsonl"]))
@example(b"\xff\xfe\x00garbage", ".csv")
@example(b"PAR1" + b"\x00" * 20 + b"PAR1", ".parquet")
@example(b'{"input": "q", "output": "a"}\n[1, 2]\n', ".jsonl")
@example(b'{"input": "q", "output": "a"}\n{"input": \n', ".jsonl")
@example(b"input,output\nq,a,extra,cells\n", ".csv")
def test_a_corrupt_file_is_named(content, suffix):
    with _folder() as folder:
        path = folder / f"data{suffix}"
        path.write_bytes(content)
        out = folder / "out.parquet"
        try:
            result = run_evals(path, scorers=[LENGTH], out=out)
        except EvalDagError as error:
            _file_problem(error, path)
            _nothing_left(out)
        else:
            _complete(out, result)


@pytest.mark.slow
@FAST
@given(rows, st.sampled_from(["jsonl", "csv", "parquet"]), st.floats(0, 1))
def test_a_truncated_file_is_named_or_read_in_part(records, form, share):
    with _folder() as folder:
        path = _written(records, form, folder)
        content = path.read_bytes()
        path.write_bytes(content[: int(len(content) * share)])
        try:
            result = run_evals(path, scorers=[LENGTH])
        except EvalDagError as error:
            _file_problem(error, path)
        else:
            assert len(result.items) <= len(records)


def test_paths_that_are_not_data_files(tmp_path):
    (tmp_path / "folder.jsonl").mkdir()
    (tmp_path / "data.json").write_text("[]")
    (tmp_path / "data").write_text("input,output\nq,a\n")
    (tmp_path / "dangling.csv").symlink_to(tmp_path / "gone.csv")
    cases = {
        tmp_path / "missing.csv": "does not exist",
        tmp_path / "dangling.csv": "does not exist",
        tmp_path / "folder.jsonl": "is a directory",
        tmp_path / "data.json": ".parquet, .csv or .jsonl",
        tmp_path / "data": ".parquet, .csv or .jsonl",
    }
    for path, problem in cases.items():
        _refused(lambda path=path: run_evals(path, scorers=[LENGTH]), str(path), problem)


# --- never a partial output file ----------------------------------------------------------------


def test_a_failed_run_leaves_an_earlier_output_untouched(tmp_path):
    out = tmp_path / "out.parquet"
    out.write_bytes(b"an earlier results file")
    before = out.read_bytes()
    _refused(lambda: run_evals([{"input": "q"}], scorers=[LENGTH], out=out), "'output'")
    _nothing_left(out, before)
    fails = create_scorer("fails").generate_score(lambda run: 1 / (run.input != "q2"))
    data = [{"input": f"q{i}", "output": "a"} for i in range(5)]
    _refused(
        lambda: run_evals(data, scorers=[fails], out=out, on_error="raise", batch_size=2), "fails"
    )
    _nothing_left(out, before)


def test_an_interrupted_run_writes_nothing(tmp_path):
    def interrupted(run):
        if run.input == "q3":
            raise KeyboardInterrupt
        return 1

    out = tmp_path / "out.parquet"
    data = [{"input": f"q{i}", "output": "a"} for i in range(6)]
    with pytest.raises(KeyboardInterrupt):
        run_evals(
            data,
            scorers=[create_scorer("ctrl-c").generate_score(interrupted)],
            out=out,
            batch_size=2,
        )
    _nothing_left(out)


def test_recorded_scorer_errors_still_give_a_complete_file(tmp_path):
    fails = create_scorer("fails").generate_score(lambda run: 1 / (run.input != "q2"))
    out = tmp_path / "out.parquet"
    data = [{"input": f"q{i}", "output": "a"} for i in range(5)]
    result = run_evals(data, scorers=[fails, LENGTH], out=out, batch_size=2)
    _complete(out, result)
    assert EvalResult.read_parquet(out).items["fails.error"].notna().sum() == 1


@pytest.mark.parametrize("where", ["directory", "under-a-file"])
def test_an_unwritable_out_is_named_before_scoring(tmp_path, where):
    (tmp_path / "file").write_text("x")
    out = {"directory": tmp_path, "under-a-file": tmp_path / "file" / "out.parquet"}[where]
    scored = []
    scorer = create_scorer("seen").generate_score(lambda run: scored.append(1) or 1)
    _refused(lambda: run_evals([{"input": "q", "output": "a"}], scorers=[scorer], out=out), "out")
    assert scored == []


# --- the CLI ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def length_eval(tmp_path_factory) -> Path:
    """The eval file of the CLI tests (one per module: the CLI puts its folder on sys.path)."""
    path = tmp_path_factory.mktemp("evals") / "length_eval.py"
    path.write_text(EVAL_FILE)
    return path


def _cli(eval_file: Path, data: Any, *extra: str) -> tuple[int, str]:
    """``evaldag run`` in this process: its exit code and what it wrote to stderr."""
    stderr, stdout = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(stdout):
        try:
            code = cli_main(["run", str(eval_file), "--data", str(data), *extra])
        except SystemExit as exited:  # argparse's usage errors
            code = exited.code
    return code, stderr.getvalue()


def _cli_refused(code: int, stderr: str, *names: str) -> None:
    assert code == 3, stderr
    assert stderr.startswith("evaldag: error: "), stderr
    assert "Traceback" not in stderr
    for name in names:
        assert name in stderr, f"{name!r} not named in: {stderr}"


@settings(FAST, max_examples=10)
@given(rows, st.sampled_from(["input", "output"]), st.sampled_from(["jsonl", "csv", "parquet"]))
def test_cli_names_a_missing_column(length_eval, records, column, form):
    with _folder() as folder:
        data = _written(
            [{k: v for k, v in r.items() if k != column} for r in records], form, folder
        )
        out = folder / "out.parquet"
        code, stderr = _cli(length_eval, data, "--out", str(out))
        _cli_refused(code, stderr, f"'{column}'")
        _nothing_left(out)


@settings(FAST, max_examples=10)
@given(st.binary(max_size=120), st.sampled_from([".parquet", ".csv", ".jsonl"]))
@example(b'{"input": "q"}\n{"output": "a"}\n', ".jsonl")
def test_cli_names_a_corrupt_file(length_eval, content, suffix):
    with _folder() as folder:
        path = folder / f"data{suffix}"
        path.write_bytes(content)
        out = folder / "out.parquet"
        code, stderr = _cli(length_eval, path, "--out", str(out))
        assume(code != 0)  # the bytes happened to make a valid dataset
        _cli_refused(code, stderr)
        assert (
            str(path) in stderr or "'input'" in stderr or "'output'" in stderr or "empty" in stderr
        )
        _nothing_left(out)


@pytest.mark.slow
@settings(FAST, max_examples=10)
@given(st.lists(junk.filter(lambda v: isinstance(v, dict | list | str)), min_size=1, max_size=3))
def test_cli_scores_nested_outputs(length_eval, outputs):
    with _folder() as folder:
        path = _written([{"input": "q", "output": o} for o in outputs], "jsonl", folder)
        out = folder / "out.parquet"
        code, stderr = _cli(length_eval, path, "--out", str(out))
        assert code == 0, stderr
        assert len(EvalResult.read_parquet(out).items) == len(outputs)


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--concurrency", "0"], "--concurrency"),
        (["--concurrency", "many"], "--concurrency"),
        (["--step-timeout", "0"], "--step-timeout"),
        (["--target-timeout", "inf"], "--target-timeout"),
        (["--step-timeout", "soon"], "--step-timeout"),
    ],
)
def test_cli_names_a_bad_option(length_eval, tmp_path, args, named):
    data = _written([{"input": "q", "output": "a"}], "jsonl", tmp_path)
    code, stderr = _cli(length_eval, data, *args)
    assert code == 3
    assert named in stderr and "Traceback" not in stderr


def test_cli_names_an_invalid_threshold(tmp_path):
    eval_file = tmp_path / "thresholds.py"
    eval_file.write_text(
        "from evaldag import create_scorer\n"
        "s = create_scorer('strict').generate_score(lambda: 1)\n"
        "scorers = [{'scorer': s, 'threshold': 1.5}]\n"
    )
    data = _written([{"input": "q", "output": "a"}], "jsonl", tmp_path)
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr):
        code = cli_main(["run", str(eval_file), "--data", str(data)])
    _cli_refused(code, stderr.getvalue(), '"strict"', "1.5")


def test_cli_names_an_unwritable_out(length_eval, tmp_path):
    data = _written([{"input": "q", "output": "a"}], "jsonl", tmp_path)
    code, stderr = _cli(length_eval, data, "--out", str(tmp_path))
    _cli_refused(code, stderr, "out")


@pytest.mark.slow
def test_cli_in_a_subprocess_prints_one_line_not_a_traceback(tmp_path):
    data = tmp_path / "data.jsonl"
    data.write_text('{"input": "q", "output": "a"}\n{"output": "no input"}\n')
    eval_file = tmp_path / "length_eval.py"
    eval_file.write_text(EVAL_FILE)
    out = tmp_path / "out.parquet"
    env = {**os.environ, "LITELLM_OFFLINE_MODE": "true"}
    command = "import sys; from evaldag._cli.main import main; sys.exit(main())"
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            command,
            "run",
            str(eval_file),
            "--data",
            str(data),
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 3, done.stderr
    expected = (
        f"evaldag: error: Invalid data file '{data}': line 2 has no 'input'; each line must be "
        "one JSON object with an 'input'"
    )
    assert done.stderr.splitlines() == [expected]
    _nothing_left(out)


# --- files evaldag writes (issue 15) ----------------------------------------------------------

SMALL = pd.DataFrame({"input": ["q1", "q2"], "output": ["a", "bb"]})


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_an_output_path_that_is_not_a_regular_file_is_refused(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(EvalDagError, match="not a regular file") as raised:
        run_evals(SMALL, scorers=[LENGTH], out=fifo)
    assert raised.value.id == "INVALID_OUTPUT_PATH"
    assert fifo.is_fifo()  # still the FIFO it was
    (tmp_path / "data.jsonl").write_text('{"input": "q", "output": "a"}\n')
    eval_file = tmp_path / "length_eval.py"
    eval_file.write_text(EVAL_FILE)
    code, err = _cli(eval_file, tmp_path / "data.jsonl", "--out", str(fifo))
    _cli_refused(code, err, "not a regular file")
    assert fifo.is_fifo()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_data_that_is_not_a_regular_file_is_named_for_what_it_is(tmp_path):
    fifo = tmp_path / "items.jsonl"
    os.mkfifo(fifo)  # nothing writes to it: reading it would wait forever
    (tmp_path / "gone.jsonl").symlink_to(tmp_path / "missing.jsonl")
    (tmp_path / "folder.csv").mkdir()
    for path, said in [
        (fifo, ("is a FIFO (named pipe), not a regular file: evaldag reads data from a "
                ".parquet, .csv or .jsonl file on disk; write the data to one and give its path")),
        (tmp_path / "gone.jsonl", "does not exist: it is a symlink to a missing file"),
        (tmp_path / "folder.csv", "is a directory, not a file"),
        (tmp_path / "missing.jsonl", "does not exist"),
    ]:  # fmt: skip
        with pytest.raises(EvalDagError) as raised:
            run_evals(path, scorers=[LENGTH])
        assert raised.value.id == "INVALID_DATA_FILE"
        assert raised.value.message == f"Data file '{path}' {said}"
    eval_file = tmp_path / "length_eval.py"
    eval_file.write_text(EVAL_FILE)
    code, err = _cli(eval_file, fifo)
    _cli_refused(code, err, "is a FIFO (named pipe), not a regular file")


def test_the_output_may_not_be_the_data_file(tmp_path):
    data = tmp_path / "data.parquet"
    SMALL.to_parquet(data)
    before = data.read_bytes()
    with pytest.raises(EvalDagError, match="is the data file"):
        run_evals(data, scorers=[LENGTH], out=data)
    assert data.read_bytes() == before


def test_a_picture_goes_into_new_folders_and_leaves_nothing_else(tmp_path):
    import evaldag

    target = tmp_path / "new" / "folder" / "dag.dot"
    evaldag.visualize(scorers=[LENGTH], path=target)
    assert target.read_text().startswith("digraph")
    assert sorted(p.name for p in target.parent.iterdir()) == ["dag.dot"]


def test_a_failed_write_leaves_no_temporary_file(tmp_path):
    from evaldag._io.files import atomic_write

    def broken(temporary: Path) -> None:
        temporary.write_text("half")
        raise OSError(28, "No space left on device")

    with pytest.raises(EvalDagError, match="No space left on device") as raised:
        atomic_write(tmp_path / "out.html", broken)
    assert raised.value.category == "SYSTEM"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", ["a" * 247 + ".parquet", "é" * 120 + ".csv"])
def test_a_name_near_the_file_systems_limit_is_written(tmp_path, name):
    # 255 bytes at most: the temporary name beside it is cut to fit, not made longer
    assert 240 < len(name.encode()) <= 255
    run_evals(SMALL, scorers=[LENGTH], out=tmp_path / name)
    assert [p.name for p in tmp_path.iterdir()] == [name]
    assert read_results(tmp_path / name)["length.score"].tolist() == [0.01, 0.02]


def test_a_name_too_long_to_write_is_refused_before_the_run(tmp_path, capsys):
    scored = []
    counting = create_scorer("c").generate_score(lambda: scored.append(1) or 1)
    for option, name, size in [
        ("out", "a" * 250 + ".parquet", 258),
        ("checkpoint", "a" * 242 + ".parquet", 258),  # its batches go to <name>.partial
    ]:
        with pytest.raises(EvalDagError) as raised:
            run_evals(SMALL, scorers=[counting], **{option: tmp_path / name})
        assert raised.value.id == "INVALID_OUTPUT_PATH"
        assert f"its name is {size} bytes" in raised.value.message
        assert "longer than the 255 this file system takes" in raised.value.message
    assert scored == []
    (tmp_path / "data.jsonl").write_text('{"input": "q", "output": "a"}\n')
    eval_file = tmp_path / "length_eval.py"
    eval_file.write_text(EVAL_FILE)
    code, err = _cli(
        eval_file, tmp_path / "data.jsonl", "--out", str(tmp_path / ("a" * 252 + ".csv"))
    )
    _cli_refused(code, err, "its name is 256 bytes")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.jsonl", "length_eval.py"]


_KILLED_WRITER = """
import sys, time
from evaldag._io.files import atomic_write

def write(temporary):
    temporary.write_bytes(b"half a file")
    print(temporary, flush=True)
    time.sleep(600)  # killed here, mid-write

atomic_write(sys.argv[1], write)
"""


def test_a_temporary_file_a_killed_writer_left_is_removed_by_a_later_write(tmp_path):
    import signal
    import time

    from evaldag._io.files import STALE_AFTER_SECONDS

    target = tmp_path / "results.parquet"
    writer = subprocess.Popen(
        [sys.executable, "-c", _KILLED_WRITER, str(target)], stdout=subprocess.PIPE, text=True
    )
    try:
        left = Path(writer.stdout.readline().strip())
    finally:
        writer.send_signal(signal.SIGKILL)
        writer.wait(timeout=60)
    assert writer.returncode == -signal.SIGKILL
    assert left.parent == tmp_path and left.is_file() and not target.exists()
    assert left.name.startswith(".results.parquet.") and left.name.endswith(".evaldag-tmp")
    old = time.time() - STALE_AFTER_SECONDS - 60
    others = [  # not this target's temporary files: never touched
        tmp_path / ".results.parquet.notours.evaldag-tmp",
        tmp_path / ".other.parquet.0123abcd.evaldag-tmp",
        tmp_path / ".results.parquet.0123abcd.tmp",
    ]
    for other in others:
        other.write_text("someone else's")
        os.utime(other, (old, old))
    run_evals(SMALL, scorers=[LENGTH], out=target)
    assert left.is_file()  # written to lately: it may be another writer's, still writing
    os.utime(left, (old, old))
    run_evals(SMALL, scorers=[LENGTH], out=target)
    assert not left.exists()  # not written to for STALE_AFTER_SECONDS: a dead writer's
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["results.parquet", *(other.name for other in others)]
    )


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_a_results_file_the_disk_cannot_take_loses_no_run(full_disk, tmp_path, capsys, suffix):
    from evaldag import ResultNotSavedError, SqlScoreStore

    filled(full_disk)
    out, store = full_disk / f"results{suffix}", tmp_path / "scores.db"
    with pytest.raises(ResultNotSavedError) as raised:
        run_evals(SMALL, scorers=[LENGTH], out=out, store=store)
    error = raised.value
    assert error.id == "EVALDAG_RESULT_NOT_SAVED"
    assert f"Cannot write '{out}': No space left on device" in error.message
    assert "Nothing is lost: the result is on this error (error.result)" in error.message
    assert error.result.scores == {"length": pytest.approx(0.015)}
    assert sorted(p.name for p in full_disk.iterdir()) == ["filler"]  # no half file, no temp
    with SqlScoreStore(store) as opened:  # what could be written was
        assert opened.result().experiment_id == error.result.experiment_id
    (tmp_path / "data.jsonl").write_text('{"input": "q", "output": "a"}\n')
    eval_file = tmp_path / "length_eval.py"
    eval_file.write_text(EVAL_FILE)
    capsys.readouterr()
    code = cli_main(
        ["run", str(eval_file), "--data", str(tmp_path / "data.jsonl"), "--out", str(out)]
    )
    captured = capsys.readouterr()
    # its checkpoint (.evaldag/ beside --out) cannot be kept either: the run goes on, saying so
    note, _, refused = captured.err.partition("\n")
    assert note.endswith("No space left on device; this run keeps no checkpoint"), note
    _cli_refused(code, refused, "No space left on device", "error.result")
    assert "verdict:" in captured.out  # the run's summary, before the error


def test_an_integer_beyond_64_bits_in_a_carried_column_is_written(tmp_path):
    frame = SMALL.assign(big=[2**70] + [1])
    run_evals(frame, scorers=[LENGTH], out=tmp_path / "r.parquet")
    assert EvalResult.read_parquet(tmp_path / "r.parquet").items["big"].iloc[0] == 2**70


def test_an_empty_checkpoint_manifest_says_which_file(tmp_path):
    checkpoint = tmp_path / "run.parquet"
    manifest = tmp_path / "run.parquet.partial" / "run.json"
    manifest.parent.mkdir()
    manifest.write_text("")
    with pytest.raises(EvalDagError) as raised:
        run_evals(SMALL, scorers=[LENGTH], checkpoint=checkpoint)
    assert raised.value.id == "CHECKPOINT_UNREADABLE"
    assert str(manifest) in raised.value.message


@pytest.mark.parametrize("scorer_id", ["a:b", "ends\\", "new\nline"])
def test_ids_that_break_pictures_and_columns_are_refused(scorer_id):
    scorer = create_scorer(scorer_id).generate_score(lambda: 1)
    with pytest.raises(EvalDagError) as raised:
        run_evals(SMALL, scorers=[scorer])
    assert raised.value.id == "INVALID_SCORER_ID"


@pytest.mark.skipif(shutil.which("dot") is None, reason="needs Graphviz's dot")
def test_no_javascript_link_reaches_the_report_from_a_results_file(tmp_path):
    from evaldag._report.html import report_html

    result = run_evals(SMALL, scorers=[LENGTH])
    hostile = result.model_copy(
        update={
            "dag_dot": 'digraph { a [URL="javascript:alert(1)" href="javascript:alert(2)" '
            'target="_top"]; b [URL="https://example.invalid"]; a -> b [URL="javascript:x()"] }'
        }
    )
    html = report_html(hostile)
    assert "javascript:" not in html.lower()
    assert "<a " not in html.split('id="dag"')[1]


@pytest.mark.slow
def test_a_huge_output_is_clipped_in_the_report(tmp_path):
    from evaldag._report.html import write_report

    check = create_scorer("echo").preprocess(lambda run: run.output).generate_score(lambda: 1)
    huge = "word " * 4_000_000  # 20 MB
    result = run_evals([{"input": "q", "output": huge}], scorers=[check])
    path = write_report(result, tmp_path / "report.html")
    size = path.stat().st_size
    assert size < 1_000_000, size
    assert "more characters" in path.read_text()
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_out_writes_the_format_its_suffix_names(tmp_path, suffix):
    data = SMALL.assign(meta=[{"tags": ["a", "b"]}, None])
    run_evals(data, scorers=[LENGTH], out=tmp_path / f"r{suffix}")
    read = (
        pd.read_csv(tmp_path / "r.csv")
        if suffix == ".csv"
        else pd.read_json(tmp_path / "r.jsonl", lines=True)
    )
    assert read["length.score"].tolist() == [0.01, 0.02]
    meta = read["meta"].iloc[0]  # a list or a dict: JSON text in a CSV cell, JSON in a line
    assert (json.loads(meta) if suffix == ".csv" else meta) == {"tags": ["a", "b"]}
    assert [p.name for p in tmp_path.iterdir()] == [f"r{suffix}"]


def test_an_unknown_results_suffix_is_refused_before_scoring(tmp_path):
    scored = []
    counting = create_scorer("c").generate_score(lambda: scored.append(1) or 1)
    with pytest.raises(EvalDagError, match=r"ends in \.parquet .*, \.csv or \.jsonl"):
        run_evals(SMALL, scorers=[counting], out=tmp_path / "r.txt")
    assert scored == []


class _Table:
    """A table library's frame whose conversion fails or gives something else."""

    def __init__(self, converted: Any) -> None:
        self._converted = converted

    def to_pandas(self) -> Any:
        if isinstance(self._converted, Exception):
            raise self._converted
        return self._converted


@pytest.mark.parametrize(
    ("table", "message"),
    [
        (_Table(ImportError("pyarrow is required")), "its to_pandas() failed: pyarrow is required"),
        (_Table({"input": ["q"]}), "to_pandas() gave dict, not a DataFrame"),
    ],
)
def test_a_table_that_does_not_convert_is_named(table, message):
    with pytest.raises(EvalDagError) as raised:
        run_evals(table, scorers=[LENGTH])
    assert raised.value.id == "INVALID_DATA" and message in raised.value.message
    assert "_Table" in raised.value.message
