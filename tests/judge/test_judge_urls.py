"""Where a judge's requests go, on both transports: an ``api_base`` with a query gets
``/chat/completions`` after its path, the query kept; a redirect to another origin carries no
credential header."""

from urllib.parse import parse_qsl

import pytest
from judge_server import (
    API_KEY,
    JudgeServer,
    Reply,
    judge_server_on_each_transport,  # noqa: F401 (the fixture)
)

from evaldag import Judge, PromptStep, create_scorer

CREDENTIALS = {"X-Api-Key": "xk-gateway-key-123456", "X-Gateway-Auth": "gw-token-1234567"}


def _scorer(judge):
    return create_scorer("routed", judge=judge).generate_score(
        PromptStep("score", lambda run: f"Score {run.output}")
    )


def _judge(server, api_base, **settings):
    return Judge(
        "openai/mock-judge",
        api_base=api_base,
        api_key=API_KEY,
        instructions="Grade it.",
        transport=server.transport,
        cache=False,
        max_retries=0,
        **settings,
    )


def test_an_api_base_with_a_query_keeps_it_after_the_path(judge_server):
    judge_server.reply = {"score": 1}
    judge = _judge(judge_server, f"{judge_server.url}/?api-version=2024-06-01&sig=a%2Bb%2Fc")
    assert _scorer(judge).run(output="x").score == 1
    (request,) = judge_server.requests
    assert request.path == "/v1/chat/completions"
    assert parse_qsl(request.query) == [("api-version", "2024-06-01"), ("sig", "a+b/c")]


def _credentials(request) -> set[str]:
    names = {"authorization", *(name.lower() for name in CREDENTIALS)}
    return {name.lower() for name in request.headers} & names


def test_a_redirect_to_another_origin_carries_no_credential_header(judge_server):
    with JudgeServer({"score": 1}) as elsewhere:
        judge_server.reply = Reply(
            status=307, headers={"Location": f"{elsewhere.url}/chat/completions"}
        )
        judge = _judge(judge_server, judge_server.url, extra_headers=CREDENTIALS)
        assert _scorer(judge).run(output="x").score == 1
        ((asked,), (answered,)) = judge_server.requests, elsewhere.requests
    assert _credentials(asked) == {"authorization", "x-api-key", "x-gateway-auth"}
    assert _credentials(answered) == set()
    assert answered.headers["Content-Type"] == "application/json"
    assert answered.body == asked.body  # a 307 repeats the request


def test_a_redirect_to_another_origin_drops_the_api_key(judge_server):
    with JudgeServer({"score": 1}) as elsewhere:
        judge_server.reply = Reply(
            status=307, headers={"Location": f"{elsewhere.url}/chat/completions"}
        )
        judge = _judge(judge_server, judge_server.url, extra_headers={"Accept-Language": "fr"})
        assert _scorer(judge).run(output="x").score == 1
        ((asked,), (answered,)) = judge_server.requests, elsewhere.requests
    assert _credentials(asked) == {"authorization"}
    assert _credentials(answered) == set()
    assert answered.headers["Accept-Language"] == "fr"  # not a credential: kept


@pytest.mark.parametrize("status", [307, 308])
def test_a_redirect_within_the_origin_keeps_the_credentials(judge_server, status):
    moved = Reply(status=status, headers={"Location": "/chat/completions"})
    judge_server.script(moved, {"score": 1})
    judge = _judge(judge_server, judge_server.url, extra_headers=CREDENTIALS)
    assert _scorer(judge).run(output="x").score == 1
    asked, answered = judge_server.requests
    assert (asked.path, answered.path) == ("/v1/chat/completions", "/chat/completions")
    assert _credentials(answered) == {"authorization", "x-api-key", "x-gateway-auth"}


def test_a_redirect_back_to_the_origin_carries_no_credential_header(judge_server):
    with JudgeServer() as elsewhere:
        elsewhere.reply = Reply(
            status=307, headers={"Location": f"{judge_server.url}/chat/completions"}
        )
        away = Reply(status=307, headers={"Location": f"{elsewhere.url}/chat/completions"})
        judge_server.script(away, {"score": 1})
        judge = _judge(judge_server, judge_server.url, extra_headers=CREDENTIALS)
        assert _scorer(judge).run(output="x").score == 1
    asked, answered = judge_server.requests
    assert _credentials(asked) == {"authorization", "x-api-key", "x-gateway-auth"}
    assert _credentials(answered) == set()  # the call left its origin on the way
