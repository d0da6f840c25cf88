"""Issue 13 §4, say where it failed: ``evaldag run`` names the items behind each failed gate and
missed threshold, the report ranks items by their distance from passing (a ``max`` threshold's
high scores first), and progress shows in CI logs as plain lines."""

import io
import json
import os
import re

import pytest

from evaldag import EvalResult, checks, create_scorer, not_scorable, run_evals
from evaldag._cli.main import main
from evaldag._cli.summary import summary_table, where_it_failed
from evaldag._eval import progress as progress_module
from evaldag._eval.progress import ProgressBar
from evaldag._report.failing import requirement_gaps
from evaldag._report.html import report_html
from evaldag._report.items import worst_first
from evaldag._report.summary import scorer_summaries

#: Hallucination (lower is better), relevance (higher is better) and whether the answer apologizes.
CASES = {
    "case-01": (0.10, 0.90, "Paris"),
    "case-02": (0.90, 0.30, "sorry, no"),
    "case-03": (0.40, 0.80, "Rome"),
    "case-04": (0.00, 0.95, "Lisbon"),
    "case-05": (0.70, 0.50, "Sorry!"),
    "case-06": (0.20, None, "Bern"),  # relevance fails on it
    "case-07": (0.35, 0.60, "sorry"),
    "case-08": (0.10, 0.65, "Oslo"),
    "case-09": (0.50, 0.10, "Madrid"),
    "case-10": (0.60, 0.20, "Vienna"),
}
ITEMS = [{"id": case, "input": case, "output": output} for case, (_, _, output) in CASES.items()]


def _relevance(run):
    value = CASES[run.input][1]
    if value is None:
        raise ValueError("the judge said nonsense")
    return value


def _scorers() -> list:
    hallucination = create_scorer("hallucination").generate_score(lambda run: CASES[run.input][0])
    relevance = create_scorer("relevance").generate_score(_relevance)
    return [hallucination.with_threshold({"max": 0.3}), relevance.with_threshold(0.7)]


GATES = [checks.excludes("sorry", id="no-sorry")]


@pytest.fixture(name="result", scope="module")
def result_fixture():
    return run_evals(ITEMS, scorers=_scorers(), gates=GATES, progress=False)


# --- evaldag run: the items that pulled each gate and threshold down --------------------------


def test_where_it_failed_names_the_worst_items_first_by_id(result):
    assert result.verdict == "failed"
    assert where_it_failed(result).splitlines() == [
        "where it failed (items named by the data's 'id' column; worst first):",
        "  no-sorry       3 of 10 items below 1.00: case-02 (0.00), case-05 (0.00), case-07 (0.00)",
        # a max threshold: the highest scores are the furthest from passing
        (
            "  hallucination  6 of 10 items above 0.30: case-02 (0.90), case-05 (0.70), "
            "case-10 (0.60), case-09 (0.50), case-03 (0.40), and 1 more"
        ),
        # a min threshold: the failed item first, then the lowest scores
        (
            "  relevance      7 of 10 items below 0.70 or in error: case-06 (error), "
            "case-09 (0.10), case-10 (0.20), case-02 (0.30), case-05 (0.50), and 2 more"
        ),
    ]


def test_where_it_failed_by_row_number_without_an_id_column():
    items = [{k: v for k, v in item.items() if k != "id"} for item in ITEMS]
    result = run_evals(items, scorers=_scorers(), gates=GATES, progress=False)
    lines = where_it_failed(result).splitlines()
    assert lines[0] == (
        "where it failed (items named by their row number in the data, counting from 0; "
        "worst first):"
    )
    assert lines[1] == "  no-sorry       3 of 10 items below 1.00: 1 (0.00), 4 (0.00), 6 (0.00)"
    assert lines[2].startswith("  hallucination  6 of 10 items above 0.30: 1 (0.90), 4 (0.70), ")


