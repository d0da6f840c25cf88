"""The dataflows in dataflows/: hub-style folders whose drivers run and give the right answers.

The RAG dataflow's judge is the loopback judge server, reached through litellm over HTTP.
"""

import importlib.util
import json
import re
import shutil
import subprocess
import sys

import pandas as pd
import pytest
from hamilton import driver
from judge_server import JudgeServer
from repo_paths import ROOT

import evaldag
from evaldag import checks, create_scorer

DATAFLOWS = ROOT / "dataflows"
NAMES = ["agent_tool_use", "rag_answer_quality", "rag_pipeline_steps", "regression_gate"]
FILES = ["__init__.py", "README.md", "dag.png", "valid_configs.jsonl", "tags.json"]


def _module(name):
    """The dataflow's module, imported from its folder as a hub dataflow is."""
    module_name = f"dataflows_{name}"
    if module_name not in sys.modules:
        spec = importlib.util.spec_from_file_location(module_name, DATAFLOWS / name / "__init__.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module  # Hamilton finds a module's functions through it
        spec.loader.exec_module(module)
    return sys.modules[module_name]


def _driver(name, config=None):
    return driver.Builder().with_modules(_module(name)).with_config(config or {}).build()


# --- the folder shape --------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_folder_has_the_hub_files(name):
    folder = DATAFLOWS / name
    for file in [*FILES, "requirements.txt"]:
        assert (folder / file).is_file(), f"{name}/{file} is missing"
    assert (folder / "dag.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    readme = (folder / "README.md").read_text()
    for heading in ("# Purpose of this module", "# Configuration Options", "# Limitations"):
        assert f"\n{heading}\n" in f"\n{readme}"
    tags = json.loads((folder / "tags.json").read_text())
    assert tags["schema"] == "1.0" and "evaldag" in tags["use_case_tags"]
    assert "evaldag" in (folder / "requirements.txt").read_text().split()


@pytest.mark.parametrize("name", NAMES)
def test_every_valid_config_builds_a_driver(name):
    lines = (DATAFLOWS / name / "valid_configs.jsonl").read_text().splitlines()
    configs = [json.loads(line) for line in lines if line.strip()]
    assert len(configs) >= 2
    for entry in configs:
        assert {"description", "name", "config"} <= set(entry)
        dr = _driver(name, entry["config"])
        assert "verdict" in {v.name for v in dr.list_available_variables()}


# --- regression_gate -----------------------------------------------------------------------------

QUESTIONS = ["What is the capital of France?", "Who wrote Hamlet?", "How tall is Everest?"]


def _saved_run(tmp_path, name, answers, ids=None):
    data = pd.DataFrame({"input": QUESTIONS, "output": answers})
    if ids is not None:
        data["id"] = ids
    length = create_scorer("length").generate_score(lambda run: min(len(run.output) / 30, 1.0))
    result = evaldag.run_evals(
        data, scorers=[length.with_threshold(0.5)], gates=[checks.excludes("not sure")]
    )
    return str(result.to_parquet(tmp_path / f"{name}.parquet"))


GOOD = ["Paris is the capital of France.", "Shakespeare wrote Hamlet.", "Everest: 8,849 metres."]
WORSE = ["Paris is the capital of France.", "I am not sure.", "Everest: 8,849 metres."]


def test_regression_gate_finds_what_got_worse(tmp_path):
    paths = {
        "baseline_path": _saved_run(tmp_path, "baseline", GOOD),
        "candidate_path": _saved_run(tmp_path, "candidate", WORSE),
    }
    outputs = _driver("regression_gate").execute(
        ["verdict", "regression_reasons", "scorer_deltas", "worse_items", "regression_report"],
        inputs=paths,
    )
    assert outputs["verdict"] == "failed"
    deltas = outputs["scorer_deltas"]
    assert deltas.loc["length", "baseline"] == pytest.approx((1 + 25 / 30 + 22 / 30) / 3)
    assert deltas.loc["length", "delta"] == pytest.approx((14 - 25) / 30 / 3)
    assert deltas.loc["check-excludes", "candidate"] == pytest.approx(2 / 3)
    assert deltas["regressed"].tolist() == [True, True]
    assert outputs["regression_reasons"][0] == (
        "gate check-excludes passed in the baseline and fails now"
    )
    worse = outputs["worse_items"]
    assert worse["item"].tolist() == ["Who wrote Hamlet?", "Who wrote Hamlet?"]
    assert worse["scorer"].tolist() == ["check-excludes", "length"]
    assert worse["delta"].tolist() == pytest.approx([-1.0, (14 - 25) / 30])
    assert outputs["regression_report"].startswith("## Regression gate: failed")
    assert "| length | 0.856 | 0.733 | -0.122 |" in outputs["regression_report"]


def test_regression_gate_passes_an_unchanged_run_and_tolerates_small_drops(tmp_path):
    baseline = _saved_run(tmp_path, "baseline", GOOD)
    slightly = ["Paris is the capital of France.", "Shakespeare wrote it.", GOOD[2]]
    dr = _driver("regression_gate")
    same = dr.execute(
        ["verdict", "worse_items"],
        inputs={"baseline_path": baseline, "candidate_path": _saved_run(tmp_path, "same", GOOD)},
    )
    assert same["verdict"] == "passed" and same["worse_items"].empty
    candidate = _saved_run(tmp_path, "slightly", slightly)
    strict = dr.execute(
        ["verdict"], inputs={"baseline_path": baseline, "candidate_path": candidate}
    )
    lenient = dr.execute(
        ["verdict", "worse_items"],
        inputs={
            "baseline_path": baseline,
            "candidate_path": candidate,
            "max_average_drop": 0.05,
            "min_item_drop": 0.05,
        },
    )
    assert strict["verdict"] == "failed"
    assert lenient["verdict"] == "passed"
    assert lenient["worse_items"]["item"].tolist() == ["Who wrote Hamlet?"]


def test_regression_gate_matches_items_by_key_or_by_position(tmp_path):
    baseline = _saved_run(tmp_path, "baseline", GOOD, ids=["a", "b", "c"])
    # The candidate holds the same items in another order, under the same ids.
    order = [2, 0, 1]
    data = pd.DataFrame(
        {
            "input": [QUESTIONS[i] for i in order],
            "output": [WORSE[i] for i in order],
            "id": [["a", "b", "c"][i] for i in order],
        }
    )
    length = create_scorer("length").generate_score(lambda run: min(len(run.output) / 30, 1.0))
    shuffled = str(
        evaldag.run_evals(data, scorers=[length], gates=[checks.excludes("not sure")]).to_parquet(
            tmp_path / "shuffled.parquet"
        )
    )
    inputs = {"baseline_path": baseline, "candidate_path": shuffled}
    by_key = _driver("regression_gate").execute(
        ["worse_items"], inputs={**inputs, "item_key": "id"}
    )
    assert sorted(set(by_key["worse_items"]["item"])) == ["b"]
    by_position = _driver("regression_gate", {"match_items_by": "position"}).execute(
        ["paired_items"], inputs=inputs
    )["paired_items"]
    assert by_position["item"].tolist() == ["0", "1", "2"]
    assert by_position["candidate.length.score"].tolist() == pytest.approx([22 / 30, 1.0, 14 / 30])
    with pytest.raises(ValueError, match="no column 'ticket' to match items on"):
        _driver("regression_gate").execute(["worse_items"], inputs={**inputs, "item_key": "ticket"})


def test_regression_gate_fails_a_candidate_lacking_items_or_scorers(tmp_path):
    baseline = _saved_run(tmp_path, "baseline", GOOD)
    two = pd.DataFrame({"input": QUESTIONS[:2] + ["A new question?"], "output": GOOD[:2] + ["x"]})
    gate = checks.excludes("not sure")
    fewer = str(evaldag.run_evals(two, gates=[gate]).to_parquet(tmp_path / "fewer.parquet"))
    inputs = {"baseline_path": baseline, "candidate_path": fewer}
    outputs = _driver("regression_gate").execute(
        ["verdict", "regression_reasons", "missing_items", "regression_report"], inputs=inputs
    )
    assert outputs["missing_items"] == ["How tall is Everest?"]  # the new question is no loss
    assert outputs["verdict"] == "failed"
    assert outputs["regression_reasons"] == [
        "scorer length is in the baseline but not in the candidate",
        "the candidate lacks 1 of the baseline's items: How tall is Everest?",
    ]
    assert "- the candidate lacks 1 of the baseline's items" in outputs["regression_report"]
    allowed = _driver("regression_gate").execute(
        ["verdict"], inputs={**inputs, "allow_missing": True}
    )
    assert allowed["verdict"] == "passed"
    by_position = _driver("regression_gate", {"match_items_by": "position"}).execute(
        ["missing_items", "verdict"], inputs=inputs
    )
    assert by_position["missing_items"] == [] and by_position["verdict"] == "failed"


def test_regression_gate_fails_a_candidate_that_failed_on_items_the_baseline_scored(tmp_path):
    """Failing on the short (worst) answer raised the candidate's average: passed before."""
    flaky = create_scorer("length").generate_score(
        lambda run: 1 / 0 if "8,849" in run.output else min(len(run.output) / 30, 1.0)
    )
    data = pd.DataFrame({"input": QUESTIONS, "output": GOOD})
    failing = evaldag.run_evals(data, scorers=[flaky], gates=[checks.excludes("not sure")])
    inputs = {
        "baseline_path": _saved_run(tmp_path, "baseline", GOOD),
        "candidate_path": str(failing.to_parquet(tmp_path / "failing.parquet")),
    }
    outputs = _driver("regression_gate").execute(
        ["verdict", "regression_reasons", "scorer_deltas"], inputs=inputs
    )
    assert outputs["scorer_deltas"].loc["length", "delta"] > 0
    assert outputs["regression_reasons"] == [
        "length failed on 1 of the items the baseline scored: How tall is Everest?"
    ]
    assert outputs["verdict"] == "failed"
    allowed = _driver("regression_gate").execute(
        ["verdict"], inputs={**inputs, "allow_missing": True}
    )
    assert allowed["verdict"] == "passed"


# --- agent_tool_use ------------------------------------------------------------------------------


def _call(tool, result, state="result"):
    invocation = {"toolCallId": f"call-{tool}", "state": state, "toolName": tool, "args": {}}
    if state == "result":
        invocation["result"] = result
    return {
        "role": "assistant",
        "content": "",
        "parts": [{"type": "tool-invocation", "toolInvocation": invocation}],
        "toolInvocations": [invocation],
    }


AGENT_RUNS = [
    {  # right order once the memory lookup is filtered out
        "input": "Book a table for two in Lyon",
        "output": [
            _call("memory_read", {}),
            _call("search_restaurants", ["Le Bec"]),
            _call("book_table", {"ok": True}),
            {"role": "assistant", "content": "Booked Le Bec."},
        ],
        "ticket": "T-1",
    },
    {  # wrong order
        "input": "Find sushi in Paris and book it",
        "output": [
            _call("book_table", {"ok": True}),
            _call("search_restaurants", ["Kinugawa"]),
            {"role": "assistant", "content": "Booked."},
        ],
        "ticket": "T-2",
    },
    {  # right order, but a forbidden tool too
        "input": "Move my booking to 9pm",
        "output": [
            _call("search_restaurants", ["Le Bec"]),
            _call("book_table", {"ok": True}),
            _call("delete_booking", {"ok": True}),
            {"role": "assistant", "content": "Moved."},
        ],
        "ticket": "T-3",
    },
    {  # right order, but the booking call never returned
        "input": "Book a table at Le Bec",
        "output": [
            _call("search_restaurants", ["Le Bec"]),
            _call("book_table", None, state="call"),
            {"role": "assistant", "content": "Trying to book."},
        ],
        "ticket": "T-4",
    },
]


def _runs_file(tmp_path):
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps(run) + "\n" for run in AGENT_RUNS))
    return str(path)


