"""Round trips: the same data from Parquet, JSONL and CSV scores the same, steps get Python lists
and dicts, and results files read back as they were written, by evaldag and by other readers."""

import json
import math

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evaldag import (
    EvalDagError,
    EvalResult,
    ScorerRun,
    SqlScoreStore,
    checks,
    create_scorer,
    read_results,
    run_evals,
    scorers,
)
from evaldag._cli.main import main as cli
from evaldag._report.failing import ids_source, item_ids

# --- the items' index ------------------------------------------------------------------------


def _length():
    return create_scorer("length").generate_score(lambda run: min(1.0, len(run.output) / 10))


def _data(**columns):
    return pd.DataFrame(
        {"input": ["q0", "q1", "q2", "q3"], "output": ["a", "bb", "ccc", "dddd"], **columns}
    )


def _file_columns(path):
    """The columns any Parquet reader (DuckDB, Polars, pyarrow) sees."""
    return pq.read_schema(path).names


def test_results_parquet_has_no_pandas_index_column(tmp_path):
    result = run_evals(_data(), scorers=[_length()], batch_size=3, progress=False)
    path = result.to_parquet(tmp_path / "results.parquet")
    columns = _file_columns(path)
    assert not [c for c in columns if c.startswith("__")], columns
    assert columns == [str(c) for c in result.items.columns]
    back = EvalResult.read_parquet(path)
    assert back == result
    assert back.items.index.equals(pd.RangeIndex(4))


def test_row_labels_of_a_filtered_frame_are_an_item_column_and_read_back(tmp_path):
    data = _data()
    kept = data[data["output"] != "bb"]  # labels 0, 2, 3
    path = tmp_path / "results.parquet"
    result = run_evals(kept, scorers=[_length()], out=path, progress=False)
    assert _file_columns(path)[0] == "item"
    assert pq.read_table(path).column("item").to_pylist() == [0, 2, 3]
    back = EvalResult.read_parquet(path)
    assert back == result and back.items.index.tolist() == [0, 2, 3]
    assert "item" not in back.items.columns
    assert item_ids(back.items).tolist() == [0, 2, 3]
    assert ids_source(back.items) == "the data's index label"
    with SqlScoreStore(tmp_path / "scores.db") as store:  # a file read back stores as its run
        store.save_result(back)
        assert store.result(back.experiment_id).items["output"].tolist() == ["a", "ccc", "dddd"]
    assert cli(["report", str(path), "--out", str(tmp_path / "report.html")]) == 0


def test_a_named_index_is_a_column_of_its_name_and_a_taken_name_gets_underscores(tmp_path):
    named = _data().set_axis(pd.Index(["a", "b", "c", "d"], name="qid"))
    path = run_evals(named, scorers=[_length()], progress=False).to_parquet(tmp_path / "n.parquet")
    assert _file_columns(path)[0] == "qid"
    back = EvalResult.read_parquet(path).items
    assert back.index.name == "qid" and back.index.tolist() == ["a", "b", "c", "d"]

    clashing = _data(item=["x", "y", "z", "w"]).set_axis([10, 20, 30, 40])
    path = run_evals(clashing, scorers=[_length()], progress=False).to_parquet(tmp_path / "c.pq")
    assert _file_columns(path)[:2] == ["_item", "input"]
    back = EvalResult.read_parquet(path).items
    assert back.index.tolist() == [10, 20, 30, 40] and back["item"].tolist() == ["x", "y", "z", "w"]
    assert back.index.name is None


CALLS = []


def _counted(run):
    CALLS.append(run.input)
    if run.input == "q3" and len(CALLS) < 5:
        raise RuntimeError("the first run stops at the second batch")
    return 1.0


