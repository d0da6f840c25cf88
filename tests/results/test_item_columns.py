"""The item columns and their states: every item of a scorer is scored, failed, not scorable or
skipped, read in one place (``_results/item_columns.py``) by the verdict, the report, the CLI,
``compare`` and the trust check alike; and no other module spells a column's name."""

import re

import pandas as pd
import pytest
from hamilton.ad_hoc_utils import create_temporary_module
from repo_paths import ROOT

import evaldag
from evaldag import (
    checks,
    compare_experiments,
    create_scorer,
    not_scorable,
    read_results,
    run_evals,
)
from evaldag._cli.summary import summary_table
from evaldag._report.summary import scorer_summaries
from evaldag._results.item_columns import (
    SCORER_COLUMNS,
    ScorerColumns,
    item_states,
    nested_by_group,
    scorer_ids,
)

MODULE = "src/evaldag/_results/item_columns.py"


def category(ticket: str) -> str:
    if "crash" in ticket:
        raise RuntimeError("the classifier crashed")
    return "billing" if "invoice" in ticket else "other"


def shout(category: str) -> str:
    return category.upper()


def _probe():
    """Fails on 'boom', cannot score 'n/a', else scores 1 for 'yes' and 0 otherwise."""

    def prepared(run):
        return not_scorable("nothing to judge") if run.output == "n/a" else None

    def score(run):
        if run.output == "boom":
            raise ValueError("the probe broke")
        return float(run.output == "yes")

    return create_scorer("probe").preprocess(prepared).generate_score(score)


def test_each_item_is_in_exactly_one_state_and_every_reader_agrees():
    outputs = ["yes", "no", "boom", "n/a", "yes"]
    result = run_evals(
        pd.DataFrame({"input": [f"q{n}" for n in range(5)], "output": outputs}),
        scorers=[_probe()],
        gates=[checks.includes("y")],
        max_error_share=1,
        progress=False,
    )
    states = item_states(result.items, "probe")
    masks = pd.DataFrame(
        {
            "scored": states.scored,
            "failed": states.failed,
            "not_scorable": states.not_scorable,
            "skipped": states.skipped,
        }
    )
    assert (masks.sum(axis=1) == 1).all()
    assert masks.idxmax(axis=1).tolist() == ["scored", "scored", "failed", "not_scorable", "scored"]
    assert states.valid_scores.tolist() == [1.0, 0.0, 1.0]
    assert states.counted_scores.isna().tolist() == [False, False, True, True, False]
    # The verdict's average, the summary's counts and the report's scores are those states.
    assert result.scores["probe"] == pytest.approx(2 / 3)
    assert result.summary.errors["probe"] == 1
    assert result.summary.not_scorable["probe"] == 1
    summary = next(s for s in scorer_summaries(result) if s.id == "probe")
    assert (summary.scored, summary.errors, summary.not_scorable) == (3, 1, 1)
    assert summary.scores == (1.0, 0.0, 1.0)


def _workflow_result():
    """Three tickets through category → shout; the second crashes at category, so its shout
    step never runs: skipped, not failed, for shout's step scorer."""
    return run_evals(
        [
            {"id": "a", "input": "my invoice"},
            {"id": "b", "input": "crash now"},
            {"id": "c", "input": "hello"},
        ],
        target=evaldag.workflow(create_temporary_module(category, shout), ["shout"]),
        scorers={
            "steps": {
                "shout": [checks.includes("BILLING")],
                "category": [checks.includes("billing")],
            }
        },
        max_error_share=1,
        progress=False,
    )


def test_a_step_the_failure_kept_from_running_failed_with_the_target():
    # Mastra skips a step that did not run; a step the pipeline never reached was not checked,
    # so its scorer fails with the target's error (584e43c), as the failed node's own does.
    result = _workflow_result()
    shout = item_states(result.items, "steps.shout.check-includes")
    assert shout.failed.tolist() == [False, True, False]
    assert not shout.skipped.any() and not shout.not_scorable.any()
    assert result.items["steps.shout.check-includes.failed_step"][1] == "target"
    category = item_states(result.items, "steps.category.check-includes")
    assert category.failed.tolist() == [False, True, False]  # the node that raised
    assert result.summary.errors["steps.shout.check-includes"] == 1
    assert result.scores["steps.shout.check-includes"] == 0.5  # of the items it checked


