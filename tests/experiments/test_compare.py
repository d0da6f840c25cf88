"""evaldag compare: Mastra's per-scorer stats, paired per-item deltas and their bootstrap intervals.

The must-show: two runs of the demo data, one with a planted regression (eight answers replaced
by a refusal) that is found, one with a planted noise-only change (a few answers a little better,
a few a little worse) that Mastra's rule alone would call a regression and the interval does not.
"""

import copy
import re

import pandas as pd
import pytest

from evaldag import EvalResult, create_scorer, not_scorable, run_evals
from evaldag._cli.demo import demo_gates, demo_items, demo_scorers
from evaldag._cli.main import main
from evaldag._experiments.compare import compare_experiments
from evaldag._report.html import report_html
from evaldag._results.intervals import bootstrap_interval
from evaldag.errors import EvalDagError, UntrustworthyRunError

REFUSAL = "Sorry, I cannot help with that here. Please write to our team."
#: Well-answered conversations whose answers the regressed run replaces by REFUSAL.
REGRESSED_IDS = {"rag-02", "rag-05", "rag-09", "rag-10", "agent-01", "agent-04", "agent-09"}


def _with_answer(item, rewrite):
    """The demo item with its last assistant text rewritten."""
    item = copy.deepcopy(item)
    message = [m for m in item["output"] if m["role"] == "assistant"][-1]
    for part in message["content"]["parts"]:
        if part["type"] == "text":
            part["text"] = rewrite(part["text"])
    message["content"]["content"] = rewrite(message["content"]["content"])
    return item


def _question(item):
    return item["input"]["inputMessages"][-1]["content"]["content"]


def _without_last_sentence(text):
    sentences = text.split(". ")
    return ". ".join(sentences[:-1]) + "." if len(sentences) > 1 else text


def _noisy(item):
    """Four answers lose their last sentence, five name a word of the question once more."""
    if item["id"] in ("rag-07", "agent-09", "agent-10", "agent-15"):
        return _with_answer(item, _without_last_sentence)
    if item["id"] in ("rag-01", "rag-11", "rag-14", "agent-08", "agent-11"):
        word = re.findall(r"[A-Za-z]{5,}", _question(item))[-1]
        return _with_answer(item, lambda text: f"{text} (About: {word}.)")
    return item


def _demo_run(items, path):
    run_evals(items, scorers=demo_scorers(None), gates=demo_gates(), out=path, progress=False)
    return str(path)


@pytest.fixture(scope="module")
def demo_runs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("runs")
    assert main(["demo", "--judge", "none", "--out-dir", str(folder / "a")]) == 0
    items = demo_items()
    regressed = [
        _with_answer(item, lambda _: REFUSAL) if item["id"] in REGRESSED_IDS else item
        for item in items
    ]
    return {
        "a": str(folder / "a" / "results.parquet"),
        "regressed": _demo_run(regressed, folder / "regressed.parquet"),
        "noisy": _demo_run([_noisy(item) for item in items], folder / "noisy.parquet"),
    }


def _row(text, scorer_id):
    """The cells of ``scorer_id``'s rows in both tables of the printed comparison."""
    return [line.split() for line in text.splitlines() if line.split()[:1] == [scorer_id]][:2]


def _interval(paired_row):
    return [float(x) for x in re.findall(r"[-+]\d\.\d\d", " ".join(paired_row[5:7]))]


