"""The opt-in on-disk judge cache: hits replay replies, cost nothing and never hold credentials."""

import json

import pytest
from judge_server import (
    API_KEY,
    Reply,
    judge_server_on_each_transport,  # noqa: F401 (tests run on both)
)
from pydantic import BaseModel
from small_disks import filled

from evaldag import Judge, PromptStep, ScorerRunError, create_scorer
from evaldag._judge.cache import FILE_NAME, JudgeCache, request_key

INSTRUCTIONS = "Grade the answer."


class Label(BaseModel):
    label: str


def _scorer(judge):
    return (
        create_scorer("cached", judge=judge)
        .analyze(PromptStep("label", lambda run: f"Label {run.output}", output_schema=Label))
        .generate_score(PromptStep("score", lambda run: f"Score {run.output}"))
        .generate_reason(PromptStep("reason", lambda run: f"Explain {run.output}"))
    )


def _script(server):
    server.on("Label", "no JSON here", {"label": "ok"})  # a fallback, replayed as such
    server.on("Score", {"score": 0.5})
    server.on("Explain", "Fine.")


def test_second_run_is_served_from_the_cache(judge_server, tmp_path):
    _script(judge_server)
    scorer = _scorer(
        judge_server.judge("openai/gpt-4o-mini", instructions=INSTRUCTIONS, cache=tmp_path)
    )

    first = scorer.run(output="x")
    assert len(judge_server.requests) == 4
    second = scorer.run(output="x")
    assert len(judge_server.requests) == 4  # no new call

    assert (second.score, second.reason, second.analyze_step_result) == (
        first.score,
        first.reason,
        first.analyze_step_result,
    )
    for stage, record in second.judge.items():
        (miss,) = first.judge[stage].executions
        (hit,) = record.executions
        assert (miss.cache_hit, hit.cache_hit) == (False, True)
        assert hit.output == miss.output
        assert hit.attempt_count == miss.attempt_count  # the replayed fallback still counts
        assert hit.model_call_count == 0
        assert hit.usage.model_dump(exclude_none=True) == {}
        assert hit.cost.model_dump() == {
            "total_usd": 0.0,
            "input_usd": 0.0,
            "output_usd": 0.0,
            "source": "cache",
        }
        assert miss.cost.total_usd > 0
    assert second.judge["analyze"].executions[0].attempt_count == 2
    assert second.to_dict()["judge"]["analyze"]["executions"][0]["cacheHit"] is True


def test_cache_dir_from_the_environment(judge_server, tmp_path, monkeypatch):
    monkeypatch.setenv("EVALDAG_CACHE_DIR", str(tmp_path))
    _script(judge_server)
    scorer = _scorer(judge_server.judge(instructions=INSTRUCTIONS))
    scorer.run(output="x")
    scorer.run(output="x")
    assert len(judge_server.requests) == 4
    assert (tmp_path / FILE_NAME).is_file()

    uncached = _scorer(judge_server.judge(instructions=INSTRUCTIONS, cache=False))
    result = uncached.run(output="x")
    assert len(judge_server.requests) == 4 + 3  # the label rule now answers JSON at once
    assert result.judge["generate_score"].executions[0].cache_hit is None


def test_no_cache_unless_asked(judge_server, monkeypatch):
    monkeypatch.delenv("EVALDAG_CACHE_DIR", raising=False)
    _script(judge_server)
    scorer = _scorer(judge_server.judge(instructions=INSTRUCTIONS))
    scorer.run(output="x")
    scorer.run(output="x")
    assert len(judge_server.requests) == 4 + 3


def test_what_the_key_covers(judge_server, tmp_path):
    _script(judge_server)
    base = judge_server.judge(instructions=INSTRUCTIONS, cache=tmp_path)
    _scorer(base).run(output="x")
    calls = len(judge_server.requests)

    # another key, timeout or retry budget asks the same question: a hit
    same = Judge(
        "openai/mock-judge",
        api_base=judge_server.url,
        api_key="sk-another-key",
        instructions=INSTRUCTIONS,
        timeout=5,
        max_retries=0,
        cache=tmp_path,
    )
    _scorer(same).run(output="x")
    assert len(judge_server.requests) == calls

    # other instructions, sampling settings, prompts or models are other questions
    for changed in (
        base.overridden_by(Judge(instructions="Be lenient.")),
        base.overridden_by(Judge(temperature=0.7)),
        base.overridden_by(Judge(seed=3)),
        base.overridden_by(Judge("openai/other-model")),
    ):
        before = len(judge_server.requests)
        _scorer(changed).run(output="x")
        assert len(judge_server.requests) > before, changed
    before = len(judge_server.requests)
    _scorer(base).run(output="y")
    assert len(judge_server.requests) > before


