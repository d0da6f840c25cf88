"""``evaldag run`` eval files whose ``target`` is an agent, a workflow or a function holding
conversations, with Mastra's agent and workflow scorer configs; models on the loopback server."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from cli_runs import evaldag_here
from judge_server import API_KEY, MODEL, Reply
from repo_paths import FIXTURES

from evaldag import EvalResult
from evaldag._cli.main import main
from evaldag.transcripts import get_text_content

FLOW = FIXTURES / "workflows/support_flow.py"


def _files(folder: Path, eval_text: str, items: list[dict]) -> tuple[Path, Path]:
    source = folder / "eval_target.py"
    source.write_text(textwrap.dedent(eval_text))
    data = folder / "items.jsonl"
    data.write_text("".join(json.dumps(item) + "\n" for item in items))
    return source, data


def test_an_agent_target_with_an_agent_config(tmp_path, judge_server, capsys):
    judge_server.script(
        Reply(tool_calls=[{"name": "get_weather", "arguments": {"location": "Paris"}}]),
        "22 degrees and sunny in Paris.",
    )
    source, data = _files(
        tmp_path,
        f"""\
        import evaldag
        from evaldag import checks, scorers


        def get_weather(location: str) -> dict:
            \"\"\"Get current weather for a location.

            :param location: City name
            \"\"\"
            return {{"location": location, "temperature": 22, "conditions": "sunny"}}


        target = evaldag.agent(
            evaldag.Judge("openai/{MODEL}", api_base="{judge_server.url}", api_key="{API_KEY}"),
            tools=[get_weather],
            instructions="You are a helpful weather assistant.",
        )
        scorers = {{
            "agent": [checks.includes("sunny").with_threshold(1)],
            "trajectory": [scorers.trajectory_accuracy()],
        }}
        gates = [checks.called_tool("get_weather"), checks.no_tool_errors()]
        """,
        [
            {
                "input": "Weather in Paris?",
                "expected_trajectory": {"steps": [{"name": "get_weather"}]},
            }
        ],
    )
    assert main(["run", str(source), "--data", str(data)]) == 0
    shown = capsys.readouterr().out
    assert "agent.check-includes" in shown and "trajectory.code-trajectory-accuracy" in shown


def test_an_agent_whose_model_refuses_tools_is_a_configuration_error(
    tmp_path, judge_server, capsys
):
    refusal = {"error": {"message": "this model does not support tools", "type": "invalid"}}
    judge_server.reply = Reply(status=400, body=json.dumps(refusal))
    source, data = _files(
        tmp_path,
        f"""\
        import evaldag
        from evaldag import checks


        def get_weather(location: str) -> dict:
            \"\"\"Get current weather for a location.\"\"\"
            return {{"location": location}}


        target = evaldag.agent(
            evaldag.Judge("openai/{MODEL}", api_base="{judge_server.url}", api_key="{API_KEY}"),
            tools=[get_weather],
        )
        scorers = [checks.called_tool("get_weather")]
        """,
        [{"input": f"Weather in city {n}?"} for n in range(20)],
    )
    assert main(["run", str(source), "--data", str(data), "--concurrency", "4"]) == 3
    error = capsys.readouterr().err
    assert error == (
        f"evaldag: error: agent's model 'openai/{MODEL}' at {judge_server.url} refused the "
        "tools it was given (400 BadRequestError): this model does not support tools. Every "
        "item would fail: give evaldag.agent a model that calls tools (the local judge's does "
        "not), or change the tool whose schema the message names\n"
    )  # Hamilton's traceback of the node is not shown: the message says it all
    assert len(judge_server.requests) <= 4  # the calls in flight finished, no other started


def test_a_workflow_target_with_a_workflow_config(tmp_path, judge_server, capsys):
    shutil.copy(FLOW, tmp_path / "support_flow.py")
    judge_server.reply = "We are on it."
    source, data = _files(
        tmp_path,
        f"""\
        import evaldag
        import support_flow
        from evaldag import checks

        target = evaldag.workflow(
            support_flow,
            ["reply"],
            inputs={{"model": "openai/{MODEL}", "api_base": "{judge_server.url}",
                    "api_key": "{API_KEY}"}},
        )
        scorers = {{
            "workflow": [checks.includes("support team")],
            "steps": {{"category": [checks.equals("other").with_threshold(1)]}},
        }}
        """,
        [{"input": "My app is slow"}, {"input": "It crashed"}],
    )
    out = tmp_path / "results.parquet"
    assert main(["run", str(source), "--data", str(data), "--out", str(out)]) == 2  # it failed
    shown = capsys.readouterr().out
    assert "steps.category.check-equals" in shown
    from evaldag import EvalResult

    items = EvalResult.read_parquet(out).items
    assert items["target_error"].tolist()[1] == (
        "RuntimeError: node 'category' failed: the classifier crashed"
    )


def test_a_function_target_holding_conversations(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)  # its checkpoint's folder, .evaldag, is here
    source, data = _files(
        tmp_path,
        """\
        from evaldag import checks


        def target(input, history=()):
            return f"turn {len(history) // 2 + 1}: {input}"


        scorers = [checks.includes("turn 2")]
        """,
        [{"inputs": ["hello", "and again"]}, {"inputs": ["once"]}],
    )
    assert main(["run", str(source), "--data", str(data)]) == 0
    printed = capsys.readouterr()
    assert "check-includes" in printed.out
    assert printed.err == ""  # its checkpoint is kept, as any run's
    assert (tmp_path / ".evaldag" / "eval_target.py-items.jsonl.checkpoint.parquet").exists()
    assert main(["run", str(source), "--data", str(data), "--resume"]) == 0
    assert "the run had finished; its results were read back" in capsys.readouterr().err


CONVERSATIONS_EVAL = """\
import os
import signal
import time
from pathlib import Path