@pytest.mark.slow
def test_the_planted_regression_is_found(demo_runs, capsys):
    assert main(["compare", demo_runs["a"], demo_runs["regressed"]]) == 1
    out = capsys.readouterr().out
    assert "33 items paired by the data's 'id' column" in out
    for scorer_id in ("completeness-scorer", "keyword-coverage-scorer"):
        stats, paired = _row(out, scorer_id)
        assert stats[-1] == "regression"  # Mastra's rule
        assert paired[1:4] == ["33", "7", "0"]  # paired, worse, better
        low, high = _interval(paired)
        assert low < high < 0
        assert paired[-1] == "REGRESSED"
    assert "keyword-coverage-scorer  rag-02 1.00 -> 0.00, rag-05 1.00 -> 0.00" in out
    assert (
        out.rstrip()
        .splitlines()[-1]
        .startswith("REGRESSED: completeness-scorer, keyword-coverage-scorer")
    )
    for gate in ("no-direct-refunds", "check-max-tool-calls", "no-internal-notes"):
        assert _row(out, gate)[1][-3:] == ["no", "clear", "change"]


@pytest.mark.slow
def test_a_noise_only_change_is_not_flagged(demo_runs, capsys):
    assert main(["compare", demo_runs["a"], demo_runs["noisy"]]) == 0
    out = capsys.readouterr().out
    stats, paired = _row(out, "keyword-coverage-scorer")
    # Mastra's rule alone calls it a regression: the average fell a little ...
    assert float(stats[8]) < 0 and stats[-1] == "regression"
    # ... but items moved both ways, and the interval holds 0.
    assert paired[2:4] == ["4", "3"]
    low, high = _interval(paired)
    assert low < 0 < high
    assert paired[-3:] == ["no", "clear", "change"]
    assert _row(out, "completeness-scorer")[1][-3:] == ["no", "clear", "change"]
    assert out.rstrip().splitlines()[-1].startswith("no regression")


@pytest.mark.slow
def test_the_comparison_as_values(demo_runs):
    comparison = compare_experiments(demo_runs["a"], demo_runs["regressed"])
    assert comparison.regressions == ["completeness-scorer", "keyword-coverage-scorer"]
    assert comparison.a.experiment_id and comparison.a.experiment_id != comparison.b.experiment_id
    completeness = comparison.scorers[0]
    assert completeness.a.error_rate == 0 and completeness.a.items == 33
    assert completeness.delta == pytest.approx(completeness.b.average - completeness.a.average)
    # every item is paired, so Mastra's delta and the mean of the paired deltas agree
    assert completeness.paired_delta == pytest.approx(completeness.delta)
    deltas = comparison.item_deltas
    worst = deltas[deltas["scorer"] == "keyword-coverage-scorer"].iloc[0]
    assert (worst["item"], worst["a"], worst["b"]) == ("rag-02", 1.0, 0.0)
    again = compare_experiments(demo_runs["a"], demo_runs["regressed"])
    assert again.scorers == comparison.scorers  # seeded: the same intervals


def _result(
    scores, *, ids=None, inputs=None, threshold=None, scorer_id="s", errors=(), better="higher"
):
    """An EvalResult whose scorer gives ``scores`` in item order (None: not scorable) and fails
    on the items numbered in ``errors``."""

    def prepared(run):
        return not_scorable("no score planted") if scores[run.n] is None else None

    def score(run):
        if run.n in errors:
            raise ValueError("boom")
        return scores[run.n]

    scorer = create_scorer(scorer_id, columns=("n",), better=better)
    scorer = scorer.preprocess(prepared).generate_score(score)
    data = pd.DataFrame(
        {
            "input": inputs or [f"q{n}" for n in range(len(scores))],
            "output": ["a"] * len(scores),
            "n": range(len(scores)),
        }
    )
    if ids is not None:
        data["id"] = ids
    entry = scorer if threshold is None else scorer.with_threshold(**threshold)
    return run_evals(data, scorers=[entry], progress=False)


