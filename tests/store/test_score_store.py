"""The score store (spec §10.2) on SQLite and on a real PostgreSQL server: Mastra's row fields,
upserts by id, the schema and its migrations, concurrent writers, run_evals(store=...),
read_scores and the report from a store."""

import json
import math
import subprocess
import sys
import textwrap
import threading
import time
from datetime import datetime

import pandas as pd
import pytest
import sqlalchemy as sa

import evaldag
from evaldag import (
    EvalDagError,
    ScoreRow,
    SqlScoreStore,
    UntrustworthyRunError,
    checks,
    create_scorer,
    read_scores,
    run_evals,
)
from evaldag._cli.main import main as cli
from evaldag._results.eval_result import verdict_word
from evaldag._store import schema

MASTRA_FIELDS = [
    "id", "scorerId", "entityId", "runId", "input", "output", "additionalContext",
    "requestContext", "score", "reason", "preprocessStepResult", "preprocessPrompt",
    "analyzeStepResult", "analyzePrompt", "generateScorePrompt", "generateReasonPrompt",
    "extractStepResult", "extractPrompt", "reasonPrompt", "scorer", "metadata", "source",
    "entity", "entityType", "structuredOutput", "traceId", "spanId", "resourceId", "threadId",
    "organizationId", "projectId", "batchId", "datasetId", "datasetItemId", "createdAt",
    "updatedAt",
]  # fmt: skip


def _row(row_id="r1", **fields):
    base = {
        "id": row_id,
        "scorer_id": "s",
        "entity_id": "app",
        "run_id": f"run-{row_id}",
        "score": 0.5,
        "scorer": {"id": "s"},
        "entity": {"id": "app", "name": "app"},
        "source": "LIVE",
    }
    return ScoreRow(**{**base, **fields})


def _length(scorer_id="length"):
    return create_scorer(scorer_id).generate_score(lambda run: min(1.0, len(run.output) / 10))


def _evens(run):
    if run.output == "":
        return evaldag.not_scorable("empty")
    if run.output == "boom":
        raise ValueError("the scorer broke")
    return 1.0 if len(run.output) % 2 == 0 else 0.0


DATA = pd.DataFrame(
    {
        "input": ["q1", "q2", "q3", "q4"],
        "output": ["four", "three", "", "boom"],
        "ground_truth": ["4", None, None, None],
        "request_context": [{"user": {"tier": "pro", "id": 7}, "tags": ["x"]}, None, None, None],
        "case": ["a", "b", "c", "d"],
    }
)


def _result(store=None):
    return run_evals(
        DATA,
        scorers=[_length().with_threshold(0.2), create_scorer("evens").generate_score(_evens)],
        gates=[create_scorer("always").generate_score(lambda: 1)],
        store=store,
    )


# --- rows and the schema ---------------------------------------------------------------------


def test_a_row_has_mastras_fields_in_snake_case_and_takes_its_camel_case_keys():
    aliases = [field.alias for field in ScoreRow.model_fields.values()]
    assert aliases[: len(MASTRA_FIELDS)] == MASTRA_FIELDS
    row = ScoreRow.model_validate({**_row().model_dump(by_alias=True), "traceId": "t-1"})
    assert row.trace_id == "t-1"


def test_a_new_store_gets_the_schema_and_its_version(store_url):
    with SqlScoreStore(store_url) as store:
        engine = sa.create_engine(store.url)
    with engine.connect() as connection:
        names = set(sa.inspect(connection).get_table_names())
        version = connection.scalar(sa.select(sa.func.max(schema.versions.c.version)))
    engine.dispose()
    assert {"evaldag_scores", "evaldag_experiments", "evaldag_schema"} <= names
    assert version == schema.SCHEMA_VERSION
    SqlScoreStore(store_url).close()  # opening again changes nothing


def test_every_field_round_trips(store_url):
    row = _row(
        input={"inputMessages": [{"role": "user", "content": "héllo ✓"}]},
        output=[{"role": "assistant", "content": "ok"}],
        additional_context={"groundTruth": "ok"},
        request_context={"user.tier": "pro", "n": 3},
        reason="fine",
        preprocess_step_result={"claims": ["a", "b"]},
        preprocess_prompt="p1",
        analyze_step_result=[1, 2],
        analyze_prompt="p2",
        generate_score_prompt="p3",
        generate_reason_prompt="p4",
        scorer={"id": "s", "name": "S", "description": "d", "hasJudge": True},
        metadata={"turnIndex": 2},
        entity_type="AGENT",
        structured_output=False,
        trace_id="t",
        span_id="sp",
        resource_id="res",
        thread_id="th",
        organization_id="org",
        project_id="proj",
        batch_id="b",
        dataset_id="ds",
        dataset_item_id="dsi",
        experiment_id="e",
        error=None,
        completed_steps=["preprocess", "analyze"],
        judge={"analyze": {"executions": []}},
    )
    numbers = _row("r2", input=0, output=2**70, metadata={"ratio": 0.1})
    with SqlScoreStore(store_url) as store:
        assert store.save([row, numbers]) == 2
        frame = store.scores().set_index("id", drop=False)
    assert frame.loc["r2", "input"] == 0 and frame.loc["r2", "output"] == 2**70
    stored = frame.loc["r1"].to_dict()
    assert isinstance(stored.pop("created_at"), datetime)
    assert isinstance(stored.pop("updated_at"), datetime)
    expected = row.model_dump(exclude={"created_at", "updated_at"})
    assert {k: (None if v is None or v is pd.NA else v) for k, v in stored.items()} == expected


