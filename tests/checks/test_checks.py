"""The 11 checks give Mastra's scores and step results, and reject bad arguments when created.

Mastra's answers: ``fixtures/mastra/checks_and_filter_run.json`` (the oracle's ``checks`` cases).
"""

import json
import re

import pytest
from repo_paths import FIXTURES

import evaldag
from evaldag import checks
from evaldag._compat.js import camel
from evaldag.errors import EvalDagError, ScorerRunError
from evaldag.messages import as_run_output, text_message

FIXTURE = json.loads((FIXTURES / "mastra/checks_and_filter_run.json").read_text())
CASES = [item for item in FIXTURE["cases"] if item["case"]["kind"] == "checks"]

FACTORIES = {
    "includes": checks.includes,
    "excludes": checks.excludes,
    "equals": checks.equals,
    "matches": checks.matches,
    "similarity": checks.similarity,
    "calledTool": checks.called_tool,
    "didNotCall": checks.did_not_call,
    "toolOrder": checks.tool_order,
    "maxToolCalls": checks.max_tool_calls,
    "usedNoTools": checks.used_no_tools,
    "noToolErrors": checks.no_tool_errors,
}
OPTIONS = {
    "ignoreCase": "ignore_case",
    "times": "times",
    "threshold": "threshold",
    "exact": "exact",
}
JS_FLAGS = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL}

#: Where evaldag answers differently on purpose (see docs/differences-from-mastra.md):
#: Mastra's exact match builds ^a|b$, which finds the b of 'xb'; re.fullmatch does not.
#: A call counts in the checks that forbid calls whatever became of it: Mastra's maxToolCalls
#: leaves out the one cut off mid-stream and the one waiting for approval.
OUR_SCORES = {"ck-matches-exact-alternation": 0, "ck-maxToolCalls-excludes-partial": 0}
#: Checks evaldag refuses to create: Mastra's calledTool with times 0 passes every run.
REFUSED = {"ck-calledTool-times-0"}


def _check(case):
    args = []
    kwargs = {}
    for arg in case.get("args", []):
        if isinstance(arg, dict) and "$regex" in arg:
            flags = 0
            for letter in arg["flags"]:
                flags |= JS_FLAGS[letter]
            args.append(re.compile(arg["$regex"], flags))
        elif isinstance(arg, dict):
            kwargs = {OPTIONS[key]: value for key, value in arg.items()}
        else:
            args.append(arg)
    return FACTORIES[case["check"]](*args, **kwargs)


def _outputs(case):
    """The output as the oracle built it, and as given when Mastra could read it as it is."""
    output = case["output"]
    yield as_run_output(output)
    plain = isinstance(output, str) or all(
        isinstance(m, str) or isinstance(m.get("content"), dict) for m in output
    )
    if plain:
        yield output


@pytest.mark.parametrize("item", CASES, ids=lambda item: item["case"]["name"])
def test_check_gives_mastras_answer(item):
    case, expected = item["case"], item["expected"]
    if case["name"] in REFUSED:
        with pytest.raises(EvalDagError, match="always passes"):
            _check(case)
        return
    scorer = _check(case)
    assert scorer.id == expected["scorer"]["id"]
    assert scorer.name == expected["scorer"]["name"]
    assert scorer.description == expected["scorer"]["description"]
    assert scorer.type == expected["scorer"]["type"]
    assert [(camel(s["name"]), s["type"]) for s in scorer.get_steps()] == [
        (s["name"], s["type"]) for s in expected["scorer"]["steps"]
    ]
    for output in _outputs(case):
        result = scorer.run(input=case["input"], output=output)
        if case["name"] in OUR_SCORES:
            assert result.score == OUR_SCORES[case["name"]]
            continue
        assert result.score == expected["score"]
        assert result.preprocess_step_result == expected["result"]["preprocessStepResult"]
        assert result.reason is None and result.analyze_step_result is None


def test_every_check_kind_is_covered_by_mastras_answers():
    assert {item["case"]["check"] for item in CASES} == set(FACTORIES)


