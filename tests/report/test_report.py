"""The HTML report: its contents, that it fetches nothing, ``evaldag report``, and how it looks
in a real headless Chromium (Debian's ``chromium`` package; skipped when it is absent)."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conversation_cases import WEATHER  # an OpenAI tool-call transcript

from evaldag import EvalResult, PromptStep, checks, create_scorer, not_scorable, run_evals
from evaldag._report.html import report_html, write_report
from evaldag._report.summary import scorer_summaries
from evaldag._results.eval_result import JudgeLimit, ScorerUsage

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
BIN = Path(sys.executable).parent
EVALDAG = shutil.which("evaldag", path=str(BIN))
COMMAND = [EVALDAG] if EVALDAG else [sys.executable, "-m", "evaldag"]

ITEMS = [
    {"id": "paris", "input": "What is the capital of France?", "output": "Paris is.",
     "ground_truth": "Paris"},
    {"id": "rome", "input": "What is the capital of Italy?", "output": "Rome, of course.",
     "ground_truth": "Rome"},
    {"id": "lisbon", "input": "What is the capital of Spain?", "output": "Lisbon.",
     "ground_truth": "Madrid"},
    {"id": "skip", "input": "Tell me a joke", "output": "No.", "ground_truth": None},
]  # fmt: skip

RATING = {
    "type": "object",
    "properties": {"rating": {"type": "number"}},
    "required": ["rating"],
}


def _exact(run):
    if run.ground_truth is None:
        return not_scorable("no ground truth")
    return 1.0 if run.ground_truth in run.output else 0.0


def _strict(run):
    if run.output == "No.":
        raise ValueError("cannot grade a refusal")
    return 1.0


def _code_scorers() -> list:
    exact = (
        create_scorer("exact", name="Exact match", description="The ground truth is in the output.")
        .preprocess(_exact)
        .generate_score(lambda preprocess_step_result: preprocess_step_result)
        .generate_reason(lambda run, score: f"{run.ground_truth} {'found' if score else 'missing'}")
    )
    return [exact.with_threshold(0.8), create_scorer("strict").generate_score(_strict)]


GATES = [checks.excludes("Lisbon", id="no-lisbon")]


@pytest.fixture(name="result")
def result_fixture() -> EvalResult:
    """A run with a threshold, a gate, a scorer error and a not-scorable item."""
    return run_evals(ITEMS, scorers=_code_scorers(), gates=GATES)


def _judged_result(judge_server) -> EvalResult:
    """The same run with an LLM-judged scorer in front."""
    judge_server.on("Spain", {"rating": 0.1}).reply = {"rating": 0.9}
    judged = (
        create_scorer(
            "helpfulness",
            name="Helpfulness",
            description="How helpful the answer is, as an LLM judge sees it.",
            judge=judge_server.judge(instructions="You rate answers from 0 to 1."),
        )
        .analyze(
            PromptStep(
                "Rate the answer",
                lambda run: f"Question: {run.input}\nAnswer: {run.output}\nRate it.",
                output_schema=RATING,
            )
        )
        .generate_score(lambda analyze_step_result: analyze_step_result["rating"])
    )
    return run_evals(ITEMS, scorers=[judged, *_code_scorers()], gates=GATES)


def _without_dot(monkeypatch) -> None:
    monkeypatch.setenv("PATH", str(BIN))
    assert shutil.which("dot") is None


def test_summaries(result):
    summaries = {s.id: s for s in scorer_summaries(result)}
    assert list(summaries) == ["exact", "strict", "no-lisbon"]
    exact = summaries["exact"]
    assert (exact.name, exact.role, exact.requirement, exact.passed) == (
        "Exact match",
        "scorer",
        0.8,
        False,
    )
    assert (exact.scores, exact.scored, exact.not_scorable) == ((1.0, 1.0, 0.0), 3, 1)
    assert not exact.has_judge
    strict = summaries["strict"]
    assert (strict.scored, strict.errors, strict.requirement, strict.passed) == (3, 1, None, None)
    gate = summaries["no-lisbon"]
    assert (gate.role, gate.mean, gate.requirement, gate.passed) == ("gate", 0.75, 1.0, False)


def test_report_contents(result, monkeypatch):
    _without_dot(monkeypatch)
    page = report_html(result, title="Capitals <quiz>")
    assert "<title>Capitals &lt;quiz&gt; · evaldag report</title>" in page
    assert 'class="verdict verdict-failed"' in page
    assert "gate failed: no-lisbon; 1 of 1 thresholds missed (exact)" in page
    assert "4 items scored by 2 scorers and 1 gate." in page
    # one histogram per scorer and gate
    assert page.count('<svg class="hist"') == 3
    # the worst item first and open: the one failing the gate
    first = page.index('<details class="item" open>')
    assert page.index("lisbon", first) < page.index("paris", first)
    # reasons, errors and not-scorable items
    assert '<p class="reason">Madrid missing</p>' in page
    assert "Failed in step generate_score: Scorer Run Failed: cannot grade a refusal" in page
    assert "Not scorable: no ground truth" in page
    assert "No LLM judge was called in this run." in page
    # without Graphviz: the stages drawing and the DOT text
    assert '<svg class="stages"' in page
    assert "<summary>DOT source of the full Hamilton DAG</summary>" in page


def test_report_shows_judge_records_and_usage(judge_server, monkeypatch):
    result = _judged_result(judge_server)
    _without_dot(monkeypatch)
    page = report_html(result)
    assert '<span class="tag tag-llm">LLM judge</span>' in page
    # the judge's records: prompt and answer of the judged step
    assert "Question: What is the capital of Spain?" in page
    assert "&quot;rating&quot;: 0.1" in page
    # judge usage: 4 calls of 15 tokens each (the loopback server's usage)
    usage = page[page.index('<section id="usage">') :]
    assert '<td><code>helpfulness</code></td><td class="num">4</td>' in usage
    assert '<td class="num">60</td>' in usage
    # the stages drawing marks the judged step
    assert '<g class="node-llm"><title>helpfulness.analyze</title>' in page


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
def test_report_embeds_graphviz_svg_when_dot_exists(result):
    page = report_html(result)
    dag = page[page.index('<section id="dag">') :]
    assert '<svg class="stages"' in dag
    full = dag[dag.index('<div class="dag-full"><svg') :]
    assert "exact.reasoned" in full
    assert "DOT source" not in dag


def test_report_is_self_contained(result, monkeypatch):
    _without_dot(monkeypatch)
    page = report_html(result)
    assert not re.search(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", page)
    assert "<script" not in page
    assert "<link" not in page
    assert "@import" not in page
    assert "url(" not in page.replace("url(#arrow)", "")


@pytest.mark.slow
def test_report_command_reads_a_results_file(result, tmp_path):
    results = tmp_path / "run" / "results.parquet"
    result.to_parquet(results)
    done = subprocess.run(
        [*COMMAND, "report", str(results)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"report: {tmp_path / 'run' / 'report.html'}\n"
    page = (tmp_path / "run" / "report.html").read_text()
    assert "Eval results: results.parquet" in page
    assert '<p class="reason">Madrid missing</p>' in page

    custom = tmp_path / "custom.html"
    done = subprocess.run(
        [*COMMAND, "report", str(results), "--out", str(custom), "--title", "Capitals"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "<h1>Capitals</h1>" in custom.read_text()


def _with_adapted_limit(result: EvalResult) -> EvalResult:
    """``result`` as if its judge's endpoint had answered 429s: its limit cut, then grown back."""
    limit = JudgeLimit(
        endpoint="openai/x at http://127.0.0.1:9/v1",
        max_concurrency=16,
        lowest=4,
        final=12,
        changes=[(0.0, 16), (1.5, 8), (2.1, 4), (3.0, 5), (4.0, 6), (5.2, 8), (6.0, 10), (7.1, 12)],
    )
    total = ScorerUsage(calls=40, total_tokens=600, judge_limits=[limit])
    return result.model_copy(update={"usage": {"total": total}})