def test_items_are_paired_by_id_then_input_then_position():
    a = _result([1.0, 0.0, 0.5], ids=["x", "y", "z"])
    b = _result([0.0, 1.0, 0.5], ids=["y", "x", "z"], inputs=["other", "texts", "here"])
    by_id = compare_experiments(a, b)
    assert by_id.item_key == "id"
    assert by_id.scorers[0].worse == 0 and by_id.scorers[0].paired_delta == 0
    by_input = compare_experiments(_result([1.0, 0.0]), _result([0.0, 1.0], inputs=["q1", "q0"]))
    assert by_input.item_key == "input" and by_input.scorers[0].paired_delta == 0
    by_position = compare_experiments(
        _result([1.0, 0.0], inputs=["q", "q"]), _result([1.0, 1.0], inputs=["q", "q"])
    )
    assert by_position.item_key == "position" and by_position.scorers[0].better == 1
    with pytest.raises(EvalDagError, match="cannot pair the items"):
        compare_experiments(_result([1.0], inputs=["q"]), _result([1.0, 1.0], inputs=["q", "q"]))
    with pytest.raises(EvalDagError, match="'input' repeats 'q'"):
        compare_experiments(
            _result([1.0, 1.0], inputs=["q", "q"]), _result([1.0, 1.0]), key="input"
        )


def test_lower_is_better_for_a_maximum_only_threshold():
    a = _result([0.1] * 6, threshold={"max": 0.5})
    b = _result([0.4] * 6, threshold={"max": 0.5})
    (comparison,) = compare_experiments(a, b).scorers
    assert comparison.direction == "lower" and comparison.regressed
    assert (comparison.worse, comparison.better) == (6, 0)
    flipped = compare_experiments(a, b, directions={"s": "higher"}).scorers[0]
    assert flipped.change == "better" and not flipped.regressed
    with pytest.raises(EvalDagError, match=r"names \['t'\], which neither experiment scored"):
        compare_experiments(a, b, directions={"t": "lower"})


def test_a_rise_of_a_scorer_where_lower_is_better_is_a_regression(tmp_path, capsys):
    """A scorer of what should not be there (bias, hallucination, toxicity: better='lower')
    is compared that way without a threshold: a rise was read as an improvement, exit 0."""
    from evaldag import scorers

    assert {s.better for s in (scorers.toxicity("openai/x"), scorers.bias("openai/x"))} == {"lower"}
    assert scorers.hallucination("openai/x").better == "lower"
    a = _result([0.1] * 6, better="lower")
    b = _result([0.4] * 6, better="lower")
    (comparison,) = compare_experiments(a, b).scorers
    assert comparison.direction == "lower" and comparison.regressed
    files = [str(r.to_parquet(tmp_path / f"{n}.parquet")) for n, r in (("a", a), ("b", b))]
    assert main(["compare", *files]) == 1  # read back from the files: the direction is kept
    assert "worse" in capsys.readouterr().out
    with pytest.raises(EvalDagError, match="better of scorer 'x' must be 'higher' or 'lower'"):
        create_scorer("x", better="up")


def test_the_pass_rate_of_a_scorer_where_lower_is_better_counts_the_low_scores():
    """Mastra's pass is a score at or above 0.5: of a toxicity, a toxic item. A candidate that
    made 5 of 6 answers toxic showed its pass rate rising from 0 % to 83 %."""
    a = _result([0.1] * 6, better="lower")
    b = _result([0.9] * 5 + [0.1], better="lower")
    (comparison,) = compare_experiments(a, b).scorers
    assert (comparison.a.pass_rate, comparison.b.pass_rate) == (1.0, pytest.approx(1 / 6))
    higher = compare_experiments(_result([0.9] * 6), _result([0.1] * 5 + [0.9])).scorers[0]
    assert (higher.a.pass_rate, higher.b.pass_rate) == (1.0, pytest.approx(1 / 6))


def test_a_clear_drop_within_the_threshold_is_no_regression():
    a, b = _result([1.0] * 5), _result([0.9] * 5)
    (comparison,) = compare_experiments(a, b, threshold=0.2).scorers
    assert comparison.change == "worse" and not comparison.regressed
    assert compare_experiments(a, b).scorers[0].regressed