def test_agent_tool_use_scores_the_order_and_gates_the_runs(tmp_path):
    outputs = _driver("agent_tool_use", {"tool_check": "order"}).execute(
        ["verdict", "tool_call_accuracy_average", "gate_failures", "eval_result"],
        inputs={
            "agent_runs_path": _runs_file(tmp_path),
            "expected_tool_order": ["search_restaurants", "book_table"],
            "scored_tools": ["search_", "book_"],
            "strict_mode": True,
            "forbidden_tools": ["delete_booking"],
        },
    )
    items = outputs["eval_result"].items
    assert items["code-tool-call-accuracy-scorer.score"].tolist() == [1.0, 0.0, 1.0, 1.0]
    assert items["ticket"].tolist() == ["T-1", "T-2", "T-3", "T-4"]
    assert outputs["tool_call_accuracy_average"] == 0.75
    assert outputs["verdict"] == "failed"
    failures = outputs["gate_failures"]
    assert failures[["item", "gate"]].values.tolist() == [
        [3, "check-no-tool-errors"],
        [2, "check-did-not-call-delete_booking"],
    ]
    assert failures["prompt"].tolist() == ["Book a table at Le Bec", "Move my booking to 9pm"]
    assert json.loads(failures["found"][1])["preprocess_step_result"]["count"] == 1
    gates = {g.id: g.passed for g in outputs["eval_result"].gate_results}
    assert gates == {
        "check-no-tool-errors": False,
        "check-max-tool-calls": True,
        "check-did-not-call-delete_booking": False,
    }


