"""evaldag.agreement: every figure, and every bootstrap replicate behind its interval, against
scikit-learn's or SciPy's computation on the same items; slices, the items left out, bad input."""

import sys

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn import metrics

import evaldag
from evaldag import create_scorer, not_scorable, run_evals
from evaldag._agreement.statistics import binary_replicates, graded_replicates
from evaldag._results.intervals import resampled_positions
from evaldag.errors import EvalDagError, UntrustworthyRunError

RESAMPLES = 300
RNG = np.random.default_rng(7)
COUNT = 120
#: Labels, and scores that lean towards them: an imperfect judge with ties (two decimals).
LABELS = RNG.integers(0, 2, COUNT)
SCORES = np.round(np.clip(0.35 * LABELS + RNG.normal(0.4, 0.25, COUNT), 0, 1), 2)
SLICES = np.array(["gpt", "claude", "llama"])[RNG.integers(0, 3, COUNT)]


def labelled_result(scores, columns, *, scorer_id="judge", errors=(), max_score=1):
    """A run whose scorer gives ``scores`` in item order (None: not scorable) and fails on the
    items numbered in ``errors``; ``columns`` are data columns beside it. A run that scored
    nothing is returned as run_evals' error carries it."""

    def prepared(run):
        return not_scorable("no score planted") if scores[run.n] is None else None

    def score(run):
        if run.n in errors:
            raise ValueError("boom")
        return float(scores[run.n])

    scorer = (
        create_scorer(scorer_id, columns=("n",), max_score=max_score)
        .preprocess(prepared)
        .generate_score(score)
    )
    data = pd.DataFrame({"input": "q", "output": "a", "n": range(len(scores)), **columns})
    try:
        return run_evals(data, scorers=[scorer], progress=False)
    except UntrustworthyRunError as error:
        return error.result


@pytest.fixture(scope="module")
def binary_run():
    return labelled_result(
        list(SCORES), {"human": np.where(LABELS == 1, "faithful", "not"), "LLM": SLICES}
    )


def _best_threshold(labels, scores):
    """The lowest score at which ``score >= t`` reaches the best balanced accuracy, (TPR + TNR) / 2
    from scikit-learn's ROC curve at every observed score: one call a resample, where a
    ``balanced_accuracy_score`` call per score took 0.15 s of CPU (checked against it once, in
    ``test_binary_figures_are_scikit_learns``)."""
    fpr, tpr, thresholds = metrics.roc_curve(labels, scores, drop_intermediate=False)
    balanced = (tpr[1:] + 1 - fpr[1:]) / 2  # [0] is the threshold above every score
    return thresholds[1:][np.isclose(balanced, balanced.max(), rtol=0, atol=1e-12)].min()


def _best_threshold_by_each_score(labels, scores):
    """The same, by ``balanced_accuracy_score`` at each observed score."""
    balanced = {
        t: metrics.balanced_accuracy_score(labels, (scores >= t).astype(int))
        for t in np.unique(scores)
    }
    best = max(balanced.values())
    return min(t for t, value in balanced.items() if value == best)


def _binary_by_sklearn(labels, scores, threshold=0.5):
    """Each binary figure by scikit-learn; an undefined one (no positive call: precision) NaN."""
    predicted = (scores >= threshold).astype(int)
    undefined = {"zero_division": np.nan}
    return {
        "precision": metrics.precision_score(labels, predicted, **undefined),
        "recall": metrics.recall_score(labels, predicted, **undefined),
        "f1": metrics.f1_score(labels, predicted, **undefined),
        "balanced_accuracy": metrics.balanced_accuracy_score(labels, predicted),
        "cohen_kappa": metrics.cohen_kappa_score(labels, predicted),
        "roc_auc": metrics.roc_auc_score(labels, scores),
        "best_threshold": _best_threshold(labels, scores),
    }


