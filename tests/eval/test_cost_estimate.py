"""evaldag run --estimate and cost_estimate: judge calls, tokens and dollars before any judge (or
target) is called; tokens are litellm's count of the prompt the judge would be sent."""

import json

import litellm
import pytest

from evaldag import scorers
from evaldag._cli.demo import demo_gates, demo_items, demo_scorers
from evaldag._cli.main import main
from evaldag._eval.estimate import OUTPUT_TOKENS, cost_estimate

CLAIMS = {"claims": ["Unused items can be returned within 60 days."]}
VERDICTS = {"verdicts": [{"verdict": "yes", "reason": "Stated."}]}


def _faithfulness(server, model="openai/gpt-4o-mini"):
    return scorers.faithfulness(server.judge(model))


def test_the_first_prompt_is_counted_as_the_judge_would_receive_it(judge_server):
    item = demo_items()[0]
    estimate = cost_estimate([item], scorers=[_faithfulness(judge_server)])
    assert judge_server.requests == []  # no judge called
    (faithfulness,) = estimate.scorers.values()
    assert faithfulness.calls == 3  # claims, verdicts, reason
    judge_server.script(CLAIMS, VERDICTS, "The answer sticks to the article.")
    _faithfulness(judge_server).run(input=item["input"], output=item["output"])
    first = judge_server.requests[0]
    counted = litellm.token_counter(model="openai/gpt-4o-mini", messages=first.messages)
    assert faithfulness.input_tokens == 3 * counted
    assert faithfulness.output_tokens == 3 * OUTPUT_TOKENS
    input_usd, output_usd = litellm.cost_per_token(
        model="openai/gpt-4o-mini", prompt_tokens=counted, completion_tokens=OUTPUT_TOKENS
    )
    assert faithfulness.cost_usd == pytest.approx(3 * (input_usd + output_usd))


def test_items_the_code_steps_end_cost_nothing_and_code_scorers_are_left_out(judge_server):
    items = demo_items()
    estimate = cost_estimate(
        items, scorers=demo_scorers(judge_server.judge("openai/gpt-4o-mini")), gates=demo_gates()
    )
    assert estimate.items == 33
    assert list(estimate.scorers) == ["faithfulness-scorer"]
    # one agent transcript has no tool result to judge against: not scorable, no call
    assert estimate.total.calls == 3 * 32
    assert estimate.total.unpriced == []


def test_unpriced_models_are_listed_and_left_out_of_the_dollars(judge_server):
    estimate = cost_estimate(demo_items()[:2], scorers=[_faithfulness(judge_server, "openai/x")])
    assert estimate.total.calls == 6 and estimate.total.cost_usd == 0
    assert estimate.total.unpriced == ["openai/x"]


def test_a_target_is_not_called(judge_server):
    called = []

    def target(question):
        called.append(question)
        return "answer"

    scorer = scorers.classifier(judge_server.judge("openai/gpt-4o-mini"), "Polite?", boolean=True)
    estimate = cost_estimate([{"input": "hi"}, {"input": "yo"}], scorers=[scorer], target=target)
    assert called == [] and judge_server.requests == []
    assert estimate.total.calls == 2


@pytest.fixture
def eval_file(tmp_path, judge_server):
    data = tmp_path / "items.jsonl"
    data.write_text("".join(json.dumps(item) + "\n" for item in demo_items()[:4]))
    path = tmp_path / "eval_support.py"
    path.write_text(
        "from evaldag import Judge\n"
        "from evaldag.scorers import faithfulness\n"
        f"judge = Judge('openai/gpt-4o-mini', api_base={judge_server.url!r}, api_key='sk-test')\n"
        "scorers = [faithfulness(judge)]\n"
    )
    return str(path), str(data)


def test_run_estimate_prints_the_calls_and_exits_0(judge_server, eval_file, capsys):
    path, data = eval_file
    assert main(["run", path, "--data", data, "--estimate"]) == 0
    assert judge_server.requests == []
    out = capsys.readouterr().out
    assert out.startswith("eval_support.py on items.jsonl: 4 items; no judge called\n")
    (row,) = [line.split() for line in out.splitlines() if line.startswith("  faithfulness")]
    assert row[1] == "12" and row[-1].startswith("$0.0")
    assert "output tokens per call; prices from litellm's table" in out


def test_run_budget_usd_stops_judging(judge_server, eval_file, capsys):
    path, data = eval_file
    # nothing but judged scorers, and no money for a judge: nothing could be scored (exit 3)
    assert main(["run", path, "--data", data, "--budget-usd", "0"]) == 3
    assert judge_server.requests == []
    assert "budget: the run's judge budget of $0.0000 was spent" in capsys.readouterr().err
    with pytest.raises(SystemExit) as refused:
        main(["run", path, "--data", data, "--budget-usd", "-1"])
    assert refused.value.code == 3
    assert "--budget-usd: must be a number of US dollars >= 0" in capsys.readouterr().err
