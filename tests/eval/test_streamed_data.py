"""Parquet data read in row groups (a file, a directory, a glob, an fsspec URL) and results
written to a directory in parts: the same result as a run over the data as a DataFrame written
to one file, resumed from the parts already written, with errors naming the path."""

import json
import logging
import pickle
import re
import traceback

import fsspec
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from judge_server import JudgeServer, Reply
from scorer_cases import completions, length_scorer

from evaldag import (
    EvalDagError,
    EvalResult,
    OnItemCompleteError,
    PromptStep,
    checks,
    create_scorer,
    read_results,
    run_evals,
)

DATA = pd.DataFrame(
    {
        "input": [str(i) for i in range(60)],
        "output": ["x" * (i % 13) for i in range(60)],
        "topic": [["a", "b"][i % 2] for i in range(60)],
    }
)


CONFIG = {"scorers": [length_scorer().with_threshold(0.3)], "gates": [checks.includes("x")]}


def _written(frame, path, row_group_size):
    table = pa.Table.from_pandas(frame, preserve_index=False)
    pq.write_table(table, path, row_group_size=row_group_size)


@pytest.fixture
def folder(tmp_path):
    """DATA in two files of row groups of 7 rows."""
    folder = tmp_path / "data"
    folder.mkdir()
    _written(DATA.iloc[:35], folder / "a.parquet", 7)
    _written(DATA.iloc[35:], folder / "b.parquet", 7)
    return folder


def _decided(result):
    """The scores and verdict, every item's score columns (no run ids)."""
    kept = [c for c in result.items.columns if c.endswith((".score", ".error", ".not_scorable"))]
    items = result.items[kept]
    return result.to_dict(), items.astype(object).where(items.notna(), None).to_dict("list")


def test_a_directory_a_glob_and_a_url_give_the_result_of_the_dataframe(folder):
    local = run_evals(DATA, **CONFIG, progress=False)
    for data in (folder, f"{folder}/*.parquet", f"file://{folder}"):
        streamed = run_evals(data, **CONFIG, batch_size=16, progress=False)
        assert _decided(streamed) == _decided(local)
        assert streamed.items["input"].tolist() == DATA["input"].tolist()
        assert streamed.items["topic"].tolist() == DATA["topic"].tolist()


def test_fsspec_memory_url():
    fs = fsspec.filesystem("memory")
    with fs.open("/evaldag-test/data.parquet", "wb") as file:
        pq.write_table(pa.Table.from_pandas(DATA), file, row_group_size=10)
    try:
        streamed = run_evals("memory://evaldag-test/*.parquet", **CONFIG, progress=False)
    finally:
        fs.rm("/evaldag-test", recursive=True)
    assert _decided(streamed) == _decided(run_evals(DATA, **CONFIG, progress=False))


def test_out_a_directory_reads_back_as_the_single_file(folder, tmp_path):
    one = run_evals(DATA, **CONFIG, out=tmp_path / "one.parquet", progress=False)
    result = run_evals(folder, **CONFIG, batch_size=16, out=tmp_path / "out/", progress=False)
    parts = sorted(p.name for p in (tmp_path / "out").glob("part-*.parquet"))
    # a batch ends at a file's end: 35 rows are 16 + 16 + 3, then 16 + 9
    assert parts == [f"part-{n:05d}.parquet" for n in range(5)]
    assert (tmp_path / "out" / "summary.json").exists()
    assert result.to_dict() == one.to_dict()
    # the client kept only what the verdict reads
    assert "input" not in result.items and "len.reason" not in result.items
    back = EvalResult.read_parquet(tmp_path / "out")
    single = EvalResult.read_parquet(tmp_path / "one.parquet")
    columns = [c for c in single.items.columns if c != "run_id"]
    assert back.to_dict() == single.to_dict() and back.verdict == single.verdict == "failed"
    assert back.items[columns].equals(single.items[columns])
    assert back.summary == single.summary and back.usage == single.usage
    assert read_results(tmp_path / "out").equals(back.items)