def test_binary_figures_are_scikit_learns(binary_run):
    found = evaldag.agreement(binary_run, labels="human", positive="faithful", resamples=RESAMPLES)
    assert found.kind == "binary" and found.positive == ["faithful"] and found.threshold == 0.5
    overall = found.overall
    assert overall.compared == COUNT and overall.positives == int(LABELS.sum())
    expected = _binary_by_sklearn(LABELS, SCORES)
    assert expected["best_threshold"] == _best_threshold_by_each_score(LABELS, SCORES)
    assert list(overall.figures) == list(expected)
    for name, value in expected.items():
        assert overall.figures[name].value == pytest.approx(value, abs=1e-12), name
    tn, fp, fn, tp = metrics.confusion_matrix(LABELS, (SCORES >= 0.5).astype(int)).ravel()
    assert overall.confusion.model_dump() == {
        "true_positive": tp,
        "false_positive": fp,
        "false_negative": fn,
        "true_negative": tn,
    }
    fpr, tpr, thresholds = metrics.roc_curve(LABELS, SCORES, drop_intermediate=False)
    assert [p.false_positive_rate for p in overall.roc] == pytest.approx(list(fpr))
    assert [p.true_positive_rate for p in overall.roc] == pytest.approx(list(tpr))
    assert [p.threshold for p in overall.roc][1:] == pytest.approx(list(thresholds)[1:])


def test_binary_intervals_are_percentiles_of_scikit_learn_on_each_resample(binary_run):
    found = evaldag.agreement(binary_run, labels="human", positive="faithful", resamples=RESAMPLES)
    positions = resampled_positions(COUNT, resamples=RESAMPLES)
    by_resample = [_binary_by_sklearn(LABELS[p], SCORES[p]) for p in positions]
    for name, figure in found.overall.figures.items():
        replicates = np.array([figures[name] for figures in by_resample])
        low, high = np.percentile(replicates, [2.5, 97.5])
        assert (figure.interval.low, figure.interval.high) == pytest.approx((low, high)), name
        assert figure.interval.low <= figure.value <= figure.interval.high
        assert figure.interval.resamples == RESAMPLES and figure.interval.level == 0.95


def test_each_replicate_is_scikit_learns_on_its_resample_even_where_undefined():
    labels = np.array([1, 1, 0, 0, 1, 0, 1, 0])
    scores = np.array([0.9, 0.2, 0.6, 0.1, 0.7, 0.4, 0.5, 0.3])
    positions = resampled_positions(len(labels), resamples=400, seed=3)
    replicates = binary_replicates(labels, scores, 0.5, positions)
    undefined = 0
    for r, p in enumerate(positions):
        y, s = labels[p], scores[p]
        if len(np.unique(y)) < 2:
            undefined += 1
            for name in ("balanced_accuracy", "roc_auc", "best_threshold"):
                assert np.isnan(replicates[name][r])
            continue
        for name, value in _binary_by_sklearn(y, s).items():
            assert replicates[name][r] == pytest.approx(value, abs=1e-12, nan_ok=True), (r, name)
    assert undefined  # some resamples drew one class: the NaN path ran


def test_graded_figures_and_intervals_are_scipys_and_scikit_learns():
    grades = RNG.integers(1, 6, 80)
    scores = np.round(np.clip(grades / 5 + RNG.normal(0, 0.2, 80), 0, 1), 1)
    run = labelled_result(list(scores), {"grade": grades})
    found = evaldag.agreement(run, labels="grade", resamples=RESAMPLES)
    assert found.kind == "graded" and found.threshold is None and found.overall.confusion is None

    def by_library(y, s):
        return {
            "spearman": stats.spearmanr(y, s).statistic,
            "kendall_tau": stats.kendalltau(y, s).statistic,
            "mae": metrics.mean_absolute_error(y, s),
        }

    for name, value in by_library(grades, scores).items():
        assert found.overall.figures[name].value == pytest.approx(value, abs=1e-12), name
    positions = resampled_positions(80, resamples=RESAMPLES)
    by_resample = [by_library(grades[p], scores[p]) for p in positions]
    for name, figure in found.overall.figures.items():
        low, high = np.percentile([f[name] for f in by_resample], [2.5, 97.5])
        assert (figure.interval.low, figure.interval.high) == pytest.approx((low, high)), name
    replicates = graded_replicates(grades.astype(float), scores, positions)
    for r in (0, 17, 299):
        for name, value in by_resample[r].items():
            assert replicates[name][r] == pytest.approx(value, abs=1e-12), name