from evaldag import checks


def target(input, history=()):
    with open(os.environ["CALLS_LOG"], "a") as log:
        log.write(input + "\\n")
    parts = os.environ.get("KILL_ONCE_SAVED")
    if parts and input == "q66":  # in the second batch, once the first is saved
        deadline = time.monotonic() + 60
        while not list(Path(parts).glob("batch-*.parquet")) and time.monotonic() < deadline:
            time.sleep(0.02)
        os.kill(os.getpid(), signal.SIGKILL)
    return f"turn {len(history) // 2 + 1}: {input}"


scorers = [checks.includes("turn 2")]
"""


@pytest.mark.slow
def test_a_killed_conversation_run_resumes(tmp_path, capsys, monkeypatch):
    """``evaldag run`` keeps a checkpoint for conversations: killed in its second batch, the
    same run with --resume calls the target only for the conversations not saved, and writes
    the turns an uninterrupted run writes."""
    source, data = _files(
        tmp_path,
        CONVERSATIONS_EVAL,
        [{"id": f"c{n}", "inputs": [f"q{n}", f"r{n}"]} for n in range(70)],
    )
    log = tmp_path / "calls.log"
    args = ["run", source.name, "--data", data.name, "--out", "run.parquet"]
    args += ["--concurrency", "1"]  # batches of 64 items
    parts = tmp_path / ".evaldag" / "run.parquet.checkpoint.parquet.partial"
    env = {**os.environ, "CALLS_LOG": str(log), "KILL_ONCE_SAVED": str(parts)}
    job = subprocess.run([sys.executable, "-m", "evaldag", *args], cwd=tmp_path, env=env)
    assert job.returncode == -signal.SIGKILL
    assert len(list(parts.glob("turns-batch-*.parquet"))) == 1
    log.write_text("")
    monkeypatch.setenv("CALLS_LOG", str(log))
    again = evaldag_here(capsys, monkeypatch, *args, "--resume", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert sorted(log.read_text().split()) == sorted(
        f"{turn}{n}" for n in range(64, 70) for turn in "qr"
    )
    whole = evaldag_here(
        capsys, monkeypatch, *args[:-2], "--out", "whole.parquet", "--no-checkpoint", cwd=tmp_path
    )
    assert whole.returncode == 0, whole.stderr
    resumed = EvalResult.read_parquet(tmp_path / "run.parquet")
    uninterrupted = EvalResult.read_parquet(tmp_path / "whole.parquet")
    kept = ["item", "id", "turn", "input"]
    assert resumed.turns[kept].equals(uninterrupted.turns[kept]) and len(resumed.turns) == 140
    said = [[get_text_content(m) for m in output] for output in resumed.turns["output"]]
    assert said[-2:] == [["turn 1: q69"], ["turn 2: r69"]]
    assert resumed.turn_results == uninterrupted.turn_results
    assert resumed.to_dict() == uninterrupted.to_dict()


def test_an_unknown_config_key_is_a_configuration_error(tmp_path, capsys):
    source, data = _files(
        tmp_path,
        """\
        from evaldag import checks

        scorers = {"agents": [checks.includes("x")]}
        """,
        [{"input": "a", "output": "b"}],
    )
    assert main(["run", str(source), "--data", str(data)]) == 3
    assert "unknown keys ['agents']" in capsys.readouterr().err


CRASHING = """\
from evaldag import checks

def target(input, history=()):
    if input == "book it":
        raise ConnectionError("the booking service is down")
    return f"Sure: {input}"

scorers = [checks.includes("Sure")]
"""


def test_a_target_that_failed_on_an_item_fails_the_run(tmp_path, capsys):
    """An agent that crashed on an item of a run that asserts nothing, or on a conversation
    after a turn whose gate passed: the system under test failed, so the run does too (it
    passed, exit 0, the crash a line of the summary; Mastra's runEvals rejects)."""
    source, data = _files(tmp_path, CRASHING, [{"input": "hello"}, {"input": "book it"}])
    assert main(["run", str(source), "--data", str(data), "--no-checkpoint"]) == 2
    assert "verdict: FAILED (the target failed on 1 of 2 items)" in capsys.readouterr().out
    gated = [{"input": "hello", "gates": ["includes Sure"]}]
    conversations = [{"turns": [*gated, {"input": "book it"}]}, {"turns": [*gated, {"input": "x"}]}]
    source.write_text(
        CRASHING + f"data = {conversations!r}".replace("'includes Sure'", 'checks.includes("Sure")')
    )
    assert main(["run", str(source), "--no-checkpoint"]) == 2
    shown = capsys.readouterr().out
    assert "verdict: FAILED (the target failed on 1 of 2 items; all 1 gates passed)" in shown