def test_a_checkpointed_run_resumes_from_batches_without_index_columns(tmp_path):
    path = tmp_path / "run.parquet"
    counting = create_scorer("counting").generate_score(_counted)

    def run():
        options = {"checkpoint": path, "batch_size": 3, "on_error": "raise", "progress": False}
        return run_evals(_data(), scorers=[counting], **options)

    with pytest.raises(Exception, match="second batch"):
        run()
    part = tmp_path / "run.parquet.partial" / "batch-000000000000.parquet"
    assert not [c for c in _file_columns(part) if c.startswith("__")]
    result = run()
    assert CALLS == ["q0", "q1", "q2", "q3", "q3"]  # the first batch was not scored again
    assert result.items.index.tolist() == [0, 1, 2, 3]
    assert not [c for c in _file_columns(path) if c.startswith("__")]


# --- lists and dicts, whatever the file --------------------------------------------------------


def _call(city):
    call = {"id": f"c-{city}", "type": "function"}
    return {**call, "function": {"name": "get_weather", "arguments": json.dumps({"city": city})}}


ROWS = [
    {
        "input": "Weather in Paris?",
        "output": [
            {"role": "assistant", "content": "", "tool_calls": [_call("Paris")]},
            {"role": "tool", "tool_call_id": "c-Paris", "content": '{"temperature": 21}'},
            {"role": "assistant", "content": "21 degrees in Paris."},
        ],
        "ground_truth": "21 degrees",
        "request_context": {"user": {"tier": "pro", "langs": ["en", "fr"]}},
        "expected_trajectory": {"steps": [{"stepType": "tool_call", "name": "get_weather"}]},
        "tags": [1, 2, 3],
        "meta": {"source": "web", "weights": [0.5, 1.0], "extra": {"k": 1}},
        "rows": [{"a": 1}, {"a": 2, "b": "x"}],
    },
    {
        "input": "And in Rome?",
        "output": [{"role": "assistant", "content": "No idea."}],
        "ground_truth": "25 degrees",
        "request_context": {"user": {"tier": "free", "langs": []}},
        "expected_trajectory": {"steps": [{"stepType": "tool_call", "name": "get_weather"}]},
        "tags": [],
        "meta": {"source": "app", "weights": [2.0]},
        "rows": [],
    },
    {
        "input": "Oslo?",
        "output": [{"role": "assistant", "content": "Cold.", "name": "bot"}],
        "ground_truth": "-3 degrees",
        "request_context": {"user": {"tier": "pro", "langs": ["no"]}},
        "expected_trajectory": {"steps": []},
        "tags": [7],
        "meta": {"source": "web", "weights": [], "extra": {"k": 2, "deep": [[1, 2], [3]]}},
        "rows": [{"b": "y"}],
    },
]
NESTED = ("output", "request_context", "expected_trajectory", "tags", "meta", "rows")


def _saved(folder, suffix):
    """ROWS as a user saves them: pandas' Parquet (Arrow lists and structs), JSON lines, and CSV
    with JSON text in the cells of lists and dicts, as evaldag writes a CSV file."""
    path = folder / f"data{suffix}"
    frame = pd.DataFrame(ROWS)
    if suffix == ".parquet":
        frame.to_parquet(path)
    elif suffix == ".jsonl":
        path.write_text("".join(json.dumps(row) + "\n" for row in ROWS))
    else:
        frame.assign(**{c: frame[c].map(json.dumps) for c in NESTED}).to_csv(path, index=False)
    return path


def _shape(run):
    """A score that depends on the Python types and lengths of what the step gets."""
    found = [
        type(run.tags) is list,
        type(run.meta) is dict and type(run.meta["weights"]) is list,
        type(run.rows) is list and all(type(row) is dict for row in run.rows),
        type(run.doubled) is list and all(type(n) is int for n in run.doubled),
        type(run.request_context["user"]["langs"]) is list,
        type(run.expected_trajectory["steps"]) is list,
        type(run.output) is list,
    ]
    return (sum(found) + len(run.tags) + len(run.rows)) / (len(found) + 5)


def _values(run, score):
    return json.dumps([run.tags, run.meta, run.rows, run.doubled, run.request_context])


SHAPE = (
    create_scorer(
        "shape",
        columns=("tags", "meta", "rows"),
        # model_copy skips validation: the numpy array it adds is read when the run is prepared
        prepare_run=lambda run: run.model_copy(update={"doubled": np.array(run.tags) * 2}),
    )
    .generate_score(_shape)
    .generate_reason(_values)
)