def test_saving_a_row_again_replaces_it_and_keeps_created_at(store_url):
    with SqlScoreStore(store_url) as store:
        store.save([_row(score=0.1), _row("r2")])
        first = store.scores().set_index("id")
        store.save([_row(score=0.9, reason="again")])
        second = store.scores().set_index("id")
    assert len(second) == 2
    assert second.loc["r1", "score"] == 0.9 and second.loc["r1", "reason"] == "again"
    assert second.loc["r1", "created_at"] == first.loc["r1", "created_at"]
    assert second.loc["r1", "updated_at"] > first.loc["r1", "updated_at"]
    assert second.loc["r2", "score"] == 0.5


def test_rows_are_filtered_by_experiment_scorer_and_source(store_url):
    rows = [
        _row("a", source="TEST", experiment_id="e1"),
        _row("b", source="TEST", experiment_id="e2", scorer_id="t"),
        _row("c", source="LIVE"),
    ]
    with SqlScoreStore(store_url) as store:
        store.save(rows)
        assert list(store.scores(experiment_id="e1").id) == ["a"]
        assert list(store.scores(scorer_id="t").id) == ["b"]
        assert list(store.scores(source="LIVE").id) == ["c"]
    assert list(read_scores(store_url, source="TEST").id) == ["a", "b"]


def test_a_store_written_by_a_newer_evaldag_is_refused(store_url, monkeypatch):
    SqlScoreStore(store_url).close()
    monkeypatch.setattr(schema, "SCHEMA_VERSION", schema.SCHEMA_VERSION - 1)
    with pytest.raises(EvalDagError) as raised:
        SqlScoreStore(store_url)
    assert raised.value.id == "EVALDAG_STORE_SCHEMA_TOO_NEW"
    assert "upgrade evaldag" in raised.value.message


def test_an_older_store_is_migrated_once_and_a_new_one_created_at_the_current_version(
    store_url, tmp_path, monkeypatch
):
    with SqlScoreStore(store_url) as store:
        store.save([_row()])
    applied = []

    def add_column(connection):
        applied.append(connection.dialect.name)
        connection.execute(sa.text("ALTER TABLE evaldag_scores ADD COLUMN note TEXT"))

    monkeypatch.setattr(schema, "SCHEMA_VERSION", schema.SCHEMA_VERSION + 1)
    monkeypatch.setattr(schema, "MIGRATIONS", {schema.SCHEMA_VERSION: add_column})
    for _ in range(2):
        with SqlScoreStore(store_url) as store:
            assert list(store.scores().id) == ["r1"]
            with store._engine.connect() as connection:
                columns = {c["name"] for c in sa.inspect(connection).get_columns("evaldag_scores")}
                versions = connection.scalars(sa.select(schema.versions.c.version)).all()
    assert len(applied) == 1 and "note" in columns
    assert sorted(versions) == [schema.SCHEMA_VERSION - 1, schema.SCHEMA_VERSION]
    SqlScoreStore(tmp_path / "fresh.db").close()
    assert len(applied) == 1  # a new store is created at the current version, not migrated


# --- concurrent writers ----------------------------------------------------------------------

#: Run by each process of :func:`_at_once` once it has imported evaldag (about a second, which
#: would otherwise spread the processes' work apart): it says it is ready and waits for the go.
_READY = textwrap.dedent(
    """
    import pathlib, sys, time
    folder = pathlib.Path(sys.argv[-1])
    (folder / f"ready-{sys.argv[-2]}").touch()
    while not (folder / "go").exists():
        time.sleep(0.001)
    """
)