def test_a_dataframe_run_writes_the_same_directory(tmp_path):
    one = run_evals(DATA, **CONFIG, out=tmp_path / "one.parquet", progress=False)
    result = run_evals(DATA, **CONFIG, batch_size=16, out=tmp_path / "out/", progress=False)
    assert result.items.equals(EvalResult.read_parquet(tmp_path / "out").items)
    back = EvalResult.read_parquet(tmp_path / "out")
    columns = [c for c in one.items.columns if c != "run_id"]
    assert back.to_dict() == one.to_dict() and back.items[columns].equals(one.items[columns])


def _graded(server):
    judge = server.judge(instructions="Grade it.")
    return create_scorer("graded", judge=judge).generate_score(
        PromptStep("Grade", lambda run: f"Grade {run.input}: {run.output}")
    )


def test_a_rerun_takes_the_parts_written_and_judges_only_the_rest(folder, tmp_path):
    out = tmp_path / "out"
    with JudgeServer(Reply({"score": 0.5})) as server:
        config = {"scorers": [_graded(server)], "batch_size": 16, "progress": False}
        first = run_evals(folder, **config, out=f"{out}/")
        assert len(server.requests) == len(DATA)
        (out / "part-00001.parquet").unlink()  # rows 16-31 (a run killed before writing it)
        (out / "summary.json").unlink()
        again = run_evals(folder, **config, out=f"{out}/")
        assert len(server.requests) == len(DATA) + 16
    assert again.to_dict() == first.to_dict()
    assert len(EvalResult.read_parquet(out).items) == len(DATA)


def _graded_row(request):
    return int(re.search(r"Grade (\d+):", request.prompt).group(1))


def test_a_run_stopped_midway_repeats_no_finished_judge_call(folder, tmp_path):
    """The parts of the finished batches are kept, the replies of the rest in the directory's
    journal: over both runs every item is judged, and asked again only if its call was in
    flight when the run stopped (in the failing batch, or the one batch run ahead)."""
    out = f"{tmp_path}/out/"
    flaky = create_scorer("flaky").generate_score(lambda run: 1 / 0 if run.input == "40" else 1)
    with JudgeServer(Reply({"score": 0.5})) as server:
        config = {"scorers": [_graded(server), flaky], "batch_size": 8, "progress": False}
        with pytest.raises(EvalDagError, match="Error running scorer flaky"):
            run_evals(folder, **config, out=out, on_error="raise")
        first = [_graded_row(request) for request in server.requests]
        assert 0 < len(first)
        finished = run_evals(folder, **config, out=out)
        resumed = [_graded_row(request) for request in server.requests][len(first) :]
    assert {*first, *resumed} == set(range(len(DATA)))
    assert len(set(first)) == len(first) and len(set(resumed)) == len(resumed)
    # calls in flight at the stop: row 40's batch (stopped at its failure) and the one ahead
    assert set(first) & set(resumed) <= set(range(40, 56))
    assert finished.summary.errors == {"flaky": 1}


def test_a_directory_of_another_run_is_refused_naming_what_changed(folder, tmp_path):
    out = f"{tmp_path}/out/"
    run_evals(folder, **CONFIG, out=out, progress=False)
    changed = {"scorers": [length_scorer().with_threshold(0.5)]}
    with pytest.raises(EvalDagError, match="has another threshold") as caught:
        run_evals(folder, **changed, out=out, progress=False)
    assert caught.value.id == "CHECKPOINT_MISMATCH"
    afresh = run_evals(folder, **changed, out=out, resume=False, progress=False)
    assert afresh.threshold_results[0].threshold == 0.5
    assert EvalResult.read_parquet(out).threshold_results == afresh.threshold_results


def test_a_finished_run_leaves_no_temporary_part_a_killed_writer_left(folder, tmp_path):
    out = tmp_path / "out"
    run_evals(folder, **CONFIG, batch_size=16, out=out, progress=False)
    # what a worker killed while writing part 1 leaves, fresh (not yet stale by its age)
    left = out / ".part-00001.parquet.0a1b2c3d.evaldag-tmp"
    left.write_bytes(b"half a part")
    again = run_evals(folder, **CONFIG, batch_size=16, out=out, progress=False)
    assert not left.exists()
    assert _decided(again) == _decided(run_evals(DATA, **CONFIG, progress=False))


def test_a_directory_holding_other_files_is_refused(folder, tmp_path):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    with pytest.raises(EvalDagError, match="holding other files"):
        run_evals(folder, **CONFIG, out=tmp_path / "mine", progress=False)