def test_compare_counts_the_items_a_failed_pipeline_kept_a_step_from():
    # Each is an item without a score (an error), as the failed node's own.
    result = _workflow_result()
    comparison = compare_experiments(result, result)
    stats = {s.scorer_id: s.a for s in comparison.scorers}
    shout = stats["steps.shout.check-includes"]
    assert (shout.items, shout.scored) == (3, 2)
    assert shout.error_rate == pytest.approx(1 / 3)
    category = stats["steps.category.check-includes"]  # failed on b: a null score, as Mastra's
    assert (category.items, category.scored) == (3, 2)
    assert category.error_rate == pytest.approx(1 / 3)


def test_a_turn_a_dropped_conversation_never_reached_fails_its_threshold():
    # The conversation crashed at turn 0, so its turn 1 counts as failed (12d2439), not absent.
    def target(input):
        if input == "boom":
            raise RuntimeError("boom")
        return f"ok {input}"

    polite = checks.includes("ok").with_threshold(0.5)
    result = run_evals(
        [
            {"turns": [{"input": "boom"}, {"input": "again", "scorers": [polite]}]},
            {"turns": [{"input": "fine", "gates": [checks.includes("ok")]}]},
        ],
        target=target,
        max_error_share=1,
        progress=False,
    )
    missed = result.turn_results[1].threshold_results[0]
    assert not missed.passed
    assert missed.reason == "no item could be scored (1 failed)"


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_a_data_column_named_like_a_score_reads_back_as_data(tmp_path, suffix):
    # read_results took every column ending in ".score" for a scorer's and failed on text.
    data = pd.DataFrame(
        {"input": ["a", "b"], "output": ["yes", "no"], "rating.score": ["good", "bad"]}
    )
    path = tmp_path / f"results{suffix}"
    run_evals(data, scorers=[checks.includes("yes")], out=path, progress=False)
    items = read_results(path)
    assert items["rating.score"].tolist() == ["good", "bad"]
    assert items["check-includes.score"].tolist() == [1.0, 0.0]
    assert scorer_ids(items.columns) == ["check-includes"]


def test_a_report_of_a_result_without_definitions_finds_its_scorers_by_their_columns():
    result = run_evals(
        pd.DataFrame({"input": ["a", "b"], "output": ["yes", "no"], "rating.score": [1, 2]}),
        scorers=[checks.includes("yes")],
        progress=False,
    )
    bare = result.model_copy(update={"scorers": []})
    assert [s.id for s in scorer_summaries(bare)] == ["check-includes"]
    assert "rating" not in summary_table(bare, "run")


def test_scorer_ids_and_groups():
    keyed = "steps.answer.v2.check-includes"  # a node's name may hold a dot, an id never
    columns = ["input", "x.score", *ScorerColumns(keyed).all, *ScorerColumns("agent.s").all]
    assert scorer_ids(columns) == [keyed, "agent.s"]
    named = ScorerColumns(keyed)
    assert named.all == [f"{keyed}.{column}" for column in SCORER_COLUMNS]
    assert named.all == [getattr(named, column) for column in SCORER_COLUMNS]
    assert nested_by_group({keyed: 1.0, "agent.s": 0.5, "plain": 0.0}) == {
        "steps": {"answer.v2": {"check-includes": 1.0}},
        "agent": {"s": 0.5},
        "plain": 0.0,
    }


#: A scorer's column name spelled out: ``f"{sid}.score"``, ``"<...>.error"`` and the like.
_COLUMNS = "score|reason|error|failed_step|completed_steps|not_scorable|steps|judge|trial_\\w+"
_SPELLED = re.compile(rf"\{{[^}}]+\}}\.(?:{_COLUMNS})\b|[\"']\.(?:{_COLUMNS})[\"']")


def test_no_module_but_the_item_columns_spells_a_column_name():
    files = [*(ROOT / "src" / "evaldag").rglob("*.py"), *(ROOT / "benchmarks").rglob("*.py")]
    spelled = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in files
        if path != ROOT / MODULE
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if _SPELLED.search(line)
    ]
    assert not spelled, "\n".join(spelled)
