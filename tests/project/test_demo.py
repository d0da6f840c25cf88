"""``evaldag demo`` in a real subprocess: on a machine without Graphviz and with no judge, and
with an LLM judge (the loopback OpenAI-compatible server, scripted) judging faithfulness."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from judge_server import API_KEY

from evaldag import EvalResult

BIN = Path(sys.executable).parent
EVALDAG = shutil.which("evaldag", path=str(BIN))
COMMAND = [EVALDAG] if EVALDAG else [sys.executable, "-m", "evaldag"]
CODE_SCORERS = ["completeness-scorer", "keyword-coverage-scorer", "check-no-tool-errors"]
GATES = ["no-direct-refunds", "check-max-tool-calls", "no-internal-notes"]


def _demo(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if k != "EVALDAG_CACHE_DIR"}
    return subprocess.run(
        [*COMMAND, "demo", *args],
        cwd=cwd,
        env={**environment, **env},
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.slow
def test_demo_on_a_fresh_machine(tmp_path):
    """No Graphviz and no local judge: the LLM part is skipped with one line, dag.dot is
    written instead of dag.png, the demo exits 0 whatever its verdict."""
    done = _demo(cwd=tmp_path, env={"PATH": str(BIN)})
    assert done.returncode == 0, done.stderr
    out = done.stdout
    skip_lines = [line for line in out.splitlines() if line.startswith("faithfulness: skipped")]
    assert len(skip_lines) == 1
    assert "--judge local for the bundled local judge: about 6 minutes" in skip_lines[0]
    assert "evaldag demo: 33 conversations" in out
    assert "(18 help-center answers, 15 agent transcripts)" in out
    for scorer_id in CODE_SCORERS + GATES:
        assert f"  {scorer_id} " in out
    assert "faithfulness-scorer" not in out
    assert "verdict: SCORED (all 3 gates passed; 1 of 2 thresholds missed" in out
    assert "install Graphviz's 'dot' for dag.png" in out

    folder = tmp_path / "evaldag-demo"
    assert sorted(p.name for p in folder.iterdir()) == ["dag.dot", "report.html", "results.parquet"]
    assert f"wrote to {folder}:" in out
    assert (folder / "report.html").as_uri() in out

    result = EvalResult.read_parquet(folder / "results.parquet")
    assert len(result.items) == 33
    assert result.verdict == "scored"
    assert [t.id for t in result.threshold_results if not t.passed] == ["completeness-scorer"]
    assert all(g.passed for g in result.gate_results)
    assert result.usage == {}
    # the one transcript whose first tool call failed
    failed = result.items[result.items["check-no-tool-errors.score"] == 0]["id"].tolist()
    assert failed == ["agent-05"]
    assert "completeness-scorer.scored" in (folder / "dag.dot").read_text()
    page = (folder / "report.html").read_text()
    assert "Fernwood Outfitters support assistant" in page
    assert '<svg class="stages"' in page


@pytest.mark.slow
def test_demo_with_a_judge(tmp_path, judge_server):
    def schema_names(word):
        return lambda request: word in json.dumps(request.response_format or {})

    verdicts = [
        {"claim": "first", "verdict": "yes", "reason": "The context says so."},
        {"claim": "second", "verdict": "unsure", "reason": "The context does not say."},
    ]
    judge_server.on(schema_names("verdicts"), {"verdicts": verdicts})
    judge_server.on(schema_names("claims"), {"claims": ["first", "second"]})
    judge_server.reply = "The score is 0.5 because one of the two claims is supported."

    done = _demo(
        "--out-dir", "out", "--judge", "openai/mock-judge", "--judge-api-base", judge_server.url,
        "--concurrency", "4", cwd=tmp_path, env={"OPENAI_API_KEY": API_KEY},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert f"faithfulness: judged by openai/mock-judge at {judge_server.url}" in out
    # agent-07 answers without context (no tool result): not scorable, no judge call
    assert "faithfulness-scorer      scorer     0.50  [0.50, 0.50]      32             1" in out
    assert "judge: 96 calls, 1,440 tokens, $0.0000" in out
    assert "verdict: SCORED" in out
    assert len(judge_server.requests) == 96  # claims, verdicts and reason for 32 items

    folder = tmp_path / "out"
    dag = "dag.png" if shutil.which("dot") else "dag.dot"
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [dag, "report.html", "results.parquet"]
    )
    result = EvalResult.read_parquet(folder / "results.parquet")
    assert result.scores["faithfulness-scorer"] == 0.5
    assert result.usage["total"].calls == 96
    assert set(result.items["faithfulness-scorer.reason"].dropna()) == {
        "The score is 0.5 because one of the two claims is supported."
    }
    page = (folder / "report.html").read_text()
    assert '<span class="tag tag-llm">LLM judge</span>' in page
    assert "The score is 0.5 because one of the two claims is supported." in page