def _at_once(code: str, names: list[str], url: str, folder) -> list[subprocess.Popen]:
    """Processes running ``code`` (``sys.argv[1]`` the store's URL, ``sys.argv[2]`` the name)
    that all begin at the same moment, after their imports: this process says go once each has
    said it is ready."""
    processes = [
        subprocess.Popen([sys.executable, "-c", code, url, name, str(folder)],
                         stderr=subprocess.PIPE, text=True)
        for name in names
    ]  # fmt: skip
    deadline = time.monotonic() + 120
    while len(list(folder.glob("ready-*"))) < len(names):
        failed = [p for p in processes if p.poll() is not None]
        assert not failed, failed[0].communicate()[1]
        assert time.monotonic() < deadline, "the processes were not ready within 120 s"
        time.sleep(0.01)
    (folder / "go").touch()
    return processes


_WRITER = "import sys\nfrom evaldag import ScoreRow, SqlScoreStore\n" + _READY
_WRITER += textwrap.dedent(
    """
    url, writer = sys.argv[1], sys.argv[2]
    store = SqlScoreStore(url)
    for batch in range(10):
        store.save(
            ScoreRow(id=f"{writer}-{batch}-{n}", scorer_id="s", entity_id="app", run_id="r",
                     score=n / 20, scorer={"id": "s"}, entity={"id": "app"}, source="LIVE")
            for n in range(20)
        )
        # every writer also upserts the same shared rows
        store.save(
            ScoreRow(id=f"shared-{n}", scorer_id="s", entity_id="app", run_id="r",
                     score=batch / 10, scorer={"id": "s"}, entity={"id": "app"}, source="LIVE")
            for n in range(5)
        )
    store.close()
    """
)


@pytest.mark.slow
def test_processes_and_threads_writing_at_once_lose_nothing(store_url, tmp_path):
    processes = _at_once(_WRITER, ["p0", "p1"], store_url, tmp_path)
    store = SqlScoreStore(store_url)  # the store is new: this process creates it with them
    errors = []

    def write(writer):
        try:
            for batch in range(10):
                store.save(_row(f"{writer}-{batch}-{n}", score=n / 20) for n in range(20))
        except Exception as error:  # noqa: BLE001 (reported below)
            errors.append(error)

    threads = [threading.Thread(target=write, args=(f"t{n}",)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for process in processes:
        _, stderr = process.communicate(timeout=120)
        assert process.returncode == 0, stderr
    assert errors == []
    frame = store.scores()
    store.close()
    assert len(frame) == (2 + 4) * 10 * 20 + 5
    assert frame.id.is_unique


@pytest.mark.slow
def test_processes_opening_a_new_store_at_once_create_it_once(store_url, tmp_path):
    code = "import sys\nfrom evaldag import SqlScoreStore\n" + _READY
    code += "SqlScoreStore(sys.argv[1]).close()\n"
    processes = _at_once(code, ["p0", "p1", "p2", "p3"], store_url, tmp_path)
    for process in processes:
        _, stderr = process.communicate(timeout=120)
        assert process.returncode == 0, stderr
    with SqlScoreStore(store_url) as store, store._engine.connect() as connection:
        assert connection.scalars(sa.select(schema.versions.c.version)).all() == [
            schema.SCHEMA_VERSION
        ]


# --- run_evals, read_scores and the report ----------------------------------------------------


def test_run_evals_saves_every_items_scores_as_test_rows(store_url):
    result = _result(store=store_url)
    frame = read_scores(store_url)
    assert len(frame) == 4 * 3
    assert set(frame.source) == {"TEST"} and set(frame.experiment_id) == {result.experiment_id}
    assert frame.id.is_unique
    rows = frame.set_index(["scorer_id", frame.metadata.map(lambda m: m["item"])])
    assert rows.loc[("length", 0), "score"] == 0.4
    assert rows.loc[("length", 0), "run_id"] == result.items.run_id[0]
    assert rows.loc[("length", 0), "input"] == "q1"
    assert rows.loc[("length", 0), "additional_context"] == {"groundTruth": "4"}
    # Mastra's snapshot: primitives under dotted keys, lists left out
    assert rows.loc[("length", 0), "request_context"] == {"user.tier": "pro", "user.id": 7}
    assert rows.loc[("length", 0), "metadata"] == {"item": 0, "data": {"case": "a"}}
    assert rows.loc[("length", 0), "scorer"] == {
        "id": "length",
        "name": "length",
        "description": "",
        "hasJudge": False,
        "role": "scorer",
    }
    assert rows.loc[("always", 0), "scorer"]["role"] == "gate"
    assert rows.loc[("length", 0), "entity"] == {"id": "dataset", "name": "dataset"}
    not_scorable = rows.loc[("evens", 2)]
    assert math.isnan(not_scorable.score) or not_scorable.score is None
    assert not_scorable.not_scorable == {"step": "generate_score", "reason": "empty"}
    failed = rows.loc[("evens", 3)]
    assert "the scorer broke" in failed.error and failed.failed_step == "generate_score"


def test_a_stored_run_reads_back_as_its_result(store_url):
    result = _result(store=store_url)
    again = _result(store=store_url)
    with SqlScoreStore(store_url) as store:
        assert list(store.experiments().id) == [result.experiment_id, again.experiment_id]
        back = store.result(result.experiment_id)
        assert store.result().experiment_id == again.experiment_id
    assert back.experiment_id == result.experiment_id
    assert back.scores == result.scores and back.verdict == result.verdict
    assert back.summary == result.summary and back.usage == result.usage
    assert back.threshold_results == result.threshold_results
    assert list(back.items.columns) == list(result.items.columns)
    for column in result.items.columns:
        if column.endswith(".score"):
            pd.testing.assert_series_equal(back.items[column], result.items[column])
        elif column != "request_context":
            assert _cells(back.items[column]) == _cells(result.items[column]), column


def test_saving_a_run_again_replaces_its_experiments_rows_and_no_others(store_url):
    first = _result()
    with SqlScoreStore(store_url) as store:
        store.save_result(first)
        other = store.save_result(_result())  # another experiment
        store.save([_row("live-1", experiment_id=first.experiment_id)])  # a LIVE row of it
        # the same run without the "evens" scorer (a refreshed checkpoint that dropped it)
        dropped = first.model_copy(
            update={
                "scorers": [d for d in first.scorers if d["id"] != "evens"],
                "items": first.items.drop(columns=[c for c in first.items if "evens" in c]),
            }
        )
        assert store.save_result(dropped) == 4 * 2
        rows = store.scores(experiment_id=first.experiment_id, source="TEST")
        assert sorted(set(rows.scorer_id)) == ["always", "length"] and len(rows) == 4 * 2
        assert len(store.scores(source="TEST")) == 4 * 2 + other
        assert list(store.scores(source="LIVE").id) == ["live-1"]
        assert store.result(first.experiment_id).scores == dropped.scores


def _cells(column):
    return [None if _missing(v) else v for v in column.astype(object)]


def _missing(value):
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))