def test_scores_lost_in_b_regress_and_a_scorer_only_in_one_run_does_not():
    a = _result([1.0, 1.0, 1.0])
    with pytest.raises(UntrustworthyRunError) as failed_everywhere:
        _result([1.0, 1.0, 1.0], errors=[0, 1, 2])
    b = failed_everywhere.value.result
    (lost,) = compare_experiments(a, b).scorers
    assert lost.b.error_rate == 1 and lost.b.average == 0  # Mastra's average of no scores
    assert lost.paired == 0 and lost.interval is None and lost.regressed
    other = _result([0.0, 0.0, 0.0], scorer_id="t")
    swapped = compare_experiments(a, other)
    changes = {s.scorer_id: (s.change, s.regressed) for s in swapped.scorers}
    assert changes == {"s": ("removed", False), "t": ("added", False)}
    assert swapped.missing_scorers == ["s"] and not swapped.passed  # B lacks A's scorer


def _two_scorer_result(ids, *, without=None):
    """Items named by ``ids``, scored 1 by scorer ``s`` and 0.5 by ``t`` (unless it is
    ``without``), with a gate ``g``."""
    scorers = [create_scorer("s").generate_score(lambda: 1.0)]
    scorers += [create_scorer("t").generate_score(lambda: 0.5)] if without != "t" else []
    data = pd.DataFrame({"id": ids, "input": [f"q-{k}" for k in ids], "output": "a"})
    gate = create_scorer("g").generate_score(lambda: 1)
    return run_evals(data, scorers=scorers, gates=[gate], progress=False)


IDS = [f"item-{n:02d}" for n in range(12)]


def test_a_candidate_lacking_items_or_scorers_does_not_pass():
    a = _two_scorer_result(IDS)
    half = _two_scorer_result(IDS[::2] + ["new-1"], without="t")
    comparison = compare_experiments(a, half)
    assert comparison.regressions == []  # what both have is unchanged...
    assert comparison.missing_scorers == ["t"]
    assert comparison.missing_items == IDS[1::2]
    assert comparison.added_items == ["new-1"]  # listed, not held against B
    assert comparison.incomplete and not comparison.passed  # ...but B cannot stand in for A
    allowed = compare_experiments(a, half, allow_missing=True)
    assert allowed.passed and allowed.missing_items == IDS[1::2]
    more = _two_scorer_result(IDS[:6] + ["new-1"])
    extra = compare_experiments(_two_scorer_result(IDS[:6]), more)
    assert extra.added_items == ["new-1"] and not extra.incomplete and extra.passed
    assert compare_experiments(a, _two_scorer_result(IDS)).passed


def test_compare_exits_1_naming_what_the_candidate_lacks(tmp_path, capsys):
    a = _two_scorer_result(IDS).to_parquet(tmp_path / "a.parquet")
    half = _two_scorer_result(IDS[::2] + ["new-1"], without="t")
    b = half.to_parquet(tmp_path / "b.parquet")
    assert main(["compare", str(a), str(b)]) == 1
    out = capsys.readouterr().out
    assert "  scorers and gates of A that B lacks: t\n" in out
    assert (
        "  items of A that B lacks: 6 of 12 (by the data's 'id' column): item-01, item-03, "
        "item-05, item-07, item-09 and 1 more\n"
    ) in out
    assert "  items only B has (not compared): 1 (by the data's 'id' column): new-1\n" in out
    last = out.rstrip().splitlines()[-1]
    assert last.startswith("INCOMPLETE: B lacks 1 scorer or gate and 6 items of A's")
    assert "--allow-missing" in last
    assert main(["compare", str(a), str(b), "--allow-missing"]) == 0
    out = capsys.readouterr().out
    assert "items of A that B lacks: 6 of 12" in out  # still listed
    assert out.rstrip().splitlines()[-1] == (
        "B lacks 1 scorer or gate and 6 items of A's; --allow-missing: compared on what both have"
    )
    # B with items A lacks, and nothing missing: a clean comparison, the extras listed
    more = _two_scorer_result([*IDS, "new-1"]).to_parquet(tmp_path / "more.parquet")
    assert main(["compare", str(a), str(more)]) == 0
    out = capsys.readouterr().out
    assert "items only B has (not compared): 1" in out and "INCOMPLETE" not in out


