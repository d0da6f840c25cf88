"""Every judge call has bounds, on both transports: a wall-clock deadline (``Judge(timeout=)``
holds however the server trickles its reply) and a size (``Judge(max_reply_bytes=)``)."""

import time

import pytest
from judge_server import Reply, judge_server_on_each_transport  # noqa: F401 (the fixture)

from evaldag import PromptStep, ScorerRunError, create_scorer
from evaldag._judge import transport


def _scorer(judge):
    return create_scorer("bounded", judge=judge).generate_score(
        PromptStep("score", lambda run: f"Score {run.output}")
    )


def test_a_reply_trickled_a_byte_at_a_time_is_cut_at_the_timeout(judge_server, monkeypatch):
    # evaldag's own bound past the timeout is put a minute away, beyond the trickle's end: only
    # the transport's deadline can stop the call in time, with any load on the machine.
    monkeypatch.setattr(transport, "TIMEOUT_SLACK_SECONDS", 60)
    judge_server.reply = {"score": 1}
    # litellm imported and the server known: only the trickled call counts
    warm = judge_server.judge(instructions="Grade it.", timeout=120, max_retries=0, cache=False)
    assert _scorer(warm).run(output="x").score == 1
    judge = judge_server.judge(instructions="Grade it.", timeout=2, max_retries=0, cache=False)
    scorer = _scorer(judge)
    judge_server.reply = Reply({"score": 1}, drip=0.25)  # ~250 bytes: a minute of trickle
    started = time.monotonic()
    with pytest.raises(ScorerRunError) as raised:
        scorer.run(output="x")
    elapsed = time.monotonic() - started
    cause = raised.value.cause
    assert cause.execution.error.name == "Timeout", cause.message
    assert "no reply within 2 s" in cause.message
    # The deadline is the judge's own: not a read timeout (each byte came within one), nor the
    # evaldag-wide bound (a minute away here, as the whole trickle is).
    assert elapsed < 30, f"a 2 s timeout held the call {elapsed:.1f} s"


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_a_reply_over_max_reply_bytes_fails_the_call_unretried(judge_server, chunked):
    judge = judge_server.judge(
        instructions="Grade it.", max_reply_bytes=4000, max_retries=2, cache=False
    )
    judge_server.reply = Reply({"score": 1, "padding": "x" * 1000}, chunked=chunked)
    assert _scorer(judge).run(output="x").score == 1  # under the limit
    judge_server.reset()
    judge_server.reply = Reply({"score": 1, "padding": "x" * 10_000}, chunked=chunked)
    with pytest.raises(ScorerRunError) as raised:
        _scorer(judge).run(output="x")
    cause = raised.value.cause
    assert cause.execution.error.name == "ReplyTooLarge", cause.message
    assert "larger than the judge's max_reply_bytes (4,000 bytes)" in cause.message
    assert "Judge(max_reply_bytes=...)" in cause.message
    assert len(judge_server.requests) == 1  # a reply that size comes back the same size


def test_the_reply_limit_is_a_few_megabytes_by_default(judge_server):
    judge = judge_server.judge(instructions="Grade it.", max_retries=0, cache=False)
    assert judge.max_reply_bytes == 4 * 1024 * 1024
    judge_server.reply = Reply({"score": 1, "padding": "x" * 3_000_000})
    assert _scorer(judge).run(output="x").score == 1
    judge_server.reply = Reply({"score": 1, "padding": "x" * 5_000_000}, chunked=True)
    with pytest.raises(ScorerRunError) as raised:
        _scorer(judge).run(output="x")
    assert raised.value.cause.execution.error.name == "ReplyTooLarge"
