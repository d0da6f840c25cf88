"""run_evals(trials=N): each item judged N times, against the loopback judge server.

The statistical test scripts a judge that answers 1 with a known probability: its answers are
drawn from a hash of the prompt and how often that prompt was asked before, so they are the same
on every run whatever order the calls arrive in, and the test is deterministic. The tolerance,
four standard errors of each figure under the true distribution, would fail a correct
implementation with a probability under 1e-4 per figure were the draws fresh each run.
"""

import hashlib
import json
import math

import numpy as np
import pandas as pd
import pytest
from judge_server import Reply

from evaldag import (
    EvalDagError,
    EvalResult,
    PromptStep,
    create_scorer,
    pass_at_k,
    pass_hat_k,
    run_evals,
)
from evaldag._results.reducers import Reducer, reducer_named

P_PASS = 0.3
ITEMS = 300
TRIALS = 4


def _bernoulli_judge(server, p=P_PASS):
    """Answer each prompt's n-th request with a score of 1 with probability ``p``, else 0."""
    asked: dict[str, int] = {}

    def answer(request):
        n = asked.get(request.prompt, 0)
        asked[request.prompt] = n + 1
        draw = int(hashlib.sha256(f"{request.prompt}|{n}".encode()).hexdigest(), 16) % 10**6
        return Reply({"score": 1 if draw < p * 10**6 else 0})

    server.on(lambda request: True, answer)
    return asked


def _graded(judge, sid="graded"):
    return create_scorer(sid, judge=judge).generate_score(
        PromptStep("Grade the answer", lambda run: f"Grade this answer: {run.output}")
    )


def _data(items):
    return pd.DataFrame(
        {"input": [f"q{i}" for i in range(items)], "output": [f"a{i}" for i in range(items)]}
    )


def _truth(p, n, items):
    """The true value and standard error over ``items`` items of the mean score, the sample
    variance of an item's n trials, and whether its verdict flips (is not unanimous)."""
    counts = np.arange(n + 1)
    weights = np.array([math.comb(n, c) * p**c * (1 - p) ** (n - c) for c in counts])
    per_item = {
        "mean": counts / n,
        "variance": counts * (n - counts) / (n * (n - 1)),
        "flips": ((counts > 0) & (counts < n)).astype(float),
    }
    truth = {}
    for name, values in per_item.items():
        expected = float(weights @ values)
        spread = math.sqrt(float(weights @ values**2) - expected**2)
        truth[name] = (expected, spread / math.sqrt(items))
    return truth


def test_spread_and_flip_rate_are_within_sampling_error_of_the_truth(judge_server):
    _bernoulli_judge(judge_server)
    result = run_evals(
        _data(ITEMS),
        scorers=[_graded(judge_server.judge(instructions="Grade."))],
        trials=TRIALS,
        concurrency=16,
    )
    assert len(judge_server.requests) == ITEMS * TRIALS  # every trial its own call
    spread = result.summary.trials["graded"]
    assert (spread.trials, spread.repeated, spread.items) == (TRIALS, True, ITEMS)
    truth = _truth(P_PASS, TRIALS, ITEMS)
    measured = {
        "mean": spread.mean,
        "variance": spread.run_to_run_sd**2,
        "flips": spread.flip_share,
    }
    for name, (expected, error) in truth.items():
        assert abs(measured[name] - expected) <= 4 * error, (name, measured[name], expected)
    assert math.sqrt(truth["variance"][0]) == pytest.approx(math.sqrt(P_PASS * (1 - P_PASS)))
    # the cluster-bootstrap interval holds the truth, and is no narrower than the items allow
    assert spread.interval.low <= P_PASS <= spread.interval.high
    assert spread.interval.high - spread.interval.low >= 2 * 1.9 * truth["mean"][1] * 0.8
    assert spread.flip_share_interval.low <= truth["flips"][0] <= spread.flip_share_interval.high


