"""Where a judge's requests go, on both transports: an ``api_base`` with a query gets
``/chat/completions`` after its path, the query kept."""

from urllib.parse import parse_qsl

from judge_server import (
    API_KEY,
    judge_server_on_each_transport,  # noqa: F401 (the fixture)
)

from evaldag import Judge, PromptStep, create_scorer


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