def test_module_is_exported_and_lists_the_eleven_checks():
    assert evaldag.checks is checks
    assert len(FACTORIES) == 11


@pytest.mark.parametrize(
    ("make", "default_id"),
    [
        (lambda **kw: checks.includes("x", **kw), "check-includes"),
        (lambda **kw: checks.excludes("x", **kw), "check-excludes"),
        (lambda **kw: checks.equals("x", **kw), "check-equals"),
        (lambda **kw: checks.matches("x", **kw), "check-matches"),
        (lambda **kw: checks.similarity("x", **kw), "check-similarity"),
        (lambda **kw: checks.called_tool("t", **kw), "check-called-tool"),
        (lambda **kw: checks.did_not_call("t", **kw), "check-did-not-call"),
        (lambda **kw: checks.tool_order(["t"], **kw), "check-tool-order"),
        (lambda **kw: checks.max_tool_calls(1, **kw), "check-max-tool-calls"),
        (lambda **kw: checks.used_no_tools(**kw), "check-used-no-tools"),
        (lambda **kw: checks.no_tool_errors(**kw), "check-no-tool-errors"),
    ],
)
def test_checks_have_mastras_ids_and_take_their_own(make, default_id):
    assert make().id == default_id
    assert make(id="mine").id == "mine"


def test_two_checks_of_one_kind_side_by_side():
    sunny = checks.includes("sunny", id="says-sunny")
    rain = checks.includes("rain", id="says-rain")
    results = [s.run(output="sunny today") for s in (sunny, rain)]
    assert [(s.id, r.score) for s, r in zip((sunny, rain), results, strict=True)] == [
        ("says-sunny", 1.0),
        ("says-rain", 0.0),
    ]


@pytest.mark.parametrize(
    ("make", "argument"),
    [
        (lambda: checks.includes(3), "expected"),
        (lambda: checks.includes("x", ignore_case="yes"), "ignore_case"),
        (lambda: checks.excludes(None), "unwanted"),
        (lambda: checks.equals(b"x"), "expected"),
        (lambda: checks.matches("(unclosed"), "pattern"),
        (lambda: checks.matches(re.compile(rb"bytes")), "pattern"),
        (lambda: checks.matches(42), "pattern"),
        (lambda: checks.matches("x", exact=1), "exact"),
        (lambda: checks.similarity("x", threshold=1.5), "threshold"),
        (lambda: checks.similarity("x", threshold=-0.1), "threshold"),
        (lambda: checks.similarity("x", threshold=float("nan")), "threshold"),
        (lambda: checks.similarity("x", threshold=True), "threshold"),
        (lambda: checks.called_tool(5), "name"),
        (lambda: checks.called_tool(""), "name"),
        (lambda: checks.called_tool("t", times=-1), "times"),
        (lambda: checks.called_tool("t", times=1.5), "times"),
        (lambda: checks.did_not_call(["t"]), "name"),
        (lambda: checks.tool_order("search"), "names"),
        (lambda: checks.tool_order(["a", 2]), "names[1]"),
        (lambda: checks.max_tool_calls(-1), "n"),
        (lambda: checks.max_tool_calls(True), "n"),
        # checks that could never fail, or never pass: a misconfiguration, not a verdict
        (lambda: checks.includes(""), "expected"),
        (lambda: checks.excludes(""), "unwanted"),
        (lambda: checks.matches(""), "pattern"),
        (lambda: checks.called_tool("t", times=0), "times"),
        (lambda: checks.span_count("chat *", min=3, max=2), "max"),
    ],
)
def test_bad_arguments_fail_at_creation_naming_the_argument(make, argument):
    with pytest.raises(EvalDagError) as raised:
        make()
    assert raised.value.id == "EVALDAG_INVALID_CHECK_ARGUMENT"
    assert raised.value.details["argument"] == argument
    assert f" {argument} " in raised.value.message


