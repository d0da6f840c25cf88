"""Everything checkable is checked before the first judge call (issue 22, item 4).

Every scorer's columns, the shape of each item's cells (a context column's pieces, JSON text
included; an expected trajectory) and the columns a scorer needs (context recall's
``ground_truth``) are checked for every row before any step runs: a bad row late in the data
stops the run with the row, the column, the scorer and the fix, and the real judge server on
127.0.0.1 has received no request. ``cost_estimate`` and ``--estimate`` check the same, count
the calls the run really makes, and say why a scorer makes none.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from evaldag import DataNeed, EvalDagError, cost_estimate, create_scorer, run_evals, scorers
from evaldag._cli.main import main

PIECES = ["Paris is the capital of France.", "Paris lies on the Seine."]
ROWS = [
    {
        "id": f"q{n}",
        "input": "What is the capital of France?",
        "output": "Paris.",
        "ground_truth": "Paris is the capital of France.",
        "contexts": PIECES,
    }
    for n in range(4)
]
CLAIMS = {"claims": ["Paris is the capital of France."]}
VERDICTS = {"verdicts": [{"verdict": "yes", "reason": "Stated in [0]."}]}


def _answers(server) -> None:
    """Claims, verdicts and reasons for the item-verdict scorers (faithfulness, recall)."""
    server.reset()
    server.on(lambda r: '"claims"' in json.dumps(r.response_format or {}), CLAIMS)
    server.on(lambda r: '"verdicts"' in json.dumps(r.response_format or {}), VERDICTS)
    server.reply = "The score is 1 because the answer holds."


def _csv(folder: Path, rows: list[dict]) -> Path:
    """``rows`` as a CSV file: each row's pieces as the JSON text of an array, as CSVs hold them."""
    path = folder / "items.csv"
    frame = pd.DataFrame(rows)
    frame["contexts"] = [c if isinstance(c, str) else json.dumps(c) for c in frame["contexts"]]
    frame.to_csv(path, index=False)
    return path


# --- a bad cell stops the run before any judge call ---------------------------------------------


#: A cell of JSON text, as a DataFrame or a JSONL file holds it and as a CSV file's is read.
CELLS = {
    '{"a": 1}': ("got JSON text of a dict '{\"a\": 1}'", "got dict {'a': 1}"),
    "Paris is the capital.": ("got str 'Paris is the capital.'",) * 2,
    '["a", 2]': ("got JSON text of a list '[\"a\", 2]'", "got list ['a', 2]"),
    '["a", "b"': ("which starts like JSON but is none",) * 2,
}


@pytest.mark.parametrize("form", ["frame", "csv"])
@pytest.mark.parametrize("cell", CELLS)
def test_a_context_cell_that_is_no_list_of_strings_stops_the_run_before_any_judge_call(
    judge_server, tmp_path, cell, form
):
    rows = [dict(row) for row in ROWS]
    rows[3]["contexts"] = cell  # the last row: every other item would be judged first
    data = pd.DataFrame(rows) if form == "frame" else _csv(tmp_path, rows)
    got = CELLS[cell][form == "csv"]
    judge = judge_server.judge()
    relevancy = scorers.answer_relevancy(judge)  # judges every item, before faithfulness
    faithfulness = scorers.faithfulness(judge, context="contexts")
    _answers(judge_server)
    with pytest.raises(EvalDagError) as raised:
        run_evals(data, scorers=[relevancy, faithfulness], concurrency=1)
    assert judge_server.requests == []
    error = raised.value
    assert error.message.startswith(
        "Row 3 (id 'q3'): the data column 'contexts' (context of faithfulness(...)) must be a "
        "list of strings"
    )
    assert got in error.message
    assert "write each cell as a JSON array of strings" in error.message
    assert error.message.endswith(
        "(scorer 'faithfulness-scorer' reads 'contexts' as context= of faithfulness(...))"
    )
    assert error.details["row"] == "3" and error.details["scorerId"] == "faithfulness-scorer"
    assert error.details["column"] == "contexts"


