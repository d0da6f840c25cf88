"""columns=: data whose run fields are named otherwise (issue 22, item 3).

``run_evals(data, columns={"input": "question", ...})`` reads each run field from the data's own
column, in every data form, in an eval file and on the command line; the results keep the data's
names (``result.columns`` holds the mapping) and whatever reads the run fields back from results
(the store, the report, ``compare``) finds them. A mapping that cannot be right is an error that
names the columns, before anything runs.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import evaldag
from evaldag import EvalDagError, EvalResult, create_scorer, run_evals
from evaldag._cli.main import main
from evaldag._report.html import report_html
from evaldag._store.locations import read_result

MAPPING = {"input": "question", "output": "answer", "ground_truth": "reference"}
ROWS = [
    {"question": "capital of France?", "answer": "Paris", "reference": "Paris", "topic": "geo"},
    {"question": "capital of Italy?", "answer": "Milan", "reference": "Rome", "topic": "geo"},
]
SEEN: list[tuple] = []


def _exact(run):
    SEEN.append((run.input, run.output, run.ground_truth))
    return 1.0 if run.output == run.ground_truth else 0.0


EXACT = create_scorer("exact").generate_score(_exact)


def _written(folder: Path, form: str) -> object:
    """``ROWS`` as ``data`` in ``form``: a list of dicts, a DataFrame or a file."""
    if form == "records":
        return ROWS
    frame = pd.DataFrame(ROWS)
    if form == "frame":
        return frame
    path = folder / f"items.{form}"
    if form == "jsonl":
        path.write_text("".join(json.dumps(row) + "\n" for row in ROWS))
    elif form == "csv":
        frame.to_csv(path, index=False)
    else:
        frame.to_parquet(path)
    return path


@pytest.mark.parametrize("form", ["records", "frame", "jsonl", "csv", "parquet"])
def test_each_field_is_read_from_its_column_and_the_items_keep_the_datas_names(tmp_path, form):
    SEEN.clear()
    result = run_evals(_written(tmp_path, form), scorers=[EXACT], columns=MAPPING)
    assert SEEN == [
        ("capital of France?", "Paris", "Paris"),
        ("capital of Italy?", "Milan", "Rome"),
    ]
    assert result.scores == {"exact": 0.5}
    assert result.columns == MAPPING
    items = result.items
    assert items[["question", "answer", "reference", "topic"]].values.tolist() == [
        [row[c] for c in ("question", "answer", "reference", "topic")] for row in ROWS
    ]
    assert not {"input", "output", "ground_truth"} & set(items.columns)
    canonical = result.canonical_items()
    assert canonical["input"].tolist() == ["capital of France?", "capital of Italy?"]
    assert canonical["ground_truth"].tolist() == ["Paris", "Rome"]


def test_a_mapped_csv_column_is_read_by_its_fields_rule(tmp_path):
    """A CSV cell of JSON text in 'reference' stays text as ground_truth does; in 'question' it
    stays text unless it is a transcript, as input's does; other columns read as their JSON."""
    path = tmp_path / "items.csv"
    pd.DataFrame(
        [{"question": '["a", "b"]', "answer": "o", "reference": '{"city": "Paris"}', "tags": "[1]"}]
    ).to_csv(path, index=False)
    seen = []

    def fields(run):
        seen.append((run.input, run.ground_truth))
        return 1.0

    result = run_evals(
        path,
        scorers=[create_scorer("s").generate_score(fields)],
        columns={"input": "question", "output": "answer", "ground_truth": "reference"},
    )
    assert seen == [('["a", "b"]', '{"city": "Paris"}')]
    assert result.items["tags"].iloc[0] == [1]


def test_request_context_and_expected_trajectory_are_mapped_too():
    seen = []

    def target(input, request_context):
        return f"{input} in {request_context['lang']}"

    def fields(run):
        seen.append((run.output, run.expected_trajectory))
        return 1.0

    result = run_evals(
        [{"q": "hello", "ctx": {"lang": "fr"}, "path": '{"steps": [{"name": "search"}]}'}],
        scorers=[create_scorer("s").generate_score(fields)],
        target=target,
        columns={"input": "q", "requestContext": "ctx", "expected_trajectory": "path"},
    )
    assert seen == [("hello in fr", {"steps": [{"name": "search"}]})]
    assert result.columns == {"input": "q", "request_context": "ctx", "expected_trajectory": "path"}
    assert {"q", "ctx", "path", "output"} <= set(result.items.columns)