def test_a_bad_row_is_named_when_its_batch_is_read(tmp_path):
    bad = DATA.assign(output=[None if i == 41 else o for i, o in enumerate(DATA["output"])])
    _written(bad, tmp_path / "bad.parquet", 7)
    with pytest.raises(EvalDagError, match="index 41"):
        run_evals(tmp_path / "*.parquet", **CONFIG, batch_size=16, progress=False)


def test_errors_name_the_path(folder, tmp_path):
    with pytest.raises(EvalDagError, match=r"'.*/nothing-\*\.parquet' matches no file"):
        run_evals(f"{tmp_path}/nothing-*.parquet", **CONFIG, progress=False)
    (tmp_path / "empty").mkdir()
    with pytest.raises(EvalDagError, match="holding no .parquet file"):
        run_evals(tmp_path / "empty", **CONFIG, progress=False)
    _written(DATA.assign(topic=range(60)), folder / "c.parquet", 7)
    with pytest.raises(EvalDagError, match=r"c\.parquet' .* another schema .*'topic' is int64"):
        run_evals(folder, **CONFIG, progress=False)


PASSWORD = "pw-streamed-data-secret"
SIGNATURE = "sig-streamed-data-secret"


@pytest.mark.parametrize(
    "data",
    [
        f"http://reader:{PASSWORD}@127.0.0.1:9/data.parquet",  # nothing listens on port 9
        f"s3://AKIAEVALDAG:{PASSWORD}@bucket/data.parquet",  # s3fs is not installed
        f"http://127.0.0.1:9/data.parquet?X-Amz-Signature={SIGNATURE}",
    ],
)
def test_errors_name_a_url_without_its_credentials(data, caplog):
    """Neither the error (its message, details, causes) nor fsspec's DEBUG records of the URL
    hold the URL's password or signature."""
    caplog.set_level(logging.DEBUG)
    with pytest.raises(EvalDagError) as raised:
        run_evals(data, **CONFIG, progress=False)
    error = raised.value
    assert error.id == "INVALID_DATA_FILE"
    assert "**********" in error.message and "**********" in error.details["path"]
    told = "".join(traceback.format_exception(error)) + json.dumps(error.to_dict(), default=str)
    told += repr(pickle.dumps(error)) + caplog.text
    assert PASSWORD not in told and SIGNATURE not in told


def _flipping_judge(server):
    """Answer a prompt's n-th request with a score that depends on the prompt and n only (the
    trials of an item differ, the same in any order of calls)."""
    asked: dict[str, int] = {}

    def answer(request):
        n = asked[request.prompt] = asked.get(request.prompt, -1) + 1
        return Reply({"score": (_graded_row(request) * 7 + n * 3) % 5 / 4})

    server.on(lambda request: True, answer)
    return asked


def test_trials_are_scored_where_the_batch_runs_as_in_a_local_run(folder, tmp_path):
    def run(data, **options):
        config = {"scorers": [_graded(server)], "batch_size": 16, "progress": False}
        return run_evals(data, **config, trials=3, reducer="median", **options)

    with JudgeServer() as server:
        _flipping_judge(server)
        local = run(DATA)
    trial_columns = [c for c in local.items.columns if ".trial_" in c]
    with JudgeServer() as server:
        asked = _flipping_judge(server)
        streamed = run(folder, out=tmp_path / "out")
        assert len(server.requests) == 3 * len(DATA)
        assert streamed.summary.trials["graded"].flipped_items > 0
        assert _decided(streamed) == _decided(local)
        assert streamed.summary.trials == local.summary.trials
        back = EvalResult.read_parquet(tmp_path / "out")
        assert back.items[trial_columns].equals(local.items[trial_columns])
        # rows 35-50 (a batch ends where its file does), as if never written
        (tmp_path / "out" / "part-00003.parquet").unlink()
        (tmp_path / "out" / "summary.json").unlink()
        asked.clear()
        again = run(folder, out=tmp_path / "out")
        rescored = server.requests[3 * len(DATA) :]
        assert sorted({_graded_row(r) for r in rescored}) == list(range(35, 51))
        assert len(rescored) == 3 * 16
    assert _decided(again) == _decided(local)


