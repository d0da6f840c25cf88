"""Transports by name: a registered transport carries a judge's calls with the same retries,
bounds, prices and records as the built-in ones; names and registrations are checked.

The transports here answer in this process: the seam under test is the registry and the
protocol, which the built-in transports go through too (``test_judge_transport.py`` runs them
against the scripted HTTP server, and ``test_contributing.py`` the documented HTTP example).
"""

import asyncio
import itertools

import pytest

import evaldag
from evaldag import CallFault, Judge, PromptStep, ScorerRunError, Transport, create_scorer
from evaldag._judge import transports
from evaldag.errors import EvalDagError

INSTRUCTIONS = "Grade the answer."
_names = itertools.count()


class Scripted(Transport):
    """Replies from a list, in order: text, or an exception to raise; the calls are kept."""

    def __init__(self, *replies):
        self.replies = list(replies)
        self.calls = []

    async def reply(self, endpoint, request, timeout):
        self.calls.append((endpoint, request, timeout))
        reply = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
        if isinstance(reply, BaseException):
            raise reply
        return {"content": reply, "usage": {"input_tokens": 1000, "output_tokens": 100}}


def _registered(transport) -> str:
    name = f"scripted-{next(_names)}"
    evaldag.register_transport(name, transport)
    return name


def _scorer(judge):
    return create_scorer("transported", judge=judge).generate_score(
        PromptStep("score", lambda run: f"Score {run.output}")
    )


def test_a_registered_transport_carries_the_calls_and_they_are_priced():
    transport = Scripted('{"score": 0.5}')
    judge = Judge(
        "openai/gpt-4o-mini",
        instructions=INSTRUCTIONS,
        api_key="sk-test",
        transport=_registered(transport),
    )
    result = _scorer(judge).run(output="x")
    assert result.score == 0.5
    ((endpoint, request, timeout),) = transport.calls
    # The default route: the model read as provider/name, the judge's key.
    assert (endpoint.model_name, endpoint.provider, endpoint.api_key) == (
        "gpt-4o-mini",
        "openai",
        "sk-test",
    )
    assert request["messages"][0] == {"role": "system", "content": INSTRUCTIONS}
    assert request["response_format"]["type"] == "json_schema"  # the table says it takes one
    assert timeout == judge.timeout
    execution = result.judge["generate_score"].executions[0]
    # The default price_entry reads litellm's price table: 1000 in and 100 out of gpt-4o-mini.
    assert execution.cost.total_usd == pytest.approx(1000 * 0.15e-6 + 100 * 0.6e-6)


def test_transient_faults_are_retried_and_other_errors_fail_the_call_once():
    fault = CallFault("RateLimitError", 429, "slow down", "transient", ("0", None))
    transport = Scripted(fault, '{"score": 1}')
    judge = Judge("openai/m", instructions=INSTRUCTIONS, transport=_registered(transport))
    assert _scorer(judge).run(output="x").score == 1
    assert len(transport.calls) == 2

    transport = Scripted(ValueError("no such route"))
    name = _registered(transport)
    judge = Judge("openai/m", instructions=INSTRUCTIONS, transport=name)
    with pytest.raises(ScorerRunError) as raised:
        _scorer(judge).run(output="x")
    assert len(transport.calls) == 1
    cause = raised.value.cause
    assert cause.id == "EVALDAG_JUDGE_CALL_FAILED"
    assert f"through {name} failed (ValueError): no such route" in cause.message
    assert cause.execution.error.name == "ValueError"


def test_a_reply_that_is_not_a_dict_fails_the_call():
    class Text(Transport):
        async def reply(self, endpoint, request, timeout):
            return '{"score": 1}'

    judge = Judge("openai/m", instructions=INSTRUCTIONS, transport=_registered(Text()))
    with pytest.raises(ScorerRunError) as raised:
        _scorer(judge).run(output="x")
    assert "the transport replied str, not a dict" in raised.value.cause.message


@pytest.mark.slow
def test_a_transport_that_never_answers_is_bounded_by_the_judges_timeout():
    class Silent(Transport):
        async def reply(self, endpoint, request, timeout):
            await asyncio.sleep(3600)

    judge = Judge(
        "openai/m",
        instructions=INSTRUCTIONS,
        timeout=0.1,
        max_retries=0,
        transport=_registered(Silent()),
    )
    with pytest.raises(ScorerRunError) as raised:
        _scorer(judge).run(output="x")
    cause = raised.value.cause
    assert cause.id == "EVALDAG_JUDGE_UNAVAILABLE"
    assert cause.execution.error.name == "Timeout"
    assert "no reply within 0.1 s" in cause.message


def test_a_route_that_refuses_the_judge_fails_before_any_call():
    class OnlyAcme(Scripted):
        def route(self, judge):
            if not judge.model.startswith("acme/"):
                raise EvalDagError("EVALDAG_INVALID_JUDGE", f"only acme/ models, not {judge.model}")
            return super().route(judge)

    transport = OnlyAcme('{"score": 1}')
    name = _registered(transport)
    judge = Judge("acme/m", instructions=INSTRUCTIONS, transport=name)
    assert _scorer(judge).run(output="x").score == 1
    judge = Judge("openai/m", instructions=INSTRUCTIONS, transport=name)
    with pytest.raises(ScorerRunError) as raised:
        _scorer(judge).run(output="x")
    assert "only acme/ models, not openai/m" in raised.value.cause.message
    assert len(transport.calls) == 1


def test_an_unknown_transport_name_is_refused_naming_the_known_ones():
    with pytest.raises(EvalDagError) as raised:
        Judge("openai/m", transport="htpp")
    assert raised.value.id == "EVALDAG_INVALID_JUDGE"
    assert "no transport is registered as 'htpp'" in raised.value.message
    assert "'http'" in raised.value.message and "register_transport" in raised.value.message


def test_a_transport_not_registered_in_the_scoring_process_fails_its_calls(monkeypatch):
    name = _registered(Scripted('{"score": 1}'))
    judge = Judge("openai/m", instructions=INSTRUCTIONS, transport=name)
    monkeypatch.delitem(transports._registered, name)  # as in a process that never imported it
    with pytest.raises(ScorerRunError) as raised:
        _scorer(judge).run(output="x")
    assert raised.value.cause.id == "EVALDAG_INVALID_TRANSPORT"
    assert f"no transport is registered as {name!r}" in raised.value.cause.message


class _Sync:
    def route(self, judge): ...

    def price_entry(self, model_name, provider): ...

    def reply(self, endpoint, request, timeout): ...


@pytest.mark.parametrize(
    ("name", "transport", "problem"),
    [
        ("", Scripted("x"), "non-empty string"),
        ("http", Scripted("x"), "one of evaldag's transports"),
        ("auto", Scripted("x"), "one of evaldag's transports"),
        ("mine", Scripted, "an instance of Scripted, not the class"),
        ("mine", object(), "lacks route, price_entry, reply"),
        ("mine", _Sync(), "must be async"),
    ],
)
def test_a_registration_is_checked(name, transport, problem):
    with pytest.raises(EvalDagError) as raised:
        evaldag.register_transport(name, transport)
    assert raised.value.id == "EVALDAG_INVALID_TRANSPORT"
    assert problem in raised.value.message


def test_registering_a_name_again_replaces_its_transport():
    first, second = Scripted('{"score": 0}'), Scripted('{"score": 1}')
    name = _registered(first)
    evaldag.register_transport(name, second)
    judge = Judge("openai/m", instructions=INSTRUCTIONS, transport=name)
    assert _scorer(judge).run(output="x").score == 1
    assert (len(first.calls), len(second.calls)) == (0, 1)
