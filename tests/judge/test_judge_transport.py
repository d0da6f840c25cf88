"""Transport faults are not format faults: retries, refusals, timeouts and the shared limiter.

Every test runs on both transports (``http`` and ``litellm``) against the scripted server in
``judge_server.py``.
"""

import asyncio
import json
import logging
import pickle
import threading

import pandas as pd
import pytest
from judge_server import (
    API_KEY,
    Reply,
    hanging,
    judge_server_on_each_transport,  # noqa: F401 (every test here runs on both transports)
    malformed_body,
    rate_limited,
    refused,
    server_error,
)

from evaldag import PromptStep, ScorerRun, ScorerRunError, create_scorer, run_evals
from evaldag._graph.drivers import scorer_outcomes, scorers_driver
from evaldag._judge.limiter import SharedLimit
from evaldag._judge.transport import BACKOFF_BASE_SECONDS

INSTRUCTIONS = "Grade the answer."


def _scorer(judge, scorer_id="transport"):
    return create_scorer(scorer_id, judge=judge).generate_score(
        PromptStep("score", lambda run: f"Score {run.output}")
    )


def _waits(server, caplog) -> list[tuple[float, float]]:
    """(planned delay, measured gap between the requests) per retry.

    The plan comes from the retry log record; the gap must be at least the plan. Only the lower
    bound is timed: on a loaded machine a wait can only get longer.
    """
    planned = [r.judge_retry_delay for r in caplog.records if hasattr(r, "judge_retry_delay")]
    times = [r.time for r in server.requests]
    return list(zip(planned, [b - a for a, b in zip(times, times[1:], strict=False)], strict=True))


@pytest.mark.slow
def test_429_is_retried_after_retry_after_seconds(judge_server, caplog):
    judge_server.script(rate_limited(retry_after=1), {"score": 0.5})
    with caplog.at_level(logging.INFO, logger="evaldag._judge.transport"):
        result = _scorer(judge_server.judge(instructions=INSTRUCTIONS)).run(output="x")
    assert result.score == 0.5
    ((planned, gap),) = _waits(judge_server, caplog)
    assert 1.0 <= planned <= 1.1  # Retry-After, plus at most 10 % jitter
    assert gap >= planned
    execution = result.judge["generate_score"].executions[0]
    # the 429 completed no model call; the attempt is still one
    assert (execution.attempt_count, execution.model_call_count) == (1, 1)


def test_retry_after_ms_header_is_honoured(judge_server, caplog):
    judge_server.script(rate_limited(retry_after=700, in_ms=True), {"score": 0.5})
    with caplog.at_level(logging.INFO, logger="evaldag._judge.transport"):
        assert _scorer(judge_server.judge(instructions=INSTRUCTIONS)).run(output="x").score == 0.5
    ((planned, gap),) = _waits(judge_server, caplog)
    assert 0.7 <= planned <= 0.77
    assert gap >= planned


@pytest.mark.slow
def test_5xx_and_broken_bodies_are_retried_with_exponential_backoff(judge_server, caplog):
    judge_server.script(server_error(500), server_error(503), malformed_body(), {"score": 1})
    with caplog.at_level(logging.INFO, logger="evaldag._judge.transport"):
        result = _scorer(judge_server.judge(instructions=INSTRUCTIONS)).run(output="x")
    assert result.score == 1
    waits = _waits(judge_server, caplog)
    assert len(waits) == 3
    for retry, (planned, gap) in enumerate(waits):
        ceiling = BACKOFF_BASE_SECONDS * 2**retry
        assert ceiling / 2 <= planned <= ceiling, (retry, planned)
        assert gap >= planned


def test_retries_stop_at_max_retries_and_paced_429s_at_three_times_that(judge_server):
    judge_server.reply = server_error(503)
    judge = judge_server.judge(instructions=INSTRUCTIONS, max_retries=1)
    with pytest.raises(ScorerRunError):
        _scorer(judge).run(output="x")
    assert len(judge_server.requests) == 2

    judge_server.reset()
    judge_server.reply = rate_limited(retry_after=0)  # the server says when to come back
    scorer = _scorer(judge_server.judge(instructions=INSTRUCTIONS, max_retries=2))
    with pytest.raises(ScorerRunError) as raised:
        scorer.run(output="x")
    assert len(judge_server.requests) == 7
    cause = raised.value.cause
    assert cause.id == "EVALDAG_JUDGE_UNAVAILABLE"
    assert "failed 7 time(s) (429 RateLimitError" in cause.message
    execution = cause.execution
    assert (execution.status, execution.attempt_count, execution.model_call_count) == (
        "failed",
        1,
        0,
    )
    assert execution.error.name == "RateLimitError"
    assert execution.error.code == "EVALDAG_JUDGE_UNAVAILABLE"
    assert execution.usage is None and execution.raw_output is None
    assert raised.value.result.judge["generate_score"].executions == [execution]