def test_failed_executions_are_not_cached(judge_server, tmp_path):
    judge_server.script("bad", "still bad")
    scorer = create_scorer(
        "flaky", judge=judge_server.judge(instructions=INSTRUCTIONS, cache=tmp_path)
    ).generate_score(PromptStep("score", lambda: "Score it"))
    with pytest.raises(ScorerRunError):
        scorer.run(output="x")
    judge_server.reply = {"score": 1}
    assert scorer.run(output="x").score == 1
    assert len(judge_server.requests) == 3  # asked again, not replayed
    assert scorer.run(output="x").judge["generate_score"].executions[0].cache_hit is True
    assert len(judge_server.requests) == 3


@pytest.mark.parametrize(
    "reply",
    [Reply("It is fine bec", finish_reason="length"), Reply("", finish_reason="content_filter")],
)
def test_a_reason_cut_short_or_refused_is_kept_but_not_cached(judge_server, tmp_path, reply):
    # Before: the text was cached as any reply, and every later run replayed the cut or
    # filtered reason instead of asking again.
    judge_server.on("Score", {"score": 0.5})
    judge_server.on("Explain", reply, "Fine.")
    judge = judge_server.judge(instructions=INSTRUCTIONS, cache=tmp_path)
    scorer = (
        create_scorer("reasoned", judge=judge)
        .generate_score(PromptStep("score", lambda run: f"Score {run.output}"))
        .generate_reason(PromptStep("reason", lambda run: f"Explain {run.output}"))
    )
    first = scorer.run(output="x")
    assert (first.score, first.reason) == (0.5, reply.text)  # nothing computed is lost
    again = scorer.run(output="x")
    assert (again.score, again.reason) == (0.5, "Fine.")
    assert len(judge_server.requests) == 3  # the score from the cache, the reason asked again


def test_api_keys_never_reach_the_cache_file(judge_server, tmp_path):
    _script(judge_server)
    secret_headers = {"Authorization": "Bearer sk-header-secret"}
    scorer = _scorer(
        judge_server.judge(instructions=INSTRUCTIONS, cache=tmp_path, extra_headers=secret_headers)
    )
    result = scorer.run(output="x")
    scorer.run(output="x")
    stored = b"".join(path.read_bytes() for path in tmp_path.iterdir())
    assert len(JudgeCache(tmp_path)) == 4  # two label attempts, the score and the reason
    assert API_KEY.encode() not in stored
    assert b"sk-header-secret" not in stored
    assert API_KEY not in json.dumps(result.to_dict())
    assert "sk-header-secret" not in json.dumps(result.to_dict())


def test_request_key_ignores_credentials_only():
    request = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "temperature": 0}
    key = request_key(request)
    assert key == request_key({**request, "api_key": "a", "aws_secret_access_key": "b"})
    assert key == request_key({**request, "timeout": 3})
    # a routing header makes another request (issue 15): hashed into the key, never stored
    routed = request_key({**request, "extra_headers": {"x-route": "eu-deployment"}})
    assert routed != key
    assert routed == request_key({**request, "extra_headers": {"x-route": "eu-deployment"}})
    assert routed != request_key({**request, "extra_headers": {"x-route": "us-deployment"}})
    assert key != request_key({**request, "max_tokens": 10})
    assert key != request_key({**request, "temperature": 1})
    assert key != request_key({**request, "api_base": "http://elsewhere/v1"})