def test_where_it_failed_gives_the_reason_and_nothing_when_all_passed():
    unscorable = create_scorer("unscorable").generate_score(lambda: not_scorable("no context"))
    one = create_scorer("one").generate_score(lambda: 1.0)
    result = run_evals(ITEMS[:3], scorers=[unscorable.with_threshold(0.5), one], progress=False)
    assert where_it_failed(result).splitlines()[1:] == [
        "  unscorable  no item could be scored (3 not scorable)"
    ]
    passing = run_evals(ITEMS[:1], scorers=_scorers(), gates=GATES, progress=False)
    assert passing.verdict == "passed"
    assert where_it_failed(passing) == ""


def test_the_summary_gives_the_first_reason_of_a_scorer_that_scored_nothing(tmp_path):
    # without a threshold there is no verdict to fail, but the scorer measured nothing: say why
    def unless_paris(run):
        return 1.0 if run.output == "Paris" else not_scorable(f"no context for {run.input}")

    unscorable = create_scorer("unscorable").generate_score(unless_paris)
    silent = create_scorer("silent").generate_score(lambda: not_scorable())
    one = create_scorer("one").generate_score(lambda: 1.0)
    result = run_evals(ITEMS[1:4], scorers=[unscorable, silent, one], progress=False)
    saved = tmp_path / "results.parquet"
    result.to_parquet(saved)
    for shown in (result, EvalResult.read_parquet(saved)):
        lines = summary_table(shown, "run").splitlines()
        assert lines[7:10] == [
            "unscorable could score no item; first, on item case-02: no context for case-02",
            "silent could score no item; first, on item case-02: no reason given",
            "",
        ]
    some = run_evals(ITEMS[:2], scorers=[unscorable], progress=False)
    assert "could score no item" not in summary_table(some, "run")


def test_range_threshold_lists_items_on_either_side():
    middling = create_scorer("middling").generate_score(lambda run: CASES[run.input][0])
    result = run_evals(
        ITEMS, scorers=[middling.with_threshold({"min": 0.4, "max": 0.65})], progress=False
    )
    line = where_it_failed(result).splitlines()[1]
    assert line == (
        "  middling  7 of 10 items outside 0.40 to 0.65: case-04 (0.00), case-01 (0.10), "
        "case-08 (0.10), case-02 (0.90), case-06 (0.20), and 2 more"
    )


def test_evaldag_run_prints_where_it_failed(tmp_path, capsys):
    eval_file = tmp_path / "eval.py"
    eval_file.write_text(
        "from evaldag import checks\ngates = [checks.excludes('sorry', id='no-sorry')]\n"
    )
    data = tmp_path / "items.jsonl"
    data.write_text("".join(json.dumps(item) + "\n" for item in ITEMS))
    code = main(["run", str(eval_file), "--data", str(data)])
    out = capsys.readouterr().out
    assert code == 2
    verdict_line = out.splitlines().index("verdict: FAILED (gate failed: no-sorry)")
    assert out.splitlines()[verdict_line + 1 :] == [
        "where it failed (items named by the data's 'id' column; worst first):",
        "  no-sorry  3 of 10 items below 1.00: case-02 (0.00), case-05 (0.00), case-07 (0.00)",
    ]


# --- the report: items ranked by their distance from passing ---------------------------------


def test_gaps_follow_the_requirement_direction(result):
    gaps = requirement_gaps(result.items, "hallucination", {"max": 0.3})
    assert gaps.round(2).tolist() == [-0.2, 0.6, 0.1, -0.3, 0.4, -0.1, 0.05, -0.2, 0.2, 0.3]
    relevance = requirement_gaps(result.items, "relevance", 0.7)
    assert relevance[5] == 1.0  # the failed item: the whole scale short
    assert relevance.round(2)[[0, 1]].tolist() == [-0.2, 0.4]


def test_worst_first_ranks_a_max_thresholds_high_scores_first():
    hallucination = create_scorer("hallucination").generate_score(lambda run: CASES[run.input][0])
    result = run_evals(ITEMS, scorers=[hallucination.with_threshold({"max": 0.3})], progress=False)
    order = result.items.loc[worst_first(result.items, scorer_summaries(result)), "id"].tolist()
    # failing (above 0.3) by how far, then the passing ones, closest to 0.3 first
    assert order == [
        "case-02", "case-05", "case-10", "case-09", "case-03", "case-07",
        "case-06", "case-01", "case-08", "case-04",
    ]  # fmt: skip