@pytest.mark.parametrize(
    ("status", "name", "hint"),
    [
        (401, "AuthenticationError", "check the judge's api_key"),
        (403, "PermissionDeniedError", "not allowed to use this model"),
        (400, "BadRequestError", "rejected the request"),
        (404, "NotFoundError", "check the model name and api_base"),
    ],
)
def test_refusals_are_not_retried_and_name_model_and_url(judge_server, status, name, hint):
    if (status, judge_server.transport) == (403, "litellm"):
        name = "APIError"  # litellm's name for a 403 from an OpenAI-compatible server
    judge_server.reply = refused(status)
    scorer = _scorer(judge_server.judge(instructions=INSTRUCTIONS))
    with pytest.raises(ScorerRunError) as raised:
        scorer.run(output="x")
    assert len(judge_server.requests) == 1
    cause = raised.value.cause
    assert cause.id == "EVALDAG_JUDGE_REFUSED"
    assert f"judge model 'openai/mock-judge' at {judge_server.url} refused" in cause.message
    assert f"({status} {name})" in cause.message
    assert hint in cause.message
    assert cause.execution.error.name == name
    assert API_KEY not in cause.message
    assert API_KEY not in json.dumps(raised.value.to_dict())
    assert API_KEY not in json.dumps(raised.value.result.to_dict())


@pytest.mark.slow
def test_timeout_is_retried_then_fails(judge_server):
    judge_server.reply = hanging(60)
    scorer = _scorer(judge_server.judge(instructions=INSTRUCTIONS, timeout=1, max_retries=1))
    with pytest.raises(ScorerRunError) as raised:
        scorer.run(output="x")
    assert len(judge_server.requests) == 2
    cause = raised.value.cause
    assert cause.id == "EVALDAG_JUDGE_UNAVAILABLE"
    assert cause.execution.error.name == "Timeout"
    assert "timeout 1 s" in cause.message
    assert 1000 <= cause.execution.duration_ms < 30_000  # never waited for the 60 s reply


def test_timeout_then_success(judge_server):
    # 1 s: a busy machine can hold the answered retry longer than a shorter timeout
    judge_server.script(hanging(60), Reply({"score": 0.5}))
    scorer = _scorer(judge_server.judge(instructions=INSTRUCTIONS, timeout=1))
    assert scorer.run(output="x").score == 0.5
    assert len(judge_server.requests) == 2


def test_connection_refused_is_retried_and_reported(judge_server):
    url = judge_server.url
    judge_server.stop()  # nothing listens on the port any more
    scorer = _scorer(
        {"model": "openai/mock-judge", "api_base": url, "api_key": API_KEY,
         "instructions": INSTRUCTIONS, "max_retries": 1, "transport": judge_server.transport}
    )  # fmt: skip
    with pytest.raises(ScorerRunError) as raised:
        scorer.run(output="x")
    assert raised.value.cause.id == "EVALDAG_JUDGE_UNAVAILABLE"
    assert "failed 2 time(s)" in raised.value.cause.message


def test_retries_are_logged_without_the_api_key(judge_server, caplog):
    judge_server.script(rate_limited(retry_after=0), {"score": 1})
    with caplog.at_level(logging.DEBUG):
        _scorer(judge_server.judge(instructions=INSTRUCTIONS)).run(output="x")
    retries = [r for r in caplog.records if r.name == "evaldag._judge.transport"]
    assert len(retries) == 1
    assert "RateLimitError" in retries[0].getMessage()
    assert all(API_KEY not in record.getMessage() for record in caplog.records)