@pytest.mark.parametrize("bad", ["not json {", '["a", "list"]', '{"content": 3}'])
def test_a_row_that_is_not_a_reply_is_dropped_counted_and_asked_again(judge_server, tmp_path, bad):
    import sqlite3

    from evaldag import run_evals

    judge_server.on("Score", {"score": 0.5})
    judge = judge_server.judge(instructions=INSTRUCTIONS, cache=tmp_path)
    scorer = create_scorer("cached", judge=judge).generate_score(
        PromptStep("score", lambda run: f"Score {run.output}")
    )
    scorer.run(output="x")
    with sqlite3.connect(tmp_path / FILE_NAME) as connection:
        connection.execute("UPDATE replies SET reply = ?", (bad,))
    result = run_evals([{"input": "q", "output": "x"}], scorers=[scorer])
    assert result.scores == {"cached": 0.5}  # the call was made again
    assert len(judge_server.requests) == 2
    assert result.summary.judge_cache_rows_dropped == 1
    again = run_evals([{"input": "q", "output": "x"}], scorers=[scorer])
    assert len(judge_server.requests) == 2 and again.summary.judge_cache_rows_dropped == 0


# --- a cache that is not one, or cannot grow: nothing the judge answered is lost ---------------


def _score_scorer(judge):
    return create_scorer("cached", judge=judge).generate_score(
        PromptStep("score", lambda run: f"Score {run.output}")
    )


@pytest.mark.parametrize("foreign", ["a table", "not a database"])
def test_a_cache_file_that_is_not_a_cache_is_refused_before_the_run(
    judge_server, tmp_path, caplog, foreign
):
    import sqlite3

    from evaldag import EvalDagError, run_evals

    if foreign == "a table":  # a table of the cache's name that evaldag did not make
        with sqlite3.connect(tmp_path / FILE_NAME) as connection:
            connection.execute("CREATE TABLE replies (id INTEGER, body BLOB)")
    else:
        (tmp_path / FILE_NAME).write_text("notes, not a database\n" * 200)
    judge_server.on("Score", {"score": 0.5})
    scorer = _score_scorer(judge_server.judge(instructions=INSTRUCTIONS, cache=tmp_path))
    with pytest.raises(EvalDagError) as raised:
        run_evals([{"input": "q", "output": "x"}], scorers=[scorer], progress=False)
    assert raised.value.id == "EVALDAG_JUDGE_CACHE_FOREIGN"
    assert str(tmp_path / FILE_NAME) in raised.value.message
    assert "has a table 'replies' evaldag did not make" in raised.value.message or (
        "is not a SQLite database" in raised.value.message
    )
    assert "pass cache=False" in raised.value.message
    assert judge_server.requests == []  # refused before any judge call
    # nothing opened it before the call (scorer.run): the call goes on without it, said once
    caplog.set_level("WARNING", logger="evaldag._judge.cache")
    assert scorer.run(output="x").score == 0.5
    assert scorer.run(output="y").score == 0.5
    assert [r.getMessage().count("not a SQLite database") + r.getMessage().count("did not make")
            for r in caplog.records] == [1]  # fmt: skip


def test_a_score_off_the_scale_is_never_cached_and_is_asked_again(judge_server, tmp_path):
    # Before: the execution succeeded, so the reply was cached and then refused as the item's
    # score: every later run replayed the refusal from the cache and never asked again.
    import sqlite3

    judge_server.on("Score", {"score": 7}, {"score": 7}, {"score": 0.5})
    scorer = _score_scorer(judge_server.judge(instructions=INSTRUCTIONS, cache=tmp_path))
    with pytest.raises(ScorerRunError) as raised:
        scorer.run(output="x")
    assert "the judge's generate_score reply gave 7.0" in raised.value.message
    with sqlite3.connect(tmp_path / FILE_NAME) as connection:
        assert connection.execute("SELECT count(*) FROM replies").fetchone() == (0,)

    assert scorer.run(output="x").score == 0.5
    assert len(judge_server.requests) == 3

    # a reply off the scale found in the cache (an older evaldag wrote them) is checked too
    with sqlite3.connect(tmp_path / FILE_NAME) as connection:
        (stored,) = connection.execute("SELECT reply FROM replies").fetchone()
        reply = {**json.loads(stored), "content": '{"score": 7}'}
        connection.execute("UPDATE replies SET reply = ?", (json.dumps(reply),))
    judge_server.reset()
    judge_server.on("Score", {"score": 0.25})
    assert scorer.run(output="x").score == 0.25
    assert len(judge_server.requests) == 1  # the fallback attempt, asked of the judge