def test_ordinal_text_labels_become_evenly_spaced_places():
    names = ["bad", "fair", "good"]
    labels = [names[n % 3] for n in range(30)]
    scores = [round(0.45 * (n % 3) + 0.01 * (n % 7), 2) for n in range(30)]
    found = evaldag.agreement(
        labelled_result(scores, {"rating": labels}),
        labels="rating",
        order=names,
        resamples=50,
    )
    places = np.array([names.index(label) / 2 for label in labels])
    assert found.order == names
    assert found.overall.figures["mae"].value == pytest.approx(
        metrics.mean_absolute_error(places, scores)
    )
    assert found.overall.figures["spearman"].value == pytest.approx(
        stats.spearmanr(places, scores).statistic
    )


def test_every_figure_per_slice(binary_run):
    found = evaldag.agreement(
        binary_run, labels="human", positive="faithful", by="LLM", resamples=50
    )
    assert [s.slice for s in found.slices] == ["claude", "gpt", "llama"]
    for part in found.slices:
        mask = SLICES == part.slice
        assert part.compared == part.items == mask.sum()
        for name, value in _binary_by_sklearn(LABELS[mask], SCORES[mask]).items():
            assert part.figures[name].value == pytest.approx(value, abs=1e-12), (part.slice, name)
    frame = found.to_frame()
    assert list(frame.columns) == ["slice", "compared", "figure", "value", "low", "high"]
    assert len(frame) == 4 * 7 and pd.isna(frame["slice"].iloc[0])


def test_items_left_out_are_counted_by_why_never_read_as_a_class():
    scores = [0.9, 0.1, None, 0.8, 0.3, 0.7, 0.6, 0.2]
    labels = [True, False, True, None, False, True, False, None]
    run = labelled_result(scores, {"ok": labels, "n2": range(8)}, errors=(6,))
    found = evaldag.agreement(run, labels="ok", resamples=50)
    overall = found.overall
    assert found.positive == [True]
    assert (overall.items, overall.compared, overall.failed, overall.not_scorable) == (8, 4, 1, 1)
    assert overall.unlabelled == 2 and overall.skipped == 0
    kept = [0, 1, 4, 5]
    y = np.array([labels[k] for k in kept], dtype=int)
    s = np.array([scores[k] for k in kept])
    assert overall.figures["f1"].value == pytest.approx(metrics.f1_score(y, (s >= 0.5)))


def test_a_positive_label_the_items_lack_is_said_unless_none_is_there(binary_run):
    found = evaldag.agreement(
        binary_run, labels="human", positive=["faithful", "Benign"], resamples=50
    )
    assert found.overall.notes[0] == "positive=['Benign']: no item has this label"
    assert found.overall.positives == int(LABELS.sum())
    with pytest.raises(EvalDagError, match="positive='Benign' is no label in 'human'"):
        evaldag.agreement(binary_run, labels="human", positive=["Benign", "Unwanted"])


def test_one_class_and_no_positive_call_are_undefined_and_said():
    run = labelled_result([0.1, 0.2, 0.3, 0.4], {"ok": [1, 1, 1, 1]})
    overall = evaldag.agreement(run, labels="ok", resamples=50).overall
    assert overall.figures["roc_auc"].value is None and overall.figures["roc_auc"].interval is None
    assert overall.figures["precision"].value is None
    assert overall.figures["recall"].value == 0
    assert any("every compared label is positive" in note for note in overall.notes)
    assert any("no score reached the threshold 0.5" in note for note in overall.notes)
    assert overall.roc == []