def test_usage_and_cost_in_the_record(judge_server):
    usage = {
        "prompt_tokens": 1000,
        "completion_tokens": 500,
        "total_tokens": 1500,
        "prompt_tokens_details": {"cached_tokens": 200},
        "completion_tokens_details": {"reasoning_tokens": 100},
    }
    judge_server.reply = Reply({"score": 0.5}, usage=usage)
    import litellm

    scorer = _scorer(judge_server.judge("openai/gpt-4o-mini", instructions=INSTRUCTIONS))
    execution = scorer.run(output="x").judge["generate_score"].executions[0]
    assert execution.to_dict()["usage"] == {
        "inputTokens": 1000,
        "outputTokens": 500,
        "totalTokens": 1500,
        "reasoningTokens": 100,
        "cachedInputTokens": 200,
    }
    prices = litellm.get_model_info("gpt-4o-mini", custom_llm_provider="openai")
    input_usd = 800 * prices["input_cost_per_token"] + 200 * prices["cache_read_input_token_cost"]
    output_usd = 500 * prices["output_cost_per_token"]
    cost = execution.cost
    assert cost.source == "litellm-price-table"
    assert cost.input_usd == pytest.approx(input_usd)
    assert cost.output_usd == pytest.approx(output_usd)
    assert cost.total_usd == pytest.approx(input_usd + output_usd)
    assert execution.judge_model_id == "gpt-4o-mini"


def test_cost_sums_over_attempts_and_is_absent_for_unpriced_models(judge_server):
    judge_server.script("not json", {"score": 1})
    scorer = _scorer(judge_server.judge("openai/gpt-4o-mini", instructions=INSTRUCTIONS))
    execution = scorer.run(output="x").judge["generate_score"].executions[0]
    import litellm

    prices = litellm.get_model_info("gpt-4o-mini", custom_llm_provider="openai")
    one_call = 10 * prices["input_cost_per_token"] + 5 * prices["output_cost_per_token"]
    assert execution.cost.total_usd == pytest.approx(2 * one_call)

    judge_server.script({"score": 1})
    unpriced = _scorer(judge_server.judge(instructions=INSTRUCTIONS)).run(output="x")
    assert "cost" not in unpriced.to_dict()["judge"]["generateScore"]["executions"][0]


def test_max_concurrency_bounds_calls_in_flight(judge_server):
    judge_server.reply = Reply({"score": 1}, latency=0.15)
    scorer = _scorer(judge_server.judge(instructions=INSTRUCTIONS, max_concurrency=3))
    runs = [ScorerRun(output=str(i)) for i in range(12)]
    outcomes = scorer_outcomes(scorers_driver([scorer]), scorer, runs, concurrency=12)
    assert [o.score for o in outcomes] == [1] * 12
    assert 1 < judge_server.max_in_flight <= 3  # concurrent, and bounded


