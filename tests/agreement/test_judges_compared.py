"""Two judges on the same labelled items (evaldag.compare_judges and `evaldag agree --vs`), the
report's agreement section (in headless Chromium too), and `evaldag agree`."""

import json
import math
import os
import re
import shutil
import subprocess

import numpy as np
import pandas as pd
import pytest
from judge_server import JudgeServer
from sklearn import metrics
from test_agreement import COUNT, LABELS, SCORES, SLICES, labelled_result

import evaldag
from evaldag import PromptStep, create_scorer, run_evals
from evaldag._cli.main import main
from evaldag._report.html import report_html, write_report
from evaldag._results.intervals import resampled_positions
from evaldag.errors import EvalDagError

RESAMPLES = 300
RNG = np.random.default_rng(11)
#: Judge B: closer to the labels than A on most items.
SCORES_B = np.round(np.clip(0.55 * LABELS + RNG.normal(0.25, 0.2, COUNT), 0, 1), 2)
IDS = [f"item-{n:03d}" for n in range(COUNT)]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def _columns(order):
    return {
        "id": [IDS[k] for k in order],
        "human": [("faithful" if LABELS[k] else "not") for k in order],
        "LLM": SLICES[order],
    }


@pytest.fixture(scope="module")
def runs():
    """A's run in the items' order; B's in another order, failing on three items."""
    order = RNG.permutation(COUNT)
    a = labelled_result(list(SCORES), _columns(np.arange(COUNT)))
    b = labelled_result(list(SCORES_B[order]), _columns(order), scorer_id="judge-b", errors=(0, 1))
    return a, b, order


def _exact_mcnemar(a_only, b_only):
    """The two-sided exact McNemar p-value from binomial probabilities (math.comb)."""
    n = a_only + b_only
    tail = sum(math.comb(n, k) for k in range(min(a_only, b_only) + 1)) / 2**n
    return min(1.0, 2 * tail)


def _figures(y, s):
    predicted = (s >= 0.5).astype(int)
    return {
        "precision": metrics.precision_score(y, predicted, zero_division=np.nan),
        "f1": metrics.f1_score(y, predicted, zero_division=np.nan),
        "balanced_accuracy": metrics.balanced_accuracy_score(y, predicted),
        "cohen_kappa": metrics.cohen_kappa_score(y, predicted),
        "roc_auc": metrics.roc_auc_score(y, s),
    }


def test_differences_are_paired_and_checked_against_scikit_learn(runs):
    a, b, order = runs
    found = evaldag.compare_judges(a, b, labels="human", positive="faithful", resamples=RESAMPLES)
    assert (
        found.item_key == "id" and found.a.scorer_id == "judge" and found.b.scorer_id == "judge-b"
    )
    failed = set(order[:2])
    kept = np.array([k for k in range(COUNT) if k not in failed])
    assert found.paired == len(kept) == COUNT - 2
    y, s_a, s_b = LABELS[kept], SCORES[kept], SCORES_B[kept]
    expected_a, expected_b = _figures(y, s_a), _figures(y, s_b)
    positions = resampled_positions(len(kept), resamples=RESAMPLES)
    replicates = []
    for p in positions:  # scikit-learn once a judge a resample (each call costs ~5 ms of CPU)
        on_a, on_b = _figures(y[p], s_a[p]), _figures(y[p], s_b[p])
        replicates.append({n: on_b[n] - on_a[n] for n in expected_a})
    for name in expected_a:
        d = found.differences[name]
        assert (d.a, d.b) == pytest.approx((expected_a[name], expected_b[name])), name
        assert d.difference == pytest.approx(expected_b[name] - expected_a[name]), name
        low, high = np.percentile([r[name] for r in replicates], [2.5, 97.5])
        assert (d.interval.low, d.interval.high) == pytest.approx((low, high)), name
    right_a = (s_a >= 0.5) == (y == 1)
    right_b = (s_b >= 0.5) == (y == 1)
    m = found.mcnemar
    assert (m.a_only, m.b_only) == ((right_a & ~right_b).sum(), (right_b & ~right_a).sum())
    assert m.both_right + m.both_wrong + m.a_only + m.b_only == len(kept)
    assert m.p_value == pytest.approx(_exact_mcnemar(m.a_only, m.b_only))
    # each side's own agreement is over its own run
    assert found.a.agreement.overall.compared == COUNT
    assert found.b.agreement.overall.failed == 2
    assert list(found.to_frame().columns) == ["figure", "a", "b", "difference", "low", "high"]