def test_worst_first_puts_gate_failures_first_and_passing_items_last(result):
    order = result.items.loc[worst_first(result.items, scorer_summaries(result)), "id"].tolist()
    # three gate failures, by their shortfall on both thresholds (case-07: 0.05 + 0.1)
    assert order[:3] == ["case-02", "case-05", "case-07"]
    # case-06 failed in relevance: the whole scale short
    assert order[3] == "case-06"
    # case-01 and case-04 fail nothing: they come after every item that fails something
    assert set(order[-2:]) == {"case-01", "case-04"}


def test_report_lists_items_in_that_order_with_direction_aware_chips():
    hallucination = create_scorer("hallucination").generate_score(lambda run: CASES[run.input][0])
    result = run_evals(ITEMS, scorers=[hallucination.with_threshold({"max": 0.3})], progress=False)
    page = report_html(result)
    shown = re.findall(r'<span class="item-name">([^<]+)</span>', page)
    assert shown == worst_first_ids(result)
    assert shown[:3] == ["case-02", "case-05", "case-10"]
    blocks = dict(zip(shown, page.split('<details class="item"')[1:], strict=True))
    # a high hallucination score is bad, a low one good
    assert 'chip chip-bad" title="hallucination">hallucination 0.90' in blocks["case-02"]
    assert 'chip chip-good" title="hallucination">hallucination 0.00' in blocks["case-04"]


def test_without_a_requirement_a_chip_of_a_lower_is_better_scorer_reads_that_way():
    """A toxicity of 0.90 with no threshold showed a green chip: the tone read high as good."""
    toxic = create_scorer("toxic", better="lower").generate_score(lambda run: CASES[run.input][0])
    plain = create_scorer("plain").generate_score(lambda run: CASES[run.input][0])
    page = report_html(run_evals(ITEMS, scorers=[toxic, plain], progress=False))
    shown = re.findall(r'<span class="item-name">([^<]+)</span>', page)
    blocks = dict(zip(shown, page.split('<details class="item"')[1:], strict=True))
    assert 'chip chip-bad" title="toxic">toxic 0.90' in blocks["case-02"]
    assert 'chip chip-good" title="toxic">toxic 0.00' in blocks["case-04"]
    assert 'chip chip-good" title="plain">plain 0.90' in blocks["case-02"]


def worst_first_ids(result) -> list[str]:
    return result.items.loc[worst_first(result.items, scorer_summaries(result)), "id"].tolist()


# --- progress in CI logs ---------------------------------------------------------------------


class _Clock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(name="clock")
def clock_fixture(monkeypatch) -> _Clock:
    clock = _Clock()
    monkeypatch.setattr(progress_module, "monotonic", clock)
    return clock


def test_default_progress_off_a_terminal_waits_then_prints_plain_lines(clock):
    log = io.StringIO()
    bar = ProgressBar(1000, stream=log)
    for _ in range(4):  # under 5 s: a quick run stays quiet
        clock.now += 1
        bar.advance(10)
    assert log.getvalue() == ""
    for step in range(20):  # 1 % of the items a second: a line every 5 %
        clock.now += 1
        bar.advance(10, errors=1 if step == 0 else 0)
    lines = log.getvalue().splitlines()
    assert "\r" not in log.getvalue()
    assert lines[0] == "scoring: 50/1,000 items (5%), 10.0 items/s, 1 with errors, 5 s elapsed"
    assert [line.split()[1] for line in lines] == [
        "50/1,000",
        "100/1,000",
        "150/1,000",
        "200/1,000",
    ]