def test_the_limit_is_shared_by_scorers_running_in_parallel_threads(judge_server):
    judge_server.reply = Reply({"score": 1}, latency=0.15)
    judge = judge_server.judge(instructions=INSTRUCTIONS, max_concurrency=4)
    scorers = [_scorer(judge, f"parallel-{i}") for i in range(2)]
    runs = [ScorerRun(output=str(i)) for i in range(8)]
    scores: list[pd.Series] = []

    def score(scorer):
        outcomes = scorer_outcomes(scorers_driver([scorer]), scorer, runs, concurrency=8)
        scores.append(pd.Series([o.score for o in outcomes]))

    threads = [threading.Thread(target=score, args=(s,)) for s in scorers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [list(s) for s in scores] == [[1] * 8, [1] * 8]
    assert len(judge_server.requests) == 16
    assert 2 < judge_server.max_in_flight <= 4  # both threads' calls, bounded together


def test_shared_limit_across_event_loops_and_cancellation():
    limit = SharedLimit(2)
    in_flight = peak = 0
    lock = threading.Lock()

    async def work():
        nonlocal in_flight, peak
        async with limit:
            with lock:
                in_flight += 1
                peak = max(peak, in_flight)
            await asyncio.sleep(0.02)
            with lock:
                in_flight -= 1

    async def loop_body():
        waiting = asyncio.ensure_future(work())
        await asyncio.gather(*(work() for _ in range(6)), waiting)
        # a waiter cancelled while queued gives back nothing it did not get
        blocker = [asyncio.ensure_future(work()) for _ in range(3)]
        await asyncio.sleep(0)
        blocker[-1].cancel()
        await asyncio.gather(*blocker, return_exceptions=True)

    threads = [threading.Thread(target=asyncio.run, args=(loop_body(),)) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert peak == 2
    assert limit.held == 0


@pytest.mark.parametrize(
    "reply", [refused(401), rate_limited(retry_after=0), "not JSON", hanging(5)], ids=str
)
def test_failed_runs_survive_pickling(judge_server, reply):
    # Results are pickled (Hamilton's cache, process executors); with tblib installed (dask
    # does) the whole cause chain is too, and litellm's exceptions do not unpickle.
    judge_server.reply = reply
    judge = judge_server.judge(instructions=INSTRUCTIONS, max_retries=0, timeout=0.3)
    with pytest.raises(ScorerRunError) as raised:
        _scorer(judge).run(output="x")
    copy = pickle.loads(pickle.dumps(raised.value))
    assert copy.cause.id == raised.value.cause.id
    assert copy.cause.execution == raised.value.cause.execution
    assert copy.result.to_dict() == raised.value.result.to_dict()
    assert str(copy.cause.cause) == str(raised.value.cause.cause)


def test_unknown_provider_error_survives_pickling():
    scorer = _scorer({"model": "no-such-provider-model", "instructions": INSTRUCTIONS})
    with pytest.raises(ScorerRunError) as raised:
        scorer.run(output="x")
    assert pickle.loads(pickle.dumps(raised.value)).cause.id == "EVALDAG_INVALID_JUDGE"


def _user_agent(server) -> str:
    (request,) = server.requests
    return request.headers.get("User-Agent", "")


@pytest.mark.parametrize(
    ("model", "settings", "transport"),
    [
        ("openai/mock-judge", {}, "http"),
        ("hosted_vllm/mock-judge", {}, "http"),
        ("openai/mock-judge", {"seed": 7, "extra_headers": {"X-Team": "evals"}}, "http"),
        ("openai/mock-judge", {"num_retries": 0}, "litellm"),  # a setting only litellm knows
        ("openai/mock-judge", {"transport": "litellm"}, "litellm"),
    ],
)
def test_auto_picks_http_for_openai_compatible_endpoints(model, settings, transport):
    from judge_server import JudgeServer

    with JudgeServer({"score": 1}) as server:
        judge = server.judge(model, instructions=INSTRUCTIONS, **settings)
        assert _scorer(judge).run(output="x").score == 1
        agent = _user_agent(server)
    # aiohttp's own user agent on http; the OpenAI SDK's under litellm
    assert ("aiohttp" in agent) == (transport == "http"), agent
    assert ("OpenAI" in agent) == (transport == "litellm"), agent


def test_http_needs_an_openai_compatible_model():
    judge = {"model": "anthropic/claude-3-5-haiku-latest", "transport": "http"}
    with pytest.raises(ScorerRunError) as raised:
        _scorer({**judge, "instructions": INSTRUCTIONS}).run(output="x")
    assert raised.value.cause.id == "EVALDAG_INVALID_JUDGE"
    assert "transport='http' calls OpenAI-compatible endpoints" in raised.value.cause.message


def test_extra_headers_and_body_reach_the_server(judge_server):
    judge_server.reply = {"score": 1}
    judge = judge_server.judge(
        instructions=INSTRUCTIONS,
        seed=7,
        extra_headers={"X-Team": "evals"},
        extra_body={"top_k": 5},
    )
    assert _scorer(judge).run(output="x").score == 1
    (request,) = judge_server.requests
    headers = {name.lower(): value for name, value in request.headers.items()}
    assert headers["x-team"] == "evals"
    assert headers["authorization"] == f"Bearer {API_KEY}"
    assert (request.body["seed"], request.body["top_k"], request.model) == (7, 5, "mock-judge")


def test_http_connections_outlive_stages_and_batches(judge_server):
    if judge_server.transport != "http":
        pytest.skip("litellm keeps its own connections")
    judge_server.on("Extract", {"claims": ["a"]})
    judge_server.on("Score", {"score": 1})
    judge_server.on("Explain", "Fine.")
    scorer = (
        create_scorer("pooled", judge=judge_server.judge(instructions=INSTRUCTIONS))
        .preprocess(PromptStep("claims", lambda run: f"Extract {run.output}", {"type": "object"}))
        .generate_score(PromptStep("score", lambda run: f"Score {run.output}"))
        .generate_reason(PromptStep("reason", lambda run: f"Explain {run.output}"))
    )
    data = pd.DataFrame({"input": ["q"] * 12, "output": [str(i) for i in range(12)]})
    result = run_evals(data, scorers=[scorer], concurrency=2, batch_size=4, progress=False)
    assert result.scores == {"pooled": 1.0}
    assert len(judge_server.requests) == 36  # 3 batches x 4 rows x 3 steps
    assert len({request.client for request in judge_server.requests}) <= 2  # 2 in flight at most


def test_the_limit_halves_on_429_once_per_round_and_grows_back_to_its_ceiling():
    limit = SharedLimit(8)

    async def storm_then_calm():
        first, second = await limit.acquire(), await limit.acquire()
        limit.throttled(first)
        limit.throttled(second)  # started before the cut: it does not cut again
        assert limit.size == 4
        limit.release()
        limit.release()
        started = await limit.acquire()
        limit.throttled(started)
        limit.release()
        assert limit.size == 2
        for _ in range(100):
            async with limit:
                limit.succeeded()

    asyncio.run(storm_then_calm())
    sizes = [size for _, size in limit.history]
    assert sizes == [8, 4, 2, 3, 4, 5, 6, 7, 8]  # never above the ceiling
    assert limit.held == 0


def test_the_limit_is_cut_once_per_retry_after():
    limit = SharedLimit(16)

    async def two_rounds_of_429s():
        started = await limit.acquire()
        limit.throttled(started, retry_after=30)
        limit.release()
        started = await limit.acquire()  # a new round, but within the server's Retry-After
        limit.throttled(started, retry_after=30)
        limit.release()

    asyncio.run(two_rounds_of_429s())
    assert limit.size == 8


def test_a_shrunk_limit_holds_back_calls_until_enough_are_done():
    limit = SharedLimit(4)
    granted = []

    async def calls():
        held = [await limit.acquire() for _ in range(4)]
        limit.throttled(held[0])  # now 2, with 4 held
        waiter = asyncio.ensure_future(limit.acquire())
        for _ in range(2):
            limit.release()
            await asyncio.sleep(0)
            granted.append(waiter.done())
        limit.release()  # 1 held: below the limit of 2, the waiter gets its slot
        await waiter
        granted.append(waiter.done())

    asyncio.run(calls())
    assert granted == [False, False, True]


@pytest.mark.slow
def test_a_429_storm_loses_nothing_and_the_run_shows_the_limit_adapt(judge_server):
    judge_server.script(*[rate_limited(retry_after=0)] * 6)
    judge_server.reply = Reply({"score": 1}, latency=0.02)
    scorer = _scorer(judge_server.judge(instructions=INSTRUCTIONS, max_concurrency=8))
    data = pd.DataFrame({"input": ["q"] * 80, "output": [str(i) for i in range(80)]})
    result = run_evals(data, scorers=[scorer], concurrency=8, progress=False)
    assert result.scores == {"transport": 1.0} and result.summary.errors == {}
    (limit,) = result.usage["total"].judge_limits
    assert limit.endpoint == f"openai/mock-judge at {judge_server.url}"
    assert (limit.max_concurrency, limit.final) == (8, 8)
    assert limit.lowest < 8  # cut by the 429s, then grown back
    sizes = [size for _, size in limit.changes]
    assert sizes[0] == 8 and max(sizes) == 8
    assert result.usage["transport"] == result.usage["total"]
    assert judge_server.max_in_flight <= 8

    again = run_evals(data.iloc[:4], scorers=[scorer], concurrency=8, progress=False)
    (calm,) = again.usage["total"].judge_limits  # a new run starts where the last one left off
    assert (calm.lowest, calm.final, calm.changes) == (8, 8, [(0.0, 8)])


def test_a_key_echoed_in_a_successful_reply_is_masked_before_anything_reads_it(judge_server):
    """A proxy may answer 200 with the key in its text: the reply is redacted on arrival, so
    the reason, the result and a reply that is no JSON (its error and record) show a mask."""
    judge_server.on("Score", {"score": 1, "note": f"authorized by {API_KEY}"})
    judge_server.on("Explain", f"Authorized by {API_KEY}.")
    scorer = (
        create_scorer("echoed", judge=judge_server.judge(instructions=INSTRUCTIONS))
        .generate_score(PromptStep("score", lambda run: f"Score {run.output}"))
        .generate_reason(PromptStep("reason", lambda run: f"Explain {run.output}"))
    )
    result = scorer.run(output="x")
    assert result.reason == "Authorized by **********."
    assert API_KEY not in repr(result) + result.model_dump_json()
    judge_server.reset()
    judge_server.reply = f"Incorrect API key provided: {API_KEY}"  # no JSON: the step fails
    with pytest.raises(ScorerRunError) as raised:
        scorer.run(output="x")
    assert "Incorrect API key provided: **********" in raised.value.message
    assert raised.value.cause.execution.raw_output == "Incorrect API key provided: **********"
    assert API_KEY not in json.dumps(raised.value.to_dict(), default=str)
