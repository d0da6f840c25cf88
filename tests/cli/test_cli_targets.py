"""``evaldag run`` eval files whose ``target`` is an agent, a workflow or a function holding
conversations, with Mastra's agent and workflow scorer configs; models on the loopback server."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

from judge_server import API_KEY, MODEL, Reply
from repo_paths import FIXTURES

from evaldag._cli.main import main

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


def test_a_function_target_holding_conversations(tmp_path, capsys):
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
    assert "cannot be resumed yet; this run keeps no checkpoint" in printed.err
    assert main(["run", str(source), "--data", str(data), "--resume"]) == 3
    assert "cannot be resumed yet: run without --resume" in capsys.readouterr().err


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