def test_progress_lines_every_30_seconds_when_items_come_slowly(clock):
    log = io.StringIO()
    bar = ProgressBar(10_000, enabled=True, stream=log)
    for _ in range(12):  # 0.01 % of the items every 10 s
        clock.now += 10
        bar.advance(1)
    lines = log.getvalue().splitlines()
    # forced: a line at once, then one per 30 s
    assert [line.split(" items")[0] for line in lines] == [
        "scoring: 1/10,000",
        "scoring: 4/10,000",
        "scoring: 7/10,000",
        "scoring: 10/10,000",
    ]
    assert lines[-1].endswith("0.1 items/s, 0 with errors, 100 s elapsed")


def test_progress_false_prints_nothing(clock):
    log = io.StringIO()
    bar = ProgressBar(10, enabled=False, stream=log)
    for _ in range(10):
        clock.now += 60
        bar.advance(1)
    bar.close()
    assert log.getvalue() == ""


def test_progress_on_a_terminal_is_a_tqdm_bar():
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    screen = Terminal()
    bar = ProgressBar(10, enabled=True, stream=screen)
    bar.advance(10, errors=2)
    bar.close()
    assert "\r" in screen.getvalue()
    assert "10/10 items" in screen.getvalue() and "2 with errors" in screen.getvalue()


def test_progress_on_a_terminal_of_no_width_prints_lines(clock):
    """Some CI runners open a pseudo-terminal without a size, where tqdm would draw nothing."""
    pty = pytest.importorskip("pty")
    leader, follower = pty.openpty()  # a new pseudo-terminal's size is 0 x 0
    with open(follower, "w", closefd=True) as terminal:
        assert terminal.isatty()
        bar = ProgressBar(10, enabled=True, stream=terminal)
        bar.advance(10, errors=1)
        bar.close()
    written = os.read(leader, 4096).decode()
    os.close(leader)
    assert written.startswith("scoring: 10/10 items (100%), ")
    assert written.endswith(", 1 with errors, 0 s elapsed\r\n")  # the terminal's own line end


def _flaky(run):
    if run.input in ("case-03", "case-08"):
        raise ValueError("flaky")
    return 1.0


def test_run_evals_counts_failed_items_in_its_progress_lines(capsys, clock):
    flaky = create_scorer("flaky").generate_score(_flaky)
    run_evals(ITEMS, scorers=[flaky], batch_size=5, progress=True)
    lines = capsys.readouterr().err.splitlines()
    assert [line.split(",")[0] for line in lines] == [
        "scoring: 5/10 items (50%)",
        "scoring: 10/10 items (100%)",
    ]
    assert "1 with errors" in lines[0] and "2 with errors" in lines[1]


def test_run_evals_default_progress_reaches_ci_logs_for_long_runs(capsys, clock, monkeypatch):
    flaky = create_scorer("flaky").generate_score(_flaky)
    run_evals(ITEMS, scorers=[flaky], batch_size=5)
    assert capsys.readouterr().err == ""  # a quick run: quiet
    # a slow one: each batch takes a minute by the clock
    original = ProgressBar.advance

    def slow_advance(self, count, errors=0):
        clock.now += 60
        original(self, count, errors)

    monkeypatch.setattr(ProgressBar, "advance", slow_advance)
    run_evals(ITEMS, scorers=[flaky], batch_size=5)
    err = capsys.readouterr().err
    assert err.splitlines() == [
        "scoring: 5/10 items (50%), 0.1 items/s, 1 with errors, 60 s elapsed",
        "scoring: 10/10 items (100%), 0.1 items/s, 2 with errors, 120 s elapsed",
    ]
    assert "\r" not in err


