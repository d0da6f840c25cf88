"""The opt-in on-disk judge cache: hits replay replies, cost nothing and never hold credentials."""

import json

import pytest
from judge_server import (
    API_KEY,
    judge_server_on_each_transport,  # noqa: F401 (tests run on both)
)
from pydantic import BaseModel

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
