"""filter_run trims runs as Mastra's filterRun does (spec §5), except that a limit of 0 keeps none.

Mastra's answers: ``fixtures/mastra/checks_and_filter_run.json`` (the oracle's ``filterRun`` cases).
"""

import copy
import json

import pytest
from repo_paths import FIXTURES

import evaldag
from evaldag import ScorerRun, create_scorer, filter_run
from evaldag._scorer.run_filter import RunFilter
from evaldag.errors import EvalDagError
from evaldag.messages import AgentRunInput, Message, as_run_input, as_run_output

FIXTURE = json.loads((FIXTURES / "mastra/checks_and_filter_run.json").read_text())
CASES = [item for item in FIXTURE["cases"] if item["case"]["kind"] == "filterRun"]
OPTIONS = {
    "partTypes": "part_types",
    "toolNames": "tool_names",
    "maxRememberedMessages": "max_remembered_messages",
    "maxOutputMessages": "max_output_messages",
    "dropRequestContext": "drop_request_context",
    "dropExpectedTrajectory": "drop_expected_trajectory",
    "dropGroundTruth": "drop_ground_truth",
}


def _options(case):
    return {OPTIONS[key]: value for key, value in case["options"].items()}


def _ours(case, expected):
    """Mastra's filtered run, with our answer where a limit is 0: no messages, not all of them."""
    filtered = copy.deepcopy(expected["filtered"])
    options = case["options"]
    if options.get("maxRememberedMessages") == 0 and isinstance(filtered["input"], dict):
        filtered["input"]["rememberedMessages"] = []
    if options.get("maxOutputMessages") == 0 and isinstance(filtered["output"], list):
        filtered["output"] = []
    return filtered


def _ids(messages):
    return [m.get("id") if isinstance(m, dict) else m for m in messages]


@pytest.mark.parametrize("item", CASES, ids=lambda item: item["case"]["name"])
def test_dict_runs_filter_as_mastra(item):
    case, expected = item["case"], item["expected"]
    run = copy.deepcopy(case["run"])
    filtered = filter_run(**_options(case))(run)
    assert isinstance(filtered, dict)
    undefined = set(expected["undefinedPaths"])
    assert {key for key, value in filtered.items() if value is None and key not in run} <= undefined
    assert {key: value for key, value in filtered.items() if key not in undefined} == _ours(
        case, expected
    )
    for key in undefined:
        assert filtered[key] is None
    assert run == case["run"], "the run given must not change"


@pytest.mark.parametrize("item", CASES, ids=lambda item: item["case"]["name"])
def test_scorer_runs_filter_as_mastra(item):
    case, expected = item["case"], item["expected"]
    filtered = filter_run(**_options(case))(ScorerRun.model_validate(case["run"]))
    assert isinstance(filtered, ScorerRun)
    ours = {key: value for key, value in _ours(case, expected).items() if value is not None}
    assert filtered.to_dict() == ours


def _as_models(messages):
    """Each MastraDBMessage of ``messages`` as a Message model; other entries as they are."""
    if not isinstance(messages, list):
        return messages
    models = []
    for message in messages:
        try:
            models.append(Message.model_validate(message))
        except ValueError:
            models.append(message)
    return models


def _as_json(messages):
    if not isinstance(messages, list):
        return messages
    return [m.to_dict() if isinstance(m, Message) else m for m in messages]


@pytest.mark.parametrize("item", CASES, ids=lambda item: item["case"]["name"])
def test_message_models_filter_like_their_json(item):
    case, expected = item["case"], item["expected"]
    run = copy.deepcopy(case["run"])
    if isinstance(run["input"], dict) and "rememberedMessages" in run["input"]:
        run["input"]["rememberedMessages"] = _as_models(run["input"]["rememberedMessages"])
    run["output"] = _as_models(run["output"])
    filtered = filter_run(**_options(case))(run)
    ours = _ours(case, expected)
    if isinstance(filtered["input"], dict) and "rememberedMessages" in filtered["input"]:
        remembered = _as_json(filtered["input"]["rememberedMessages"])
        assert remembered == ours["input"]["rememberedMessages"]
    assert _as_json(filtered["output"]) == ours["output"]