def _scored(data, **options):
    return run_evals(
        data,
        scorers=[SHAPE, scorers.trajectory_accuracy(), checks.includes("degrees")],
        gates=[checks.called_tool("get_weather")],
        progress=False,
        **options,
    )


def _cells(items):
    """The items' values, missing markers as None and the run's random ids left out."""
    frame = items.drop(columns="run_id").astype(object)
    return [
        {key: None if _missing(value) else value for key, value in row.items()}
        for row in frame.to_dict("records")
    ]


def _missing(value):
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))


def test_missing_cells_of_pandas_read_back_missing_from_a_checkpoint_and_the_results(tmp_path):
    """An object column holding pandas' NA or NaT beside other values (a nullable column cast to
    object): a resumed run read NA back as the text "<NA>", and NaT failed the write."""
    notes = pd.Series([{"tag": "x"}, pd.NA, pd.NaT, None], dtype=object)
    labels = pd.Series(["a", pd.NA, "c", pd.NaT], dtype=object)
    data = _data(notes=notes, labels=labels)
    options = {"scorers": [_length()], "progress": False, "checkpoint": tmp_path / "run.parquet"}
    with pytest.raises(EvalDagError):  # stopped after the first batch was saved
        run_evals(data, **options, batch_size=2, on_item_complete=_stop_at("q2"))
    resumed = run_evals(data, **options, batch_size=2)
    for items in (resumed.items, EvalResult.read_parquet(tmp_path / "run.parquet").items):
        assert items["notes"].tolist()[0] == {"tag": "x"}
        assert items["labels"].tolist()[0::2] == ["a", "c"]
        assert all(pd.isna(v) for v in [*items["notes"][1:], *items["labels"][1::2]])


def _stop_at(input):
    def stop(item, *_):
        if item["input"] == input:
            raise RuntimeError("stopped")

    return stop


def test_the_same_data_from_parquet_jsonl_and_csv_scores_the_same(tmp_path):
    results = {
        suffix: _scored(_saved(tmp_path, suffix)) for suffix in (".jsonl", ".parquet", ".csv")
    }
    expected = results[".jsonl"]
    assert expected.items["shape.score"].tolist() == [(7 + 3 + 2) / 12, 7 / 12, (7 + 1 + 1) / 12]
    assert json.loads(expected.items["shape.reason"][2]) == [
        [7],
        ROWS[2]["meta"],
        [{"b": "y"}],
        [14],
        ROWS[2]["request_context"],
    ]
    for suffix, result in results.items():
        assert result.scores == expected.scores, suffix
        assert result.verdict == expected.verdict == "failed", suffix  # the gate: 1 of 3
        assert _cells(result.items) == _cells(expected.items), suffix
    for column in NESTED:
        assert results[".parquet"].items[column].tolist() == [row[column] for row in ROWS]


def test_steps_get_python_lists_from_a_frame_of_numpy_arrays_and_from_arrow_tables(tmp_path):
    path = _saved(tmp_path, ".parquet")
    expected = _scored(_saved(tmp_path, ".jsonl"))
    for data in (pq.read_table(path), pa.Table.from_pylist(ROWS)):
        assert _cells(_scored(data).items) == _cells(expected.items)
    from_pandas = _scored(pd.read_parquet(path)).items
    # pandas reads a struct's integer as a float where another row lacks it: {"k": 1.0}
    assert json.loads(from_pandas["shape.reason"][0])[1]["extra"] == {"k": 1.0}
    assert _cells(from_pandas.drop(columns="shape.reason")) == _cells(
        expected.items.drop(columns="shape.reason")
    )
    run = ScorerRun(input="q", output="a", ground_truth=np.array([1, 2]), tags=np.array([[1], [2]]))
    assert (run.ground_truth, run.tags) == ([1, 2], [[1], [2]])