def test_item_columns_hold_each_trial_and_the_reduced_score(judge_server):
    asked = _bernoulli_judge(judge_server, p=0.5)
    result = run_evals(
        _data(20), scorers=[_graded(judge_server.judge(instructions="Grade."))], trials=3
    )
    items = result.items
    assert sum(asked.values()) == 60
    for _, item in items.iterrows():
        trials = item["graded.trial_scores"]
        assert len(trials) == 3 and set(trials) <= {0.0, 1.0}
        assert item["graded.score"] == pytest.approx(np.mean(trials))  # mean, the default
        assert item["graded.trial_mean"] == pytest.approx(np.mean(trials))
        assert item["graded.trial_spread"] == pytest.approx(np.std(trials, ddof=1))
        changes = sum(a != b for a, b in zip(trials, trials[1:], strict=False))
        assert item["graded.trial_flips"] == changes
    assert result.scores["graded"] == pytest.approx(items["graded.score"].mean())
    # every trial's judge calls are counted in usage
    assert result.usage["graded"].calls == 60
    records = json.loads(items["graded.judge"].iloc[0])["generate_score"]
    assert len(records) == 3


def test_code_scorers_run_once_and_say_so(judge_server):
    judge_server.reply = {"score": 1}
    calls = []

    def length(run):
        calls.append(run.input)
        return 1.0

    code = create_scorer("length").generate_score(length)
    result = run_evals(
        _data(5), scorers=[_graded(judge_server.judge(instructions="Grade.")), code], trials=3
    )
    assert len(calls) == 5 and len(judge_server.requests) == 15
    assert result.summary.trials["length"].repeated is False
    assert result.summary.trials["length"].text().startswith("scored once")
    assert "length.trial_scores" not in result.items
    definitions = {d["id"]: d for d in result.scorers}
    assert definitions["length"]["trials"] == {"count": 1, "repeated": False}
    assert definitions["graded"]["trials"]["reducer"] == "mean"


def _reasoned(judge):
    """A scorer whose judge scores, then writes a reason."""
    return _graded(judge, "reasoned").generate_reason(
        PromptStep("Explain", lambda run, score: f"Explain the score {score} of {run.output}")
    )


def test_further_trials_keep_the_first_reason_and_ask_for_none(judge_server):
    asked_reasons = []

    def reply(request):
        if request.prompt.startswith("Explain"):
            asked_reasons.append(request.prompt)
            return Reply(f"reason {len(asked_reasons)}")
        return Reply({"score": 1})

    judge_server.on(lambda request: True, reply)
    judge = judge_server.judge(instructions="Grade.")
    scorers = [_reasoned(judge)]
    result = run_evals(_data(5), scorers=scorers, trials=3)
    # 3 score calls per item, 1 reason call per item (the first trial's)
    assert len(asked_reasons) == 5 and len(judge_server.requests) == 5 * 3 + 5
    assert result.usage["reasoned"].calls == 20
    assert sorted(result.items["reasoned.reason"]) == sorted(f"reason {i}" for i in range(1, 6))
    assert all(len(t) == 3 for t in result.items["reasoned.trial_scores"])
    from evaldag import cost_estimate

    assert cost_estimate(_data(5), scorers=scorers, trials=3).scorers["reasoned"].calls == 20


def test_a_scorer_judged_only_in_its_reason_is_scored_once(judge_server):
    judge_server.reply = "a reason"
    scorer = (
        create_scorer("code_with_reason", judge=judge_server.judge(instructions="Explain."))
        .generate_score(lambda run: 1.0)
        .generate_reason(PromptStep("Explain", lambda run, score: f"Explain {score}"))
    )
    result = run_evals(_data(4), scorers=[scorer], trials=3)
    assert len(judge_server.requests) == 4
    assert result.summary.trials["code_with_reason"].repeated is False
    assert "code_with_reason.trial_scores" not in result.items


def test_the_cache_keys_trials_and_keeps_the_first_trials_key(judge_server, tmp_path):
    _bernoulli_judge(judge_server, p=0.5)
    scorer = _graded(judge_server.judge(instructions="Grade."))
    cache = tmp_path / "cache"
    once = run_evals(_data(6), scorers=[scorer], cache=cache)
    assert len(judge_server.requests) == 6
    thrice = run_evals(_data(6), scorers=[scorer], trials=3, cache=cache)
    assert len(judge_server.requests) == 6 + 12  # trial 0 came from the cache
    first = [trials[0] for trials in thrice.items["graded.trial_scores"]]
    assert first == once.items["graded.score"].tolist()
    again = run_evals(_data(6), scorers=[scorer], trials=3, cache=cache)
    assert len(judge_server.requests) == 18
    assert (
        again.items["graded.trial_scores"].tolist() == thrice.items["graded.trial_scores"].tolist()
    )