def test_read_scores_reads_a_results_file_as_a_store_holds_it(store_url, tmp_path):
    result = _result(store=store_url)
    path = result.to_parquet(tmp_path / "results.parquet")
    from_file = read_scores(path)
    from_store = read_scores(store_url).sort_values("id", ignore_index=True)
    from_file = from_file.sort_values("id", ignore_index=True)
    columns = [c for c in from_file.columns if c not in ("created_at", "updated_at")]
    assert len(from_file) == len(from_store) == 12
    for column in columns:  # values, not text: PostgreSQL's JSONB does not keep key order
        assert _cells(from_file[column]) == _cells(from_store[column]), column
    assert list(read_scores(path, scorer_id="evens").scorer_id) == ["evens"] * 4


def test_evaldag_report_reads_a_store(tmp_path, capsys):
    path = tmp_path / "scores.db"
    first = _result(store=path)
    _result(store=path)
    assert cli(["report", str(path), "--out", str(tmp_path / "latest.html")]) == 0
    assert "evens" in (tmp_path / "latest.html").read_text()
    out = tmp_path / "first.html"
    assert cli(["report", str(path), "--experiment", first.experiment_id, "--out", str(out)]) == 0
    assert first.experiment_id in out.read_text()


def test_store_errors_name_the_store(tmp_path):
    with pytest.raises(EvalDagError) as raised:
        SqlScoreStore("mysql://user@127.0.0.1/db")
    assert raised.value.id == "EVALDAG_STORE_UNSUPPORTED_DATABASE"
    with pytest.raises(EvalDagError) as raised:
        SqlScoreStore(tmp_path / "missing" / "scores.db")
    assert "is not in an existing folder" in raised.value.message
    with pytest.raises(EvalDagError) as raised:
        run_evals(DATA, scorers=[_length()], store="postgresql://nobody@127.0.0.1:9/none")
    assert raised.value.id == "EVALDAG_STORE_FAILED"
    assert "127.0.0.1:9" in raised.value.message
    with pytest.raises(EvalDagError) as raised:
        SqlScoreStore(tmp_path / "empty.db").result()
    assert raised.value.id == "EVALDAG_STORE_NO_EXPERIMENT"


