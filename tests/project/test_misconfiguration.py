"""Issue 13 §3: a misconfiguration is an error, never a verdict.

A dead judge, a missing key, a misspelt eval-file name, a gate scoring outside [0, 1], a
threshold off its scorer's scale, a checkpoint of another run: each stops with an error that
says what is wrong, instead of a score of 0 or a green exit code.
"""

import socket
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from cli_runs import evaldag_here
from judge_server import refused

import evaldag
from evaldag import (
    EvalDagError,
    Judge,
    PromptStep,
    UntrustworthyRunError,
    create_scorer,
    not_scorable,
    run_evals,
)

DATA = pd.DataFrame({"input": ["q1", "q2", "q3"], "output": ["a", "bb", "ccc"]})


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _judged(judge, scorer_id="judged"):
    return create_scorer(scorer_id, judge=judge).generate_score(
        PromptStep("score it", lambda run: f"Score {run.output}")
    )


def _cli(*args, cwd):
    """``evaldag *args`` in a process of its own: the error that ends a run is its exit status."""
    return subprocess.run(
        [sys.executable, "-m", "evaldag", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
    )


# --- a scorer that fails on every item ----------------------------------------------------------


@pytest.mark.slow
def test_a_judge_that_cannot_be_reached_is_an_error_that_keeps_the_results(tmp_path):
    dead = Judge(
        "openai/m",
        api_base=f"http://127.0.0.1:{_free_port()}/v1",
        api_key="k",
        instructions="Grade.",
        max_retries=0,
        timeout=2,
    )
    out = tmp_path / "results.parquet"
    with pytest.raises(UntrustworthyRunError) as raised:
        run_evals(DATA, scorers=[_judged(dead)], out=out, progress=False)
    error = raised.value
    assert error.message.startswith("Scorer 'judged' failed on every item")
    assert "First error, on item 0" in error.message and "judge model 'openai/m'" in error.message
    assert error.details["errors"] == 3
    assert error.result.items["judged.error"].notna().all()  # nothing computed is lost
    assert evaldag.EvalResult.read_parquet(out).summary.errors == {"judged": 3}


def test_a_rejected_key_on_every_item_exits_3_in_the_cli_with_the_first_error(
    judge_server, tmp_path
):
    judge_server.reply = refused(401)
    (tmp_path / "eval.py").write_text(
        "import evaldag\n"
        "from evaldag import PromptStep, create_scorer\n"
        f"judge = evaldag.Judge('openai/m', api_base={judge_server.url!r}, api_key='bad', "
        "instructions='Grade.')\n"
        "scorers = [create_scorer('judged', judge=judge)"
        ".generate_score(PromptStep('score', lambda: 'Score it')).with_threshold(0.5)]\n"
    )
    DATA.to_json(tmp_path / "data.jsonl", orient="records", lines=True)
    done = _cli("run", "eval.py", "--data", "data.jsonl", "--out", "r.parquet", cwd=tmp_path)
    assert done.returncode == 3, done.stderr
    assert "Scorer 'judged' failed on every item" in done.stderr
    assert "refused the request (401" in done.stderr
    assert "the results are in r.parquet" in done.stderr
    assert (tmp_path / "r.parquet").exists()


def test_more_failures_than_the_share_allowed_is_an_error():
    flaky = create_scorer("flaky").generate_score(lambda run: 1 / (run.input == "q1"))
    result = run_evals(DATA, scorers=[flaky], progress=False)  # 2 of 3 fail: still a result
    assert result.summary.errors == {"flaky": 2}
    with pytest.raises(UntrustworthyRunError, match=r"failed on 2 of 3 items"):
        run_evals(DATA, scorers=[flaky], progress=False, max_error_share=0.5)
    with pytest.raises(EvalDagError, match="max_error_share must be a number from 0 to 1"):
        run_evals(DATA, scorers=[flaky], max_error_share=1.5)


def test_a_target_that_fails_on_every_item_is_an_error():
    def target(input):
        raise RuntimeError("model not found")

    data = DATA.drop(columns="output")
    with pytest.raises(UntrustworthyRunError, match="The target failed on every item"):
        run_evals(data, scorers=[create_scorer("s").generate_score(lambda: 1)], target=target)


def test_a_missing_key_for_a_local_server_is_a_configuration_error_without_retries(
    judge_server, monkeypatch
):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    judge = Judge("openai/m", api_base=judge_server.url, instructions="Grade.", max_retries=4)
    with pytest.raises(evaldag.ScorerRunError) as raised:
        _judged(judge).run(output="x")
    assert "the client has no API key" in raised.value.message
    assert "api_key='none'" in raised.value.message
    assert raised.value.cause.id == "EVALDAG_JUDGE_MISSING_KEY"
    assert judge_server.requests == []  # never sent, never retried


def test_the_demo_takes_the_judges_api_key():
    from evaldag._cli.demo import demo_judge

    judge, line = demo_judge("openai/m", "http://127.0.0.1:1/v1", "sk-local")
    assert judge.api_key.get_secret_value() == "sk-local" and "sk-local" not in repr(judge)


# --- gates and thresholds ---------------------------------------------------------------------


def test_a_threshold_whose_scorer_scored_nothing_fails_in_the_cli(tmp_path, capsys, monkeypatch):
    (tmp_path / "eval.py").write_text(
        "from evaldag import create_scorer, not_scorable\n"
        "scorers = [create_scorer('nothing').generate_score(lambda: not_scorable('no context'))"
        ".with_threshold(0.5), create_scorer('one').generate_score(lambda: 1.0)]\n"
    )
    DATA.to_json(tmp_path / "data.jsonl", orient="records", lines=True)
    done = evaldag_here(capsys, monkeypatch, "run", "eval.py", "--data", "data.jsonl", cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr  # scored, not "no verdict"
    assert "verdict: SCORED" in done.stdout
    assert "nothing could score no item; first, on item 0: no context" in done.stdout


@pytest.mark.parametrize("threshold", ["", ".with_threshold(0.5)"])
def test_a_run_that_could_score_nothing_is_an_error_in_the_cli(
    tmp_path, capsys, monkeypatch, threshold
):
    # with or without a threshold: nothing was measured, so there is no verdict to give
    (tmp_path / "eval.py").write_text(
        "from evaldag import create_scorer, not_scorable\n"
        "scorers = [create_scorer('nothing').generate_score(lambda: not_scorable('no context'))"
        f"{threshold}]\n"
    )
    DATA.to_json(tmp_path / "data.jsonl", orient="records", lines=True)
    done = evaldag_here(
        capsys, monkeypatch, "run", "eval.py", "--data", "data.jsonl", "--out", "r.parquet",
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 3, done.stdout + done.stderr
    assert (
        f"Nothing in this run could be scored: no scorer or gate gave a score on any of its "
        f"{len(DATA)} items. First reasons: 'nothing' on item 0: no context"
    ) in done.stderr
    assert (tmp_path / "r.parquet").exists()  # what was computed is kept


def test_gate_scores_must_lie_between_0_and_1():
    two_or_zero = create_scorer("g").generate_score(lambda run: 2.0 if run.input == "q1" else 0.0)
    result = run_evals(
        DATA, gates=[two_or_zero], scorers=[create_scorer("s").generate_score(lambda: 1)]
    )
    (gate,) = result.gate_results
    assert not gate.passed and result.verdict == "failed"
    error = result.items["g.error"].iloc[0]
    assert "generate_score returned 2.0; scores of 'g' lie in [0, 1] (max_score=1)" in error
    assert result.items["g.failed_step"].iloc[0] == "generate_score"


def test_a_gate_on_a_larger_scale_is_refused():
    tens = create_scorer("tens", max_score=10).generate_score(lambda: 10)
    with pytest.raises(EvalDagError) as raised:
        run_evals(DATA, gates=[tens], progress=False)
    assert raised.value.message == (
        "gates[0] ('tens') scores from 0 to 10 (max_score), but a gate scores from 0 to 1 and "
        "passes at 1.0; give it as a scorer with a threshold on its own scale, e.g. "
        "scorer.with_threshold(8)"
    )
    with pytest.raises(EvalDagError, match=r"turns\[0\]\.gates\[0\] \('tens'\) scores from 0"):
        run_evals([{"turns": [{"input": "hi", "gates": [tens]}]}], target=lambda text: text)


def test_a_gate_whose_lower_scores_are_better_is_refused():
    """A gate passes when every item scores 1.0: gates=[toxicity(judge)] passed an answer toxic
    on every item and failed a clean one."""
    toxic = create_scorer("toxic", better="lower").generate_score(lambda: 1.0)
    with pytest.raises(EvalDagError) as raised:
        run_evals(DATA, gates=[toxic], progress=False)
    assert raised.value.message == (
        "gates[0] ('toxic') scores lower for better answers, but a gate passes only when every "
        "item scores 1.0, its worst; give it as a scorer with a maximum, e.g. "
        "scorer.with_threshold(max=0.2)"
    )
    with pytest.raises(EvalDagError, match=r"turns\[0\]\.gates\[0\] \('toxic'\) scores lower"):
        run_evals([{"turns": [{"input": "hi", "gates": [toxic]}]}], target=lambda text: text)
    assert run_evals(DATA, scorers=[toxic.with_threshold(max=0.2)], progress=False).verdict == (
        "scored"
    )


def test_a_threshold_lies_on_its_scorers_own_scale():
    tens = create_scorer("tens", max_score=10).generate_score(lambda run: 7.0)
    assert tens.with_threshold(7).threshold == 7.0
    with pytest.raises(EvalDagError, match=r"between 0 and 10 \(the scorer's scale\), got 11"):
        tens.with_threshold(11)
    unit = create_scorer("unit").generate_score(lambda: 1)
    with pytest.raises(EvalDagError, match="between 0 and 1, got 7"):
        unit.with_threshold(7)
    result = run_evals(DATA, scorers=[tens.with_threshold({"min": 6.5})], progress=False)
    assert result.verdict == "passed"
    with pytest.raises(EvalDagError, match="max_score of scorer 'bad'"):
        create_scorer("bad", max_score=0)


# --- eval files -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "line, hint",
    [
        ("gate = [evaldag.checks.includes('a')]", "did you mean gates?"),
        ("scorer = evaldag.scorers.completeness()", "did you mean scorers?"),
        ("thresholds = {'completeness-scorer': 0.5}", "a threshold goes with its scorer"),
        ("policy = [evaldag.checks.excludes('refund')]", "in neither scorers nor gates"),
    ],
)
def test_names_an_eval_file_defines_that_evaldag_does_not_read_are_errors(
    tmp_path, capsys, monkeypatch, line, hint
):
    (tmp_path / "eval.py").write_text(
        f"import evaldag\nscorers = [evaldag.scorers.completeness()]\n{line}\n"
    )
    DATA.to_json(tmp_path / "data.jsonl", orient="records", lines=True)
    done = evaldag_here(capsys, monkeypatch, "run", "eval.py", "--data", "data.jsonl", cwd=tmp_path)
    assert done.returncode == 3
    assert hint in done.stderr and "read through scorers, gates, target" in done.stderr


def test_helper_names_in_an_eval_file_are_fine(tmp_path, capsys, monkeypatch):
    (tmp_path / "eval.py").write_text(
        "import evaldag\n"
        "THRESHOLD_NOTE = 'kept'\n"
        "def score_gate(run):\n    return 1.0\n"
        "quality = evaldag.scorers.completeness()\n"
        "scorers = [quality]\n"
        "gates = [evaldag.create_scorer('g').generate_score(score_gate)]\n"
    )
    DATA.to_json(tmp_path / "data.jsonl", orient="records", lines=True)
    done = evaldag_here(capsys, monkeypatch, "run", "eval.py", "--data", "data.jsonl", cwd=tmp_path)
    assert done.returncode in (0, 1), done.stderr


# --- checkpoints ----------------------------------------------------------------------------


def _interrupted(tmp_path: Path, scorer, data=DATA) -> Path:
    """A checkpoint left by a run stopped after its first batch."""
    checkpoint = tmp_path / "run.parquet"
    stop = create_scorer("stop").generate_score(lambda run: 1 / (run.input != "q2"))
    with pytest.raises(EvalDagError):
        run_evals(
            data,
            scorers=[scorer, stop],
            checkpoint=checkpoint,
            batch_size=1,
            on_error="raise",
            progress=False,
        )
    assert checkpoint.with_name("run.parquet.partial").is_dir()
    return checkpoint


def _resumed(checkpoint, scorer, data=DATA):
    stop = create_scorer("stop").generate_score(lambda run: 1 / (run.input != "q2"))
    return run_evals(data, scorers=[scorer, stop], checkpoint=checkpoint, batch_size=1)


def _length(scale):
    return create_scorer("length").generate_score(lambda run: min(1.0, len(run.output) / scale))


@pytest.mark.parametrize(
    "changed, says",
    [
        (  # another option
            lambda: (_length(5), DATA),
            "step 'generate_score' of scorer 'length': closure value 'scale' changed",
        ),
        (  # other step code
            lambda: (create_scorer("length").generate_score(lambda run: 0.5), DATA),
            "step 'generate_score' of scorer 'length': its code changed",
        ),
        (lambda: (_length(10), DATA.assign(ground_truth=["x", "y", "z"])), "data of rows 0–0"),
    ],
)
def test_resuming_another_run_is_refused_with_what_differs(tmp_path, changed, says):
    checkpoint = _interrupted(tmp_path, _length(10))
    scorer, data = changed()
    with pytest.raises(EvalDagError) as raised:
        _resumed(checkpoint, scorer, data)
    assert raised.value.id == "CHECKPOINT_MISMATCH"
    assert says in raised.value.message


def test_resuming_with_other_judge_settings_is_refused(tmp_path, judge_server):
    judge_server.reply = {"score": 1}
    first = judge_server.judge(instructions="Grade.", temperature=0)
    checkpoint = _interrupted(tmp_path, _judged(first))
    other = judge_server.judge(instructions="Grade.", temperature=0.7)
    with pytest.raises(EvalDagError, match="scorer 'judged': its judge settings changed"):
        _resumed(checkpoint, _judged(other))


def test_resuming_the_same_run_goes_on(tmp_path):
    checkpoint = _interrupted(tmp_path, _length(10))
    result = _resumed(checkpoint, _length(10))  # the same configuration, built again
    assert result.summary.total_items == 3
    assert result.items["length.score"].tolist() == [0.1, 0.2, 0.3]


def test_prebuilt_scorers_take_an_id_so_two_of_a_kind_run_together():
    from evaldag import scorers

    data = [{"input": "the quick brown fox", "output": "the quick fox"}]
    result = run_evals(
        data,
        scorers=[scorers.completeness(), scorers.completeness(id="completeness-again")],
        progress=False,
    )
    assert set(result.scores) == {"completeness-scorer", "completeness-again"}
    assert scorers.tone(id="my-tone").id == "my-tone"
    assert (
        scorers.trajectory(id="t").id == "t" and scorers.tool_call_accuracy("x", id="a").id == "a"
    )


def test_llm_scorers_take_an_id_and_score_on_their_own_scale(judge_server):
    from evaldag import scorers

    judge = judge_server.judge()
    first = scorers.faithfulness(judge, context=["c"], scale=10)
    second = scorers.faithfulness(judge, context=["c"], id="faithfulness-strict")
    assert (first.id, first.max_score) == ("faithfulness-scorer", 10)
    assert (second.id, second.max_score) == ("faithfulness-strict", 1)
    assert first.with_threshold(7).threshold == 7  # on faithfulness' own scale of 0 to 10
    with pytest.raises(EvalDagError, match="between 0 and 1, got 7"):
        second.with_threshold(7)


def test_a_run_whose_turn_scorers_could_score_nothing_names_the_conversation():
    unscorable = create_scorer("ns").generate_score(lambda: not_scorable("nothing here"))
    data = [{"input": "a"}, {"turns": [{"input": "a"}, {"input": "b", "scorers": [unscorable]}]}]
    with pytest.raises(UntrustworthyRunError) as raised:
        run_evals(data, target=lambda input: "x", scorers=[], progress=False)
    assert raised.value.message.endswith("First reasons: 'ns' on item 1: nothing here")
    scored = create_scorer("one").generate_score(lambda: 1.0)
    data[1]["turns"][0]["scorers"] = [scored]  # one score anywhere is a measurement
    assert run_evals(data, target=lambda input: "x", scorers=[], progress=False).verdict is None
