"""Store kinds: the ``ScoreStore`` protocol, and locations opened by URL scheme or file kind.

A store registered for a scheme is what ``run_evals(store=...)``, ``evaldag.live``,
``read_scores`` and ``evaldag run --store`` open for its URLs; its files, with a header, are
told from results files. The SQL store stays registered for ``sqlite`` and ``postgresql``
(``test_score_store.py`` tests it on both databases).
"""

import itertools
import pickle
import threading

import pandas as pd
import pytest

import evaldag
from evaldag import (
    EvalDagError,
    ScoreRow,
    ScoreStore,
    SqlScoreStore,
    create_scorer,
    read_scores,
    register_store,
    run_evals,
)
from evaldag._cli.main import main as cli
from evaldag._store.locations import is_store
from evaldag._store.stores import url_scheme

DATA = pd.DataFrame({"input": ["q1", "q2", "q3"], "output": ["one", "three", "eleven"]})
_schemes = (f"rows{n}" for n in itertools.count())


class Rows(ScoreStore):
    """Score rows in this process, by location: a store of the fewest methods, kept across
    openings like a database."""

    saved: dict[str, dict[str, ScoreRow]] = {}
    lock = threading.Lock()

    def __init__(self, location):
        self.location = location
        self.rows = self.saved.setdefault(location, {})

    def save(self, rows):
        rows = [ScoreRow.model_validate(row) for row in rows]
        with self.lock:
            self.rows.update((row.id, row) for row in rows)
        return len(rows)

    def scores(self, *, experiment_id=None, scorer_id=None, source=None):
        wanted = {"experiment_id": experiment_id, "scorer_id": scorer_id, "source": source}
        with self.lock:
            rows = [dict(row) for row in self.rows.values()]
        kept = [r for r in rows if all(v is None or r[k] == v for k, v in wanted.items())]
        return pd.DataFrame(kept, columns=list(ScoreRow.model_fields))


def _scheme(**options) -> str:
    scheme = next(_schemes)
    register_store(scheme, Rows, **options)
    return scheme


def _length():
    return create_scorer("length").generate_score(lambda run: min(1.0, len(run.output) / 10))


def test_run_evals_and_read_scores_open_a_registered_store_by_its_url():
    location = f"{_scheme()}://team/evals"
    result = run_evals(DATA, scorers=[_length()], store=location)
    rows = read_scores(location, experiment_id=result.experiment_id)
    assert sorted(rows.score) == [0.3, 0.5, 0.6]
    assert set(rows.source) == {"TEST"} and set(rows.scorer_id) == {"length"}
    # The default save_result keeps the rows, not the run: reading a run back says so.
    with pytest.raises(EvalDagError) as raised:
        evaldag.compare_experiments(result.experiment_id, result.experiment_id, store=location)
    assert raised.value.id == "EVALDAG_STORE_NO_RUNS"
    assert location in raised.value.message


def test_live_scoring_saves_its_rows_in_a_registered_store():
    location = f"{_scheme()}://live"

    @evaldag.live([_length()], store=location)
    def answer(question):
        return question * 2

    assert answer("abc") == "abcabc"
    assert answer.live.flush(10)
    answer.live.close()
    rows = read_scores(location, source="LIVE")
    assert list(rows.score) == [0.6]


def test_evaldag_run_stores_in_a_registered_store(tmp_path, capsys):
    scheme = _scheme()
    eval_file = tmp_path / "eval_rows.py"
    eval_file.write_text(
        "import pandas as pd\n"
        "from evaldag import create_scorer\n"
        "data = pd.DataFrame({'input': ['q'], 'output': ['four']})\n"
        "scorers = [create_scorer('length').generate_score(lambda run: len(run.output) / 10)]\n"
    )
    assert cli(["run", str(eval_file), "--store", f"{scheme}://cli"]) == 0
    assert list(read_scores(f"{scheme}://cli").score) == [0.4]


def test_a_registered_file_kind_is_told_from_a_results_file_and_opened(tmp_path):
    scheme = _scheme(file_header=b"ROWS\n")
    path = tmp_path / "scores.rows"
    path.write_bytes(b"ROWS\n")
    Rows.saved[str(path)] = {}
    run_evals(DATA, scorers=[_length()], store=path)
    assert is_store(path) and is_store(f"{scheme}://x")
    assert len(read_scores(path)) == 3  # opened by the kind its first bytes name
    results = run_evals(DATA, scorers=[_length()]).to_parquet(tmp_path / "results.parquet")
    assert not is_store(results) and len(read_scores(results)) == 3


def test_an_unknown_scheme_is_refused_naming_the_known_ones_without_the_password():
    with pytest.raises(EvalDagError) as raised:
        run_evals(DATA, scorers=[_length()], store="mysql://me:hunter2@db.internal/evals")
    error = raised.value
    assert error.id == "EVALDAG_STORE_UNSUPPORTED_DATABASE"
    assert "hunter2" not in error.message and "db.internal/evals" in error.message
    assert "postgresql or " in error.message and "register_store" in error.message


def test_a_driver_in_the_url_keeps_the_scheme():
    assert url_scheme("postgresql+psycopg://u@h/db") == "postgresql"
    assert url_scheme("SQLite:///x.db") == "sqlite"
    assert url_scheme("scores.db") is None


@pytest.mark.parametrize(
    ("scheme", "factory", "options", "problem"),
    [
        ("Rows", Rows, {}, "lower case"),
        ("pg+x", Rows, {}, "no '+'"),
        ("sqlite", Rows, {}, "one of evaldag's stores"),
        ("postgresql", Rows, {}, "one of evaldag's stores"),
        ("mine", "Rows", {}, "must be callable"),
        ("mine", Rows, {"file_header": b""}, "non-empty bytes"),
        ("mine", Rows, {"file_header": b"SQLite format 3\x00"}, "are 'sqlite' stores"),
    ],
)
def test_a_registration_is_checked(scheme, factory, options, problem):
    with pytest.raises(EvalDagError) as raised:
        register_store(scheme, factory, **options)
    assert raised.value.id == "EVALDAG_INVALID_STORE"
    assert problem in raised.value.message


def test_calling_the_protocol_opens_the_store_at_a_location(tmp_path):
    # evaldag.ScoreStore("scores.db") opened a store before the protocol took the name
    with ScoreStore(tmp_path / "scores.db") as store:
        assert isinstance(store, SqlScoreStore) and isinstance(store, ScoreStore)
    with pytest.raises(EvalDagError, match="opens the store at one location"):
        ScoreStore()

    class Half(ScoreStore):
        def save(self, rows):
            return 0

    with pytest.raises(TypeError, match="scores"):
        Half()


def test_the_sql_store_follows_the_protocol_and_pickles_as_its_url(tmp_path):
    with SqlScoreStore(tmp_path / "scores.db") as store:
        assert isinstance(store, ScoreStore)
        run_evals(DATA, scorers=[_length()], store=store)
        with pickle.loads(pickle.dumps(store)) as reopened:
            assert reopened is not store and reopened.location == store.location
            assert sorted(reopened.scores().score) == [0.3, 0.5, 0.6]


def test_a_store_that_does_not_pickle_is_refused_for_a_scoring_process():
    class Local(Rows):
        def __reduce__(self):
            raise TypeError("an open socket")

    scoring = evaldag.live([_length()], store=Local("local"), worker="process")
    with pytest.raises(EvalDagError) as raised:
        scoring(lambda question: question)
    assert raised.value.id == "EVALDAG_LIVE_STORE_NOT_PICKLABLE"
    assert "an open socket" in raised.value.message
    scoring.close()