def test_two_judges_of_one_run_side_by_side_with_their_cost_and_time():
    """Two LLM scorers on real judge servers, one slower: same answers, so no difference, and
    the slower judge's time shows."""
    data = pd.DataFrame(
        {"input": [f"q{n}" for n in range(6)], "output": "a", "ok": [1, 0, 1, 0, 1, 1]}
    )
    schema = {
        "type": "object",
        "properties": {"score": {"type": "number"}},
        "required": ["score"],
    }

    def judged(scorer_id, server):
        return (
            create_scorer(scorer_id, judge=server.judge(instructions="You rate answers."))
            .analyze(PromptStep("Rate", lambda run: f"Rate {run.input}", output_schema=schema))
            .generate_score(lambda analyze_step_result: analyze_step_result["score"])
        )

    with JudgeServer({"score": 0.8}) as quick, JudgeServer({"score": 0.8}, latency=0.2) as slow:
        result = run_evals(
            data, scorers=[judged("quick", quick), judged("slow", slow)], progress=False
        )
    found = evaldag.compare_judges(
        result, result, labels="ok", scorer="quick", scorer_b="slow", resamples=50
    )
    assert found.item_key == "position" and found.paired == 6
    assert found.differences["f1"].difference == 0
    assert found.mcnemar.a_only == found.mcnemar.b_only == 0 and found.mcnemar.p_value == 1
    assert found.a.spend.calls == found.b.spend.calls == 6
    assert found.b.spend.tokens == found.a.spend.tokens > 0
    assert found.b.spend.judge_seconds >= 6 * 0.2 > found.a.spend.judge_seconds
    assert found.b.spend.median_item_seconds >= 0.2
    with pytest.raises(EvalDagError, match="same run: give scorer_b= the second judge's"):
        evaldag.compare_judges(result, result, labels="ok", scorer="quick")
    with pytest.raises(EvalDagError, match="both judges are 'quick' of the same run"):
        evaldag.compare_judges(result, result, labels="ok", scorer="quick", scorer_b="quick")


def test_runs_that_label_an_item_differently_are_refused(runs):
    a, _, _ = runs
    flipped = labelled_result(
        list(SCORES), {**_columns(np.arange(COUNT)), "human": ["faithful"] * COUNT}
    )
    with pytest.raises(EvalDagError, match="the two runs label item 'item-00"):
        evaldag.compare_judges(a, flipped, labels="human", positive="faithful")


def test_the_report_draws_the_confusion_matrix_and_the_roc_curve(runs):
    a, b, _ = runs
    found = evaldag.agreement(a, labels="human", positive="faithful", by="LLM", resamples=50)
    page = report_html(a, agreement=[found])
    section = page[page.index('<section id="agreement">') :]
    c = found.overall.confusion
    cells = re.findall(r'<g class="cell (\w+)"><title>([^<]+)</title>', section)
    assert cells == [
        ("agree", f"judge positive, label positive: {c.true_positive}"),
        ("disagree", f"judge positive, label negative: {c.false_positive}"),
        ("disagree", f"judge negative, label positive: {c.false_negative}"),
        ("agree", f"judge negative, label negative: {c.true_negative}"),
    ]
    curve = re.search(r'<polyline class="curve" points="([^"]+)"/>', section).group(1)
    assert len(curve.split()) == len(found.overall.roc)
    assert '<circle class="mark judge"' in section and '<circle class="mark best"' in section
    assert section.count("<tr><td>") >= 7 + 3  # the figures, and a row per LLM
    assert f"{found.overall.figures['roc_auc'].value:.3f}" in section
    assert '<section id="agreement">' not in report_html(a)