def test_agent_tool_use_without_the_filter_counts_every_tool(tmp_path):
    outputs = _driver("agent_tool_use", {"tool_check": "order"}).execute(
        ["eval_result"],
        inputs={
            "agent_runs_path": _runs_file(tmp_path),
            "expected_tool_order": ["search_restaurants", "book_table"],
            "strict_mode": True,
        },
    )
    scores = outputs["eval_result"].items["code-tool-call-accuracy-scorer.score"]
    assert scores.tolist() == [0.0, 0.0, 0.0, 1.0]  # memory_read and delete_booking count now


def test_agent_tool_use_checks_one_expected_tool(tmp_path):
    outputs = _driver("agent_tool_use").execute(
        ["verdict", "tool_call_accuracy_average", "eval_result"],
        overrides={"raw_agent_runs": pd.DataFrame(AGENT_RUNS[:2])},
        inputs={"expected_tool": "book_table", "max_calls": 2, "min_tool_call_accuracy": 1.0},
    )
    assert outputs["tool_call_accuracy_average"] == 1.0
    gates = {g.id: g.passed for g in outputs["eval_result"].gate_results}
    assert gates == {"check-no-tool-errors": True, "check-max-tool-calls": False}
    assert outputs["verdict"] == "failed"


# --- rag_answer_quality (judged by the loopback judge server) -----------------------------------