def test_a_candidate_failing_on_the_items_a_scored_does_not_pass(tmp_path, capsys):
    """B failed on A's weakest item and could not score another: unpaired, they left the
    deltas (no clear change) and Mastra's average rose (+0.14 before), exit 0. Scores B lost
    make it incomplete; items neither run scored are no loss."""
    ids = ["hard", "easy-1", "easy-2", "easy-3", "odd"]
    a = _result([0.2, 0.9, 0.9, 0.9, None], ids=ids)
    b = _result([0.2, None, 0.9, 0.9, None], ids=ids, errors=[0])
    comparison = compare_experiments(a, b)
    (scorer,) = comparison.scorers
    assert scorer.delta > 0 and scorer.paired == 2 and not scorer.regressed
    assert comparison.lost_scores == {"s": ["hard", "easy-1"]}
    assert comparison.incomplete and not comparison.passed
    assert compare_experiments(a, b, allow_missing=True).passed
    assert compare_experiments(a, a).lost_scores == {}
    paths = [r.to_parquet(tmp_path / f"{name}.parquet") for name, r in (("a", a), ("b", b))]
    assert main(["compare", *map(str, paths)]) == 1
    out = capsys.readouterr().out
    assert (
        "  scores of A that B lost (s: B failed on or could not score the item): 2 (by the "
        "data's 'id' column): hard, easy-1\n"
    ) in out
    assert out.rstrip().splitlines()[-1].startswith("INCOMPLETE: B lacks 2 scores of A's")


def test_not_scorable_items_count_as_errors_in_mastras_stats_and_are_not_paired():
    a, b = _result([1.0, None, 0.4, 0.6]), _result([1.0, 0.2, None, 0.5])
    (comparison,) = compare_experiments(a, b).scorers
    assert comparison.a.error_rate == 0.25 and comparison.a.pass_rate == pytest.approx(2 / 3)
    assert comparison.paired == 2


def test_bootstrap_intervals_are_seeded_percentiles():
    assert bootstrap_interval([0.5]) is None
    constant = bootstrap_interval([-0.1] * 20)
    assert (constant.low, constant.high) == pytest.approx((-0.1, -0.1))
    values = [0, 1] * 15 + [1] * 10
    first, second = bootstrap_interval(values), bootstrap_interval(values)
    assert first == second and first.resamples == 10_000 and first.seed == 0
    assert first.low < sum(values) / len(values) < first.high
    assert bootstrap_interval(values, seed=1) != first
    continuous = [n / 97 for n in range(97)]
    interval = bootstrap_interval(continuous)
    assert interval.low < 0.5 < interval.high and interval.high - interval.low < 0.25


def test_each_average_carries_its_interval_into_the_summary_and_the_file(tmp_path):
    result = _result([1.0, 0.0, 1.0, 1.0])
    interval = result.summary.intervals["s"]
    assert interval.low <= result.scores["s"] <= interval.high
    result.to_parquet(tmp_path / "r.parquet")
    assert EvalResult.read_parquet(tmp_path / "r.parquet").summary.intervals["s"] == interval
    assert f"4 scored · 95 % interval {interval}" in report_html(result)


def test_a_missing_file_is_a_named_error(tmp_path, capsys):
    assert main(["compare", str(tmp_path / "nope.parquet"), str(tmp_path / "b.parquet")]) == 3
    assert "is not a results file" in capsys.readouterr().err