def test_a_conversations_inputs_may_be_mapped():
    replies = []

    def target(input, history):
        replies.append((input, len(history)))
        return input.upper()

    polite = create_scorer("polite").generate_score(lambda run: 1.0)
    result = run_evals(
        [{"messages": ["hi", "bye"]}],
        scorers=[polite],
        target=target,
        columns={"inputs": "messages"},
    )
    assert [input for input, _ in replies] == ["hi", "bye"]
    assert result.items["messages"].iloc[0] == ["hi", "bye"]


def test_the_callback_gets_the_item_under_the_datas_names():
    items = []
    run_evals(
        ROWS[:1],
        scorers=[EXACT],
        columns=MAPPING,
        on_item_complete=lambda item, output, scores: items.append(item),
    )
    assert items == [ROWS[0]]


def test_a_field_mapped_to_its_own_name_is_no_mapping():
    result = run_evals(
        [{"input": "q", "answer": "a"}],
        scorers=[EXACT],
        columns={"input": "input", "output": "answer"},
    )
    assert result.columns == {"output": "answer"}


@pytest.mark.slow
def test_the_mapping_survives_parquet_the_store_the_report_and_compare(tmp_path):
    result = run_evals(ROWS, scorers=[EXACT], columns=MAPPING, out=tmp_path / "a.parquet")
    again = EvalResult.read_parquet(tmp_path / "a.parquet")
    assert again == result and again.columns == MAPPING

    store = tmp_path / "scores.db"
    saved = run_evals(ROWS, scorers=[EXACT], columns=MAPPING, store=store)
    stored = read_result(store, saved.experiment_id)
    assert stored.columns == MAPPING
    assert list(stored.items.columns) == list(saved.items.columns)
    assert stored.items["question"].tolist() == ["capital of France?", "capital of Italy?"]
    assert stored.items["reference"].tolist() == ["Paris", "Rome"]
    rows = evaldag.read_scores(store, experiment_id=saved.experiment_id)
    assert rows["input"].tolist() == ["capital of France?", "capital of Italy?"]

    assert "capital of Italy?" in report_html(result)

    # paired by the input, whatever each run's data called it
    plain = run_evals(
        [{"input": r["question"], "output": r["reference"]} for r in reversed(ROWS)],
        scorers=[create_scorer("exact").generate_score(lambda run: 1.0)],
    )
    comparison = evaldag.compare_experiments(result, plain)
    assert comparison.item_key == "input"
    by_key = evaldag.compare_experiments(result, plain, key="question")
    assert by_key.item_key == "input"


def test_a_checkpoint_resumes_only_with_the_same_mapping(tmp_path):
    checkpoint = tmp_path / "run.parquet"
    first = run_evals(ROWS, scorers=[EXACT], columns=MAPPING, checkpoint=checkpoint)
    again = run_evals(ROWS, scorers=[EXACT], columns=MAPPING, checkpoint=checkpoint)
    assert again == first
    renamed = [{**row, "gold": row["reference"]} for row in ROWS]
    with pytest.raises(EvalDagError, match="mapped otherwise") as raised:
        run_evals(
            renamed,
            scorers=[EXACT],
            columns={**MAPPING, "ground_truth": "gold"},
            checkpoint=checkpoint,
        )
    assert raised.value.id == "CHECKPOINT_MISMATCH"


# --- a mapping that cannot be right -----------------------------------------------------------


