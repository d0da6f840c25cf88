"""A score off its scorer's scale is that item's error, wherever it is accepted: a code scorer,
a judge's reply, a gate, a conversation's turn, live scoring; it never passes a threshold and
the verdict and exit code follow (issue 22, item 5)."""

import json
import math
import os
import subprocess
import sys

import pandas as pd
import pytest

from evaldag import (
    PromptStep,
    ScorerRunError,
    UntrustworthyRunError,
    create_scorer,
    live,
    read_scores,
    run_evals,
)

DATA = pd.DataFrame({"input": ["q1", "q2", "q3", "q4"], "output": ["a", "b", "c", "d"]})


def _scoring(scores, scorer_id="s", **options):
    """A scorer giving ``scores[input]`` (1.0 for the inputs it does not name)."""
    return create_scorer(scorer_id, **options).generate_score(
        lambda run: scores.get(run.input, 1.0)
    )


@pytest.mark.parametrize(
    ("max_score", "bad", "threshold"),
    [
        (1, 7.0, 0.5),
        (1, -3.0, {"max": 0.2}),
        (1, math.nan, 0.5),
        (10, math.inf, 5),
        (10, 70.0, 5),
        (10, True, 5),
    ],
)
def test_an_off_scale_item_is_an_error_and_the_threshold_cannot_pass(max_score, bad, threshold):
    good = 0.1 if isinstance(threshold, dict) else max_score
    scorer = _scoring({"q1": bad, "q2": good, "q3": good, "q4": good}, max_score=max_score)
    result = run_evals(DATA, scorers=[scorer.with_threshold(threshold)], progress=False)
    items = result.items
    assert math.isnan(items["s.score"].iloc[0])
    assert "scores of 's' lie in [0, " in items["s.error"].iloc[0]
    assert items["s.failed_step"].iloc[0] == "generate_score"
    assert result.scores == {"s": pytest.approx(good)}  # the error is not a score
    assert result.summary.errors == {"s": 1}
    (threshold_result,) = result.threshold_results
    assert not threshold_result.passed and threshold_result.errors == 1
    assert result.verdict == "scored"


def test_mastra_would_pass_what_evaldag_fails():
    # Mastra averages 7, -3, 0.3 and 0.3 to 1.15, over the minimum 0.5: a pass from two bugs.
    scorer = _scoring({"q1": 7.0, "q2": -3.0, "q3": 0.3, "q4": 0.3}).with_threshold(0.5)
    result = run_evals(DATA, scorers=[scorer], progress=False)
    assert result.summary.errors == {"s": 2} and result.scores == {"s": 0.3}
    assert not result.threshold_results[0].passed and result.verdict == "scored"


def test_a_scorer_off_the_scale_on_every_item_is_an_untrustworthy_run():
    with pytest.raises(UntrustworthyRunError) as raised:
        run_evals(DATA, scorers=[create_scorer("s").generate_score(lambda: 7)], progress=False)
    assert "generate_score returned 7.0; scores of 's' lie in [0, 1]" in raised.value.message


def test_a_gate_off_the_scale_fails_as_an_item_error():
    gate = _scoring({"q1": 2.0, "q2": 0.0}, scorer_id="g")  # averaged, 2 and 0 pass Mastra's gate
    result = run_evals(DATA.iloc[:2], gates=[gate], scorers=[_scoring({})], progress=False)
    error = result.items["g.error"].iloc[0]
    assert error.startswith("Scorer Run Failed: generate_score returned 2.0; scores of 'g' lie in")
    (gate_result,) = result.gate_results
    assert not gate_result.passed and gate_result.score == 0.0
    assert result.verdict == "failed"


def test_a_judges_score_off_the_scale_is_asked_again_and_keeps_its_record(judge_server):
    judge_server.reply = {"score": 7}  # a judge grading 0-10 for a 0-1 scorer
    judge = judge_server.judge(instructions="Grade it.")
    graded = create_scorer("graded", judge=judge).generate_score(
        PromptStep("Grade the answer from 0 to 1", lambda run: f"Grade: {run.output}")
    )
    with pytest.raises(ScorerRunError) as raised:
        graded.run(input="q", output="a")
    assert raised.value.message.endswith(
        "the judge's generate_score reply gave 7.0; scores of 'graded' lie in [0, 1] "
        "(max_score=1): ask the judge for a score within it, or set max_score=10 if that is "
        "the scorer's scale"
    )
    assert raised.value.cause.id == "STRUCTURED_OUTPUT_SCHEMA_VALIDATION_FAILED"
    (execution,) = raised.value.result.judge["generate_score"].executions
    assert (execution.status, execution.raw_output, execution.prompt) == (
        "failed",
        '{"score": 7}',
        "Grade: a",
    )
    assert execution.attempt_count == 2  # asked again, with the scale in the schema
    first, second = judge_server.requests
    score = first.response_format["json_schema"]["schema"]["properties"]["score"]
    assert (score["minimum"], score["maximum"]) == (0, 1)
    assert '"maximum": 1' in second.system
    judge_server.script({"score": 7}, {"score": 0.7})
    assert graded.run(input="q", output="a").score == 0.7


def test_a_turn_scorer_off_the_scale_fails_its_turn():
    shouty = create_scorer("shouty").generate_score(
        lambda run: 3.0 if "!" in str(run.output) else 1
    )
    result = run_evals(
        [
            {"turns": [{"input": "hi", "scorers": [shouty.with_threshold(0.5)]}]},
            {"turns": [{"input": "hey!", "scorers": [shouty.with_threshold(0.5)]}]},
        ],
        target=lambda text: text,
        progress=False,
    )
    assert result.turns["shouty.score"].tolist()[0] == 1.0
    assert "returned 3.0; scores of 'shouty' lie in [0, 1]" in result.turns["shouty.error"].iloc[1]
    (turn,) = result.turn_results
    assert not turn.threshold_results[0].passed and result.verdict == "scored"


def test_live_scoring_stores_an_off_scale_score_as_an_error_row(tmp_path):
    lengthy = create_scorer("length").generate_score(lambda run: len(run.output) / 10)
    scoring = live(lengthy, store=tmp_path / "scores.db")
    answer = scoring(lambda text: text)
    for text in ("short", "far too long for a 0-1 scale"):
        answer(text)
    assert scoring.flush(timeout=30)
    stats = scoring.stats()
    rows = read_scores(tmp_path / "scores.db").set_index("output")
    scoring.close()
    assert (stats.scored, stats.errors) == (1, 1)
    assert rows.loc["short", "score"] == 0.5
    long_row = rows.loc["far too long for a 0-1 scale"]
    assert math.isnan(long_row["score"])
    assert "generate_score returned 2.8; scores of 'length' lie in [0, 1]" in long_row["error"]


EVAL_FILE = """\
import evaldag

graded = evaldag.create_scorer("graded").generate_score(
    lambda run: {"a": 1.0, "b": 0.8}.get(run.output, 7.0)
)
scorers = [graded.with_threshold(0.5)]
"""


def test_the_cli_exits_1_and_names_the_item(tmp_path):
    (tmp_path / "eval.py").write_text(EVAL_FILE)
    rows = [{"id": f"i{n}", "input": f"q{n}", "output": out} for n, out in enumerate("abc")]
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    done = subprocess.run(
        [sys.executable, "-m", "evaldag", "run", "eval.py", "--data", "data.jsonl"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        timeout=120,
    )
    assert done.returncode == 1, done.stdout + done.stderr  # scored: the threshold is missed
    assert "graded  1 of 3 items below 0.50 or in error: i2 (error)" in done.stdout