def test_an_empty_answer_can_still_be_required():
    gates = [checks.matches("", exact=True), checks.equals(""), checks.matches("^$", id="m")]
    result = evaldag.run_evals([{"input": "q", "output": ""}], gates=gates, progress=False)
    assert result.verdict == "passed"


def test_an_output_no_message_can_be_read_from_fails_the_run():
    with pytest.raises(ScorerRunError, match="run.output must be a string, a message or a list"):
        checks.used_no_tools().run(output=42)


def test_no_output_has_no_text_and_no_tools():
    assert checks.excludes("x").run(output=None).score == 1
    assert checks.used_no_tools().run(output=None).score == 1


def test_models_and_strings_read_alike():
    as_models = [text_message("It is sunny"), text_message("Done.")]
    assert checks.equals("it is sunnydone.").run(output=as_models).score == 1
    assert checks.equals("it is sunnydone.").run(output=["It is sunny", "Done."]).score == 1


def test_matches_uses_the_patterns_own_flags():
    assert checks.matches(re.compile("SUNNY", re.IGNORECASE)).run(output="sunny").score == 1
    assert checks.matches("SUNNY").run(output="sunny").score == 0
    scorer = checks.matches(re.compile(r"^done\.$", re.MULTILINE | re.DOTALL), exact=False)
    assert scorer.run(output="first line\ndone.").preprocess_step_result["pattern"] == (
        r"/^done\.$/ms"
    )


def test_similarity_threshold_is_inclusive_and_omitted_when_absent():
    assert checks.similarity("night", threshold=0.25).run(output="nacht").score == 1
    raw = checks.similarity("night").run(output="nacht")
    assert raw.score == 0.25 and "threshold" not in raw.preprocess_step_result


def test_excludes_reads_every_text_of_a_message_not_only_its_last():
    """Mastra's checks read a message's last text part: a secret said before a tool call, with
    "Done." after it, passed excludes. Every text counts here (docs/differences-from-mastra.md);
    includes keeps Mastra's reading."""
    from anthropic.types import Message, TextBlock, ToolUseBlock, Usage

    said = Message(
        id="msg_1",
        type="message",
        role="assistant",
        model="claude-sonnet-4-5",
        content=[
            TextBlock(type="text", text="The admin password is hunter2."),
            ToolUseBlock(type="tool_use", id="toolu_1", name="reset", input={}),
            TextBlock(type="text", text="Done."),
        ],
        stop_reason="end_turn",
        usage=Usage(input_tokens=1, output_tokens=1),
    )
    output = [said.model_dump()]
    assert checks.excludes("hunter2").run(input="reset it", output=output).score == 0
    assert checks.excludes("Done").run(input="reset it", output=output).score == 0
    assert checks.excludes("goodbye").run(input="reset it", output=output).score == 1
    assert checks.includes("hunter2").run(input="reset it", output=output).score == 0


def test_the_checks_that_forbid_calls_count_a_call_waiting_for_approval_or_denied():
    """An agent stopped at its approval to delete a database asked to delete it: did_not_call,
    used_no_tools and max_tool_calls fail (Mastra counts only calls made, and passed them);
    called_tool still needs the call made."""
    from openai.types.responses.response_input_item import McpApprovalResponse
    from openai.types.responses.response_output_item import McpApprovalRequest

    request = McpApprovalRequest(
        id="mcpr_1", arguments='{"table": "users"}', name="delete_db", server_label="db",
        type="mcp_approval_request",
    ).model_dump(mode="json")  # fmt: skip
    denial = McpApprovalResponse(
        approval_request_id="mcpr_1", approve=False, type="mcp_approval_response", reason="no"
    ).model_dump(mode="json")
    for output in ([request], [request, denial]):
        forbidding = (checks.did_not_call("delete_db"), checks.used_no_tools())
        for check in (*forbidding, checks.max_tool_calls(0)):
            result = check.run(input="q", output=output)
            assert result.score == 0
            assert result.preprocess_step_result["count"] == 1
            assert result.preprocess_step_result["unfinished"] == 1
        assert checks.called_tool("delete_db").run(input="q", output=output).score == 0
