"""Structured fields given as JSON text (a CSV cell, a text column of a logging pipeline): a
transcript's JSON is read as its messages, ``request_context`` and ``expected_trajectory`` as
their JSON, a conversation's ``inputs`` as its list; text that only looks like JSON stays text
where text is an answer, and is an error naming the row where it cannot be."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from conversation_cases import WEATHER

from evaldag import EvalDagError, ScorerRun, checks, create_scorer, run_evals, scorers
from evaldag._cli.main import main

TRAJECTORY = {"steps": [{"stepType": "tool_call", "name": "get_weather"}]}


def _weather_rows() -> pd.DataFrame:
    """Two items whose transcripts, contexts and trajectories are JSON text, as in a CSV file."""
    return pd.DataFrame(
        {
            "input": ["Weather in Paris?", "Weather in Rome?"],
            "output": [json.dumps(WEATHER), json.dumps([{"role": "assistant", "content": "No."}])],
            "request_context": [json.dumps({"user": {"tier": "pro"}}), ""],
            "expected_trajectory": [json.dumps(TRAJECTORY)] * 2,
        }
    )


def _scorers() -> list:
    def tier(run):
        return 1.0 if (run.request_context or {}).get("user", {}).get("tier") == "pro" else 0.0

    return [
        scorers.trajectory_accuracy(),
        create_scorer("pro-tier").generate_score(tier),
        checks.includes("21 degrees"),
    ]


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_a_data_file_of_json_text_scores_as_its_json(tmp_path, suffix):
    path = tmp_path / f"data{suffix}"
    rows = _weather_rows()
    rows.to_csv(path, index=False) if suffix == ".csv" else rows.to_parquet(path)
    result = run_evals(
        path, scorers=_scorers(), gates=[checks.called_tool("get_weather")], progress=False
    )
    items = result.items
    assert items["code-trajectory-accuracy-scorer.score"].tolist() == [1.0, 0.0]
    assert items["pro-tier.score"].tolist() == [1.0, 0.0]
    assert items["check-includes.score"].tolist() == [1.0, 0.0]
    assert items["check-called-tool.score"].tolist() == [1.0, 0.0]
    # the items keep the data as given; a CSV cell of JSON text is the messages it holds
    assert items["output"][0] == (WEATHER if suffix == ".csv" else json.dumps(WEATHER))


def test_the_cli_reads_json_text_transcripts_from_a_csv_file(tmp_path, capsys):
    data = tmp_path / "data.csv"
    _weather_rows().iloc[:1].to_csv(data, index=False)
    eval_file = tmp_path / "weather_eval.py"
    eval_file.write_text(
        "from evaldag import checks\n"
        "scorers = [checks.includes('21 degrees')]\n"
        "gates = [checks.called_tool('get_weather'), checks.no_tool_errors()]\n"
    )
    assert main(["run", str(eval_file), "--data", str(data)]) == 0
    assert "verdict: PASSED" in capsys.readouterr().out


@pytest.mark.parametrize(
    "text",
    [
        "[1] Paris is the capital of France.",  # a citation, not JSON
        '{"answer": "Paris"}',  # an app's JSON answer
        '["Paris", "Rome"]',
        '[{"content": "Paris"}]',  # no role: JSON text is read as messages only with one
        '{"role": "admin", "permissions": ["read"]}',  # a role but no message body
        '{"content": "Paris", "role": ',  # cut off
        "[]",
        '"Paris"',
    ],
)
def test_text_that_is_no_transcript_stays_text(text):
    run = ScorerRun(input=text, output=text)
    assert (run.input, run.output) == (text, text)


def test_json_text_of_one_message_and_of_an_agent_input():
    run = ScorerRun(
        input=json.dumps({"inputMessages": [{"role": "user", "content": "Hi"}]}),
        output=json.dumps({"role": "assistant", "content": "Hello"}),
    )
    assert run.input["inputMessages"][0]["content"]["parts"] == [{"type": "text", "text": "Hi"}]
    assert run.output["content"]["parts"] == [{"type": "text", "text": "Hello"}]
    # an output is never an agent input, whatever keys its JSON has
    agent_input = json.dumps({"inputMessages": []})
    assert ScorerRun(input="q", output=agent_input).output == agent_input


def test_an_unreadable_json_transcript_is_refused_naming_the_row_before_scoring():
    scored = []
    counting = create_scorer("counting").generate_score(lambda run: scored.append(1) or 1.0)
    data = pd.DataFrame(
        {
            "input": ["q", "q"],
            "output": ["fine", json.dumps([{"role": "human", "content": "hi"}])],
        }
    )
    with pytest.raises(EvalDagError) as raised:
        run_evals(data, scorers=[counting], progress=False)
    assert raised.value.details["row"] == "1" and raised.value.details["column"] == "output"
    assert "human" in raised.value.message and scored == []


@pytest.mark.parametrize(
    ("field", "text", "problem"),
    [
        ("request_context", '{"user": ', "request_context is text that is not JSON"),
        ("request_context", "[1, 2]", "request_context is JSON of a list; give a JSON object"),
        (
            "expected_trajectory",
            '{"steps": [',
            "expected_trajectory is text that is not JSON",
        ),
    ],
)
def test_a_structured_field_of_broken_json_is_an_error_naming_row_and_field(field, text, problem):
    data = pd.DataFrame({"input": ["q", "q"], "output": ["a", "a"], field: [None, text]})
    with pytest.raises(EvalDagError) as raised:
        run_evals(data, scorers=[checks.includes("a")], progress=False)
    assert raised.value.message.startswith(f"Row 1: {problem}")
    assert raised.value.details["column"] == field
    with pytest.raises(EvalDagError, match=problem):
        ScorerRun(input="q", output="a", **{field: text})


def test_plain_text_in_a_structured_field_is_left_to_its_readers():
    # not JSON text: a scorer that reads it sees what the data holds
    assert ScorerRun(input="q", output="a", request_context="pro").request_context == "pro"


def test_a_conversations_inputs_from_a_csv_file(tmp_path):
    path = tmp_path / "conversations.csv"
    pd.DataFrame({"inputs": [json.dumps(["hi", "and then?"])]}).to_csv(path, index=False)

    def target(input, history=()):
        return f"turn {len(history) // 2 + 1}: {input}"

    result = run_evals(path, target=target, scorers=[checks.includes("turn 2")], progress=False)
    assert result.turns["input"].tolist() == ["hi", "and then?"]
    assert result.scores == {"check-includes": 1.0}
    with pytest.raises(EvalDagError, match="'inputs' is text that is not a JSON array"):
        run_evals([{"inputs": '["hi", '}], target=target, scorers=[checks.includes("x")])


def test_a_target_answering_json_text_of_messages_is_read_as_them():
    result = run_evals(
        [{"input": "Weather in Paris?"}],
        target=lambda input: json.dumps(WEATHER),
        scorers=[checks.called_tool("get_weather")],
        progress=False,
    )
    assert result.scores == {"check-called-tool": 1.0}
