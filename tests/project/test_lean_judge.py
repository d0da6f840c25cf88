"""The benchmarks' lean fake judge answers the http transport's calls and counts them."""

from __future__ import annotations

import sys

from repo_paths import ROOT

from evaldag import Judge, PromptStep, create_scorer, run_evals

sys.path.insert(0, str(ROOT / "benchmarks"))
from lean_judge import MODEL, LeanJudge  # noqa: E402


def _scorer(judge: LeanJudge, max_concurrency: int):
    judged = Judge(
        f"openai/{MODEL}",
        api_base=judge.url,
        api_key="sk-lean",
        instructions="Grade it.",
        transport="http",
        max_concurrency=max_concurrency,
        max_retries=8,
    )
    return create_scorer("graded", judge=judged).generate_score(
        PromptStep("Grade", lambda run: f"Grade {run.input}")
    )


def test_it_answers_every_call_on_kept_alive_connections_and_counts_them() -> None:
    with LeanJudge(0.01) as judge:
        items = [{"input": f"q{n}", "output": "a"} for n in range(200)]
        result = run_evals(items, scorers=[_scorer(judge, 8)], cache=False, progress=False)
    assert result.items["graded.score"].tolist() == [1.0] * 200
    assert judge.requests == 200
    assert judge.max_in_flight == 8  # the limit's, no more: the judge counts
    assert judge.held_seconds >= 200 * 0.01


def test_its_storm_answers_429s_that_the_run_retries() -> None:
    with LeanJudge(0.005, storm=0.3, storm_retry_after=0.01) as judge:
        items = [{"input": f"q{n}", "output": "a"} for n in range(100)]
        result = run_evals(items, scorers=[_scorer(judge, 4)], cache=False, progress=False)
    assert result.items["graded.score"].tolist() == [1.0] * 100
    assert judge.requests > 100  # the 429s were asked again