@pytest.mark.parametrize("suffix", [".parquet", ".jsonl", ".csv"])
def test_results_read_back_as_they_were_written(tmp_path, suffix):
    data = pd.read_parquet(_saved(tmp_path, ".parquet"))  # numpy arrays in the cells
    data["target"] = [np.int64(3), np.float64(0.5), None]  # numpy numbers too
    path = tmp_path / f"results{suffix}"
    result = _scored(data, out=path)
    written = path.read_text(errors="replace") if suffix != ".parquet" else ""
    assert "array(" not in written and "np.int64" not in written
    back = read_results(path)
    assert list(back.columns) == list(result.items.columns)
    expected = _cells(result.items)
    if suffix == ".csv":  # a CSV cell is text: numbers other than scores stay text
        for row in expected:
            row["target"] = None if row["target"] is None else str(row["target"])
    assert _cells(back) == expected
    assert back["shape.score"].dtype == float
    if suffix == ".parquet":
        table = pq.read_table(path)
        assert "array(" not in json.dumps(table.column("tags").to_pylist())


# --- what each format keeps (docs/concepts.md, "What each format keeps") -------------------------

_WHEN = pd.Timestamp("2024-05-01 12:30", tz="UTC")


def _odd_values():
    return pd.DataFrame(
        {
            "input": ["q0", "q1"],
            "output": ["a", "bb"],
            "blob": [b"\x00\x01raw", b"more"],
            "when": [_WHEN, _WHEN],
            "meta": [{"at": _WHEN.to_pydatetime(), "raw": b"x", "nan": math.nan}, {"n": 1}],
            "tags": [{"b"}, set()],
            "big": [math.inf, 1.5],
            7: ["seven", "eight"],
        }
    )


_KEPT = {  # what comes back of row 0, per format, as the docs' table says
    ".parquet": {
        "blob": b"\x00\x01raw",
        "when": _WHEN,
        "meta": {"at": "2024-05-01T12:30:00+00:00", "raw": "eA==", "nan": None},
        "tags": ["b"],
        "big": math.inf,
        7: "seven",
    },
    ".jsonl": {
        "blob": "AAFyYXc=",
        "when": "2024-05-01T12:30:00Z",
        "meta": {"at": "2024-05-01T12:30:00+00:00", "raw": "eA==", "nan": None},
        "tags": ["b"],
        "big": None,
        "7": "seven",
    },
    ".csv": {
        "blob": "AAFyYXc=",
        "when": "2024-05-01T12:30:00Z",
        "meta": {"at": "2024-05-01T12:30:00+00:00", "raw": "eA==", "nan": None},
        "tags": ["b"],
        "big": "inf",
        "7": "seven",
    },
    "store": {
        "blob": "AAFyYXc=",
        "when": "2024-05-01T12:30:00Z",
        "meta": {"at": "2024-05-01T12:30:00+00:00", "raw": "eA==", "nan": math.nan},
        "tags": ["b"],
        "big": math.inf,
        7: "seven",
    },
}


def _same(a, b):
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    return a == b  # bytes are never equal to their text, nor a list to a set


@pytest.mark.parametrize("where", [".parquet", ".jsonl", ".csv", "store"])
def test_what_each_format_keeps_of_bytes_dates_sets_and_integer_column_names(tmp_path, where):
    data = _odd_values()
    if where == "store":
        result = run_evals(data, scorers=[_length()], store=tmp_path / "s.db", progress=False)
        with SqlScoreStore(tmp_path / "s.db") as store:
            back = store.result().items
    else:
        path = tmp_path / f"results{where}"
        result = run_evals(data, scorers=[_length()], out=path, progress=False)
        back = read_results(path)
    kept = _KEPT[where]
    assert len(back.columns) == len(result.items.columns)
    assert (7 in back.columns, "7" in back.columns) == (7 in kept, "7" in kept)
    row = back.iloc[0]
    for column, value in kept.items():
        assert _same(row[column], value), (where, column, row[column])
    if where == ".parquet":
        assert EvalResult.read_parquet(tmp_path / "results.parquet").items.columns.equals(
            result.items.columns
        )