def test_a_cache_that_cannot_grow_loses_no_reply_and_says_so_once(judge_server, full_disk, caplog):
    import os

    from evaldag import run_evals

    judge_server.on("Score", {"score": 0.5})
    scorer = _score_scorer(judge_server.judge(instructions=INSTRUCTIONS, cache=full_disk))
    first = run_evals([{"input": "q", "output": "warm"}], scorers=[scorer], progress=False)
    assert first.summary.judge_cache_problems == []  # the cache works
    try:
        filled(full_disk)
        assert os.statvfs(full_disk).f_bavail == 0
        caplog.set_level("WARNING", logger="evaldag._judge.cache")
        items = [{"input": "q", "output": f"answer {n}"} for n in range(6)]
        result = run_evals(items, scorers=[scorer], progress=False, concurrency=2)
    finally:
        (full_disk / "filler").unlink()
    assert result.items["cached.error"].isna().all()  # every paid reply is a score
    assert result.scores == {"cached": 0.5} and len(judge_server.requests) == 1 + 6
    (problem,) = result.summary.judge_cache_problems
    assert str(full_disk) in problem and "could not write" in problem
    assert "full" in problem and "went on without it" in problem
    warned = [r for r in caplog.records if "could not write" in r.getMessage()]
    assert len(warned) == 1
    from evaldag._cli.summary import summary_table

    assert f"note: {problem}" in summary_table(result, "cached")
    again = run_evals(items[:1], scorers=[scorer], progress=False)  # room again: cached anew
    assert again.summary.judge_cache_problems == []
    assert len(judge_server.requests) == 1 + 6 + 1
    run_evals(items[:1], scorers=[scorer], progress=False)
    assert len(judge_server.requests) == 1 + 6 + 1  # served from the cache


# --- two row batches at once in one process (a cluster's worker): each keeps its own figures ---


def test_two_batches_at_once_in_one_process_keep_their_cache_figures_apart(judge_server, tmp_path):
    """A worker running two row batches at once reports, with each, what the caches dropped
    in that batch's calls: a row dropped by one batch while the other runs is counted once."""
    import sqlite3
    import threading

    from judge_server import Reply

    from evaldag._judge.cache import cache_notes, dropped_rows

    judge_server.on("Score slow", Reply({"score": 0.5}, latency=0.5))
    judge_server.on("Score", {"score": 0.5})
    scorer = _score_scorer(judge_server.judge(instructions=INSTRUCTIONS, cache=tmp_path))
    scorer.run(output="x")
    with sqlite3.connect(tmp_path / FILE_NAME) as connection:
        connection.execute("UPDATE replies SET reply = 'not json {'")
    before = dropped_rows()
    notes = {}

    def batch(name, output):
        with cache_notes() as notes[name]:
            assert scorer.run(output=output).score == 0.5

    slow = threading.Thread(target=batch, args=("slow", "slow"))
    slow.start()
    while len(judge_server.requests) < 2:  # the slow batch's call is in flight
        threading.Event().wait(0.01)
    batch("dropping", "x")  # starts and ends while the slow batch runs
    assert slow.is_alive()
    slow.join()
    assert (notes["dropping"].dropped, notes["slow"].dropped) == (1, 0)
    assert notes["dropping"].problems == notes["slow"].problems == []
    assert dropped_rows() - before == 1  # the process's figure, which a local run reads


def test_a_cache_that_stops_is_noted_by_the_batch_whose_call_found_it(judge_server, full_disk):
    import os
    import threading

    from judge_server import Reply
    from small_disks import filled

    from evaldag._judge.cache import cache_notes

    judge_server.on("Score slow", Reply({"score": 0.5}, latency=0.5))
    judge_server.on("Score", {"score": 0.5})
    scorer = _score_scorer(judge_server.judge(instructions=INSTRUCTIONS, cache=full_disk))
    scorer.run(output="warm")  # the cache opens and works
    notes = {}

    def batch(name, output):
        with cache_notes() as notes[name]:
            assert scorer.run(output=output).score == 0.5

    slow = threading.Thread(target=batch, args=("slow", "slow"))
    try:
        filled(full_disk)
        assert os.statvfs(full_disk).f_bavail == 0
        slow.start()
        while len(judge_server.requests) < 2:
            threading.Event().wait(0.01)
        batch("writing", "new")  # its reply cannot be stored: the cache stops
        slow.join()
    finally:
        (full_disk / "filler").unlink()
    (problem,) = notes["writing"].problems
    assert "could not write" in problem and str(full_disk) in problem
    assert notes["slow"].problems == []  # stopped by the other batch's call, said there once