def test_agree_command_runs_an_eval_and_compares_another(tmp_path, capsys):
    labelled = tmp_path / "labelled.jsonl"
    rows = [
        {"input": f"q{n}", "output": "a", "sa": SCORES[n], "sb": SCORES_B[n],
         "human_label": bool(LABELS[n]), "LLM": str(SLICES[n])}
        for n in range(40)
    ]  # fmt: skip
    labelled.write_text("".join(json.dumps(row) + "\n" for row in rows))
    for name, column in (("a_eval.py", "sa"), ("b_eval.py", "sb")):
        (tmp_path / name).write_text(
            "from evaldag import create_scorer\n"
            f"scorers = [create_scorer('{name[0]}', columns=('{column}',))"
            f".generate_score(lambda run: float(run.{column}))]\n"
        )
    out, report, figures = tmp_path / "a.parquet", tmp_path / "a.html", tmp_path / "a.json"
    code = main(
        ["agree", str(tmp_path / "a_eval.py"), "--data", str(labelled), "--labels",
         "human_label", "--positive", "true", "--by", "LLM", "--vs", str(tmp_path / "b_eval.py"),
         "--out", str(out), "--report", str(report), "--json", str(figures), "--resamples", "100"]
    )  # fmt: skip
    printed = capsys.readouterr().out
    assert code == 0, printed
    y, s = LABELS[:40], SCORES[:40]
    auc = metrics.roc_auc_score(y, s)
    assert re.search(rf"ROC-AUC\s+{auc:.3f}  \[", printed)
    assert "'a' against the labels in 'human_label' (positive: True;" in printed
    assert "per LLM" in printed and "B 'b'" in printed and "McNemar's exact test" in printed
    saved = json.loads(figures.read_text())
    assert saved["a"]["scorer_id"] == "a" and saved["b"]["scorer_id"] == "b"
    assert '<section id="agreement">' in report.read_text()
    # the results file is read back without running again
    assert main(["agree", str(out), "--labels", "human_label", "--resamples", "100"]) == 0
    assert f"{auc:.3f}" in capsys.readouterr().out
    assert main(["agree", str(out), "--labels", "humanlabel"]) == 3
    assert "labels='humanlabel' is no column" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium package is not installed")
def test_the_agreement_section_renders_in_headless_chromium(runs, tmp_path):
    from PIL import Image

    a, _, _ = runs
    found = evaldag.agreement(a, labels="human", positive="faithful", resamples=50)
    page = write_report(a, tmp_path / "report.html", agreement=[found])
    png, profile = tmp_path / "report.png", tmp_path / "profile"
    done = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         "--no-first-run", f"--user-data-dir={profile}", "--window-size=1280,5000",
         f"--screenshot={png}", page.as_uri()],
        capture_output=True, text=True, timeout=120, env={**os.environ, "HOME": str(profile)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    image = Image.open(png).convert("RGB")
    colours = image.getcolors(maxcolors=1 << 22)
    # The ROC curve is stroked in the accent colour, the confusion matrix's cells in green and
    # red: the SVG was drawn with the stylesheet, not left as text.
    accent = sum(n for n, p in colours if _near(p, (59, 91, 219), 20))
    greens = sum(n for n, p in colours if p[1] > p[0] + 40 and p[1] > p[2] + 30)
    reds = sum(n for n, p in colours if p[0] > p[1] + 60 and p[0] > p[2] + 60)
    assert accent > 150 and greens > 3_000 and reds > 3_000, (accent, greens, reds)


def _near(pixel, colour, tolerance):
    return all(abs(a - b) <= tolerance for a, b in zip(pixel, colour, strict=True))