def test_a_trial_that_fails_fails_the_item_and_names_the_trial(judge_server):
    # trial 1 of both items, then trial 2 of the first: a reply that is no score, twice (the
    # structured attempt and the fallback)
    judge_server.script({"score": 1}, {"score": 1}, Reply({"nope": 1}), Reply({"nope": 1}))
    judge_server.reply = {"score": 1}
    judge = judge_server.judge(instructions="Grade.", max_retries=0)
    result = run_evals(_data(2), scorers=[_graded(judge)], trials=3, concurrency=1)
    errors = result.items["graded.error"].tolist()
    assert errors[0].startswith("trial 2 of 3: ") and pd.isna(errors[1])
    assert result.summary.errors == {"graded": 1}
    assert result.summary.trials["graded"].items == 1
    assert result.scores["graded"] == 1.0


# --- reducers ---------------------------------------------------------------------------------

SCORES = np.array([[1.0, 0.0, 1.0, 1.0], [0.0, 0.0, 1.0, 0.0], [0.2, 0.4, 0.4, 0.9]])
PASSES = SCORES >= 1.0  # 3, 1 and 0 passing trials of 4


@pytest.mark.parametrize(
    ("reducer", "expected"),
    [
        ("mean", [0.75, 0.25, 0.475]),
        ("median", [1.0, 0.0, 0.4]),
        ("mode", [1.0, 0.0, 0.4]),
        ("max", [1.0, 1.0, 0.9]),
        ("min", [0.0, 0.0, 0.2]),
        # pass@2 = 1 - C(n-c, 2) / C(4, 2): c=3 → 1 - 0/6; c=1 → 1 - 3/6; c=0 → 1 - 6/6
        (pass_at_k(2), [1.0, 0.5, 0.0]),
        ("pass_at_k(1)", [0.75, 0.25, 0.0]),
        # pass^2 = C(c, 2) / C(4, 2): 3/6, 0, 0
        (pass_hat_k(2), [0.5, 0.0, 0.0]),
        ("pass_hat_k(4)", [0.0, 0.0, 0.0]),
        ("pass_hat_k(1)", [0.75, 0.25, 0.0]),
    ],
)
def test_reducers_against_hand_computed_values(reducer, expected):
    assert reducer_named(reducer).reduced(SCORES, PASSES).tolist() == pytest.approx(expected)


def test_mode_breaks_a_tie_low():
    scores = np.array([[1.0, 0.0, 1.0, 0.0]])
    assert Reducer("mode").reduced(scores, scores >= 1).tolist() == [0.0]


def test_a_reducer_and_a_pass_line_decide_the_items_score_and_gate(judge_server):
    # one item, four trials answering 1, 0, 1, 1 in order
    judge_server.script(*({"score": s} for s in (1, 0, 1, 1)))
    gate = _graded(judge_server.judge(instructions="Grade."), "judged-gate")
    result = run_evals(_data(1), gates=[gate], trials=4, reducer=pass_hat_k(2), concurrency=1)
    assert result.items["judged-gate.score"].iloc[0] == pytest.approx(0.5)
    assert result.verdict == "failed"  # pass^2 = 0.5 < 1
    judge_server.script(*({"score": s} for s in (1, 0, 1, 1)))
    result = run_evals(_data(1), gates=[gate], trials=4, reducer="pass_at_k(2)", concurrency=1)
    assert result.items["judged-gate.score"].iloc[0] == 1.0 and result.verdict == "passed"
    # a threshold is the pass line of a scorer's trials: 0.5 passes, 0.25 does not
    judge_server.script(*({"score": s} for s in (0.5, 0.25, 0.5)))
    scorer = _graded(judge_server.judge(instructions="Grade.")).with_threshold(0.5)
    result = run_evals(_data(1), scorers=[scorer], trials=3, reducer="min", concurrency=1)
    item = result.items.iloc[0]
    assert item["graded.score"] == 0.25 and item["graded.trial_flips"] == 2
    assert result.summary.trials["graded"].pass_line == 0.5


def test_reducers_per_scorer(judge_server):
    judge_server.reply = {"score": 1}
    a, b = (
        _graded(judge_server.judge(instructions="Grade."), "a"),
        _graded(judge_server.judge(instructions="Grade."), "b"),
    )
    result = run_evals(_data(2), scorers=[a, b], trials=2, reducer={"b": "max"})
    reducers = {sid: t.reducer for sid, t in result.summary.trials.items()}
    assert reducers == {"a": "mean", "b": "max"}


# --- errors -------------------------------------------------------------------------------------


