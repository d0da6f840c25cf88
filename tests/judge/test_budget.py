"""run_evals(budget_usd=...): judging stops once the judge calls have cost the budget; the items
not judged yet are not scorable with a budget reason, and what was scored is kept. The judge is
the loopback server under a priced model name, so each call costs what litellm's table says."""

import json

import litellm
import pytest
from judge_server import Reply

import evaldag
from evaldag import EvalDagError, PromptStep, create_scorer, run_evals
from evaldag.errors import UntrustworthyRunError

USAGE = {"prompt_tokens": 1000, "completion_tokens": 500, "total_tokens": 1500}


def _one_call_usd():
    prices = litellm.get_model_info("gpt-4o-mini", custom_llm_provider="openai")
    return 1000 * prices["input_cost_per_token"] + 500 * prices["output_cost_per_token"]


def _judged(server):
    judge = server.judge("openai/gpt-4o-mini", instructions="Grade it.")
    return create_scorer("graded", judge=judge).generate_score(
        PromptStep("Grade", lambda run: f"Grade: {run.output}")
    )


def _items(count):
    return [
        {"id": f"q{n}", "input": f"question {n}", "output": f"answer {n}"} for n in range(count)
    ]


def test_judging_stops_when_the_budget_is_spent_and_keeps_what_was_scored(judge_server):
    judge_server.reply = Reply({"score": 0.75}, usage=USAGE)
    result = run_evals(
        _items(10),
        scorers=[_judged(judge_server)],
        concurrency=1,
        budget_usd=2.5 * _one_call_usd(),
        progress=False,
    )
    assert len(judge_server.requests) == 3  # the third call takes the spent cost past the budget
    items = result.items
    scored = items["graded.score"].notna()
    assert scored.sum() == 3 and (items.loc[scored, "graded.score"] == 0.75).all()
    assert result.scores == {"graded": 0.75}
    assert result.summary.not_scorable == {"graded": 7}
    reasons = [json.loads(text) for text in items.loc[~scored, "graded.not_scorable"]]
    assert all(r["step"] == "generate_score" for r in reasons)
    assert all(r["reason"].startswith("budget: the run's judge budget of $") for r in reasons)
    assert result.usage["graded"].calls == 3
    assert result.usage["graded"].cost_usd == pytest.approx(3 * _one_call_usd())


def test_a_budget_of_zero_calls_no_judge(judge_server):
    judge_server.reply = Reply({"score": 1}, usage=USAGE)
    code = create_scorer("code").generate_score(lambda run: 1.0)
    result = run_evals(
        _items(3),
        scorers=[_judged(judge_server).with_threshold(0.5), code],
        budget_usd=0,
        progress=False,
    )
    assert judge_server.requests == []
    assert result.summary.not_scorable == {"graded": 3}
    assert result.verdict == "scored"  # a threshold with no scored item fails, and says why
    assert result.threshold_results[0].reason == "no item could be scored (3 not scorable)"
    # with nothing else to score, the run measured nothing: an error, not a verdict
    with pytest.raises(
        UntrustworthyRunError, match="Nothing in this run could be scored"
    ) as raised:
        run_evals(_items(3), scorers=[_judged(judge_server)], budget_usd=0, progress=False)
    assert "budget: the run's judge budget of $0.0000 was spent" in str(raised.value)
    assert raised.value.result.summary.not_scorable == {"graded": 3}


def test_items_the_budget_left_unjudged_fail_gates_and_thresholds(judge_server):
    # The three judged items pass; the seven the budget left unjudged were not checked, so the
    # gate and the threshold cannot pass on them (they passed on the three, verdict 'passed').
    judge_server.reply = Reply({"score": 1}, usage=USAGE)
    graded = _judged(judge_server)
    budget = {"concurrency": 1, "budget_usd": 2.5 * _one_call_usd(), "progress": False}
    result = run_evals(_items(10), scorers=[graded.with_threshold(0.9)], **budget)
    assert result.summary.not_scorable == {"graded": 7}
    assert result.scores == {"graded": 1.0}  # what was judged is kept
    [threshold] = result.threshold_results
    assert not threshold.passed and threshold.average_score == 1.0
    assert threshold.reason.startswith("7 items were not judged: the run's judge budget")
    assert "raise budget_usd=" in threshold.reason
    assert result.verdict == "scored"
    gated = run_evals(_items(10), gates=[graded], **budget)
    [gate] = gated.gate_results
    assert not gate.passed and gate.score == 1.0 and gate.reason.startswith("7 items were not")
    assert gated.verdict == "failed"
    conversations = [
        {"id": f"c{n}", "turns": [{"input": f"hi {n}", "gates": [graded]}]} for n in range(5)
    ]
    turned = run_evals(conversations, target=lambda text: f"said {text}", **budget)
    [turn_gate] = turned.turn_results[0].gate_results
    assert not turn_gate.passed and turn_gate.reason.startswith("2 items were not judged")
    assert turned.verdict == "failed"


