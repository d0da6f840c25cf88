"""Every judge call has bounds, on both transports: a wall-clock deadline (``Judge(timeout=)``
holds however the server trickles its reply) and a size (``Judge(max_reply_bytes=)``)."""

import time

import pytest
from judge_server import Reply, judge_server_on_each_transport  # noqa: F401 (the fixture)

from evaldag import PromptStep, ScorerRunError, create_scorer


def _scorer(judge):
    return create_scorer("bounded", judge=judge).generate_score(
        PromptStep("score", lambda run: f"Score {run.output}")
    )


def test_a_reply_trickled_a_byte_at_a_time_is_cut_at_the_timeout(judge_server):
    judge = judge_server.judge(instructions="Grade it.", timeout=2, max_retries=0, cache=False)
    scorer = _scorer(judge)
    judge_server.reply = {"score": 1}
    assert scorer.run(output="x").score == 1  # the judge's endpoint is known: only calls count
    judge_server.reply = Reply({"score": 1}, drip=0.25)  # ~250 bytes: a minute of trickle
    started = time.monotonic()
    with pytest.raises(ScorerRunError) as raised:
        scorer.run(output="x")
    elapsed = time.monotonic() - started
    cause = raised.value.cause
    assert cause.execution.error.name == "Timeout", cause.message
    assert "no reply within 2 s" in cause.message
    # The deadline is the judge's own: not a read timeout, nor the evaldag-wide bound a second
    # past it (which holds a registered transport that has none).
    assert elapsed < 2.9, f"a 2 s timeout held the call {elapsed:.1f} s"