def test_runs_in_a_score_store_are_compared_by_experiment_id(tmp_path, capsys):
    from evaldag._store.locations import save_result

    store = tmp_path / "scores.db"
    a = _result([1.0, 1.0, 1.0, 1.0], ids=["w", "x", "y", "z"])
    b = _result([0.0, 0.0, 0.0, 1.0], ids=["w", "x", "y", "z"])
    save_result(store, a)
    save_result(store, b)
    comparison = compare_experiments(a.experiment_id, b.experiment_id, store=store)
    assert comparison.item_key == "id" and comparison.regressions == ["s"]
    assert comparison.a.experiment_id == a.experiment_id and comparison.a.source == str(store)
    assert main(["compare", a.experiment_id, b.experiment_id, "--store", str(store)]) == 1
    assert "REGRESSED: s" in capsys.readouterr().out


def _gated(failing, n=100):
    """``n`` items with ids, scored 1 by ``s``; the gate fails on the items numbered in
    ``failing`` (their output says 'bad')."""
    from evaldag import checks

    data = pd.DataFrame(
        {
            "id": [f"i{k}" for k in range(n)],
            "input": [f"q{k}" for k in range(n)],
            "output": ["bad" if k in failing else "fine" for k in range(n)],
        }
    )
    scorer = create_scorer("s").generate_score(lambda: 1.0)
    return run_evals(data, scorers=[scorer], gates=[checks.excludes("bad")], progress=False)


def test_an_item_newly_failing_a_gate_regresses_it_whatever_the_interval(tmp_path, capsys):
    """Four items that passed the gate in A fail it in B, one the other way: the interval of
    the mean delta holds 0 ("no clear change"), and compare passed, exit 0. A gate holds for
    every item, so each newly failed item is the regression, named."""
    a, b = _gated({5}), _gated({3, 17, 42, 88})
    comparison = compare_experiments(a, b)
    gate = comparison.scorers[1]
    assert gate.role == "gate" and gate.change == "no clear change"  # the interval holds 0
    assert gate.newly_failed == ["i3", "i17", "i42", "i88"] and gate.regressed
    assert comparison.regressions == ["check-excludes"] and not comparison.passed
    assert compare_experiments(a, b, threshold=0.5).regressions == ["check-excludes"]
    assert compare_experiments(b, a).scorers[1].newly_failed == ["i5"]
    assert compare_experiments(a, a).passed  # an item failing in both is no regression
    assert compare_experiments(_gated({5, 9}), _gated({5})).scorers[1].newly_failed == []
    paths = [str(r.to_parquet(tmp_path / f"{n}.parquet")) for n, r in (("a", a), ("b", b))]
    assert main(["compare", *paths, "--threshold", "0.5"]) == 1
    out = capsys.readouterr().out
    assert "  check-excludes: 4 items: i3, i17, i42, i88\n" in out
    assert out.rstrip().splitlines()[-1] == (
        "REGRESSED: check-excludes (gate: 4 items that passed in A fail in B)"
    )
    for option in (
        {"threshold": {"check-excludes": 0.1}},
        {"directions": {"check-excludes": "lower"}},
    ):
        with pytest.raises(EvalDagError, match=r"names the gates \['check-excludes'\]"):
            compare_experiments(a, b, **option)


def test_too_few_resamples_for_the_interval_are_refused(capsys):
    """One resample gave an "interval" of a single mean, and a verdict read from it."""
    a, b = _result([1.0, 0.0, 1.0]), _result([0.0, 0.0, 1.0])
    for resamples in (1, 999, 1000.0, True):
        with pytest.raises(
            EvalDagError,
            match=r"resamples \(--resamples\) must be an integer of "
            r"at least 1,000 for a 95 % interval",
        ) as refused:
            compare_experiments(a, b, resamples=resamples)
        assert refused.value.details == {"option": "resamples", "minimum": 1000}
    assert compare_experiments(a, b, resamples=1000).scorers[0].interval.resamples == 1000
    with pytest.raises(EvalDagError, match="at least 5,000 for a 99 % interval"):
        compare_experiments(a, b, level=0.99, resamples=4999)
    assert compare_experiments(a, b, level=0.99, resamples=5000).scorers[0].interval
    assert main(["compare", "a.parquet", "b.parquet", "--resamples", "1"]) == 3
    assert "resamples (--resamples) must be" in capsys.readouterr().err


