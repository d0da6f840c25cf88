"""Rows flow through a scorer's steps: each row starts its next step as soon as its previous one is
done, whatever the other rows of the step are doing, within the run's concurrency."""

import pickle

import pandas as pd
from judge_server import Reply

from evaldag import PromptStep, ScorerRun, create_scorer, run_evals
from evaldag._engine.run_state import RunState
from evaldag._graph.drivers import scorer_outcomes, scorers_driver

INSTRUCTIONS = "Grade the answer."
SLOW = 3.0


def _two_calls(judge, scorer_id="two-calls"):
    return (
        create_scorer(scorer_id, judge=judge)
        .preprocess(PromptStep("first", lambda run: f"First {run.output}", {"type": "object"}))
        .generate_score(PromptStep("second", lambda run: f"Second {run.output}"))
    )


def test_a_row_does_not_wait_for_the_slowest_row_of_a_step(judge_server):
    judge_server.on("First slow", Reply({"done": True}, latency=SLOW))
    judge_server.on("First", {"done": True})
    judge_server.on("Second", {"score": 1})
    scorer = _two_calls(judge_server.judge(instructions=INSTRUCTIONS))
    runs = [ScorerRun(output="slow"), ScorerRun(output="fast")]
    outcomes = scorer_outcomes(scorers_driver([scorer]), scorer, runs, concurrency=2)
    assert [o.score for o in outcomes] == [1, 1]
    arrived = {r.prompt: r.time for r in judge_server.requests}
    # the fast row's second call went out while the slow row's first call was still unanswered
    assert arrived["Second fast"] - arrived["First slow"] < SLOW
    assert arrived["Second slow"] - arrived["First slow"] >= SLOW


def test_concurrency_bounds_the_rows_waiting_across_steps(judge_server):
    judge_server.on("First", Reply({"done": True}, latency=0.05))
    judge_server.on("Second", Reply({"score": 1}, latency=0.05))
    scorer = _two_calls(judge_server.judge(instructions=INSTRUCTIONS, max_concurrency=16))
    data = pd.DataFrame({"input": ["q"] * 24, "output": [str(i) for i in range(24)]})
    result = run_evals(data, scorers=[scorer], concurrency=3, progress=False)
    assert result.scores == {"two-calls": 1.0}
    assert 1 < judge_server.max_in_flight <= 3


def test_a_step_may_run_another_scorer(judge_server):
    # the step after a judge call runs on the engine loop's thread; the inner run gets its own loop
    judge_server.on("First", {"done": True})
    judge_server.on("Second", {"score": 0.5})
    inner = _two_calls(judge_server.judge(instructions=INSTRUCTIONS), "inner")
    outer = (
        create_scorer("outer", judge=judge_server.judge(instructions=INSTRUCTIONS))
        .preprocess(PromptStep("first", lambda run: f"First {run.output}", {"type": "object"}))
        .generate_score(lambda run: inner.run(output=run.output).score * 2)
    )
    data = pd.DataFrame({"input": ["q"] * 3, "output": ["a", "b", "c"]})
    assert run_evals(data, scorers=[outer], progress=False).scores == {"outer": 1.0}


def test_rows_between_steps_pickle_as_the_states_they_end_in(judge_server):
    judge_server.on("First", Reply({"done": True}, latency=0.05))
    scorer = _two_calls(judge_server.judge(instructions=INSTRUCTIONS))
    runs = pd.Series([ScorerRun(output=str(i)) for i in range(3)], dtype=object)
    node = f"{scorer.id}.{scorer.steps[0].value_name}"
    states = scorers_driver([scorer]).execute([node], inputs={"runs": runs, "concurrency": 2})
    copies = pickle.loads(pickle.dumps(states[node]))
    assert all(type(state) is RunState for state in copies)
    assert [state.results["preprocess_step_result"] for state in copies] == [{"done": True}] * 3