@pytest.mark.parametrize("trials", [0, -1, 2.0, "3", True, None])
def test_trials_must_be_a_positive_integer(trials):
    scorer = create_scorer("x").generate_score(lambda run: 1.0)
    with pytest.raises(EvalDagError) as raised:
        run_evals(_data(1), scorers=[scorer], trials=trials)
    assert raised.value.id == "INVALID_TRIALS"
    assert "trials must be an integer >= 1" in raised.value.message
    assert repr(trials) in raised.value.message


def test_pass_at_k_needs_k_trials(judge_server):
    scorer = _graded(judge_server.judge(instructions="Grade."))
    for reducer, field in (
        (pass_at_k(5), "reducer="),
        ({"graded": "pass_hat_k(4)"}, "reducer['graded']="),
    ):
        with pytest.raises(EvalDagError) as raised:
            run_evals(_data(1), scorers=[scorer], trials=3, reducer=reducer)
        assert raised.value.id == "INVALID_REDUCER"
        assert field in raised.value.message and "trials=3" in raised.value.message
    assert not judge_server.requests


@pytest.mark.parametrize(
    ("reducer", "words"),
    [
        ("average", "reducer='average' is no reducer"),
        ("pass_at_k(0)", "pass_at_k(k) needs k, an integer >= 1"),
        ({"nobody": "mean"}, "reducer names scorer 'nobody'"),
        ({"code": "max"}, "reducer names scorer 'code', whose score no judge decides"),
        ({"graded": 3}, "reducer['graded']=3 is no reducer"),
    ],
)
def test_a_reducer_that_is_none_is_named(judge_server, reducer, words):
    scorers = [
        _graded(judge_server.judge(instructions="Grade.")),
        create_scorer("code").generate_score(lambda run: 1),
    ]
    with pytest.raises(EvalDagError) as raised:
        run_evals(_data(1), scorers=scorers, trials=2, reducer=reducer)
    assert raised.value.id == "INVALID_REDUCER" and words in raised.value.message


def test_pass_at_k_takes_no_k_below_one():
    for k in (0, -2, 1.5, True):
        with pytest.raises(EvalDagError, match="needs k, an integer >= 1"):
            pass_at_k(k)
        with pytest.raises(EvalDagError, match="pass_hat_k"):
            pass_hat_k(k)


# --- results, checkpoints ---------------------------------------------------------------------


def test_parquet_keeps_the_trials(judge_server, tmp_path):
    _bernoulli_judge(judge_server, p=0.5)
    result = run_evals(
        _data(10),
        scorers=[_graded(judge_server.judge(instructions="Grade."))],
        trials=3,
        out=tmp_path / "r.parquet",
    )
    back = EvalResult.read_parquet(tmp_path / "r.parquet")
    assert back.summary.trials == result.summary.trials
    assert [list(t) for t in back.items["graded.trial_scores"]] == result.items[
        "graded.trial_scores"
    ].tolist()


def test_a_checkpoint_of_one_trial_is_not_taken_for_three(judge_server, tmp_path):
    _bernoulli_judge(judge_server, p=0.5)
    scorer = _graded(judge_server.judge(instructions="Grade."))
    checkpoint = tmp_path / "run.parquet"
    run_evals(_data(4), scorers=[scorer], checkpoint=checkpoint)
    with pytest.raises(EvalDagError) as raised:
        run_evals(_data(4), scorers=[scorer], trials=3, checkpoint=checkpoint)
    assert raised.value.id == "CHECKPOINT_MISMATCH"
    assert "the trials of scorer 'graded'" in raised.value.message
    asked = len(judge_server.requests)
    refreshed = run_evals(
        _data(4), scorers=[scorer], trials=3, checkpoint=checkpoint, resume="refresh"
    )
    asked_then = len(judge_server.requests)
    assert asked_then >= asked + 8  # trials 2 and 3 are new calls
    assert refreshed.summary.trials["graded"].items == 4
    again = run_evals(_data(4), scorers=[scorer], trials=3, checkpoint=checkpoint)
    assert len(judge_server.requests) == asked_then  # the finished run is read back
    assert (
        again.items["graded.trial_scores"].tolist()
        == refreshed.items["graded.trial_scores"].tolist()
    )
    with pytest.raises(EvalDagError, match="the trials of scorer 'graded'"):
        run_evals(_data(4), scorers=[scorer], trials=2, checkpoint=checkpoint)