def test_a_conversations_turn_scores_are_rows_and_read_back(store_url, tmp_path):
    # Mastra saves a row per turn and turn scorer with metadata.turnIndex; the stored run
    # reads back with its turns, so the report and "where it failed" can name them
    half = create_scorer("half").generate_score(lambda run: 0.5)
    turns = [
        {"input": "hi", "gates": [evaldag.checks.includes("answer", id="answers")]},
        {"input": "more", "scorers": [half.with_threshold(0.8)]},
    ]
    result = run_evals(
        [{"id": "c1", "turns": turns}, {"id": "c2", "turns": turns[:1]}],
        target=lambda input: f"answer to {input}",
        scorers=[create_scorer("top").generate_score(lambda run: 1.0)],
        store=store_url,
        progress=False,
    )
    rows = read_scores(store_url)
    turn_rows = rows[rows.metadata.map(lambda m: "turnIndex" in m)]
    assert sorted(
        (m["item"], m["turnIndex"], sid, score)
        for m, sid, score in zip(
            turn_rows.metadata, turn_rows.scorer_id, turn_rows.score, strict=True
        )
    ) == [(0, 0, "answers", 1.0), (0, 1, "half", 0.5), (1, 0, "answers", 1.0)]
    assert set(turn_rows.input) == {"hi", "more"} and rows.id.is_unique
    threads = dict(zip(result.turns["item"], result.turns["thread_id"], strict=False))
    assert turn_rows.thread_id.tolist() == [threads[m["item"]] for m in turn_rows.metadata]
    assert len(set(threads.values())) == 2  # a thread per conversation, as its target got it
    assert turn_rows.scorer.map(lambda s: s["role"]).tolist().count("gate") == 2
    with SqlScoreStore(store_url) as store:
        back = store.result(result.experiment_id)
    assert back.turn_results == result.turn_results and back.verdict == "scored"
    assert list(back.turns.columns) == list(result.turns.columns)
    assert back.turns[["item", "id", "turn", "input"]].values.tolist() == [
        [0, "c1", 0, "hi"],
        [0, "c1", 1, "more"],
        [1, "c2", 0, "hi"],
    ]
    pd.testing.assert_series_equal(back.turns["half.score"], result.turns["half.score"])
    from_file = read_scores(result.to_parquet(tmp_path / "results.parquet"))
    assert sorted(from_file.id) == sorted(rows.id)  # a results file reads as the store holds it


# --- named experiments -----------------------------------------------------------------------


def _named(store, name, outputs=("four", "three", "two", "one")):
    data = DATA.assign(output=list(outputs))
    return run_evals(data, scorers=[_length()], store=store, name=name, progress=False)


def test_runs_are_named_and_found_by_name_id_or_the_start_of_an_id(store_url, tmp_path, capsys):
    first = _named(store_url, "nightly")
    candidate = _named(store_url, "candidate", outputs=("", "", "", "one"))
    latest = _named(store_url, "nightly")
    unnamed = _named(store_url, None)
    with SqlScoreStore(store_url) as store:
        listed = store.experiments()
        assert listed.columns.tolist() == ["id", "name", "created_at", "verdict", "total_items"]
        assert listed.name.tolist() == ["nightly", "candidate", "nightly", None]
        assert store.experiments(name="nightly").id.tolist() == [
            first.experiment_id,
            latest.experiment_id,
        ]
        assert store.experiment_id("nightly") == latest.experiment_id  # the latest of the name
        assert store.experiment_id(first.experiment_id) == first.experiment_id
        assert store.experiment_id(first.experiment_id[:8]) == first.experiment_id
        assert store.result("candidate").name == "candidate"
        assert store.result().experiment_id == unnamed.experiment_id
        assert store.result(unnamed.experiment_id).name is None
    comparison = evaldag.compare_experiments("nightly", "candidate", store=store_url)
    assert (comparison.a.experiment_id, comparison.a.name) == (latest.experiment_id, "nightly")
    assert comparison.b.name == "candidate" and comparison.regressions == ["length"]
    assert cli(["compare", "nightly", "candidate", "--store", store_url]) == 1
    out = capsys.readouterr().out
    assert f"(experiment {latest.experiment_id} 'nightly', 4 items)" in out
    assert f"(experiment {candidate.experiment_id} 'candidate', 4 items)" in out
    report = tmp_path / "report.html"
    assert cli(["report", store_url, "--experiment", "candidate", "--out", str(report)]) == 0
    assert candidate.experiment_id in report.read_text() and "candidate" in report.read_text()


