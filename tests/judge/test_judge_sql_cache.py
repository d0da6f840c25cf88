"""The judge's reply cache in a database by URL (``cache="postgresql://..."``): on a real
PostgreSQL server (``postgres_url``, a database of its own per test; skipped without one), judged
by the loopback judge server."""

import json
import re
import sqlite3
import subprocess
import sys
import textwrap

import psycopg
import pytest
import sqlalchemy as sa
from score_stores import postgres_server

from evaldag import EvalDagError, Judge, PromptStep, create_scorer, run_evals
from evaldag._judge.cache import FILE_NAME, JudgeCache
from evaldag._judge.sql_cache import TABLE

PASSWORD = "hunter2-s3cret"
ITEMS = [{"input": f"q{n}", "output": f"answer {n}"} for n in range(6)]


def _graded(judge):
    return create_scorer("graded", judge=judge).generate_score(
        PromptStep("score", lambda run: f"Score {run.output}")
    )


def _with_password(url: str) -> str:
    """``url`` with a password in it (the test server trusts its user, so it connects)."""
    return sa.make_url(url).set(password=PASSWORD).render_as_string(hide_password=False)


def _stored_keys(url: str) -> set[str]:
    with psycopg.connect(url) as connection:
        return {key for (key,) in connection.execute(f"SELECT key FROM {TABLE}")}


def test_a_second_run_asks_the_judge_nothing(judge_server, postgres_url, tmp_path):
    judge_server.on("Score", {"score": 0.5})
    scorer = _graded(judge_server.judge(instructions="Grade it."))
    first = run_evals(ITEMS, scorers=[scorer], cache=postgres_url, progress=False)
    assert len(judge_server.requests) == 6
    again = run_evals(ITEMS, scorers=[scorer], cache=postgres_url, progress=False)
    assert len(judge_server.requests) == 6  # every reply from the database
    assert again.scores == first.scores == {"graded": 0.5}
    assert all('"cacheHit":true' in record for record in again.items["graded.judge"])
    assert again.summary.judge_cache_problems == []

    # Keyed as a cache file keys them: a directory's cache gets the same keys.
    run_evals(ITEMS, scorers=[scorer], cache=tmp_path, progress=False)
    with sqlite3.connect(tmp_path / FILE_NAME) as connection:
        in_file = {key for (key,) in connection.execute("SELECT key FROM replies")}
    assert in_file == _stored_keys(postgres_url) and len(in_file) == 6


def test_a_judge_of_its_own_and_a_sqlite_url(judge_server, postgres_url, tmp_path):
    judge_server.on("Score", {"score": 1})
    scorer = _graded(judge_server.judge(instructions="Grade it.", cache=postgres_url))
    run_evals(ITEMS[:2], scorers=[scorer], progress=False)
    run_evals(ITEMS[:2], scorers=[scorer], cache=False, progress=False)  # the judge's own
    assert len(judge_server.requests) == 2

    url = f"sqlite:///{tmp_path / 'replies.sqlite3'}"
    scorer = _graded(judge_server.judge(instructions="Grade it."))
    run_evals(ITEMS[:2], scorers=[scorer], cache=url, progress=False)
    run_evals(ITEMS[:2], scorers=[scorer], cache=url, progress=False)
    assert len(judge_server.requests) == 4
    assert len(JudgeCache(url)) == 2


_WRITER = """
import sys
from evaldag._judge.cache import JudgeCache

cache = JudgeCache(sys.argv[1])
keys = [f"key-{n:03d}" for n in range(200)]
if sys.argv[2] == "backwards":
    keys.reverse()
for start in range(0, 200, 20):  # batches that overlap the other writer's, in another order
    cache.put((key, {"content": sys.argv[2], "usage": {}}) for key in keys[start : start + 40])
print(cache.problem)
"""