def test_an_agent_input_model_gives_an_agent_input_model():
    run_input = as_run_input({"inputMessages": ["q"], "rememberedMessages": [TEXT, TOOL, DATA]})
    run = ScorerRun(input=run_input, output=as_run_output([TOOL, DATA]))
    filtered = filter_run(part_types=["data-"], max_remembered_messages=1)(run)
    assert isinstance(filtered.input, AgentRunInput)
    assert [m.id for m in filtered.input.remembered_messages] == ["data"]
    assert filtered.input.input_messages == run_input.input_messages
    assert [m.id for m in filtered.output] == ["data"]
    assert run.input.remembered_messages[0].id == "text", "the run given must not change"


def test_through_a_scorer_its_steps_see_the_filtered_run():
    for item in CASES:
        case, expected = item["case"], item["expected"]
        if not case.get("viaScorer"):
            continue
        scorer = (
            create_scorer("seen", prepare_run=filter_run(**_options(case)))
            .preprocess(lambda run: run.to_dict())
            .generate_score(lambda: 1)
        )
        seen = dict(scorer.run_one(ScorerRun.model_validate(case["run"])).preprocess_step_result)
        seen.pop("runId")
        mastra_seen = dict(expected["viaScorer"]["seenRun"])
        mastra_seen.pop("runId")
        assert seen == mastra_seen, case["name"]


# --- the rules of spec §5, one by one ----------------------------------------------------------


def _message(id, *parts, role="assistant"):
    return {"id": id, "role": role, "content": {"format": 2, "parts": list(parts)}}


def _text(text):
    return {"type": "text", "text": text}


def _tool(name):
    return {
        "type": "tool-invocation",
        "toolInvocation": {"state": "result", "toolCallId": name, "toolName": name, "args": {}},
    }


TEXT = _message("text", _text("hi"), role="user")
TOOL = _message("tool", {"type": "step-start"}, _tool("get_weather"), _text("sunny"))
OTHER_TOOL = _message("other-tool", _tool("save_file"))
DATA = _message("data", {"type": "data-om-status", "data": {}})
NO_PARTS = {"id": "no-parts", "role": "user", "content": "string content"}
MESSAGES = [TEXT, TOOL, OTHER_TOOL, DATA, NO_PARTS]


def _kept(**options):
    return _ids(filter_run(**options)({"input": None, "output": MESSAGES})["output"])


def test_part_types_match_by_prefix_and_case():
    assert _kept(part_types=["te"]) == ["text", "tool", "no-parts"]
    assert _kept(part_types=["data-"]) == ["data", "no-parts"]
    assert _kept(part_types=["Text"]) == ["no-parts"]


def test_tool_names_match_by_prefix_and_spare_messages_without_tool_calls():
    assert _kept(tool_names=["get"]) == ["text", "tool", "data", "no-parts"]
    assert _kept(tool_names=["get_weather_v2"]) == ["text", "data", "no-parts"]


def test_both_filters_must_pass_for_a_tool_message():
    assert _kept(tool_names=["get"], part_types=["step"]) == ["tool", "no-parts"]
    assert _kept(tool_names=["save"], part_types=["step"]) == ["no-parts"]


def test_empty_lists_are_filters_too():
    assert _kept(part_types=[]) == ["no-parts"]
    assert _kept(tool_names=[]) == ["text", "data", "no-parts"]


def test_only_parts_are_read_not_the_legacy_tool_invocations():
    legacy_only = {
        "id": "legacy",
        "role": "assistant",
        "content": {
            "format": 2,
            "parts": [_text("done")],
            "toolInvocations": [{"state": "result", "toolName": "save_file", "args": {}}],
        },
    }
    assert _ids(filter_run(tool_names=["get"])({"output": [legacy_only]})["output"]) == ["legacy"]
    assert filter_run(part_types=["tool"])({"output": [legacy_only]})["output"] == []


def test_remembered_system_role_messages_are_filtered_like_the_others():
    system = _message("system", _text("remembered rules"), role="system")
    filtered = filter_run(part_types=["data-"])({"input": {"rememberedMessages": [system, DATA]}})
    assert _ids(filtered["input"]["rememberedMessages"]) == ["data"]