RAG_ANSWERS = [
    {
        "id": "louvre",
        "question": "When does the Louvre open on Fridays?",
        "answer": "On Fridays the Louvre opens at 9 am and closes at 9:45 pm.",
        "contexts": ["The Louvre is open from 9 am to 6 pm, and until 9:45 pm on Fridays."],
    },
    {
        "id": "seine",
        "question": "How long is the Seine?",
        "answer": "The Seine is 777 km long and flows through Lyon.",
        "contexts": ["The Seine is a 777-kilometre river.", "It flows through Paris."],
    },
    {
        "id": "eiffel",
        "question": "How tall is the Eiffel Tower?",
        "answer": "It might be the most visited monument in Europe.",
        "contexts": ["The Eiffel Tower is 330 metres tall."],
    },
]


def _asks_for(field, text=""):
    """Requests whose structured-output schema has ``field`` and whose prompt contains ``text``."""

    def match(request):
        schema = ((request.response_format or {}).get("json_schema") or {}).get("schema") or {}
        return field in schema.get("properties", {}) and text in request.prompt

    return match


def _verdicts(*answers):
    return {"verdicts": [{"verdict": a, "reason": "per the context"} for a in answers]}


def _results(*answers):
    return {"results": [{"result": a, "reason": "per the question"} for a in answers]}