def test_an_unknown_name_or_a_shared_start_of_ids_is_an_error_listing_near_matches(store_url):
    _named(store_url, "nightly")
    _named(store_url, "nightly-gpt4")
    result = _named(store_url, "weekly")
    with SqlScoreStore(store_url) as store:
        with pytest.raises(EvalDagError) as raised:
            store.result("nigthly")
        assert raised.value.id == "EVALDAG_STORE_NO_EXPERIMENT"
        assert "no experiment is named 'nigthly'" in raised.value.message
        assert "did you mean 'nightly'" in raised.value.message
        assert "store.experiments()" in raised.value.message
        for twin in (
            "abcd0000-0000-4000-8000-000000000001",
            "abcd0000-0000-4000-8000-000000000002",
        ):
            store.save_result(result.model_copy(update={"experiment_id": twin, "name": None}))
        with pytest.raises(EvalDagError, match="'abcd' starts several experiment ids") as raised:
            store.experiment_id("abcd")
        assert "abcd0000-0000-4000-8000-000000000001" in raised.value.message
        assert store.experiment_id(result.experiment_id[:6].upper()) == result.experiment_id
        with pytest.raises(EvalDagError, match="no experiment is named 'zzzz'"):
            store.experiment_id("zzzz")
    with pytest.raises(EvalDagError, match="did you mean 'weekly'"):
        evaldag.compare_experiments("weakly", "nightly", store=store_url)


def test_a_name_is_checked_before_anything_runs(tmp_path):
    scored = []
    counting = create_scorer("c").generate_score(lambda: scored.append(1) or 1.0)
    for bad, problem in [
        ("", "is empty"),
        (" nightly", "without blanks at either end"),
        ("two\nlines", "one line"),
        ("3f2a9c1e-0000-4000-8000-000000000000", "looks like an experiment id"),
        (7, "must be a string"),
    ]:
        with pytest.raises(EvalDagError, match=problem) as raised:
            run_evals(DATA, scorers=[counting], name=bad, store=tmp_path / "scores.db")
        assert raised.value.id == "INVALID_EXPERIMENT_NAME"
    assert scored == []


def test_a_store_of_schema_version_1_gets_experiment_names(store_url):
    old = _named(store_url, None)
    with SqlScoreStore(store_url) as store, store._engine.begin() as connection:
        # as evaldag made the store before names: no column, no index, version 1
        connection.execute(sa.text("DROP INDEX ix_evaldag_experiments_name_created_at"))
        connection.execute(sa.text("ALTER TABLE evaldag_experiments DROP COLUMN name"))
        connection.execute(schema.versions.update().values(version=1))
    with SqlScoreStore(store_url) as store:
        with store._engine.connect() as connection:
            inspected = sa.inspect(connection)
            columns = {c["name"] for c in inspected.get_columns("evaldag_experiments")}
            indexes = {i["name"] for i in inspected.get_indexes("evaldag_experiments")}
            versions = connection.scalars(sa.select(schema.versions.c.version)).all()
        assert "name" in columns and "ix_evaldag_experiments_name_created_at" in indexes
        assert sorted(versions) == [1, 2]
        assert store.result(old.experiment_id).scores == old.scores
        assert store.experiments().name.tolist() == [None]
    named = _named(store_url, "after the migration")
    with SqlScoreStore(store_url) as store:
        assert store.experiment_id("after the migration") == named.experiment_id


def test_an_untrustworthy_run_is_never_listed_as_passed(store_url):
    # Its gate passed: the store's verdict column said 'passed' for a run that raised
    # UntrustworthyRunError, and store.experiments() listed it so.
    broken = create_scorer("broken").generate_score(lambda run: 1 / 0)
    gates = [checks.excludes("BAD")]
    with pytest.raises(UntrustworthyRunError) as raised:
        run_evals(DATA, scorers=[broken], gates=gates, store=store_url, progress=False)
    untrusted = raised.value.result.experiment_id
    fine = run_evals(DATA, scorers=[_length()], gates=gates, store=store_url, progress=False)
    table = schema.experiments
    with SqlScoreStore(store_url) as store:
        assert store.experiments().verdict.tolist() == ["untrustworthy", "passed"]
        with store._engine.begin() as connection:
            column = dict(connection.execute(sa.select(table.c.id, table.c.verdict)).all())
            assert column == {untrusted: "untrustworthy", fine.experiment_id: "passed"}
            # as an evaldag before this one stored it: the gates' verdict, the mark in the record
            connection.execute(table.update().values(verdict="passed"))
        assert store.experiments().verdict.tolist() == ["untrustworthy", "passed"]
        stored = store.result(untrusted)
    assert stored.summary.untrustworthy == raised.value.message
    assert verdict_word(stored) == "untrustworthy"


def test_a_stores_password_is_not_shown_where_a_comparison_names_it():
    from evaldag._store.locations import shown_location

    shown = shown_location("postgresql://evals:s3cret@db.internal/evals?sslkey=/k&passfile=/p")
    assert (
        shown == "postgresql://**********@db.internal/evals?sslkey=**********&passfile=**********"
    )