def test_the_store_keeps_each_trial_by_its_index(judge_server, tmp_path):
    from evaldag import SqlScoreStore, read_scores

    _bernoulli_judge(judge_server, p=0.5)
    store = tmp_path / "scores.db"
    code = create_scorer("code").generate_score(lambda run: 1.0)
    result = run_evals(
        _data(5), scorers=[_graded(judge_server.judge(instructions="Grade.")), code], trials=3,
        store=store,
    )  # fmt: skip
    rows = read_scores(store)
    graded = rows[rows["scorer_id"] == "graded"].sort_values("id")
    trials = [row["trials"] for row in graded["metadata"]]
    expected = result.items["graded.trial_scores"].tolist()
    assert sorted([[t["score"] for t in entry["scores"]] for entry in trials]) == sorted(expected)
    assert all([t["trial"] for t in entry["scores"]] == [0, 1, 2] for entry in trials)
    assert all("trials" not in m for m in rows[rows["scorer_id"] == "code"]["metadata"])
    back = SqlScoreStore(store).result(result.experiment_id)
    assert back.summary.trials == result.summary.trials
    assert back.items["graded.trial_scores"].tolist() == expected
    assert back.items["graded.trial_flips"].tolist() == result.items["graded.trial_flips"].tolist()


def test_the_report_and_the_cli_summary_show_the_spread(judge_server, tmp_path):
    from evaldag._cli.summary import summary_table
    from evaldag._report.html import report_html

    _bernoulli_judge(judge_server, p=0.5)
    code = create_scorer("code").generate_score(lambda run: 1.0)
    result = run_evals(
        _data(20), scorers=[_graded(judge_server.judge(instructions="Grade.")), code], trials=3
    )
    spread = result.summary.trials["graded"]
    table = summary_table(result, "t")
    assert "trials: 3 per item" in table
    assert f"graded: 3 trials, mean: run-to-run SD {spread.run_to_run_sd:.3f}" in table
    assert f"flips on {spread.flipped_items} of 20 items" in table
    assert "code: scored once (no judge decides its score: deterministic)" in table
    html = report_html(result)
    assert '<section id="trials">' in html and f"{spread.run_to_run_sd:.3f}" in html
    assert "scored once (no judge decides its score)" in html
    shown = [
        ", ".join(f"{s:.2f}" for s in trials) for trials in result.items["graded.trial_scores"]
    ]
    assert any(f"Trials: {text} (spread" in html for text in shown)
    one = run_evals(_data(2), scorers=[code])
    assert "trials:" not in summary_table(one, "t") and 'id="trials"' not in report_html(one)


EVAL_FILE = """\
import evaldag

judge = evaldag.Judge(
    "openai/mock-judge", api_base={url!r}, api_key="sk-test", instructions="Grade."
)
scorers = [
    evaldag.create_scorer("graded", judge=judge).generate_score(
        evaldag.PromptStep("Grade the answer", lambda run: f"Grade this answer: {{run.output}}")
    )
]
"""


def test_evaldag_run_takes_trials_and_a_reducer(judge_server, tmp_path, capsys):
    from evaldag._cli.main import main

    _bernoulli_judge(judge_server, p=0.5)
    (tmp_path / "eval.py").write_text(EVAL_FILE.format(url=judge_server.url))
    _data(4).to_json(tmp_path / "items.jsonl", orient="records", lines=True)
    args = ["run", str(tmp_path / "eval.py"), "--data", str(tmp_path / "items.jsonl")]
    out_file = tmp_path / "r.parquet"
    code = main([*args, "--trials", "3", "--reducer", "pass_hat_k(2)", "--out", str(out_file)])
    out = capsys.readouterr().out
    assert code == 0 and "trials: 3 per item" in out and "graded: 3 trials, pass_hat_k(2)" in out
    assert len(judge_server.requests) == 12
    assert EvalResult.read_parquet(out_file).summary.trials["graded"].reducer == "pass_hat_k(2)"
    with pytest.raises(SystemExit) as exited:
        main([*args, "--trials", "0", "--no-checkpoint"])
    assert exited.value.code == 3
    assert "argument --trials: must be an integer >= 1, got '0'" in capsys.readouterr().err
    assert main([*args, "--trials", "2", "--reducer", "pass_at_k(3)", "--no-checkpoint"]) == 3
    assert (
        "reducer='pass_at_k(3)' draws 3 trials of an item, but trials=2" in capsys.readouterr().err
    )