def test_a_threshold_splits_scores_beyond_one():
    run = labelled_result([1, 2, 3, 4, 5, 4], {"ok": [0, 0, 1, 1, 1, 0]}, max_score=5)
    with pytest.raises(EvalDagError, match="go up to 5: give threshold="):
        evaldag.agreement(run, labels="ok")
    found = evaldag.agreement(run, labels="ok", threshold=3.5, resamples=50)
    assert found.overall.confusion.model_dump() == {
        "true_positive": 2,
        "false_positive": 1,
        "false_negative": 1,
        "true_negative": 2,
    }


def test_results_files_are_read(binary_run, tmp_path):
    path = binary_run.to_parquet(tmp_path / "run.parquet")
    from_file = evaldag.agreement(str(path), labels="human", positive="faithful", resamples=50)
    in_memory = evaldag.agreement(binary_run, labels="human", positive="faithful", resamples=50)
    assert from_file == in_memory


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"labels": "humen", "positive": "faithful"}, r"labels='humen'.*did you mean 'human'"),
        ({"labels": "human"}, r"the labels in 'human' are text \(\['faithful', 'not'\]\)"),
        ({"labels": "human", "positive": "Faithful"}, r"positive='Faithful' is no label in"),
        ({"labels": "human", "positive": "faithful", "scorer": "jugde"}, r"did you mean 'judge'"),
        ({"labels": "human", "positive": "faithful", "by": "llm"}, r"by='llm'.*'LLM'"),
        ({"labels": "human", "positive": "faithful", "threshold": "high"}, "a finite number"),
        ({"labels": "human", "positive": "faithful", "order": ["not"]}, "not both"),
        ({"labels": "human", "positive": "faithful", "resamples": 0}, "resamples must"),
        ({"labels": "LLM", "order": ["gpt", "llama"]}, r"'LLM' holds 'claude'"),
    ],
)
def test_bad_options_are_errors_naming_the_field(binary_run, options, message):
    with pytest.raises(EvalDagError, match=message) as raised:
        evaldag.agreement(binary_run, **options)
    assert raised.value.domain == "AGREEMENT"


def test_bad_labels_and_scores_are_errors_naming_the_field():
    run = labelled_result([0.2, 0.4, 0.9], {"gold": [0.1, 0.5, 0.8], "none": [None] * 3})
    with pytest.raises(EvalDagError, match="'gold' are continuous numbers"):
        evaldag.agreement(run, labels="gold", positive=0.8)
    with pytest.raises(EvalDagError, match="'none' holds no label: all 3 of its values"):
        evaldag.agreement(run, labels="none")
    failing = labelled_result([None, 0.3, 0.5], {"gold": [0, 1, 1]}, errors=(1, 2))
    with pytest.raises(EvalDagError, match=r"scored none of the 3 items \(2 failed, 1 not sc"):
        evaldag.agreement(failing, labels="gold")
    half = labelled_result([0.2, 0.4, None], {"gold": [None, None, 1]})
    with pytest.raises(EvalDagError, match="no item 'judge' scored has a label in 'gold'"):
        evaldag.agreement(half, labels="gold")
    two = run_evals(
        pd.DataFrame({"input": ["q"], "output": ["a"], "y": [1]}),
        scorers=[create_scorer(i).generate_score(lambda: 1.0) for i in ("a", "b")],
        progress=False,
    )
    with pytest.raises(EvalDagError, match=r"the run has 2 scorers \(a, b\): give scorer="):
        evaldag.agreement(two, labels="y")


def test_without_scikit_learn_the_error_names_the_extra(binary_run, monkeypatch):
    monkeypatch.setitem(sys.modules, "sklearn", None)
    with pytest.raises(EvalDagError, match=r"pip install 'evaldag\[agreement\]'") as raised:
        evaldag.agreement(binary_run, labels="human", positive="faithful")
    assert raised.value.id == "EVALDAG_AGREEMENT_NOT_INSTALLED"