def test_evaldag_run_stores_a_named_run(tmp_path, capsys):
    eval_file = tmp_path / "eval_length.py"
    eval_file.write_text(
        "from evaldag import create_scorer\n"
        "scorers = [create_scorer('length').generate_score(lambda run: len(run.output) / 10)]\n"
    )
    data = tmp_path / "data.jsonl"
    data.write_text('{"input": "q", "output": "four"}\n')
    store, out = tmp_path / "scores.db", tmp_path / "results.parquet"
    run = ["run", str(eval_file), "--data", str(data), "--store", str(store)]
    assert cli([*run, "--name", "nightly", "--out", str(out)]) == 0
    with SqlScoreStore(store) as opened:
        stored = opened.result("nightly")
    assert f"stored: experiment {stored.experiment_id} 'nightly'" in capsys.readouterr().out
    assert evaldag.EvalResult.read_parquet(out).name == "nightly"
    assert cli([*run, "--name", " nightly"]) == 3
    assert "name=' nightly' must be text without blanks" in capsys.readouterr().err


# --- a store that fails: found before the run, or the result kept --------------------------------


def _counting_scorer(calls):
    return create_scorer("counted").generate_score(lambda run: calls.append(1) or 1.0)


@pytest.mark.parametrize("stamped", [False, True], ids=["unstamped", "stamped"])
def test_a_foreign_scores_table_is_refused_before_anything_runs(store_url, stamped):
    # a table of evaldag's name that evaldag did not make; "stamped": as the store of an older
    # evaldag that stamped such a database without looking at its columns
    engine = sa.create_engine(_engine_url(store_url))
    with engine.begin() as connection:
        connection.execute(sa.text("CREATE TABLE evaldag_scores (id INTEGER, note TEXT)"))
        if stamped:
            schema.versions.create(connection)
            connection.execute(
                schema.versions.insert(), [{"version": 1, "applied_at": datetime(2024, 1, 1)}]
            )
    engine.dispose()
    calls = []
    with pytest.raises(EvalDagError) as raised:
        run_evals(DATA, scorers=[_counting_scorer(calls)], store=store_url, progress=False)
    assert raised.value.id == "EVALDAG_STORE_FOREIGN_TABLE"
    assert "'evaldag_scores'" in raised.value.message
    assert "a database of its own" in raised.value.message
    assert calls == []  # refused before any scorer ran


def _engine_url(store_url):
    return store_url if "://" in store_url else f"sqlite:///{store_url}"


def _held_lock(store_url):
    """A connection holding the store's write lock (SQLite) or its experiments table (PostgreSQL),
    as another writer would; closed by the caller."""
    engine = sa.create_engine(_engine_url(store_url))
    connection = engine.connect()
    if connection.dialect.name == "sqlite":
        connection.exec_driver_sql("BEGIN IMMEDIATE")
    else:
        connection.begin()
        connection.execute(sa.text("LOCK TABLE evaldag_experiments IN ACCESS EXCLUSIVE MODE"))
    return engine, connection


def test_a_store_that_cannot_save_the_run_raises_with_the_result(store_url, tmp_path, monkeypatch):
    from evaldag._judge import databases

    monkeypatch.setattr(databases, "LOCK_WAIT", 1)  # the bound on waiting for a lock, shortened
    held = []

    def lock_the_store(*_):
        if not held:  # another writer takes the store while the run scores
            held.append(_held_lock(store_url))

    out = tmp_path / "results.parquet"
    try:
        with pytest.raises(evaldag.ResultNotSavedError) as raised:
            run_evals(
                DATA,
                scorers=[_length()],
                store=store_url,
                out=out,
                on_item_complete=lock_the_store,
                progress=False,
            )
    finally:
        for engine, connection in held:
            connection.close()
            engine.dispose()
    error = raised.value
    assert error.id == "EVALDAG_RESULT_NOT_SAVED" and error.domain == "STORAGE"
    assert "was not saved: Could not " in error.message and "the score store" in error.message
    assert "lock" in error.message  # the database's own words: locked, lock timeout
    assert f"in {out} and on this error" in error.message
    assert error.result.scores == {"length": pytest.approx(0.325)}
    assert evaldag.EvalResult.read_parquet(out).experiment_id == error.result.experiment_id
    with SqlScoreStore(store_url) as store:  # the store free again: the result saves as it was
        assert store.experiments().empty
        store.save_result(error.result)
        assert store.result().scores == error.result.scores


