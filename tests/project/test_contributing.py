"""docs/contributing.md's examples work: each section's code blocks run as they are written
(a judge's URL pointed at the scripted server), and what they define scores, checks, carries
judge calls and keeps rows as the page says."""

import inspect
import re

import pandas as pd
import pytest
from judge_server import rate_limited, refused
from repo_paths import ROOT

import evaldag
from evaldag import EvalDagError, PromptStep, create_scorer, read_scores, run_evals

PAGE = ROOT / "docs" / "contributing.md"
#: The judge URL the transport example shows, replaced by the scripted server's.
EXAMPLE_URL = "http://127.0.0.1:8000/v1"


def _blocks(section: str) -> list[str]:
    text = PAGE.read_text().split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", text, re.DOTALL)


def _run(code: str) -> dict:
    namespace = {"__name__": "contributing_example"}
    exec(compile(code, str(PAGE), "exec"), namespace)
    return namespace


def test_every_section_has_its_examples():
    assert [len(_blocks(s)) for s in ("A scorer", "A check", "A transport", "A store")] == [
        2,
        1,
        1,
        1,
    ]


def test_the_code_scorer_is_configured_by_a_bound_setting():
    brevity = _run(_blocks("A scorer")[0])["brevity"]
    assert brevity().run(output="one two three four").score == 1.0
    assert brevity(limit=2).run(output="one two three four").score == 0.5
    with pytest.raises(EvalDagError, match="limit of brevity"):
        brevity(limit=0)


def test_the_llm_scorer_asks_its_judge_with_its_instructions(judge_server):
    example = _run(_blocks("A scorer")[1])
    judge_server.reply = {"score": 0.8}
    result = example["politeness"](judge_server.judge()).run(output="Thanks, gladly!")
    assert result.score == 0.8
    (request,) = judge_server.requests
    assert request.system.startswith(example["INSTRUCTIONS"])
    assert "<response>\nThanks, gladly!\n</response>" in request.prompt
    assert ":param model: the judge:" in inspect.getdoc(example["politeness"])


def test_the_check_passes_and_fails_and_checks_its_arguments():
    mentions_all = _run(_blocks("A check")[0])["mentions_all"]
    check = mentions_all(["Paris", "Rome"])
    assert check.run(output="From paris to ROME").score == 1
    failed = check.run(output="Paris only")
    assert (failed.score, failed.preprocess_step_result["missing"]) == (0, ["Rome"])
    with pytest.raises(EvalDagError, match="checks.mentions_all: words"):
        mentions_all(["Paris", 7])


def test_the_transport_carries_judge_calls_with_evaldags_retries(judge_server):
    (code,) = _blocks("A transport")
    assert EXAMPLE_URL in code
    judge = _run(code.replace(EXAMPLE_URL, judge_server.url))["judge"]
    step = PromptStep("score", lambda run: f"Score {run.output}", judge={"instructions": "Grade."})
    scorer = create_scorer("carried", judge=judge).generate_score(step)
    judge_server.script(rate_limited(retry_after=0), {"score": 0.25})
    result = scorer.run(output="x")
    assert result.score == 0.25
    assert len(judge_server.requests) == 2  # the 429 was retried
    assert judge_server.requests[-1].model == "my-model"
    execution = result.judge["generate_score"].executions[0]
    assert execution.usage.input_tokens == 10  # the scripted server's usage, as replied

    judge_server.reset()
    judge_server.reply = refused(401)
    with pytest.raises(evaldag.ScorerRunError) as raised:
        scorer.run(output="x")
    assert raised.value.cause.id == "EVALDAG_JUDGE_REFUSED"  # a refusal is not retried
    assert len(judge_server.requests) == 1


def test_the_store_keeps_the_rows_of_runs_and_reads_them_back(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _run(_blocks("A store")[0])
    data = pd.DataFrame({"input": ["q1", "q2"], "output": ["a b c", "a"]})
    scorer = create_scorer("words").generate_score(lambda run: len(run.output.split()) / 10)
    first = run_evals(data, scorers=[scorer], store="jsonl://scores.jsonl")
    run_evals(data, scorers=[scorer], store="jsonl://scores.jsonl")
    assert len(read_scores("jsonl://scores.jsonl")) == 4
    rows = read_scores("jsonl://scores.jsonl", experiment_id=first.experiment_id)
    assert sorted(rows.score) == [0.1, 0.3] and set(rows.source) == {"TEST"}
    with evaldag.SqlScoreStore("copy.db") as copy:  # the rows are whole: another store takes them
        copy.save(rows.to_dict("records"))
        assert len(copy.scores()) == 2