def _rag_judge(server):
    server.reply = "The score is as given because of the verdicts."
    for word, claims, verdicts, statements, results in [
        ("Louvre", 2, ("yes", "yes"), 2, ("yes", "yes")),
        ("Seine", 2, ("yes", "no"), 2, ("yes", "no")),
        ("Europe", 1, ("unsure",), 1, ("unsure",)),
    ]:
        server.on(
            _asks_for("claims", word), {"claims": [f"{word} claim {n}" for n in range(claims)]}
        )
        server.on(_asks_for("verdicts", word), _verdicts(*verdicts))
        server.on(
            _asks_for("statements", word),
            {"statements": [f"{word} statement {n}" for n in range(statements)]},
        )
        server.on(_asks_for("results", word), _results(*results))


def test_rag_answer_quality_scores_with_a_judge(tmp_path):
    path = tmp_path / "answers.jsonl"
    path.write_text("".join(json.dumps(answer) + "\n" for answer in RAG_ANSWERS))
    with JudgeServer() as server:
        _rag_judge(server)
        outputs = _driver("rag_answer_quality").execute(
            ["verdict", "scorer_summary", "weak_answers", "judge_usage", "eval_result"],
            inputs={
                "rag_answers_path": str(path),
                "judge_model": "openai/gpt-4o-mini",
                "judge_api_base": server.url,
                "judge_api_key": "sk-test",
            },
        )
        requests = server.requests
    items = outputs["eval_result"].items.set_index("id")
    assert items["faithfulness-scorer.score"].tolist() == [1.0, 0.5, 0.0]
    assert items["answer-relevancy-scorer.score"].tolist() == pytest.approx([1.0, 0.5, 0.3])
    summary = outputs["scorer_summary"]
    assert summary.loc["faithfulness-scorer", "average"] == 0.5
    assert not summary.loc["faithfulness-scorer", "passed"]
    assert outputs["verdict"] == "scored"
    # The passages reached the faithfulness judge as the retrieval call's result.
    seine = [r for r in requests if _asks_for("verdicts", "Seine")(r)]
    assert '["The Seine is a 777-kilometre river.","It flows through Paris."]' in seine[0].prompt
    weak = outputs["weak_answers"]
    assert weak[weak["scorer"] == "faithfulness-scorer"]["question"].tolist() == [
        "How tall is the Eiffel Tower?",
        "How long is the Seine?",
    ]
    assert set(weak["reason"].dropna()) == {"The score is as given because of the verdicts."}
    usage = outputs["judge_usage"]
    assert usage.loc["total", "calls"] == len(requests) == 18  # 3 answers × 2 scorers × 3 steps
    assert usage.loc["total", "total_tokens"] == 18 * 15
    assert usage.loc["total", "cost_usd"] > 0  # gpt-4o-mini is in litellm's price table


def test_rag_answer_quality_code_only_needs_no_judge():
    outputs = _driver("rag_answer_quality", {"scoring": "code_only"}).execute(
        ["verdict", "scorer_summary", "judge_usage"],
        overrides={"raw_rag_answers": pd.DataFrame(RAG_ANSWERS)},
    )
    assert outputs["scorer_summary"].index.tolist() == ["completeness-scorer"]
    assert outputs["verdict"] in ("passed", "scored")
    assert outputs["judge_usage"].empty


def test_rag_answer_quality_names_missing_columns():
    answers = pd.DataFrame(RAG_ANSWERS).rename(columns={"contexts": "passages"})
    with pytest.raises(ValueError, match=r"missing \['contexts'\]"):
        _driver("rag_answer_quality", {"scoring": "code_only"}).execute(
            ["rag_dataset"], overrides={"raw_rag_answers": answers}
        )


# --- rag_pipeline_steps ------------------------------------------------------------------------