@pytest.mark.parametrize(
    ("columns", "says"),
    [
        (["input", "question"], "columns= must be a dict of run field → your data's column"),
        ({"question": "input"}, "did you mean {'input': 'question'}?"),
        ({"ground_truht": "reference"}, "did you mean 'ground_truth'?"),
        ({"contexts": "passages"}, "faithfulness(judge, context='passages')"),
        ({"input": ""}, "columns['input'] must name a column of the data, got ''"),
        (
            {"input": "question", "ground_truth": "question"},
            "'input' and 'ground_truth' to the same",
        ),
        (
            {"ground_truth": "reference", "groundTruth": "gold"},
            "names the field 'ground_truth' twice",
        ),
    ],
)
def test_a_wrong_mapping_is_named_before_the_data_is_read(columns, says):
    with pytest.raises(EvalDagError) as raised:
        run_evals("no-such-file.csv", scorers=[EXACT], columns=columns)
    assert says in raised.value.message
    assert raised.value.id == "INVALID_COLUMN_MAPPING"


def test_a_mapped_column_the_data_lacks_is_named_with_the_datas_columns_and_a_close_match():
    with pytest.raises(EvalDagError) as raised:
        run_evals(ROWS, scorers=[EXACT], columns={**MAPPING, "input": "questions"})
    assert raised.value.message == (
        "columns= maps 'input' to the data column 'questions', which the data does not have "
        "(its columns: ['question', 'answer', 'reference', 'topic']); did you mean 'question'?"
    )


@pytest.mark.parametrize("existing", ["ground_truth", "groundTruth"])
def test_a_mapped_field_the_data_also_holds_under_its_own_name_is_an_error(existing):
    data = [{**row, existing: "other"} for row in ROWS]
    with pytest.raises(EvalDagError) as raised:
        run_evals(data, scorers=[EXACT], columns=MAPPING)
    assert (
        f"columns= maps 'ground_truth' to the data column 'reference', but the data also has a "
        f"column '{existing}': which one holds the ground_truth?"
    ) in raised.value.message


def test_columns_may_trade_names():
    """A column named as a field, mapped to another field, frees its name."""
    SEEN.clear()
    run_evals(
        [{"input": "the answer", "question": "the question", "output": "o"}],
        scorers=[EXACT],
        columns={"input": "question", "ground_truth": "input"},
    )
    assert SEEN == [("the question", "o", "the answer")]


def test_the_output_of_a_target_is_not_mapped():
    with pytest.raises(EvalDagError, match="the target produces each item's output"):
        run_evals(ROWS, scorers=[EXACT], target=lambda q: q, columns=MAPPING)


def test_data_without_an_input_says_how_to_map_one():
    with pytest.raises(EvalDagError) as raised:
        run_evals(pd.DataFrame(ROWS), scorers=[EXACT])
    assert "columns={'input': '<column>'}" in raised.value.message
    with pytest.raises(EvalDagError) as raised:
        run_evals(ROWS, scorers=[EXACT], columns={"input": "question"})
    assert "columns={'output': '<column>'}" in raised.value.message


def test_an_item_without_its_mapped_input_is_named(tmp_path):
    path = tmp_path / "items.jsonl"
    path.write_text('{"question": "q", "answer": "a"}\n{"input": "q", "answer": "a"}\n')
    with pytest.raises(EvalDagError, match="line 2 has no 'question'"):
        run_evals(path, scorers=[EXACT], columns={"input": "question", "output": "answer"})
    items = [{"question": "q", "output": "a"}, {"input": "q", "output": "a"}]
    with pytest.raises(EvalDagError, match="index 1: must have 'question', 'inputs', or 'turns'"):
        run_evals(items, scorers=[EXACT], columns={"input": "question"})


# --- eval files and the command line ----------------------------------------------------------

EVAL_FILE = """\
import evaldag

exact = evaldag.create_scorer("exact").generate_score(
    lambda run: 1.0 if run.output == run.ground_truth else 0.0
)
scorers = [exact.with_threshold(0.5)]
{columns}
"""


def _eval_and_data(tmp_path: Path, columns: str = "") -> tuple[Path, Path]:
    eval_file = tmp_path / "eval_capitals.py"
    eval_file.write_text(EVAL_FILE.format(columns=columns))
    data = tmp_path / "items.csv"
    pd.DataFrame(ROWS).to_csv(data, index=False)
    return eval_file, data