def _conversations(failing):
    """Four conversations of two turns; the first turn's gate fails where the answer to "hi"
    says 'bad' (in the conversations numbered in ``failing``)."""
    from evaldag import checks

    data = [
        {
            "id": f"c{k}",
            "turns": [{"input": f"hi {k}", "gates": [checks.excludes("bad")]}, {"input": "bye"}],
        }
        for k in range(4)
    ]

    def target(input):
        return "bad" if input.startswith("hi") and int(input[3:]) in failing else "fine"

    scorer = create_scorer("s").generate_score(lambda: 1.0)
    return run_evals(data, target=target, scorers=[scorer], progress=False)


def test_a_turns_gate_newly_failing_is_a_regression(tmp_path, capsys):
    """Gates on a conversation's turns were not compared at all: B failing the first turn's
    gate on two conversations (its verdict 'failed') compared clean against A, exit 0."""
    a, b = _conversations(set()), _conversations({1, 3})
    assert (a.verdict, b.verdict) == ("passed", "failed")
    comparison = compare_experiments(a, b)
    turn_gate = comparison.scorers[-1]
    assert (turn_gate.scorer_id, turn_gate.role) == ("turn0.check-excludes", "gate")
    assert turn_gate.newly_failed == ["c1", "c3"] and turn_gate.paired == 4
    assert comparison.regressions == ["turn0.check-excludes"] and not comparison.passed
    assert compare_experiments(b, a).passed
    paths = [str(r.to_parquet(tmp_path / f"{n}.parquet")) for n, r in (("a", a), ("b", b))]
    assert main(["compare", *paths]) == 1
    assert "  turn0.check-excludes: 2 items: c1, c3\n" in capsys.readouterr().out
    with pytest.raises(EvalDagError, match=r"names the gates \['turn0.check-excludes'\]"):
        compare_experiments(a, b, threshold={"turn0.check-excludes": 0.5})


def test_a_delta_beside_the_threshold_never_reads_as_within_it(tmp_path, capsys):
    # Shown with two decimals, a drop of 0.0504 against a threshold of 0.05 read
    # '-0.05 ... 0.05 regression'.
    a = _result([0.9, 0.9, 0.9, 0.9])
    b = _result([0.8496, 0.8496, 0.8596, 0.8396])
    files = [str(r.to_parquet(tmp_path / f"{n}.parquet")) for n, r in (("a", a), ("b", b))]
    assert main(["compare", *files, "--threshold", "0.05"]) == 1
    out = capsys.readouterr().out
    stats, deltas = [line.split() for line in out.splitlines() if line.startswith("  s ")][:2]
    assert stats[-4:] == ["-0.0504", "higher", "0.05", "regression"]
    assert deltas[-4:] == ["-0.0504", "[-0.06,", "-0.04]", "REGRESSED"]


def test_a_run_that_measured_nothing_passes_no_comparison(tmp_path, capsys):
    # A baseline whose scorer failed on every item has no scores for a candidate to fall below:
    # 'evaldag compare' said 'no regression' and exited 0, whatever the candidate scored.
    store = str(tmp_path / "scores.db")
    data = pd.DataFrame({"input": ["a", "b", "c"], "output": ["x", "y", "z"]})
    with pytest.raises(UntrustworthyRunError) as raised:
        run_evals(
            data,
            scorers=[create_scorer("s").generate_score(lambda run: 1 / 0)],
            store=store,
            name="broken",
            progress=False,
        )
    why = raised.value.message
    low = create_scorer("s").generate_score(lambda run: 0.1)
    run_evals(data, scorers=[low], store=store, name="candidate", progress=False)
    for a, b, side in (("broken", "candidate", "A"), ("candidate", "broken", "B")):
        comparison = compare_experiments(a, b, store=store, allow_missing=True)
        assert not comparison.passed
        assert main(["compare", a, b, "--store", store, "--allow-missing"]) == 1
        out = capsys.readouterr().out
        assert (
            f"UNTRUSTWORTHY: {side} measured nothing, so nothing can be compared with it: {why}"
            in out
        )
    assert compare_experiments("broken", "candidate", store=store).a.untrustworthy == why