CORPUS = {
    "louvre": "The Louvre opens at 9 am. It closes at 9:45 pm on Fridays.",
    "seine": "The Seine is 777 km long. It flows through Paris.",
    "eiffel": "The Eiffel Tower is 330 m tall. It was finished in 1889.",
}
RAG_QUESTIONS = [
    {
        "question": "How tall is the Eiffel Tower?",
        "expected_passage": "eiffel",
        "expected_answer": "330 m",
    },
    {
        "question": "How long is the Seine river?",
        "expected_passage": "seine",
        "expected_answer": "777 km",
    },
    {
        "question": "Who painted the Mona Lisa?",
        "expected_passage": "louvre",
        "expected_answer": "Leonardo",
    },
]


def test_rag_pipeline_steps_scores_each_node(tmp_path):
    path = tmp_path / "questions.jsonl"
    path.write_text("\n".join(json.dumps(q) for q in RAG_QUESTIONS[:2]))
    outputs = _driver("rag_pipeline_steps").execute(
        ["verdict", "node_scores", "failed_questions", "eval_result", "answer"],
        inputs={"rag_questions_path": str(path), "corpus": CORPUS, "question": "Seine length?"},
    )
    assert outputs["verdict"] == "passed"
    assert outputs["answer"] == "The Seine is 777 km long."  # the pipeline alone
    scores = outputs["node_scores"].set_index("node")
    assert scores.loc["retrieved_passages", "average"] == 1.0
    assert scores.loc["reranked_passages", "average"] == 1.0
    assert scores.loc["answer", "average"] == 1.0 and scores.loc["path", "average"] == 1.0
    assert outputs["failed_questions"].empty
    items = outputs["eval_result"].items
    assert items["steps.reranked_passages.reciprocal-rank.score"].tolist() == [1.0, 1.0]


def test_rag_pipeline_steps_records_a_failing_node():
    outputs = _driver("rag_pipeline_steps").execute(
        ["verdict", "node_scores", "failed_questions"],
        overrides={"rag_questions": pd.DataFrame(RAG_QUESTIONS)},
        inputs={"corpus": CORPUS},
    )
    failed = outputs["failed_questions"]
    assert failed["question"].tolist() == ["Who painted the Mona Lisa?"]
    assert failed["error"].iloc[0].startswith("ValueError: node 'reranked_passages' failed")
    assert outputs["verdict"] == "failed"  # the pipeline failed on a question
    # The failed node and the answer count the error; the retrieval before it is still scored
    # (it found nothing), and so is the path up to the failure.
    scores = outputs["node_scores"].set_index("node")
    assert scores["errors"].to_dict() == {
        "answer": 1,
        "retrieved_passages": 0,
        "reranked_passages": 1,
        "path": 0,
    }
    assert scores.loc["retrieved_passages", "average"] == pytest.approx(2 / 3)
    assert scores.loc["path", "average"] < 1


def test_rag_pipeline_steps_with_an_llm_answer(judge_server):
    judge_server.reply = "It is 330 m tall."
    outputs = _driver("rag_pipeline_steps", {"answering": "llm"}).execute(
        ["node_scores", "eval_result"],
        overrides={"rag_questions": pd.DataFrame(RAG_QUESTIONS[:1])},
        inputs={
            "corpus": CORPUS,
            "answer_model": "openai/mock-judge",
            "answer_api_base": judge_server.url,
            "answer_api_key": "sk-test",
        },
    )
    assert outputs["eval_result"].items["output"].tolist() == ["It is 330 m tall."]
    (request,) = judge_server.requests
    assert "[eiffel] The Eiffel Tower is 330 m tall." in request.prompt