def test_limits_keep_the_newest_after_filtering():
    assert _kept(max_output_messages=2) == ["data", "no-parts"]
    assert _kept(part_types=["text"], max_output_messages=2) == ["tool", "no-parts"]
    assert _kept(max_output_messages=10) == _ids(MESSAGES)


def test_a_limit_of_zero_keeps_no_messages():
    run = {"input": {"rememberedMessages": MESSAGES, "inputMessages": [TEXT]}, "output": MESSAGES}
    filtered = filter_run(max_remembered_messages=0, max_output_messages=0)(run)
    assert filtered["input"]["rememberedMessages"] == [] and filtered["output"] == []
    assert filtered["input"]["inputMessages"] == [TEXT]


def test_input_messages_system_messages_and_tagged_ones_are_never_filtered():
    run_input = {
        "inputMessages": [TOOL],
        "rememberedMessages": [TOOL, TEXT],
        "systemMessages": [{"role": "system", "content": "rules"}],
        "taggedSystemMessages": {"memory": [{"role": "system", "content": "remember"}]},
    }
    filtered = filter_run(part_types=["data-"], max_remembered_messages=0)({"input": run_input})
    assert filtered["input"] == {**run_input, "rememberedMessages": []}
    for key in ("inputMessages", "systemMessages", "taggedSystemMessages"):
        assert filtered["input"][key] is run_input[key]


def test_only_agent_inputs_and_list_outputs_are_filtered():
    options = {"part_types": ["data-"], "max_output_messages": 1, "max_remembered_messages": 1}
    run = {"input": "question", "output": "answer"}
    assert filter_run(**options)(run) == run
    run = {"input": {"inputMessages": [TEXT, TEXT]}, "output": {"role": "assistant"}}
    assert filter_run(**options)(run) == run


def test_drops_set_the_fields_to_none_and_leave_others_alone():
    run = ScorerRun(
        input="q",
        output="a",
        ground_truth="g",
        request_context={"u": 1},
        expected_trajectory={"steps": []},
        run_id="r",
    )
    assert filter_run(drop_ground_truth=True)(run).model_dump(exclude_none=True) == {
        "input": "q",
        "output": "a",
        "request_context": {"u": 1},
        "expected_trajectory": {"steps": []},
        "run_id": "r",
    }
    everything = filter_run(
        drop_ground_truth=True, drop_request_context=True, drop_expected_trajectory=True
    )
    assert everything(run).to_dict() == {"input": "q", "output": "a", "runId": "r"}
    assert filter_run()(run) is run


def test_snake_case_dict_keys_are_dropped_too():
    filtered = filter_run(drop_ground_truth=True)({"output": "a", "ground_truth": "g"})
    assert filtered == {"output": "a", "ground_truth": None}


@pytest.mark.parametrize(
    ("options", "option"),
    [
        ({"part_types": "text"}, "part_types"),
        ({"part_types": [1]}, "part_types"),
        ({"tool_names": 5}, "tool_names"),
        ({"max_remembered_messages": -1}, "max_remembered_messages"),
        ({"max_output_messages": -3}, "max_output_messages"),
        ({"max_output_messages": 1.5}, "max_output_messages"),
        ({"max_output_messages": True}, "max_output_messages"),
        ({"drop_ground_truth": "yes"}, "drop_ground_truth"),
    ],
)
def test_bad_options_fail_at_creation_naming_the_option(options, option):
    with pytest.raises(EvalDagError) as raised:
        filter_run(**options)
    assert raised.value.id == "EVALDAG_INVALID_FILTER_RUN_OPTION"
    assert raised.value.details == {"option": option}
    assert f"filter_run: {option} " in raised.value.message


def test_other_values_are_not_runs():
    with pytest.raises(EvalDagError, match="expected a ScorerRun or a dict"):
        filter_run()(["not", "a", "run"])


def test_exported_and_readable():
    prepare = evaldag.filter_run(tool_names=("get",), max_output_messages=0)
    assert isinstance(prepare, RunFilter)
    assert prepare.tool_names == ("get",) and "max_output_messages=0" in repr(prepare)