def test_the_same_cells_as_lists_and_as_json_text_are_judged_alike(judge_server, tmp_path):
    scorer = scorers.faithfulness(judge_server.judge(), context="contexts")
    _answers(judge_server)
    listed = run_evals(ROWS, scorers=[scorer], progress=False)
    prompts = sorted(r.prompt for r in judge_server.requests)
    _answers(judge_server)
    from_csv = run_evals(_csv(tmp_path, ROWS), scorers=[scorer], progress=False)
    assert sorted(r.prompt for r in judge_server.requests) == prompts
    assert from_csv.scores == listed.scores == {"faithfulness-scorer": 1.0}


def test_a_scorer_that_needs_a_ground_truth_column_is_refused_without_one(judge_server):
    recall = scorers.context_recall(judge_server.judge(), context="contexts")
    data = [{k: v for k, v in row.items() if k != "ground_truth"} | {"gold": "x"} for row in ROWS]
    with pytest.raises(EvalDagError) as raised:
        run_evals(data, scorers=[recall])
    assert judge_server.requests == []
    assert raised.value.message == (
        "Scorer 'context-recall-scorer' needs the reference answer it judges against from the "
        "data column 'ground_truth', which the data does not have (its columns: ['id', 'input', "
        "'output', 'contexts', 'gold']); add it, or name the column holding it: "
        "columns={'ground_truth': '<column>'}"
    )
    _answers(judge_server)
    result = run_evals(data, scorers=[recall], columns={"ground_truth": "gold"})
    assert result.summary.errors == {}


def test_an_empty_ground_truth_is_still_not_scorable_without_a_call(judge_server):
    recall = scorers.context_recall(judge_server.judge(), context="contexts")
    always = create_scorer("always").generate_score(lambda: 1.0)
    data = [{**row, "ground_truth": None} for row in ROWS]
    result = run_evals(data, scorers=[recall, always])
    assert judge_server.requests == []
    assert result.summary.not_scorable == {"context-recall-scorer": 4}


TOOL_CALL = [
    {
        "role": "assistant",
        "content": "",
        "toolInvocations": [
            {"toolCallId": "c1", "toolName": "search", "state": "result", "args": {}, "result": 1}
        ],
    }
]


@pytest.mark.parametrize(
    ("expected", "says"),
    [
        ('[{"name": "search"}]', "got a list of 1; put the steps under 'steps'"),
        ('{"steps": "search"}', "the item's expected_trajectory['steps'] must be a trajectory"),
        ('{"steps": [', "expected_trajectory is text that is not JSON"),
    ],
)
def test_an_expected_trajectory_a_trajectory_scorer_cannot_read_stops_the_run(expected, says):
    data = [
        {"input": "find it", "output": TOOL_CALL, "expected_trajectory": '{"steps": []}'},
        {"input": "find it", "output": TOOL_CALL, "expected_trajectory": expected},
    ]
    with pytest.raises(EvalDagError) as raised:
        run_evals(data, scorers=[scorers.trajectory_accuracy()])
    assert raised.value.message.startswith("Row 1: ")
    assert says in raised.value.message


def test_a_trajectory_scorer_without_expectations_needs_the_datas():
    data = [{"input": "find it", "output": TOOL_CALL}]
    with pytest.raises(EvalDagError, match="needs the trajectory expected of each item from the"):
        run_evals(data, scorers=[scorers.trajectory_accuracy()])
    # with expected steps of its own, or as the unified score, it needs none
    own = scorers.trajectory_accuracy([{"name": "search"}])
    assert run_evals(data, scorers=[own, scorers.trajectory()]).scores == {
        "code-trajectory-accuracy-scorer": 1.0,
        "code-trajectory-scorer": 1.0,
    }