ADAPTED = (
    "judge limit for openai/x at http://127.0.0.1:9/v1: 16 → lowest 4 after 429s, ended 12 "
    "(7 changes)"
)


def test_report_shows_a_judge_limit_that_adapted_also_read_back_from_parquet(result, tmp_path):
    adapted = _with_adapted_limit(result)
    assert f"<li>{ADAPTED}</li>" in report_html(adapted)
    adapted.to_parquet(tmp_path / "results.parquet")
    again = EvalResult.read_parquet(tmp_path / "results.parquet")
    assert again.usage == adapted.usage
    assert f"<li>{ADAPTED}</li>" in report_html(again)
    assert 'id="judge-limits"' not in report_html(result)  # nothing changed: nothing said


# --- in a real browser -------------------------------------------------------------------------

#: Colours the stylesheet gives: the failed verdict's background and a histogram bar
#: (#3b5bdb at 85% opacity over white).
VERDICT_FAILED_BACKGROUND = (255, 235, 233)
HISTOGRAM_BAR = (88, 116, 224)


def _screenshot(html: Path, png: Path, profile: Path, width: int, height: int) -> None:
    done = subprocess.run(
        [
            CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
            "--no-first-run", f"--user-data-dir={profile}", f"--window-size={width},{height}",
            f"--screenshot={png}", html.as_uri(),
        ],
        capture_output=True, text=True, timeout=120, env={**os.environ, "HOME": str(profile)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert png.is_file(), done.stderr


def _pixels_near(image, colour) -> int:
    return sum(count for count, pixel in image.getcolors(maxcolors=1 << 20) if _near(pixel, colour))


@pytest.mark.slow
@pytest.mark.skipif(
    CHROMIUM is None,
    reason="Debian's chromium package is not installed (apt-get install -y chromium); the "
    "report's browser rendering is not checked",
)
def test_report_renders_in_headless_chromium(result, tmp_path, monkeypatch):
    from PIL import Image

    _without_dot(monkeypatch)
    page = write_report(result, tmp_path / "report.html", title="Capitals")
    png = tmp_path / "report.png"
    _screenshot(page, png, tmp_path / "profile", 1280, 1600)
    image = Image.open(png).convert("RGB")
    assert image.size == (1280, 1600)
    # The stylesheet applied: the verdict banner and histogram bars are drawn in their colours.
    top = image.crop((0, 0, 1280, 300))
    assert _pixels_near(top, VERDICT_FAILED_BACKGROUND) > 20_000
    assert _pixels_near(image, HISTOGRAM_BAR) > 2_000
    # Not a blank or broken page: text, borders and plots give many distinct colours.
    assert len(image.getcolors(maxcolors=1 << 20)) > 200

    # A phone-sized window: the verdict banner takes the whole width under the title.
    narrow = tmp_path / "narrow.png"
    _screenshot(page, narrow, tmp_path / "profile", 420, 900)
    image = Image.open(narrow).convert("RGB")
    banner_rows = [
        y
        for y in range(900)
        if all(_near(image.getpixel((x, y)), VERDICT_FAILED_BACKGROUND) for x in (40, 200, 370))
    ]
    assert banner_rows, "the verdict banner does not span a narrow window"
    assert 60 < banner_rows[0] < 400


def _near(pixel, colour, tolerance=6) -> bool:
    return all(abs(a - b) <= tolerance for a, b in zip(pixel[:3], colour, strict=True))


def test_report_without_gates_or_thresholds(monkeypatch):
    _without_dot(monkeypatch)
    result = run_evals(ITEMS[:2], scorers=[create_scorer("strict").generate_score(_strict)])
    page = report_html(result)
    assert '<div class="verdict verdict-none" id="verdict">' in page
    assert "<strong>NO VERDICT</strong>" in page
    assert "This run has no gates and no thresholds, so it has no verdict." in page
    # a stored result without scorer definitions still lists its scorers from the item columns
    bare = result.model_copy(update={"scorers": []})
    assert [s.id for s in scorer_summaries(bare)] == ["strict"]
    assert '<svg class="hist"' in report_html(bare)


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium package is not installed")
def test_the_report_command_shows_a_judge_limit_that_adapted_in_chromium(result, tmp_path):
    results = tmp_path / "results.parquet"
    _with_adapted_limit(result).to_parquet(results)
    done = subprocess.run(
        [*COMMAND, "report", str(results)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    profile = tmp_path / "profile"
    shown = subprocess.run(
        [
            CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
            f"--user-data-dir={profile}", "--dump-dom", (tmp_path / "report.html").as_uri(),
        ],
        capture_output=True, text=True, timeout=120, env={**os.environ, "HOME": str(profile)},
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    usage = shown.stdout[shown.stdout.index('<section id="usage">') :]
    assert f"<li>{ADAPTED}</li>" in usage


@pytest.mark.parametrize("given", ["messages", "json text"])
def test_an_item_shows_the_tool_calls_of_any_transcript_shape(tmp_path, given):
    output = WEATHER if given == "messages" else json.dumps(WEATHER)
    result = run_evals(
        [{"input": "Weather in Paris?", "output": output}],
        gates=[checks.called_tool("get_weather")],
        progress=False,
    )
    saved = tmp_path / "results.parquet"
    result.to_parquet(saved)
    for shown in (result, EvalResult.read_parquet(saved)):
        page = report_html(shown)
        assert "<code>get_weather({&quot;city&quot;: &quot;Paris&quot;})</code>" in page
        assert "It is 21 degrees in Paris." in page and "tool_call_id" not in page
