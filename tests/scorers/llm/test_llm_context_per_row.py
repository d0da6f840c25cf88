"""The context of each run, for every LLM scorer that judges against one (issue 13, section 2).

One option per scorer (``context=``; ``source=`` for summarization) takes a fixed list, the name
of a data column or a function of the run, and the three give the judge the same prompts and
the same scores for the same context, through ``scorer.run`` and through ``run_evals`` on a
DataFrame and on a Parquet file. A run without context (or without the ground truth a scorer
needs) is not scorable, and the judge is not asked; a context of another shape is an error
that names the option, the column and the type.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import pytest

import evaldag
from evaldag import EvalDagError, Scorer, ScorerRunError, scorers

REASON = "The score is explained."
ROWS = [
    {
        "id": "r0",
        "input": "Where are A and B?",
        "output": "A is here. B is there.",
        "ground_truth": "A is here. B is there.",
        "pieces": ["A is here.", "B is there."],
    },
    {
        "id": "r1",
        "input": "Where is C?",
        "output": "C is far away.",
        "ground_truth": "C is far away.",
        "pieces": ["C is far away.", "D is next door."],
    },
]
PIECES = {row["input"]: row["pieces"] for row in ROWS}


def _yes_no(key: str, **fields: Any) -> dict[str, Any]:
    return {
        key: [
            {**fields, "verdict": "yes", "reason": "Supported."},
            {**fields, "verdict": "no", "reason": "Not supported."},
        ]
    }


def _indexed(key: str, make: Callable[[int], dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {key: [make(0), make(1)], **extra}


@dataclass(frozen=True)
class Case:
    """A context-reading scorer: how it is built, its option, what the judge answers (by the
    JSON key of the answer's schema) and how a row's pieces sit in a data column."""

    factory: Callable[..., Scorer]
    replies: list[tuple[str, Any]]
    option: str = "context"
    cell: Callable[[list[str]], Any] = list
    options: dict[str, Any] = field(default_factory=dict)

    def scorer(self, judge: Any, value: Any) -> Scorer:
        return self.factory(judge, **{self.option: value}, **self.options)


CLAIMS = ("claims", {"claims": ["First claim", "Second claim"]})
CASES = {
    "faithfulness": Case(scorers.faithfulness, [("verdicts", _yes_no("verdicts")), CLAIMS]),
    "hallucination": Case(scorers.hallucination, [("verdicts", _yes_no("verdicts")), CLAIMS]),
    "context_precision": Case(
        scorers.context_precision,
        [
            (
                "verdicts",
                _indexed(
                    "verdicts",
                    lambda i: {"context_index": i, "verdict": "yes" if i else "no", "reason": "r"},
                ),
            )
        ],
    ),
    "context_recall": Case(scorers.context_recall, [("verdicts", _yes_no("verdicts")), CLAIMS]),
    "context_relevance": Case(
        scorers.context_relevance,
        [
            (
                "evaluations",
                _indexed(
                    "evaluations",
                    lambda i: {
                        "context_index": i,
                        "contextPiece": "p",
                        "relevanceLevel": "high" if i else "low",
                        "wasUsed": True,
                        "reasoning": "r",
                    },
                    missingContext=[],
                    overallAssessment="Fine.",
                ),
            )
        ],
    ),
    "summarization": Case(
        scorers.summarization,
        [
            (
                "alignment",
                {
                    "alignment": [{"claim": "c", "supported": True, "reason": "r"}],
                    "questions": ["Q1?", "Q2?"],
                },
            ),
            (
                "coverage",
                {
                    "coverage": [
                        {"question": "Q1?", "answered": True, "reason": "r"},
                        {"question": "Q2?", "answered": False, "reason": "r"},
                    ]
                },
            ),
        ],
        option="source",
        cell="\n".join,  # a source column holds each row's text (the pieces, one per line)
    ),
}
#: A scorer that scores every item: beside it, a run whose LLM scorer finds no item scorable
#: still measured something (alone, it would be an error: nothing could be scored).
SCORES = evaldag.create_scorer("always-one").generate_score(lambda: 1.0)

NAMES = sorted(CASES)


def _answers(word: str) -> Callable[[Any], bool]:
    return lambda request: f'"{word}"' in json.dumps(request.response_format or {})


def _scripted(server, case: Case) -> None:
    server.reset()
    for word, reply in case.replies:
        server.on(_answers(word), reply)
    server.reply = REASON


def _frame(case: Case, column: str = "contexts") -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "id": row["id"],
                "input": row["input"],
                "output": row["output"],
                "ground_truth": row["ground_truth"],
                column: case.cell(row["pieces"]),
            }
            for row in ROWS
        ]
    )


def _prompts(server) -> list[str]:
    return sorted(request.prompt for request in server.requests)


def _evaluated(server, case: Case, scorer: Scorer, data: Any) -> tuple[list[str], list[float]]:
    """The prompts the judge got and the item scores, for ``run_evals`` over ``data``."""
    _scripted(server, case)
    result = evaldag.run_evals(data, scorers=[scorer], concurrency=2, progress=False)
    return _prompts(server), result.items[f"{scorer.id}.score"].tolist()


# --- the three forms give the same prompts and scores ----------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_a_list_a_column_and_a_function_give_the_same_prompts_and_scores(
    judge_server, tmp_path, name
):
    case = CASES[name]
    judge = judge_server.judge()

    fixed_prompts, fixed_scores = [], []
    for row in ROWS:  # a fixed list is the same for every run: one scorer per row
        _scripted(judge_server, case)
        result = case.scorer(judge, row["pieces"]).run(
            input=row["input"], output=row["output"], ground_truth=row["ground_truth"]
        )
        fixed_prompts += _prompts(judge_server)
        fixed_scores.append(result.score)
    fixed_prompts.sort()
    assert fixed_prompts and all(score is not None for score in fixed_scores)

    column = case.scorer(judge, "retrieved_contexts")
    assert column.columns == ("retrieved_contexts",)
    frame = _frame(case, "retrieved_contexts")
    assert _evaluated(judge_server, case, column, frame) == (fixed_prompts, fixed_scores)

    path = tmp_path / "items.parquet"
    frame.to_parquet(path)
    assert _evaluated(judge_server, case, column, str(path)) == (fixed_prompts, fixed_scores)

    async def pieces_of(run):
        return PIECES[run.input]

    for function in (lambda run: PIECES[run.input], pieces_of):
        scorer = case.scorer(judge, function)
        assert scorer.columns == ()
        data = frame.drop(columns=["retrieved_contexts"])
        assert _evaluated(judge_server, case, scorer, data) == (fixed_prompts, fixed_scores)

    row = ROWS[0]
    _scripted(judge_server, case)
    one = column.run(
        input=row["input"],
        output=row["output"],
        ground_truth=row["ground_truth"],
        retrieved_contexts=case.cell(row["pieces"]),
    )
    assert one.score == fixed_scores[0]


@pytest.mark.parametrize("name", sorted(set(NAMES) - {"summarization"}))
def test_a_csv_holding_each_rows_pieces_as_json_text_is_scored_as_the_lists(
    judge_server, tmp_path, name
):
    """A CSV cell holds text: a column of pieces holds their JSON array, read as the list."""
    case = CASES[name]
    scorer = case.scorer(judge_server.judge(), "contexts")
    frame = _frame(case)
    listed = _evaluated(judge_server, case, scorer, frame)
    path = tmp_path / "items.csv"
    frame.assign(contexts=frame["contexts"].map(json.dumps)).to_csv(path, index=False)
    assert pd.read_csv(path)["contexts"][0] == '["A is here.", "B is there."]'
    assert _evaluated(judge_server, case, scorer, path) == listed
    _scripted(judge_server, case)
    one = scorer.run(input="q", output="o", ground_truth="g", contexts='["A is here."]')
    assert one.score is not None


@pytest.mark.parametrize("name", ["context_precision", "context_recall", "context_relevance"])
def test_mastras_context_extractor_is_a_function_of_the_run(judge_server, name):
    case = CASES[name]
    row = ROWS[1]
    seen = []

    def extractor(run_input, run_output):
        seen.append((run_input, run_output))
        return row["pieces"]

    results = []
    for scorer in (
        case.factory(judge_server.judge(), context_extractor=extractor),
        case.factory(judge_server.judge(), context=row["pieces"]),
    ):
        _scripted(judge_server, case)
        result = scorer.run(
            input=row["input"], output=row["output"], ground_truth=row["ground_truth"]
        )
        results.append((result.score, _prompts(judge_server)))
    assert results[0] == results[1]
    assert seen[0] == (row["input"], row["output"])


def test_summarizations_source_extractor_is_a_function_of_the_run(judge_server):
    case = CASES["summarization"]
    results = []
    for scorer in (
        scorers.summarization(judge_server.judge(), source_extractor=lambda i, o: f"About {i}."),
        scorers.summarization(judge_server.judge(), source=lambda run: f"About {run.input}."),
        scorers.summarization(judge_server.judge(), source=["About doc-7."]),
    ):
        _scripted(judge_server, case)
        result = scorer.run(input="doc-7", output="A summary.")
        results.append((result.score, _prompts(judge_server)))
    assert results[0] == results[1] == results[2]
    assert any("<source>\nAbout doc-7.\n</source>" in prompt for prompt in results[0][1])


# --- no context: not scorable, no judge call --------------------------------------------------

EMPTY_CELLS = {
    "empty list": [],
    "None": None,
    "NaN": float("nan"),
    "blank pieces": ["", "  "],
    "empty array": np.array([], dtype=object),
}


@pytest.mark.parametrize("name", NAMES)
def test_an_empty_context_cell_is_not_scorable_and_the_judge_is_not_asked(judge_server, name):
    case = CASES[name]
    scorer = case.scorer(judge_server.judge(), "contexts")
    data = pd.DataFrame(
        [
            {"id": label, "input": "q", "output": "o", "ground_truth": "g", "contexts": cell}
            for label, cell in EMPTY_CELLS.items()
        ]
    )
    _scripted(judge_server, case)
    result = evaldag.run_evals(data, scorers=[scorer, SCORES], progress=False)

    assert judge_server.requests == []
    items = result.items
    assert items[f"{scorer.id}.score"].isna().all()
    assert items[f"{scorer.id}.error"].isna().all()
    reason = f"no {case.option}: the data column 'contexts' is empty for this run"
    for text in items[f"{scorer.id}.not_scorable"]:
        assert json.loads(text) == {"step": "preprocess", "reason": reason}


@pytest.mark.parametrize("name", NAMES)
def test_empty_context_cells_read_back_from_parquet_are_not_scorable(judge_server, tmp_path, name):
    case = CASES[name]
    scorer = case.scorer(judge_server.judge(), "contexts")
    frame = _frame(case)
    frame["contexts"] = [[], None]
    path = tmp_path / "items.parquet"
    frame.to_parquet(path)
    _scripted(judge_server, case)
    result = evaldag.run_evals(str(path), scorers=[scorer, SCORES], progress=False)
    assert judge_server.requests == []
    assert result.items[f"{scorer.id}.not_scorable"].notna().all()


@pytest.mark.parametrize("name", NAMES)
def test_a_function_that_finds_no_context_makes_the_run_not_scorable(judge_server, name):
    case = CASES[name]
    scorer = case.scorer(judge_server.judge(), lambda run: [])
    _scripted(judge_server, case)
    result = scorer.run(input="q", output="o", ground_truth="g")
    assert result.score is None
    assert result.not_scorable.reason == (
        f"no {case.option}: the function given as {case.option} returned none for this run"
    )
    assert judge_server.requests == []


@pytest.mark.parametrize("name", ["faithfulness", "hallucination"])
def test_without_the_option_the_tool_results_are_the_context_or_the_run_is_not_scorable(
    judge_server, name
):
    case = CASES[name]
    scorer = case.factory(judge_server.judge())
    assert scorer.columns == ()
    with_tools = [
        {
            "role": "assistant",
            "content": "A is here. B is there.",
            "toolInvocations": [
                {"toolCallId": "c", "toolName": "t", "state": "result", "result": ["A is here."]}
            ],
        }
    ]
    _scripted(judge_server, case)
    result = scorer.run(input="q", output=with_tools)
    assert result.score is not None
    assert '["A is here."]' in result.analyze_prompt

    _scripted(judge_server, case)
    result = scorer.run(input="q", output="A is here. B is there.")
    assert result.not_scorable.reason == (
        "no context: the run's output has no tool results, and no context= was given "
        "(context='<column>' reads each item's pieces from a column of the data)"
    )
    assert judge_server.requests == []


def test_without_source_the_user_message_is_the_source_or_the_run_is_not_scorable(judge_server):
    case = CASES["summarization"]
    scorer = scorers.summarization(judge_server.judge())
    _scripted(judge_server, case)
    assert scorer.run(input="The full text.", output="A summary.").score is not None
    _scripted(judge_server, case)
    result = scorer.run(input="", output="A summary.")
    assert result.not_scorable.reason.startswith("no source: the run has no user message")
    assert judge_server.requests == []


# --- ground truth -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "scorer_of",
    [
        lambda judge: scorers.context_recall(judge, context="contexts"),
        lambda judge: scorers.answer_similarity(judge),
    ],
    ids=["context_recall", "answer_similarity"],
)
def test_a_missing_ground_truth_is_not_scorable_and_the_judge_is_not_asked(judge_server, scorer_of):
    scorer = scorer_of(judge_server.judge())
    data = pd.DataFrame(
        {
            "input": ["q1", "q2", "q3"],
            "output": ["o1", "o2", "o3"],
            "ground_truth": [None, "", float("nan")],
            "contexts": [["c"], ["c"], ["c"]],
        }
    )
    result = evaldag.run_evals(data, scorers=[scorer, SCORES], progress=False)
    assert judge_server.requests == []
    for text in result.items[f"{scorer.id}.not_scorable"]:
        assert json.loads(text)["reason"].startswith("no ground truth")


def test_answer_similarity_without_required_ground_truth_is_judged_as_in_mastra(judge_server):
    scorer = scorers.answer_similarity(judge_server.judge(), require_ground_truth=False)
    assert [step["type"] for step in scorer.get_steps()][0] == "prompt"  # no check step
    judge_server.script(
        {"outputUnits": ["o"], "groundTruthUnits": []},
        {"matches": [], "extraInOutput": [], "contradictions": []},
        REASON,
    )
    assert scorer.run(input="q", output="o").score == 0


# --- wrong shapes are errors that name the option, the column and the type -------------------


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize(
    ("cell", "kind"), [({"piece": "A"}, "dict"), (3, "int"), (["A", 2], "list")]
)
def test_a_context_cell_of_another_shape_fails_the_item_naming_the_column(
    judge_server, name, cell, kind
):
    case = CASES[name]
    scorer = case.scorer(judge_server.judge(), "contexts")
    data = pd.DataFrame(
        [{"input": "q", "output": "o", "ground_truth": "g", "contexts": cell}], dtype=object
    )
    with pytest.raises(EvalDagError) as raised:  # refused before any step runs
        evaldag.run_evals(data, scorers=[scorer], progress=False)
    message = raised.value.message
    assert f"the data column 'contexts' ({case.option} of {name}(...)) must be" in message
    assert f"got {kind}" in message
    assert judge_server.requests == []

    with pytest.raises(ScorerRunError) as raised:
        scorer.run(input="q", output="o", ground_truth="g", contexts=cell)
    cause = raised.value.cause
    assert isinstance(cause, EvalDagError) and cause.id == "EVALDAG_INVALID_CONTEXT"
    assert cause.details == {"option": case.option, "column": "contexts", "type": kind}


@pytest.mark.parametrize("name", sorted(set(NAMES) - {"summarization"}))
def test_one_string_is_not_a_context(judge_server, name):
    scorer = CASES[name].scorer(judge_server.judge(), lambda run: "A is here.")
    with pytest.raises(ScorerRunError) as raised:
        scorer.run(input="q", output="o", ground_truth="g")
    assert "got str 'A is here.'; put one piece in a list" in raised.value.cause.message
    assert judge_server.requests == []


@pytest.mark.parametrize("name", NAMES)
def test_data_without_the_column_is_refused_before_anything_runs(judge_server, name):
    scorer = CASES[name].scorer(judge_server.judge(), "contexts")
    with pytest.raises(EvalDagError) as raised:
        evaldag.run_evals([{"input": "q", "output": "o"}], scorers=[scorer], progress=False)
    assert raised.value.details == {"scorerId": scorer.id, "columns": ["contexts"]}
    with pytest.raises(ScorerRunError) as raised:
        scorer.run(input="q", output="o", ground_truth="g")
    assert raised.value.cause.id == "EVALDAG_MISSING_COLUMN"
    assert "scorer.run(..., contexts=[...])" in raised.value.cause.message
    assert judge_server.requests == []


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize(
    ("value", "named"),
    [
        ([], "array cannot be empty if provided"),
        ([" "], "array cannot be empty if provided"),
        ([1, 2], "must be a list of strings"),
        ({"a": "b"}, "must be a list of strings"),
        (2.5, "must be a list of strings"),
        ("output", "must name a data column other than the run's own fields"),
        (lambda run, step: [], "must be a function (run)"),
    ],
)
def test_a_wrong_option_is_refused_when_the_scorer_is_built(name, value, named):
    case = CASES[name]
    with pytest.raises(EvalDagError) as raised:
        case.scorer("openai/gpt-4o-mini", value)
    assert f"{case.option}" in raised.value.message and named in raised.value.message
    assert raised.value.details["option"] == case.option


@pytest.mark.parametrize("name", ["context_precision", "summarization"])
def test_the_option_and_its_mastra_alias_are_one_option(name):
    case = CASES[name]
    with pytest.raises(EvalDagError) as raised:
        case.factory("openai/gpt-4o-mini", **{case.option: ["c"], f"{case.option}_extractor": len})
    assert f"got both {case.option} and {case.option}_extractor" in raised.value.message
    with pytest.raises(EvalDagError) as raised:
        case.factory("openai/gpt-4o-mini", **{f"{case.option}_extractor": lambda run: []})
    assert "must be a function (input, output)" in raised.value.message