def test_evaldag_run_prints_the_summary_of_a_run_the_store_did_not_save(
    tmp_path, capsys, monkeypatch
):
    from evaldag._judge import databases

    monkeypatch.setattr(databases, "LOCK_WAIT", 1)
    store, out = tmp_path / "scores.db", tmp_path / "results.parquet"
    eval_file = tmp_path / "eval_locked.py"
    eval_file.write_text(
        "import sqlite3\n"
        "from evaldag import create_scorer\n"
        "held = []\n"
        "def length(run):\n"
        "    if not held:  # another writer takes the store while the run scores\n"
        f"        held.append(sqlite3.connect({str(store)!r}, isolation_level=None))\n"
        "        held[0].execute('BEGIN IMMEDIATE')\n"
        "    return len(run.output) / 10\n"
        "scorers = [create_scorer('length').generate_score(length)]\n"
    )
    data = tmp_path / "data.jsonl"
    data.write_text('{"input": "q", "output": "four"}\n')
    run = ["run", str(eval_file), "--data", str(data), "--store", str(store), "--out", str(out)]
    code = cli(run)
    captured = capsys.readouterr()
    assert code == 3
    assert "length" in captured.out and "verdict:" in captured.out  # the summary, scored
    assert "was not saved: Could not" in captured.err and "locked" in captured.err
    assert out.is_file()


# --- values a database cannot hold as they are -------------------------------------------------


def test_nul_characters_lose_no_run_and_no_batch(store_url):
    postgres = "://" in store_url  # PostgreSQL's text and JSONB cannot hold U+0000
    data = [{"input": "q\x00", "output": "four", "note": {"k\x00": "v\x00"}}]
    result = run_evals(data, scorers=[_length()], store=store_url, progress=False)
    batch = [_row("a"), _row("b", reason="why\x00"), _row("c", output=["x\x00"])]
    with SqlScoreStore(store_url) as store:
        assert store.save(batch) == 3  # the whole batch, the rows with NUL included
        rows = store.scores().set_index("id")
        back = store.result(result.experiment_id)
    stored = rows.loc[f"{result.experiment_id}:0:length"]
    nul = "\ufffd" if postgres else "\x00"
    assert stored.input == f"q{nul}" and stored.metadata["data"] == {"note": {f"k{nul}": f"v{nul}"}}
    assert back.items.at[0, "input"] == f"q{nul}" and back.scores == result.scores
    assert rows.loc["b", "reason"] == f"why{nul}" and rows.loc["c", "output"] == [f"x{nul}"]
    metadatas = rows.loc[[stored.name, "a", "b", "c"]].metadata
    replaced = [(metadata or {}).get("nulReplaced") for metadata in metadatas]
    if postgres:  # each row says which of its fields had one
        assert replaced == [["input", "metadata"], None, ["reason"], ["output"]]
    else:
        assert replaced == [None] * 4


def _same(a, b):
    """Equal, NaN equal to NaN, in nested values."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    return a == b and type(a) is type(b)


def test_non_finite_numbers_are_tagged_in_json_that_orjson_cannot_write():
    """An integer beyond 64 bits sends a value to the json module, which writes NaN and
    Infinity as such (not null): they are tagged there too."""
    from evaldag._store.values import loaded_json, stored_json

    value = {"huge": 2**70, "scores": [math.nan, -math.inf, 0.5]}
    text = stored_json(value)
    assert json.loads(text)["scores"][:2] == [
        {"$numberDouble": "NaN"},
        {"$numberDouble": "-Infinity"},
    ]
    back = loaded_json(text)
    assert back["huge"] == 2**70 and math.isnan(back["scores"][0])
    assert back["scores"][1:] == [-math.inf, 0.5]
    assert stored_json({"plain": [1, "null", "NaN"]}) == '{"plain":[1,"null","NaN"]}'


def test_non_finite_numbers_and_missing_values_inside_data_are_kept(store_url):
    inf, nan = math.inf, math.nan
    meta = {"none": None, "nan": nan, "inf": inf, "minus": [-inf, 1.5], "one": 1}
    data = [{"input": "q", "output": "four", "meta": meta, "big": inf, "small": -inf}]
    result = run_evals(data, scorers=[_length()], store=store_url, progress=False)
    live = _row("live", score=inf, metadata={"nan": nan, "inf": inf, "literal": "Infinity"})
    with SqlScoreStore(store_url) as store:
        store.save([live])
        rows = store.scores().set_index("id")
        back = store.result(result.experiment_id)
    stored = rows.loc[f"{result.experiment_id}:0:length", "metadata"]["data"]
    assert _same(stored, {"meta": meta, "big": inf, "small": -inf})
    assert _same(back.items.at[0, "meta"], meta) and back.items.at[0, "big"] == inf
    assert rows.loc["live", "score"] == inf
    assert _same(rows.loc["live", "metadata"], {"nan": nan, "inf": inf, "literal": "Infinity"})
    with SqlScoreStore(store_url) as store, store._engine.connect() as connection:
        table = schema.scores
        text = connection.scalar(
            sa.select(sa.cast(table.c.metadata, sa.Text)).where(table.c.id == "live")
        )
    # as MongoDB's Extended JSON writes them: JSON has no NaN or infinity
    assert json.loads(text)["inf"] == {"$numberDouble": "Infinity"}