# --- the __main__ smoke examples -----------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("dot") is None, reason="drawing dag.png needs Graphviz's dot")
@pytest.mark.parametrize("name", NAMES)
def test_main_block_draws_the_dag_and_runs_the_smoke_example(name, tmp_path):
    folder = tmp_path / name
    folder.mkdir()
    shutil.copy(DATAFLOWS / name / "__init__.py", folder / "__init__.py")
    completed = subprocess.run(
        [sys.executable, "__init__.py"], cwd=folder, capture_output=True, text=True, timeout=300
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert (folder / "dag.png").read_bytes()[:4] == b"\x89PNG"
    assert re.search(r"(verdict|gate): (passed|scored|failed)", completed.stdout)


# --- judge_agreement -----------------------------------------------------------------------------

#: The labelled sets, read where they live (never copied into the repository).
DATASETS = next(
    (p / "shared" / "datasets" for p in DATAFLOWS.parents if (p / "shared" / "datasets").is_dir()),
    None,
)
needs_datasets = pytest.mark.skipif(DATASETS is None, reason="no shared/datasets folder")


def test_judge_agreement_has_the_hub_files_and_its_configs_build():
    folder = DATAFLOWS / "judge_agreement"
    for file in [*FILES, "requirements.txt"]:
        assert (folder / file).is_file(), f"judge_agreement/{file} is missing"
    readme = (folder / "README.md").read_text()
    for heading in ("# Purpose of this module", "# Configuration Options", "# Limitations"):
        assert f"\n{heading}\n" in f"\n{readme}"
    assert "evaldag" in json.loads((folder / "tags.json").read_text())["use_case_tags"]
    lines = (folder / "valid_configs.jsonl").read_text().splitlines()
    configs = [json.loads(line)["config"] for line in lines if line.strip()]
    assert len(configs) == 3
    for config in configs:
        names = {v.name for v in _driver("judge_agreement", config).list_available_variables()}
        assert {"judge_agreement", "agreement_figures", "agreement_report"} <= names


@needs_datasets
def test_judge_agreement_reads_the_labelled_sets_where_they_live():
    faithbench = _driver("judge_agreement", {"dataset": "faithbench", "scorer": "faithfulness"})
    items = faithbench.execute(
        ["labelled_items"], inputs={"datasets_dir": str(DATASETS), "items": 30}
    )["labelled_items"]
    source = pd.read_csv(DATASETS / "faithbench" / "FaithBench.csv")
    assert len(items) == 30 and items["LLM"].value_counts().max() == 3  # 10 LLMs, 3 each
    row = source.loc[int(items["id"].iloc[0].removeprefix("faithbench-"))]
    assert items["output"].iloc[0] == row["summary"].strip()
    assert items["contexts"].iloc[0] == [row["source"]]
    assert items["worst-label"].iloc[0] == row["worst-label"]
    halueval = _driver("judge_agreement", {"dataset": "halueval", "scorer": "classifier"})
    answers = halueval.execute(
        ["labelled_items"], inputs={"datasets_dir": str(DATASETS), "items": 50}
    )["labelled_items"]
    assert len(answers) == 50 and set(answers["hallucination"]) <= {"yes", "no"}


@needs_datasets
def test_judge_agreement_scores_faithbench_and_measures_agreement():
    """Twelve FaithBench summaries through a scripted judge: its verdicts say no for the
    passages that mention a year, and the dataflow's agreement is evaldag.agreement's."""
    with JudgeServer() as server:
        server.on(_asks_for("claims"), {"claims": ["The summary says something."]})
        server.on(lambda r: _asks_for("verdicts")(r) and re.search(r"\b20\d\d\b", r.prompt),
                  _verdicts("no"))  # fmt: skip
        server.on(_asks_for("verdicts"), _verdicts("yes"))
        outputs = _driver(
            "judge_agreement", {"dataset": "faithbench", "scorer": "faithfulness"}
        ).execute(
            ["eval_result", "judge_agreement", "agreement_figures", "agreement_report"],
            inputs={
                "datasets_dir": str(DATASETS),
                "items": 12,
                "judge_model": "openai/gpt-4o-mini",
                "judge_api_base": server.url,
                "judge_api_key": "sk-test",
                "resamples": 100,
                "concurrency": 4,
            },
        )
    result, found = outputs["eval_result"], outputs["judge_agreement"]
    scores = result.items["faithfulness-scorer.score"]
    assert len(result.items) == 12 and set(scores) == {0.0, 1.0}
    expected = evaldag.agreement(
        result,
        labels="worst-label",
        positive=["Consistent", "Benign"],
        by="LLM",
        resamples=100,
    )
    assert found == expected and found.overall.compared == 12
    assert len(found.slices) == 10
    assert "**faithfulness-scorer** against `worst-label`" in outputs["agreement_report"]
    assert len(outputs["agreement_figures"]) == 11 * 7