def test_checkpoint_is_refused_with_why(folder):
    with pytest.raises(EvalDagError, match="give out= a directory instead") as caught:
        run_evals(folder, **CONFIG, checkpoint="run.parquet", progress=False)
    assert caught.value.id == "INVALID_STREAMED_RUN"


def _echoed(question):
    return "x" * (int(question) % 13)


@pytest.fixture
def inputs(tmp_path):
    """DATA's inputs and topics (the target writes the outputs) in two files."""
    folder = tmp_path / "inputs"
    folder.mkdir()
    _written(DATA.iloc[:35].drop(columns="output"), folder / "a.parquet", 7)
    _written(DATA.iloc[35:].drop(columns="output"), folder / "b.parquet", 7)
    return folder


CALLED = {
    "scorers": [
        length_scorer(),
        create_scorer("flaky").generate_score(lambda run: 1 / 0 if run.input == "7" else 0.5),
    ],
    "gates": [checks.includes("x")],
    "target": _echoed,
    "batch_size": 16,
    "progress": False,
}


@pytest.mark.parametrize("out", [None, "out"], ids=["no-out", "out-directory"])
def test_on_item_complete_gets_each_item_once_as_a_local_run(inputs, tmp_path, out):
    local, streamed = [], []
    run_evals(DATA.drop(columns="output"), **CALLED, on_item_complete=lambda *a: local.append(a))
    out = None if out is None else tmp_path / out
    run_evals(inputs, **CALLED, out=out, on_item_complete=lambda *a: streamed.append(a))
    assert len(streamed) == len(DATA)
    assert completions(streamed) == completions(local)
    assert [i["input"] for i, _, _ in streamed] == DATA["input"].tolist()  # in dataset order


class _Stopped(Exception):
    pass


def test_a_resumed_run_calls_back_the_items_of_the_parts_it_scores(inputs, tmp_path):
    """As a checkpoint's saved batches, a part taken from an earlier run calls no
    on_item_complete; what the callback raises stops the run, as locally, its part kept."""
    first, second = [], []

    def stop(item, output, results):
        first.append(item["input"])
        if item["input"] == "20":
            raise _Stopped

    with pytest.raises(OnItemCompleteError) as raised:
        run_evals(inputs, **CALLED, out=tmp_path / "out", on_item_complete=stop)
    assert first == [str(i) for i in range(21)]
    assert raised.value.message.startswith("on_item_complete raised _Stopped on item 20.")
    assert f"kept in out='{tmp_path / 'out'}' and on this error" in raised.value.message
    assert raised.value.items.index.tolist() == list(range(32))  # the verdict's columns
    # the stopping batch's part and those run ahead of it (the target's calls overlap batches)
    written = pd.concat(pd.read_parquet(p) for p in (tmp_path / "out").glob("part-*.parquet"))
    taken = set(written["input"])
    assert {str(i) for i in range(32)} <= taken and len(taken) < len(DATA)
    run_evals(
        inputs, **CALLED, out=tmp_path / "out", on_item_complete=lambda i, *_: second.append(i)
    )
    assert [item["input"] for item in second] == [i for i in DATA["input"] if i not in taken]


EVAL_FILE = """
from evaldag import checks

scorers = [checks.includes("x")]
"""


def test_evaldag_run_reads_a_glob_into_a_directory_and_resumes_from_it(folder, tmp_path, capsys):
    from evaldag._cli.main import main

    (tmp_path / "eval_streamed.py").write_text(EVAL_FILE)
    argv = ["run", str(tmp_path / "eval_streamed.py"), "--data", f"{folder}/*.parquet"]
    assert main([*argv, "--out", str(tmp_path / "out")]) == 0
    single = run_evals(DATA, scorers=[checks.includes("x")], progress=False)
    assert EvalResult.read_parquet(tmp_path / "out").to_dict() == single.to_dict()
    (tmp_path / "out" / "part-00000.parquet").unlink()
    assert main([*argv, "--out", str(tmp_path / "out"), "--resume"]) == 0
    assert len(EvalResult.read_parquet(tmp_path / "out").items) == len(DATA)
    assert main(argv) == 0  # without --out: no checkpoint, said so
    assert "keeps no checkpoint file" in capsys.readouterr().err