def test_the_estimate_counts_every_trial(judge_server):
    from evaldag import cost_estimate

    code = create_scorer("code").generate_score(lambda run: 1.0)
    scorers = [_graded(judge_server.judge(instructions="Grade.")), code]
    once = cost_estimate(_data(4), scorers=scorers)
    thrice = cost_estimate(_data(4), scorers=scorers, trials=3)
    assert (once.scorers["graded"].calls, thrice.scorers["graded"].calls) == (4, 12)
    assert thrice.total.input_tokens == 3 * once.total.input_tokens
    assert thrice.unjudged == ["code"] and not judge_server.requests


def test_the_cluster_bootstrap_resamples_items_not_trials():
    from evaldag._results.intervals import bootstrap_interval, cluster_bootstrap_interval

    # each item's five trials agree: they are one measurement, not five
    verdicts = np.random.default_rng(1).integers(0, 2, 100).astype(float)
    clustered = cluster_bootstrap_interval(verdicts * 5, np.full(100, 5))
    by_item = bootstrap_interval(verdicts)
    as_if_independent = bootstrap_interval(np.repeat(verdicts, 5))

    def width(interval):
        return interval.high - interval.low

    assert width(clustered) == pytest.approx(width(by_item), rel=0.1)
    assert width(as_if_independent) < 0.6 * width(clustered)  # 1/sqrt(5) ≈ 0.45 as wide
    assert cluster_bootstrap_interval([3.0], [3]) is None


@pytest.mark.parametrize(
    ("threshold", "max_score", "words"),
    [
        ({"max": 0.3}, 1, "has a maximum: lower scores are better"),
        ({"min": 0.2, "max": 0.8}, 1, "has a maximum"),
        (5, 10, "lies on its scale of 0 to 10"),
    ],
)
def test_a_pass_reducer_is_refused_beside_a_threshold_it_would_misread(
    judge_server, threshold, max_score, words
):
    # The pass reducers make an item's score its chance of passing: a hallucination scorer
    # under {max: 0.3} whose every trial scored 0.9 reduced to 0.0, within the maximum, so the
    # run passed (and every trial at 0.2 reduced to 1.0 and missed it).
    judge_server.reply = {"score": 0.9}
    scorer = create_scorer(
        "graded", judge=judge_server.judge(instructions="Grade."), max_score=max_score
    )
    scorer = scorer.generate_score(PromptStep("Grade", lambda run: f"Grade {run.output}"))
    for reducer in ("pass_at_k(1)", {"graded": pass_hat_k(2)}):
        with pytest.raises(EvalDagError) as raised:
            run_evals(
                _data(2), scorers=[scorer.with_threshold(threshold)], trials=2, reducer=reducer
            )
        assert raised.value.id == "INVALID_REDUCER"
        assert "its chance of passing" in raised.value.message and words in raised.value.message
    assert judge_server.requests == []
    # a minimum on a 0-1 scorer is the pass line of each trial and of the chances alike
    result = run_evals(
        _data(2),
        scorers=[_graded(judge_server.judge(instructions="Grade.")).with_threshold(0.5)],
        trials=2,
        reducer="pass_at_k(1)",
    )
    assert result.verdict == "passed" and result.scores == {"graded": 1.0}


def test_a_pass_reducer_is_refused_for_a_scorer_whose_lower_scores_are_better(judge_server):
    """A trial passes at the scorer's top score: of a toxicity, its worst. pass_at_k(1) over
    trials that were all fully toxic gave each item a chance of passing of 1."""
    judge_server.reply = {"score": 1.0}
    toxic = create_scorer(
        "toxic", judge=judge_server.judge(instructions="Grade."), better="lower"
    ).generate_score(PromptStep("Grade", lambda run: f"Grade {run.output}"))
    for reducer in ("pass_at_k(1)", {"toxic": pass_hat_k(2)}):
        with pytest.raises(EvalDagError) as raised:
            run_evals(_data(2), scorers=[toxic], trials=2, reducer=reducer)
        assert raised.value.id == "INVALID_REDUCER"
        assert "lower scores of 'toxic' are better" in raised.value.message
    assert judge_server.requests == []
    result = run_evals(
        _data(2), scorers=[toxic.with_threshold(max=0.2)], trials=2, reducer={"toxic": "max"}
    )
    assert result.scores == {"toxic": 1.0} and result.verdict == "scored"