def test_two_processes_writing_the_same_keys_never_fail(postgres_url):
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(_WRITER), postgres_url, order],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for order in ("forwards", "backwards")
    ]
    outcomes = [writer.communicate(timeout=120) for writer in writers]
    assert [writer.returncode for writer in writers] == [0, 0], outcomes
    assert [out.strip() for out, _ in outcomes] == ["None", "None"]  # no write failed
    cache = JudgeCache(postgres_url)
    assert len(cache) == 200
    assert cache.get("key-007")["content"] in ("forwards", "backwards")


def test_a_database_dropped_mid_run_loses_no_score_and_is_said_once(
    judge_server, postgres_url, caplog
):
    url = _with_password(postgres_url)
    judge_server.on("Score", {"score": 0.5})
    scorer = _graded(judge_server.judge(instructions="Grade it."))
    run_evals(ITEMS[:1], scorers=[scorer], cache=url, progress=False)  # the cache works
    server = sa.make_url(postgres_url)
    admin = server.set(database="postgres").render_as_string(hide_password=False)

    def dropped(item, target_result, scorer_results):
        if item["input"] == "q2":
            with psycopg.connect(admin, autocommit=True) as connection:
                connection.execute(f'DROP DATABASE "{server.database}" WITH (FORCE)')

    caplog.set_level("WARNING", logger="evaldag._judge.cache")
    result = run_evals(
        ITEMS,
        scorers=[scorer],
        cache=url,
        concurrency=1,
        batch_size=1,
        on_item_complete=dropped,
        progress=False,
    )
    assert result.items["graded.error"].isna().all()  # every item judged and scored
    assert result.scores == {"graded": 0.5} and len(judge_server.requests) == 1 + 5
    (problem,) = result.summary.judge_cache_problems
    shown = url.replace(f"postgres:{PASSWORD}", "**********")
    # the database's own words: the connection it closed, or the database that is gone; the
    # next batch runs beside the callback, so its read may come before the drop, its write after
    assert re.search(rf"the judge cache {re.escape(shown)} could not (read|write)", problem)
    warned = [r for r in caplog.records if "could not" in r.getMessage()]
    assert len(warned) == 1
    assert PASSWORD not in caplog.text + json.dumps(result.to_dict(), default=str)


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("mysql://evals:{password}@127.0.0.1/evals", "is a 'mysql' database"),
        ("not a url://", "is not a database URL nor a directory"),
        ("sqlite://", "names no file"),
        ("postgresql+psycopg2://evals:{password}@127.0.0.1/evals", "pip install"),
        ("postgresql://evals:{password}@127.0.0.1:9/evals", "Connection refused"),
        ("{server}/no_such_database", 'database "no_such_database" does not exist'),
    ],
)
def test_a_cache_url_that_cannot_work_is_an_error_before_any_call(judge_server, caplog, url, words):
    server = _with_password(postgres_server()) if "{server}" in url else ""
    url = url.format(server=server.rsplit("/", 1)[0], password=PASSWORD)
    scorer = _graded(judge_server.judge(instructions="Grade it."))
    with pytest.raises(EvalDagError) as raised:
        run_evals(ITEMS, scorers=[scorer], cache=url, progress=False)
    error = raised.value
    assert error.id.startswith("EVALDAG_JUDGE_CACHE_") and words in error.message
    assert "cache=" in error.message and "cache=False" in error.message
    assert judge_server.requests == []
    assert PASSWORD not in str(error) + repr(error.details) + caplog.text


def test_a_judge_shows_its_cache_url_without_the_password():
    judge = Judge("openai/gpt-4o-mini", cache=f"postgresql://evals:{PASSWORD}@db/evals")
    assert PASSWORD not in repr(judge) + json.dumps(judge.model_dump(mode="json"))


def test_a_table_evaldag_did_not_make_is_refused(judge_server, postgres_url):
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        connection.execute(f"CREATE TABLE {TABLE} (key TEXT, answer TEXT)")
    scorer = _graded(judge_server.judge(instructions="Grade it."))
    with pytest.raises(EvalDagError, match="did not make") as raised:
        run_evals(ITEMS, scorers=[scorer], cache=postgres_url, progress=False)
    assert raised.value.id == "EVALDAG_JUDGE_CACHE_FOREIGN" and judge_server.requests == []