def test_the_turns_gates_and_thresholds_are_in_the_summary_and_where_it_failed(tmp_path):
    half = create_scorer("half").generate_score(lambda run: 0.5)
    polite = checks.excludes("sorry", id="polite")

    def conversation(name, second):
        return {
            "id": name,
            "turns": [
                {"input": "hi", "gates": [polite]},
                {"input": second, "gates": [polite], "scorers": [half.with_threshold(0.8)]},
            ],
        }

    result = run_evals(
        [conversation("c1", "refund?"), conversation("c2", "thanks")],
        target=lambda input: "sorry" if input == "refund?" else "glad to help",
        progress=False,
    )
    saved = tmp_path / "results.parquet"
    result.to_parquet(saved)
    for shown in (result, EvalResult.read_parquet(saved)):
        table = summary_table(shown, "run").splitlines()
        assert [line.split()[:4] for line in table[3:6]] == [
            ["turn", "0:", "polite", "gate"],
            ["turn", "1:", "polite", "gate"],
            ["turn", "1:", "half", "scorer"],
        ]
        assert table[-1] == (
            "verdict: FAILED (gate failed: turn 1: polite; 1 of 1 thresholds missed (turn 1: half))"
        )
        assert where_it_failed(shown).splitlines()[1:] == [
            "  turn 1: polite  1 of 2 items below 1.00: c1 (0.00)",
            "  turn 1: half    2 of 2 items below 0.80: c1 (0.50), c2 (0.50)",
        ]


def test_a_figure_beside_its_requirement_never_reads_as_meeting_it(tmp_path, capsys):
    # Shown with two decimals, an average of 0.999 beside a gate read '1.00 ... = 1.00 FAILED',
    # 0.8496 beside a threshold of 0.85 '0.85 >= 0.85 MISSED', and a bound of 0.205 '0.20'.
    eval_file = tmp_path / "eval.py"
    eval_file.write_text(
        "from evaldag import create_scorer\n"
        "near = create_scorer('near').generate_score(lambda run: 0.8496)\n"
        "ranged = create_scorer('ranged').generate_score(lambda run: 0.8004)\n"
        "scorers = [near.with_threshold(0.85), ranged.with_threshold(min=0.205, max=0.8)]\n"
        "gates = [create_scorer('almost').generate_score(lambda run: 0.999)]\n"
    )
    data = tmp_path / "items.jsonl"
    data.write_text("".join(json.dumps(item) + "\n" for item in ITEMS[:3]))
    out, report = tmp_path / "results.parquet", tmp_path / "report.html"
    assert main(["run", str(eval_file), "--data", str(data), "--out", str(out)]) == 2
    lines = capsys.readouterr().out.splitlines()
    table = lines[lines.index("eval.py on items.jsonl: 3 items") + 2 :]
    rows = {line.split()[0]: " ".join(line.split()[2:]) for line in table[: table.index("")]}
    assert rows == {
        "id": "average 95% interval scored not scorable errors required result",
        "near": "0.8496 [0.8496, 0.8496] 3 0 0 >= 0.85 MISSED",
        "ranged": "0.8004 [0.8004, 0.8004] 3 0 0 0.205 to 0.80 MISSED",
        "almost": "0.999 [0.999, 0.999] 3 0 0 = 1.00 FAILED",
    }
    failed = lines.index(f"where it failed ({ITEMS_BY_ID}; worst first):")
    assert lines[failed + 1 : failed + 4] == [
        "  almost  3 of 3 items below 1.00: case-01 (0.999), case-02 (0.999), case-03 (0.999)",
        "  near    3 of 3 items below 0.85: case-01 (0.8496), case-02 (0.8496), case-03 (0.8496)",
        (
            "  ranged  3 of 3 items outside 0.205 to 0.80: case-01 (0.8004), case-02 (0.8004), "
            "case-03 (0.8004)"
        ),
    ]
    assert main(["report", str(out), "--out", str(report)]) == 0
    page = report.read_text()
    for average, required in (
        ("0.8496", "≥ 0.85"),
        ("0.8004", "0.205 to 0.80"),
        ("0.999", "= 1.00"),
    ):
        assert f'<div class="scorer-mean">{average}<span>required {required}</span>' in page
        assert f'<td class="num">{average}</td><td class="num">[{average}, {average}]</td>' in page
        assert f"mean {average}</text>" in page
    assert 'title="almost">almost 0.999</span>' in page  # an item's chip, beside its gate


ITEMS_BY_ID = "items named by the data's 'id' column"