def test_a_turns_scorer_reads_its_column_and_is_checked_like_the_others():
    uses = create_scorer("uses", columns=("pieces",)).generate_score(
        lambda run: float(len(run.pieces))
    )
    data = [{"turns": [{"input": "hi", "scorers": [uses]}], "pieces": ["a"]}]
    result = run_evals(data, target=lambda input: input.upper())
    assert result.turns["uses.score"].tolist() == [1.0]
    with pytest.raises(
        EvalDagError, match=r"Scorer 'uses' reads the data column\(s\) \['pieces'\]"
    ):
        run_evals([{"turns": data[0]["turns"]}], target=lambda input: input)


def test_a_need_is_on_a_run_field_or_a_column_the_scorer_reads():
    need = DataNeed("pieces", "the pieces it checks")
    with pytest.raises(EvalDagError, match="needs the column 'pieces', which it does not read"):
        create_scorer("s").needing(need)
    checked = create_scorer("s", columns=("pieces",)).needing(need)
    assert checked.needs == (need,)
    assert checked.generate_score(lambda: 1).needs == (need,)  # kept as steps are added


def test_a_scorers_own_need_is_checked_for_every_row():
    def short(value):
        if len(value) > 3:
            raise EvalDagError("TOO_LONG", f"has {len(value)} pieces; keep at most 3")

    scorer = (
        create_scorer("few", columns=("pieces",))
        .needing(DataNeed("pieces", "the pieces it counts", short))
        .generate_score(lambda: 1.0)
    )
    data = [{"input": "q", "output": "o", "pieces": ["a"] * n} for n in (1, 2, 5)]
    with pytest.raises(EvalDagError) as raised:
        run_evals(data, scorers=[scorer])
    assert raised.value.message == (
        "Row 2: has 5 pieces; keep at most 3 (scorer 'few' reads 'pieces' as the pieces it counts)"
    )


# --- the estimate counts what the run calls, and says why a scorer calls nothing ----------------

NO_CONTEXT = "not scorable (no context: the data column 'contexts' is empty for this run)"
NO_GROUND_TRUTH = (
    "not scorable (no ground truth: the run has no ground_truth (the reference answer) to judge "
    "against)"
)
AS_JSON = "read as the JSON it holds (context= of context_recall(...))"


def test_the_estimate_counts_the_calls_the_run_makes(judge_server, tmp_path):
    rows = [dict(row) for row in ROWS]
    rows[1]["contexts"] = "[]"  # no context: not scorable for both
    rows[2]["ground_truth"] = None  # no reference answer: not scorable for recall
    path = _csv(tmp_path, rows)
    judge = judge_server.judge("openai/gpt-4o-mini")
    chosen = [
        scorers.faithfulness(judge, context="contexts"),
        scorers.context_recall(judge, context="contexts"),
    ]
    estimate = cost_estimate(path, scorers=chosen)
    assert judge_server.requests == []
    for scorer in chosen:
        _answers(judge_server)
        run_evals(path, scorers=[scorer], progress=False)
        assert len(judge_server.requests) == estimate.scorers[scorer.id].calls, scorer.id
    assert estimate.scorers["faithfulness-scorer"].calls == 3 * 3
    assert estimate.scorers["context-recall-scorer"].calls == 3 * 2
    assert estimate.scorers["context-recall-scorer"].notes == [
        f"1 of 4 items make no call, {NO_CONTEXT}",
        f"1 of 4 items make no call, {NO_GROUND_TRUTH}",
    ]
    # a DataFrame (or a JSONL file) keeps a cell's JSON text: the scorer reads it, and says so
    texts = pd.read_csv(path, dtype=str, keep_default_na=False, na_values=[""])
    as_text = cost_estimate(texts, scorers=chosen).scorers["context-recall-scorer"]
    assert as_text.calls == 3 * 2
    assert as_text.notes[-1] == (
        f"the data column 'contexts' holds JSON text in 4 items, {AS_JSON}"
    )


