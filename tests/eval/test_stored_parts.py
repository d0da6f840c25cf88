"""store= beside out= a directory on a streamed run: the client saves each part's rows as its
batch is handed on, then the run's record; the store then holds exactly what
``store.save_result(EvalResult.read_parquet(out))`` saves, after a resume too, and a store that
fails mid-run loses nothing (on a real SQLite file and a real PostgreSQL database)."""

import pandas as pd
import pytest
import sqlalchemy as sa
from parquet_folders import parquet_folder
from score_stores import emptied, store_contents
from scorer_cases import length_scorer

import evaldag
from evaldag import EvalResult, OnItemCompleteError, checks, create_scorer, run_evals
from evaldag._store.sql import SqlScoreStore

DATA = pd.DataFrame(
    {
        "question": [str(i) for i in range(60)],
        "answer": ["x" * (i % 13) for i in range(60)],
        "topic": [["a", "b"][i % 2] for i in range(60)],
    }
)


@pytest.fixture
def data(tmp_path):
    return parquet_folder(DATA, tmp_path / "data")


def _config():
    flaky = create_scorer("flaky").generate_score(lambda run: 1 / 0 if run.input == "7" else 0.5)
    return {
        "scorers": [length_scorer().with_threshold(0.3), flaky],
        "gates": [checks.includes("x")],
        "columns": {"input": "question", "output": "answer"},
        "batch_size": 16,
        "name": "nightly",
        "progress": False,
    }


class _Stopped(Exception):
    pass


def _stop_at(question):
    def stop(item, output, results):
        if item["question"] == question:
            raise _Stopped

    return stop


def _saved_afterwards(store, out):
    """The store's contents, then those ``store.save_result(EvalResult.read_parquet(out))``
    gives it once emptied."""
    streamed = store_contents(store)
    emptied(store)
    with evaldag.ScoreStore(store) as opened:
        opened.save_result(EvalResult.read_parquet(out))
    return streamed, store_contents(store)


def test_the_store_holds_what_saving_the_directory_afterwards_would(data, tmp_path, store_url):
    out = tmp_path / "out"
    result = run_evals(data, **_config(), out=out, store=store_url)
    streamed, afterwards = _saved_afterwards(store_url, out)
    assert streamed == afterwards
    assert len(streamed["evaldag_scores"]) == 3 * len(DATA)  # 2 scorers and a gate
    (run,) = streamed["evaldag_experiments"]
    assert run["id"] == result.experiment_id and run["name"] == "nightly"
    assert run["record"]["item_columns"][:3] == ["question", "answer", "topic"]
    with SqlScoreStore(store_url) as store:
        back = store.result("nightly")
    # every item, not only the verdict's columns the client held
    assert list(back.items.columns) == list(EvalResult.read_parquet(out).items.columns)
    assert back.items["topic"].tolist() == DATA["topic"].tolist()
    assert back.scores == result.scores and back.verdict == result.verdict


def test_a_resumed_run_saves_each_part_once_under_its_first_experiment_id(
    data, tmp_path, store_url
):
    out = tmp_path / "out"
    with pytest.raises(
        OnItemCompleteError
    ):  # stopped in the second batch, its part written and saved
        run_evals(data, **_config(), out=out, store=store_url, on_item_complete=_stop_at("20"))
    stopped = store_contents(store_url)
    assert len(stopped["evaldag_scores"]) == 3 * 32 and stopped["evaldag_experiments"] == []
    first_id = stopped["evaldag_scores"][0]["experiment_id"]
    result = run_evals(data, **_config(), out=out, store=store_url)
    assert result.experiment_id == first_id  # the directory is one run
    streamed, afterwards = _saved_afterwards(store_url, out)
    assert streamed == afterwards and len(streamed["evaldag_scores"]) == 3 * len(DATA)


def test_a_scorer_dropped_on_resume_leaves_no_rows_in_the_store(data, tmp_path, store_url):
    out = tmp_path / "out"
    run_evals(data, **_config(), out=out, store=store_url)
    config = _config()
    config["scorers"] = config["scorers"][:1]  # "flaky" dropped: its items go stale
    result = run_evals(data, **config, out=out, store=store_url, resume="refresh")
    streamed, afterwards = _saved_afterwards(store_url, out)
    assert streamed == afterwards and len(streamed["evaldag_scores"]) == 2 * len(DATA)
    assert {row["scorer_id"] for row in streamed["evaldag_scores"]} == {"len", "check-includes"}
    assert {row["experiment_id"] for row in streamed["evaldag_scores"]} == {result.experiment_id}


def _locked(location):
    """A connection holding the store's tables as another writer would (SQLite's write lock,
    PostgreSQL's table locks); closed by the caller."""
    engine = sa.create_engine(location if "://" in location else f"sqlite:///{location}")
    connection = engine.connect()
    if connection.dialect.name == "sqlite":
        connection.exec_driver_sql("BEGIN IMMEDIATE")
    else:
        connection.begin()
        connection.execute(
            sa.text("LOCK TABLE evaldag_scores, evaldag_experiments IN ACCESS EXCLUSIVE MODE")
        )
    return engine, connection


def test_a_store_failing_mid_run_loses_nothing(data, tmp_path, store_url, monkeypatch):
    from evaldag._judge import databases

    monkeypatch.setattr(databases, "LOCK_WAIT", 1)  # the bound on waiting for a lock, shortened
    held = []

    def lock_the_store(item, output, results):
        if not held:  # another writer takes the store after the first part was saved
            held.append(_locked(store_url))

    out = tmp_path / "out"
    try:
        with pytest.raises(evaldag.ResultNotSavedError) as raised:
            run_evals(data, **_config(), out=out, store=store_url, on_item_complete=lock_the_store)
    finally:
        for engine, connection in held:
            connection.close()
            engine.dispose()
    error = raised.value
    assert "the score store" in error.message and "lock" in error.message
    assert f"store.save_result(EvalResult.read_parquet('{out}'))" in error.message
    assert error.result.scores == run_evals(DATA, **_config()).scores  # the run went on
    back = EvalResult.read_parquet(out)  # every item is in the directory
    assert len(back.items) == len(DATA) and back.experiment_id == error.result.experiment_id
    assert len(store_contents(store_url)["evaldag_scores"]) == 3 * 16  # the first part only
    again = run_evals(data, **_config(), out=out, store=store_url)  # the store free again
    assert again.experiment_id == error.result.experiment_id
    streamed, afterwards = _saved_afterwards(store_url, out)
    assert streamed == afterwards and len(streamed["evaldag_scores"]) == 3 * len(DATA)


def test_without_out_a_directory_the_run_is_saved_at_its_end(data, tmp_path):
    store = str(tmp_path / "scores.db")
    result = run_evals(data, **_config(), store=store)  # the client holds every item
    streamed = store_contents(store)
    emptied(store)
    with evaldag.ScoreStore(store) as opened:
        opened.save_result(result)
    assert streamed == store_contents(store)