def _run(capsys, *args) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_the_cli_maps_columns(tmp_path, capsys):
    eval_file, data = _eval_and_data(tmp_path)
    out = tmp_path / "results.parquet"
    code, stdout, err = _run(
        capsys, "run", eval_file, "--data", data, "--out", out,
        "--columns", "input=question,output=answer", "--columns", "ground_truth=reference",
    )  # fmt: skip
    assert (code, err) == (0, "")
    assert "verdict: PASSED" in stdout
    assert EvalResult.read_parquet(out).columns == MAPPING


def test_the_eval_files_columns_apply_and_the_cli_overrides_them_field_by_field(tmp_path, capsys):
    eval_file, data = _eval_and_data(
        tmp_path, "columns = {'input': 'question', 'output': 'answer', 'ground_truth': 'topic'}"
    )
    out = tmp_path / "results.parquet"
    code, _, _ = _run(capsys, "run", eval_file, "--data", data, "--out", out)
    assert code == 1  # no answer equals its topic: the threshold is missed
    assert EvalResult.read_parquet(out).columns == {**MAPPING, "ground_truth": "topic"}
    code, _, _ = _run(
        capsys,
        "run",
        eval_file,
        "--data",
        data,
        "--out",
        out,
        "--columns",
        "ground_truth=reference",
    )
    assert code == 0
    assert EvalResult.read_parquet(out).columns == MAPPING


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ("input", "expected FIELD=COLUMN entries separated by commas"),
        ("input=question,input=q", "names the field 'input' twice"),
        ("input=", "expected FIELD=COLUMN entries"),
    ],
)
def test_a_malformed_columns_option_is_a_usage_error(tmp_path, capsys, given, says):
    eval_file, data = _eval_and_data(tmp_path)
    with pytest.raises(SystemExit) as exited:
        main(["run", str(eval_file), "--data", str(data), "--columns", given])
    assert exited.value.code == 3
    assert says in capsys.readouterr().err


def test_the_cli_names_a_wrong_mapping(tmp_path, capsys):
    eval_file, data = _eval_and_data(tmp_path)
    code, _, err = _run(
        capsys, "run", eval_file, "--data", data, "--columns", "input=question,output=answr"
    )
    assert code == 3
    assert "columns= maps 'output' to the data column 'answr'" in err
    assert "did you mean 'answer'?" in err
    code, _, err = _run(
        capsys, "run", eval_file, "--data", data,
        "--columns", "input=question", "--columns", "input=topic",
    )  # fmt: skip
    assert code == 3 and "--columns names the field 'input' twice" in err


def test_an_eval_files_columns_must_be_a_dict(tmp_path, capsys):
    eval_file, data = _eval_and_data(tmp_path, "columns = ['question']")
    code, _, err = _run(capsys, "run", eval_file, "--data", data)
    assert code == 3
    assert "'columns' must be a dict of run field → data column, got list" in err


def test_the_estimate_reads_mapped_columns(tmp_path, capsys):
    eval_file, data = _eval_and_data(tmp_path, "columns = {'input': 'question'}")
    code, stdout, _ = _run(
        capsys, "run", eval_file, "--data", data, "--columns", "output=answer", "--estimate"
    )
    assert code == 0 and "2 items; no judge called" in stdout


pytest_plugins = ["pytester"]


def test_pytest_honours_an_eval_files_columns(pytester):
    pytester.makepyfile(
        eval_mapped="""
        import evaldag

        data = [{"question": "q", "answer": "Paris", "reference": "Paris"}]
        columns = {"input": "question", "output": "answer", "ground_truth": "reference"}
        exact = evaldag.create_scorer("exact").generate_score(
            lambda run: 1.0 if run.output == run.ground_truth else 0.0
        )
        scorers = [exact.with_threshold(1)]
        """
    )
    done = pytester.runpytest("-p", "no:cacheprovider")
    done.assert_outcomes(passed=1)


@pytest.mark.slow
def test_the_installed_command_maps_columns(tmp_path):
    eval_file, data = _eval_and_data(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "evaldag", "run", str(eval_file), "--data", str(data),
         "--columns", "input=question,output=answer,ground_truth=reference"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "verdict: PASSED" in done.stdout