def _gate_errs(errors=(), unscorable=(), n=6):
    """``n`` items with ids, scored 1 by ``s`` and passing the gate ``g``, which raises on the
    items numbered in ``errors`` and cannot score those in ``unscorable``."""

    def prepared(run):
        return not_scorable("no answer to judge") if run.n in unscorable else None

    def score(run):
        if run.n in errors:
            raise ValueError("boom")
        return 1.0

    gate = create_scorer("g", columns=("n",)).preprocess(prepared).generate_score(score)
    data = pd.DataFrame({"id": [f"i{k}" for k in range(n)], "input": "q", "n": range(n)})
    data["output"] = "a"
    scorer = create_scorer("s").generate_score(lambda: 1.0)
    return run_evals(data, scorers=[scorer], gates=[gate], progress=False)


def test_an_item_a_gate_errs_on_in_b_newly_fails_it_even_allowing_missing(tmp_path, capsys):
    """B's gate raised on an item that passed it in A: B's own verdict failed, yet the item
    was only a lost score, and --allow-missing passed B, exit 0. A failed gate item scores 0,
    as run_evals counts it; an item the gate could not score stays a lost score."""
    a, errs, unscorable = _gate_errs(), _gate_errs(errors={2}), _gate_errs(unscorable={3})
    assert (a.verdict, errs.verdict, unscorable.verdict) == ("passed", "failed", "passed")
    for allow_missing in (False, True):
        comparison = compare_experiments(a, errs, allow_missing=allow_missing)
        gate = comparison.scorers[1]
        assert gate.newly_failed == ["i2"] and gate.regressed and gate.paired == 6
        assert comparison.regressions == ["g"] and not comparison.passed
        assert comparison.lost_scores == {}
    assert gate.b.average == errs.gate_results[0].score == pytest.approx(5 / 6)
    allowed = compare_experiments(a, unscorable, allow_missing=True)
    assert allowed.lost_scores == {"g": ["i3"]} and allowed.regressions == [] and allowed.passed
    paths = [str(r.to_parquet(tmp_path / f"{n}.parquet")) for n, r in (("a", a), ("b", errs))]
    assert main(["compare", *paths, "--allow-missing"]) == 1
    assert capsys.readouterr().out.rstrip().splitlines()[-1] == (
        "REGRESSED: g (gate: 1 item that passed in A fails in B)"
    )


def test_a_turn_gate_erring_in_b_newly_fails_it():
    """The check cannot read B's answer to the second conversation (a dict): an error, so the
    turn's gate newly fails there."""
    from evaldag import checks

    data = [
        {"id": f"c{k}", "turns": [{"input": f"hi {k}", "gates": [checks.includes("fine")]}]}
        for k in range(3)
    ]
    scorer = create_scorer("s").generate_score(lambda: 1.0)
    a = run_evals(data, target=lambda input: "fine", scorers=[scorer], progress=False)
    b = run_evals(
        data,
        target=lambda input: {"answer": "fine"} if input == "hi 1" else "fine",
        scorers=[scorer],
        progress=False,
    )
    assert b.verdict == "failed"
    (turn_gate,) = [
        s for s in compare_experiments(a, b, allow_missing=True).scorers if s.role == "gate"
    ]
    assert turn_gate.newly_failed == ["c1"] and turn_gate.regressed