def test_code_steps_are_free(judge_server):
    code = create_scorer("code").generate_score(lambda run: 1.0)
    result = run_evals(_items(3), scorers=[code], budget_usd=0, progress=False)
    assert result.scores == {"code": 1.0}


@pytest.mark.parametrize("budget", [-1, float("nan"), float("inf"), "1", True])
def test_a_budget_is_a_finite_number_of_dollars(budget):
    with pytest.raises(EvalDagError, match="budget_usd must be a finite number of US dollars"):
        run_evals(
            _items(1),
            scorers=[create_scorer("s").generate_score(lambda run: 1)],
            budget_usd=budget,
        )


def test_per_turn_scorers_spend_the_same_budget(judge_server):
    judge_server.reply = Reply({"score": 0.75}, usage=USAGE)
    graded = _judged(judge_server)
    conversations = [
        {"id": f"c{n}", "turns": [{"input": f"hi {n}", "scorers": [graded]}, {"input": "bye"}]}
        for n in range(5)
    ]
    result = run_evals(
        conversations,
        target=lambda text: f"said {text}",
        concurrency=1,
        budget_usd=2.5 * _one_call_usd(),
        progress=False,
    )
    assert len(judge_server.requests) == 3  # as for item scorers: the third call spends it
    turns = result.turns[result.turns["turn"] == 0]
    scored = turns["graded.score"].notna()
    assert scored.sum() == 3 and (turns.loc[scored, "graded.score"] == 0.75).all()
    reasons = [json.loads(text) for text in turns.loc[~scored, "graded.not_scorable"]]
    assert len(reasons) == 2
    assert all(r["reason"].startswith("budget: the run's judge budget of $") for r in reasons)


def _unpriced(server, **prices):
    judge = server.judge("openai/house-model-7b", instructions="Grade it.", **prices)
    return create_scorer("house", judge=judge).generate_score(
        PromptStep("Grade", lambda run: f"Grade: {run.output}")
    )


def test_a_budget_refuses_a_judge_without_a_price_before_any_call(judge_server):
    judge_server.reply = Reply({"score": 1}, usage=USAGE)
    with pytest.raises(EvalDagError) as raised:
        run_evals(_items(3), scorers=[_unpriced(judge_server)], budget_usd=1, progress=False)
    assert raised.value.id == "EVALDAG_BUDGET_UNPRICED"
    message = str(raised.value)
    assert "the judge of house calls 'openai/house-model-7b'" in message
    assert "input_cost_per_token=..., output_cost_per_token=..." in message
    assert judge_server.requests == []
    # without a budget the model runs, its calls unpriced as before
    assert run_evals(_items(1), scorers=[_unpriced(judge_server)], progress=False).scores == {
        "house": 1.0
    }


def test_a_judge_gives_its_own_price_and_the_budget_holds(judge_server):
    judge_server.reply = Reply({"score": 1}, usage=USAGE)
    prices = {"input_cost_per_token": 1e-6, "output_cost_per_token": 4e-6}
    one_call = 1000 * 1e-6 + 500 * 4e-6
    result = run_evals(
        _items(10),
        scorers=[_unpriced(judge_server, **prices)],
        concurrency=1,
        budget_usd=2.5 * one_call,
        progress=False,
    )
    assert len(judge_server.requests) == 3
    assert result.usage["house"].cost_usd == pytest.approx(3 * one_call)
    assert result.summary.not_scorable == {"house": 7}


def test_prices_are_given_together():
    with pytest.raises(EvalDagError, match="input_cost_per_token and output_cost_per_token"):
        evaldag.Judge("openai/house-model-7b", input_cost_per_token=1e-6)
