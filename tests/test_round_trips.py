"""Round trips: results files read back as they were written, by evaldag and by other readers."""

import pandas as pd
import pyarrow.parquet as pq
import pytest

from evaldag import EvalResult, ScoreStore, create_scorer, run_evals
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
    with ScoreStore(tmp_path / "scores.db") as store:  # a file read back stores as its run
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
