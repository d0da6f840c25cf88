"""run_evals with LLM-judged scorers: the loopback judge server, usage, cost and the reply cache."""

import json

import pandas as pd

from evaldag import PromptStep, create_scorer, run_evals

DATA = pd.DataFrame({"input": ["q1", "q2", "q3"], "output": ["short", "a longer answer", "ok"]})


def _graded(judge):
    return create_scorer("graded", judge=judge).generate_score(
        PromptStep("Grade the answer", lambda run: f"Grade this answer: {run.output}")
    )


def test_judged_scores_usage_and_records(judge_server):
    judge_server.reply = {"score": 0.5}
    result = run_evals(DATA, scorers=[_graded(judge_server.judge(instructions="Grade it."))])
    assert result.scores == {"graded": 0.5}
    usage = result.usage
    assert (usage["graded"].calls, usage["graded"].input_tokens) == (3, 30)
    assert usage["total"] == usage["graded"]
    record = json.loads(result.items["graded.judge"].iloc[0])["generate_score"][0]
    assert (record["status"], record["attemptCount"]) == ("success", 1)
    assert "Grade this answer: short" in record["prompt"]


def test_run_level_cache_serves_the_second_run(judge_server, tmp_path):
    judge_server.reply = {"score": 1}
    scorer = _graded(judge_server.judge(instructions="Grade it."))
    first = run_evals(DATA, scorers=[scorer], cache=tmp_path / "cache")
    calls = len(judge_server.requests)
    again = run_evals(DATA, scorers=[scorer], cache=tmp_path / "cache")
    assert calls == 3 and len(judge_server.requests) == 3  # no new call
    assert again.scores == first.scores
    records = [json.loads(text)["generate_score"][0] for text in again.items["graded.judge"]]
    assert all(r["cacheHit"] and r["modelCallCount"] == 0 for r in records)
    assert "graded" not in again.usage  # nothing was called, nothing cost
    uncached = run_evals(DATA, scorers=[scorer])
    assert len(judge_server.requests) == 6 and uncached.scores == first.scores