def test_a_scorer_estimated_at_no_call_says_why(judge_server):
    recall = scorers.context_recall(judge_server.judge(), context="contexts")
    length = create_scorer("length").generate_score(lambda run: 1.0)
    data = [{**row, "ground_truth": ""} for row in ROWS]
    estimate = cost_estimate(data, scorers=[recall, length])
    assert estimate.scorers["context-recall-scorer"].calls == 0
    assert estimate.scorers["context-recall-scorer"].notes == [
        "0 calls: no item reaches the judge",
        f"4 of 4 items make no call, {NO_GROUND_TRUTH}",
    ]
    assert estimate.unjudged == ["length"]


def test_the_estimate_counts_the_calls_of_conversations_turns(judge_server):
    """A turn's judged scorers and gates are estimated per turn index, named as the summary
    names them, on each turn's input; the run makes the calls counted."""
    polite = scorers.classifier(judge_server.judge(), "Polite?", boolean=True, id="polite")
    again = scorers.classifier(judge_server.judge(), "Polite?", boolean=True, id="polite")
    gate = create_scorer("g").generate_score(lambda: 1.0)
    data = [
        {"turns": [{"input": "hi", "scorers": [polite]}, {"input": "bye", "gates": [polite]}]},
        {"turns": [{"input": "hello there, how are you?", "scorers": [again]}]},
        {"input": "no conversation"},
    ]
    estimate = cost_estimate(data, gates=[gate], target=lambda input: input)
    assert judge_server.requests == []
    assert list(estimate.scorers) == ["turn 0: polite", "turn 1: polite"]
    first, second = estimate.scorers["turn 0: polite"], estimate.scorers["turn 1: polite"]
    assert (first.calls, second.calls, estimate.total.calls) == (2, 1, 3)
    assert first.input_tokens > 2 * second.input_tokens  # the longer input of the second item
    assert estimate.unjudged == ["g"]
    judge_server.reply = {"probability": 1, "reason": "Polite."}
    run_evals(data, gates=[gate], target=lambda input: input, progress=False)
    assert len(judge_server.requests) == estimate.total.calls


def test_the_estimate_stops_where_the_run_would(judge_server):
    rows = [dict(row) for row in ROWS]
    rows[2]["contexts"] = {"a": 1}
    with pytest.raises(EvalDagError, match="Row 2 \\(id 'q2'\\): the data column 'contexts'"):
        cost_estimate(
            rows, scorers=[scorers.faithfulness(judge_server.judge(), context="contexts")]
        )


def test_the_cli_estimate_prints_why_a_scorer_makes_no_call(judge_server, tmp_path, capsys):
    path = tmp_path / "items.jsonl"  # each row's pieces as JSON text, kept by a JSONL file
    path.write_text(
        "".join(
            json.dumps({**row, "ground_truth": "", "contexts": json.dumps(row["contexts"])}) + "\n"
            for row in ROWS
        )
    )
    eval_file = tmp_path / "eval_rag.py"
    eval_file.write_text(
        "from evaldag import Judge, checks\n"
        "from evaldag.scorers import context_recall, faithfulness\n"
        f"judge = Judge('openai/gpt-4o-mini', api_base={judge_server.url!r}, api_key='sk-test')\n"
        "scorers = [faithfulness(judge, context='contexts'), context_recall(judge, "
        "context='contexts')]\n"
        "gates = [checks.excludes('as an AI')]\n"
    )
    assert main(["run", str(eval_file), "--data", str(path), "--estimate"]) == 0
    assert judge_server.requests == []
    out = capsys.readouterr().out
    rows_of = {line.split()[0]: line.split() for line in out.splitlines() if line.startswith("  ")}
    assert rows_of["faithfulness-scorer"][1] == "12"
    assert rows_of["context-recall-scorer"][1] == "0"
    assert "context-recall-scorer: 0 calls: no item reaches the judge\n" in out
    assert "context-recall-scorer: 4 of 4 items make no call, not scorable (no ground truth" in out
    assert "faithfulness-scorer: the data column 'contexts' holds JSON text in 4 items" in out
    assert "no judged step, no call: check-excludes\n" in out
