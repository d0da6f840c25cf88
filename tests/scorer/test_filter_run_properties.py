"""Properties of filter_run over generated runs: it only ever removes messages, keeps their order,
leaves input and system messages alone, applies limits after filtering, and is idempotent."""

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evaldag import ScorerRun, filter_run

# Part types the transcript reader reads or keeps (an unknown type is refused before filtering).
PART_TYPES = ["text", "tool-invocation", "step-start", "reasoning", "data-om-status", "file"]
TOOL_NAMES = ["get_weather", "get_weather_v2", "getUser", "save_file", "search"]
PREFIXES = ["", "t", "te", "text", "tool", "tool-invocation", "data-", "step", "reason", "Text"]
TOOL_PREFIXES = ["", "get", "get_weather", "get_weather_v", "save", "Search", "search"]


@st.composite
def parts(draw):
    part_type = draw(st.sampled_from(PART_TYPES))
    if part_type == "tool-invocation":
        invocation = {
            "state": draw(st.sampled_from(["call", "result", "output-error"])),
            "toolName": draw(st.sampled_from(TOOL_NAMES)),
        }
        return {"type": part_type, "toolInvocation": invocation}
    if part_type == "text":
        return {"type": "text", "text": draw(st.text(max_size=5))}
    if part_type == "reasoning":
        return {"type": "reasoning", "reasoning": draw(st.text(max_size=5)), "details": []}
    return {"type": part_type}


@st.composite
def messages(draw):
    kind = draw(st.sampled_from(["parts", "parts", "parts", "string-content", "string", "none"]))
    role = draw(st.sampled_from(["user", "assistant", "system", "signal"]))
    if kind == "parts":
        return {
            "id": draw(st.text(max_size=3)),
            "role": role,
            "content": {"format": 2, "parts": draw(st.lists(parts(), max_size=4))},
        }
    if kind == "string-content":
        return {"id": "s", "role": role, "content": draw(st.text(max_size=5))}
    return draw(st.text(max_size=5)) if kind == "string" else None


message_lists = st.lists(messages(), max_size=8)
limits = st.none() | st.integers(min_value=0, max_value=6)
options = st.fixed_dictionaries(
    {
        "part_types": st.none() | st.lists(st.sampled_from(PREFIXES), max_size=3),
        "tool_names": st.none() | st.lists(st.sampled_from(TOOL_PREFIXES), max_size=3),
        "max_remembered_messages": limits,
        "max_output_messages": limits,
        "drop_request_context": st.booleans(),
        "drop_expected_trajectory": st.booleans(),
        "drop_ground_truth": st.booleans(),
    }
)


@st.composite
def runs(draw):
    return {
        "input": {
            "inputMessages": draw(message_lists),
            "rememberedMessages": draw(message_lists),
            "systemMessages": [{"role": "system", "content": draw(st.text(max_size=5))}],
            "taggedSystemMessages": {"memory": [{"role": "system", "content": "remember"}]},
        },
        "output": draw(message_lists),
        "groundTruth": "truth",
        "requestContext": {"user": "u"},
        "expectedTrajectory": {"steps": []},
        "runId": "r",
    }


def _is_subsequence(kept, original):
    """Whether ``kept`` is ``original`` with some entries removed (same objects, same order)."""
    position = 0
    for message in kept:
        while position < len(original) and original[position] is not message:
            position += 1
        if position == len(original):
            return False
        position += 1
    return True


def _has_parts(message):
    return isinstance(message, dict) and isinstance(message.get("content"), dict)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(runs(), options)
def test_filtering_only_removes_keeps_order_and_respects_limits(run, chosen):
    given_run = copy.deepcopy(run)
    filtered = filter_run(**chosen)(run)
    assert run == given_run, "the run given is not changed"
    for kept, original, limit in (
        (filtered["input"]["rememberedMessages"], run["input"]["rememberedMessages"], "remembered"),
        (filtered["output"], run["output"], "output"),
    ):
        assert _is_subsequence(kept, original)
        maximum = chosen[f"max_{limit}_messages"]
        if maximum is not None:
            assert len(kept) <= maximum


@settings(max_examples=100, deadline=None)
@given(runs(), options)
def test_input_and_system_messages_are_never_touched(run, chosen):
    filtered = filter_run(**chosen)(run)
    for key in ("inputMessages", "systemMessages", "taggedSystemMessages"):
        assert filtered["input"][key] is run["input"][key]
    assert filtered["runId"] == "r"
    for option, key in (
        ("drop_ground_truth", "groundTruth"),
        ("drop_request_context", "requestContext"),
        ("drop_expected_trajectory", "expectedTrajectory"),
    ):
        assert (filtered[key] is None) == chosen[option]


@settings(max_examples=150, deadline=None)
@given(message_lists, options)
def test_limits_keep_the_newest_of_the_filtered_messages(output, chosen):
    unlimited = filter_run(**{**chosen, "max_output_messages": None})({"output": output})["output"]
    limited = filter_run(**chosen)({"output": output})["output"]
    maximum = chosen["max_output_messages"]
    expected = unlimited if maximum is None else unlimited[max(0, len(unlimited) - maximum) :]
    assert limited == expected


@settings(max_examples=150, deadline=None)
@given(message_lists, options)
def test_messages_without_parts_are_always_kept_and_filtering_is_idempotent(output, chosen):
    prepare = filter_run(**{**chosen, "max_output_messages": None})
    kept = prepare({"output": output})["output"]
    assert [m for m in output if not _has_parts(m)] == [m for m in kept if not _has_parts(m)]
    assert prepare({"output": kept})["output"] == kept
    if chosen["part_types"] is None and chosen["tool_names"] is None:
        assert kept == output


@settings(max_examples=100, deadline=None)
@given(runs(), options)
def test_scorer_runs_and_dicts_filter_alike(run, chosen):
    as_dict = filter_run(**chosen)(run)
    as_model = filter_run(**chosen)(ScorerRun.model_validate(run))
    assert as_model.to_dict() == {k: v for k, v in as_dict.items() if v is not None}
