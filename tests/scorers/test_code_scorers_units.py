"""Pure functions and factories of the code scorers: the spec's vectors (Mastra's answers, §13)
and the rules behind them, plus plain-string and agent-shaped runs giving the same scores."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evaldag import EvalDagError, ScorerRunError, scorers
from evaldag.scorers import _text
from evaldag.scorers._nlp import _tokens, completeness_elements
from evaldag.scorers._nlp._model import model
from evaldag.transcripts import compare_two_strings


def _agent(input_text, output_text):
    """Mastra's agent run shape: one user message in, one assistant message out."""

    def message(role, text):
        return {"role": role, "content": {"format": 2, "parts": [{"type": "text", "text": text}]}}

    return {
        "input": {
            "inputMessages": [message("user", input_text)],
            "rememberedMessages": [],
            "systemMessages": [],
            "taggedSystemMessages": {},
        },
        "output": [message("assistant", output_text)],
    }


# --- completeness ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("element", "candidate", "matches"),
    [
        ("cats", "cat", True),  # 3/4 > 0.6
        ("quickly", "quick", True),  # 5/7
        ("testing", "test", False),  # 4/7 < 0.6
        ("international", "nation", False),
        ("cat", "cats", False),  # up to 3 characters: equal only
        ("ab", "ab", True),
        ("five", "fives", True),  # equal lengths order longer = candidate
        ("abcde", "xbcdx", False),  # no containment
    ],
)
def test_element_matches(element, candidate, matches):
    assert _text.element_matches(element, candidate) is matches


@pytest.mark.parametrize(
    ("original", "simplified", "score"),
    [
        (["international"], ["nation"], 0),
        (["a", "b"], ["ab"], 0),
        (["cats", "and", "dogs"], ["cat"], 1 / 3),
        ([], [], 1),
        ([], ["x"], 0),
    ],
)
def test_coverage(original, simplified, score):
    assert _text.coverage(original, simplified) == score


# Words of 1 to 45 letters from a small alphabet, so that containment is common, on both sides of
# the 24 characters up to which candidates are indexed by their substrings.
_WORDS = st.lists(st.text("abc", min_size=1, max_size=45), max_size=8)


@given(_WORDS, _WORDS)
def test_coverage_is_element_matches_against_every_candidate(original, simplified):
    expected = (
        sum(any(e == s or _text.element_matches(e, s) for s in simplified) for e in original)
        / len(original)
        if original
        else float(not simplified)
    )
    assert _text.coverage(original, simplified) == expected


def test_a_sentence_of_more_than_100_words_is_read_in_pieces():
    words = [f"word{n}" + ("," if n == 159 else "") for n in range(250)]
    pieces = _tokens.sentences(" ".join(words) + ".", model())
    assert [len(piece.split()) for piece in pieces] == [100, 60, 90]
    assert "".join(pieces) == " ".join(words) + "."


@pytest.mark.parametrize(
    ("input_text", "output_text", "score"),
    [
        ("The quick brown fox jumps over the lazy dog", "A fox jumped", 0.25),
        ("running cats quickly", "run cat quick", 1.0),
        ("camelCaseWord testing", "camel case word test", 0),
        ("", "", 1),
        ("", "something", 0),
        ("Café résumé naïve", "cafe resume naive", 1),
        ("John Smith visited New York and ate pizza", "John visited York", 0.375),
    ],
)
def test_completeness_vectors(input_text, output_text, score):
    assert scorers.completeness().run(**_agent(input_text, output_text)).score == score


def test_completeness_elements_rewrite_verbs_to_infinitives():
    assert completeness_elements("running cats quickly") == ["cats", "run", "quickly"]
    assert completeness_elements("camelCaseWord testing") == ["camelcaseword", "testing"]
    assert set(completeness_elements("It wasn't tested, and he has been running.")) == {
        "it", "he", "does", "not", "test", "and", "run",
    }  # fmt: skip


def test_completeness_plain_strings_score_as_agent_runs():
    plain = scorers.completeness().run(input="running cats quickly", output="run cat quick")
    agent = scorers.completeness().run(**_agent("running cats quickly", "run cat quick"))
    assert plain.score == agent.score == 1.0
    assert plain.preprocess_step_result == agent.preprocess_step_result


def test_completeness_without_input_fails_with_the_reason():
    with pytest.raises(ScorerRunError) as caught:
        scorers.completeness().run(input=None, output="text")
    assert caught.value.message.startswith("Scorer Run Failed: Inputs cannot be null")
    assert "run.input" in caught.value.message


@pytest.mark.parametrize(
    "factory",
    ["completeness", "textual_difference", "content_similarity", "keyword_coverage", "tone"],
)
def test_a_text_over_max_chars_is_the_rows_error_naming_the_setting(factory):
    with pytest.raises(ScorerRunError) as caught:
        getattr(scorers, factory)(max_chars=10).run(input="short", output="a text of 23 characters")
    assert caught.value.message.endswith(
        "run.output is 23 characters long, more than its limit max_chars=10; score a shorter "
        f"text or raise the limit with scorers.{factory}(max_chars=...) (None: no limit)"
    )
    assert getattr(scorers, factory)(max_chars=23).run(input="short", output="a text").score >= 0
    assert getattr(scorers, factory)(max_chars=None).run(input="x" * 10, output="x").score >= 0


_TEXT_SCORERS = [
    "completeness",
    "textual_difference",
    "content_similarity",
    "keyword_coverage",
    "tone",
]


@pytest.mark.parametrize("factory", _TEXT_SCORERS)
@pytest.mark.parametrize(
    ("output", "held"),
    [
        ({"answer": "The fox jumps", "score": 0.9}, "a dict with keys ['answer', 'score']"),
        (42, "int"),
        ([{"answer": "The fox jumps"}], "a list whose item 0 is a dict with keys ['answer']"),
    ],
)
def test_an_output_no_reader_takes_is_the_rows_error_not_empty_text(factory, output, held):
    # Mastra fails on the first two (run.output.map is not a function) and scores the list as
    # empty text: 0, or 1 for tone. Empty text would be a confident score of nothing.
    with pytest.raises(ScorerRunError) as caught:
        getattr(scorers, factory)().run(input="The quick brown fox jumps", output=output)
    assert caught.value.failed_step == "preprocess"
    scorer_id = factory.replace("_", "-") + "-scorer"
    assert (
        f"run.output must be a string, a message or a list of messages for {scorer_id}, got "
        f"{held}; give the text instead"
    ) in caught.value.message


@pytest.mark.parametrize("factory", [f for f in _TEXT_SCORERS if f != "tone"])
def test_an_input_no_reader_takes_is_the_rows_error_not_empty_text(factory):
    with pytest.raises(ScorerRunError) as caught:
        getattr(scorers, factory)().run(input={"question": "The fox?"}, output="The fox jumps")
    assert "run.input must be a string, a message, a list of messages or Mastra's agent run" in (
        caught.value.message
    )
    assert "got a dict with keys ['question']" in caught.value.message


@pytest.mark.parametrize("factory", _TEXT_SCORERS)
@pytest.mark.parametrize(
    "run_input",
    [
        "The quick brown fox jumps",
        ["The quick brown fox jumps"],
        {"role": "user", "content": "The quick brown fox jumps"},  # one message
        [{"role": "user", "content": "The quick brown fox jumps"}],
        '[{"role": "user", "content": "The quick brown fox jumps"}]',
    ],
)
def test_every_input_shape_of_one_user_message_scores_as_its_text(factory, run_input):
    scorer = getattr(scorers, factory)()
    plain = scorer.run(input="The quick brown fox jumps", output="A brown fox jumps")
    answer = {"role": "assistant", "content": "A brown fox jumps"}
    given = scorer.run(input=run_input, output=answer)
    assert given.score == plain.score
    assert given.preprocess_step_result == plain.preprocess_step_result


@pytest.mark.parametrize("max_chars", [0, -1, 1.5, True, "100"])
def test_max_chars_is_a_positive_integer_or_none(max_chars):
    with pytest.raises(EvalDagError, match=r"max_chars=\.\.\.\) must be a positive integer"):
        scorers.completeness(max_chars=max_chars)


# --- textual difference, content similarity ----------------------------------------------------


@pytest.mark.parametrize(
    ("first", "second", "length"),
    [
        ("kitten", "sitting", 4),
        ("", "abc", 0),
        ("abc", "abc", 3),
        ("abcbdab", "bdcaba", 4),
        ("I love 😀 pizza", "I love 😃 pasta", 11),  # an emoji is two UTF-16 units, one shared
    ],
)
def test_lcs_length(first, second, length):
    assert _text.lcs_length(first, second) == length
    assert _text.lcs_length(second, first) == length


def test_lcs_ratio():
    assert _text.lcs_ratio("kitten", "sitting") == 8 / 13
    assert _text.lcs_ratio("", "") == 1
    assert _text.lcs_ratio("a", "") == 0
    assert _text.lcs_ratio("I love 😀 pizza", "I love 😃 pasta") == 0.7333333333333333


@pytest.mark.parametrize(
    ("first", "second", "changes"),
    [
        ("kitten", "sitting", 1),
        ("42 apples", "apples 42", 0),
        ("same text", "same text", 0),
        ("hello   world", "hello world", 1),  # whitespace only: at least 1
        ("a b c", "a b", 1),
        ("", "one two", 2),
        ("a a b", "a b b", 1),  # greedy multiset matching
    ],
)
def test_word_changes(first, second, changes):
    assert _text.word_changes(first, second) == changes


def test_textual_difference_vector():
    result = scorers.textual_difference().run(**_agent("kitten", "sitting"))
    assert result.score == 0.6153846153846154
    assert result.preprocess_step_result == {
        "ratio": 0.6153846153846154,
        "confidence": 0.8571428571428572,
        "changes": 1,
        "lengthDiff": 0.14285714285714285,
    }
    assert scorers.textual_difference().run(**_agent("Hello World", "hello world")).score == (
        0.8181818181818182
    )


@pytest.mark.parametrize(
    ("first", "second", "similarity"),
    [
        ("", "", 1),
        ("a", "", 0),
        ("a", "b", 0),
        ("night", "nacht", 0.25),
        ("the cat", "thecat", 1),  # whitespace removed first
        ("aaaa", "aa", 0.5),  # bigram multiset: aa x3 vs aa x1
    ],
)
def test_bigram_dice(first, second, similarity):
    assert compare_two_strings(first, second) == similarity


def test_content_similarity_options():
    run = _agent("Hello World", "hello world")
    assert scorers.content_similarity().run(**run).score == 1
    off = scorers.content_similarity(ignore_case=False, ignore_whitespace=False)
    assert off.run(**run).score == 0.6666666666666666
    run = _agent("The quick brown fox jumps over the lazy dog", "A fox jumped")
    assert scorers.content_similarity().run(**run).score == 0.27906976744186046


# --- keyword coverage ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "found"),
    [
        (
            "Machine learning models need training data",
            ["machine", "learning", "models", "training", "data"],
        ),  # noqa: E501
        ("the and of 2024 123 it is hello", []),  # stopwords ("hello" is one) and digits
        ("Café, café! (Tea) 'quoted'", ["café", "tea", "quoted"]),  # no accent folding
        ("see https://example.com/A.B now", ["https://example.com/A.B"]),  # URLs verbatim
        ("<b>bold</b> & _ # x_y", ["bold", "x_y"]),  # tags stripped, lone marks dropped
        ("v2 2nd 42", ["v2", "2nd"]),
    ],
)
def test_keywords(text, found):
    assert _text.keywords(text) == found


def test_keyword_coverage_vectors():
    run = _agent(
        "Machine learning models need training data",
        "Training data is essential for machine learning",
    )
    result = scorers.keyword_coverage().run(**run)
    assert result.score == 0.8
    assert result.analyze_step_result == {"totalKeywordsLength": 5, "matchedKeywordsLength": 4}
    assert scorers.keyword_coverage().run(**_agent("the and of", "a an the")).score == 1
    assert (
        scorers.keyword_coverage().run(**_agent("running cats quickly", "run cat quick")).score == 0
    )
    empty = scorers.keyword_coverage().run(**_agent("", ""))
    assert empty.preprocess_step_result == {
        "result": {"referenceKeywords": [], "responseKeywords": []}
    }
    assert empty.score == 1


# --- tone ------------------------------------------------------------------------------------


def test_sentiment_tokens_and_negators():
    assert _text.sentiment_tokens("Hello, World!\nBye") == ["hello", "world", "bye"]
    assert _text.sentiment_tokens("") == [""]
    assert _text.comparative_sentiment("good") == 3
    assert _text.comparative_sentiment("not good") == -1.5
    assert _text.comparative_sentiment("I love 🍦") == (3 + 2) / 3  # emojis score too


@pytest.mark.parametrize(
    ("output", "score"),
    [
        ("I love it. I hate it.", 0),
        ("Good. Good. Bad.", 0),
        ("Great job. Terrible", 1),  # text after the last terminator is ignored
        ("happy happy joy joy", 1),
    ],
)
def test_tone_stability_vectors(output, score):
    assert scorers.tone().run(input="x", output=output).score == score


def test_tone_against_a_reference():
    assert scorers.tone(reference_tone="good").run(input="x", output="bad").score == 0
    result = scorers.tone(reference_tone="good").run(input="x", output="good")
    assert result.score == 1
    assert result.preprocess_step_result == {
        "score": 1,
        "responseSentiment": 3,
        "referenceSentiment": 3,
        "difference": 0,
    }
    with pytest.raises(EvalDagError, match="reference_tone"):
        scorers.tone(reference_tone=3)


def test_mean_and_variance_sum_left_to_right():
    mean, variance = _text.mean_and_variance([0.1, 0.2, 0.3])
    assert mean == (0.1 + 0.2 + 0.3) / 3
    assert math.isclose(variance, 2 / 300)


# --- tool call accuracy ----------------------------------------------------------------------


def _tool_output(*names):
    invocations = [
        {"state": "result", "toolCallId": f"c{i}", "toolName": name, "args": {}, "result": {}}
        for i, name in enumerate(names)
    ]
    return [
        {
            "role": "assistant",
            "content": {
                "format": 2,
                "parts": [{"type": "text", "text": "done"}],
                "toolInvocations": invocations,
            },
        }
    ]


@pytest.mark.parametrize(
    ("options", "score"),
    [
        ({"expected_tool": "a"}, 1),
        ({"expected_tool": "a", "strict_mode": True}, 0),
        ({"expected_tool_order": ["a", "b"]}, 0),  # the first b comes before a
        ({"expected_tool_order": ["b", "a"]}, 1),
        ({"expected_tool_order": ["b", "a", "b"], "strict_mode": True}, 1),
        ({"expected_tool": "c"}, 0),
    ],
)
def test_tool_call_accuracy_vectors(options, score):
    scorer = scorers.tool_call_accuracy(**options)
    assert scorer.run(input="go", output=_tool_output("b", "a", "b")).score == score


def test_tool_call_accuracy_needs_an_expectation_and_messages():
    with pytest.raises(EvalDagError, match="expected_tool"):
        scorers.tool_call_accuracy()
    with pytest.raises(ScorerRunError, match="cannot be null or empty"):
        scorers.tool_call_accuracy(expected_tool="a").run(input="go", output=[])
    no_tools = scorers.tool_call_accuracy(expected_tool="a").run(input="go", output="text")
    assert no_tools.score == 0
    assert no_tools.preprocess_step_result["hasToolCalls"] is False


@pytest.mark.parametrize(
    ("run_input", "held"),
    [
        ({"question": "go", "id": 3}, "a dict with keys ['question', 'id']"),
        (42, "int"),
        ([{"q": "go"}], "a list whose item 0 is a dict with keys ['q']"),
    ],
)
def test_tool_call_accuracy_fails_on_an_input_no_reader_takes(run_input, held):
    # Mastra fails on these too ("Input and output messages cannot be null or empty"); the
    # list of non-messages was read as a prompt and scored 1.
    with pytest.raises(ScorerRunError) as caught:
        scorers.tool_call_accuracy(expected_tool="a").run(input=run_input, output=_tool_output("a"))
    assert caught.value.failed_step == "preprocess"
    assert (
        "run.input must be a string, a message, a list of messages or Mastra's agent run input "
        f"({{inputMessages, ...}}) for tool_call_accuracy, got {held}"
    ) in caught.value.message


# --- trajectories ----------------------------------------------------------------------------


def _names(*names):
    return [{"name": name} for name in names]


@pytest.mark.parametrize(
    ("actual", "expected", "options", "score"),
    [
        (_names("a", "x", "b", "c"), _names("a", "b", "c"), {"ordering": "strict"}, 0.17),
        (_names("a", "x", "b", "c"), _names("a", "b", "c"), {}, 1),
        (_names("c", "b", "a"), _names("a", "b", "c"), {}, 0.33),
        (_names("c", "b", "a"), _names("a", "b", "c"), {"ordering": "unordered"}, 1),
        (_names("a", "b", "c", "d"), _names("a", "b"), {"ordering": "strict"}, 0.5),
        (_names("a", "a", "b"), _names("a", "b"), {"allow_repeated_steps": False}, 0.9),
        ([], [], {}, 1),
        (_names("a"), [], {}, 0),
    ],
)
def test_compare_trajectories_vectors(actual, expected, options, score):
    assert scorers.compare_trajectories(actual, expected, **options)["score"] == score


def test_compare_trajectories_details_in_strict_order():
    result = scorers.compare_trajectories(
        {"steps": _names("a", "x", "b", "c")}, {"steps": _names("a", "b", "c")}, ordering="strict"
    )
    assert result == {
        "score": 0.17,
        "matchedSteps": 1,
        "totalExpectedSteps": 3,
        "totalActualSteps": 4,
        "missingSteps": ["b", "c"],
        "extraSteps": ["x"],
        "outOfOrderSteps": ["b", "c"],
        "repeatedSteps": [],
    }


def test_compare_trajectories_compares_step_data_as_json():
    expected = [{"name": "a", "stepType": "tool_call", "toolArgs": {"q": 2}}]
    actual = [{"name": "a", "stepType": "tool_call", "toolArgs": {"q": 1}}]
    assert scorers.compare_trajectories(actual, expected)["score"] == 0
    same = [{"name": "a", "step_type": "tool_call", "tool_args": {"q": 2.0}}]  # snake_case, 2.0
    assert scorers.compare_trajectories(same, expected)["score"] == 1
    relaxed = [{"name": "a", "stepType": "tool_call", "toolArgs": {"q": 1}}, *expected]
    assert scorers.compare_trajectories(relaxed, expected)["score"] == 1  # skips the mismatch
    with pytest.raises(EvalDagError, match="ordering"):
        scorers.compare_trajectories(actual, expected, ordering="sideways")


def test_efficiency_budgets():
    calls = [{"name": name, "stepType": "tool_call", "toolArgs": {}} for name in "aabc"]
    result = scorers.check_trajectory_efficiency(calls, max_steps=2)
    assert result["score"] == 0.4  # steps 0, redundancy 0.8
    assert result["redundantCalls"] == [{"name": "a", "index": 1}]
    timed = [{"name": "a", "durationMs": 100}, {"name": "b", "durationMs": 300}]
    slow = scorers.check_trajectory_efficiency(
        timed, max_total_duration_ms=200, no_redundant_calls=False
    )
    assert (slow["score"], slow["overDurationBudget"], slow["totalDurationMs"]) == (0, True, 400)
    tokens = [
        {"name": "m", "stepType": "model_generation", "promptTokens": 60, "completionTokens": 40}
    ]
    assert scorers.check_trajectory_efficiency(tokens, max_total_tokens=80)["score"] == 0.88
    assert scorers.check_trajectory_efficiency([], no_redundant_calls=False)["score"] == 1


@pytest.mark.parametrize(
    ("trajectory", "options", "message"),
    [
        ([], {"max_steps": -1}, "Invalid maxSteps budget"),
        ([], {"max_total_tokens": math.inf}, "Invalid maxTotalTokens budget"),
        ([{"name": "a"}], {"max_total_tokens": 10}, "missing model-generation measurements"),
        (
            [{"name": "m", "stepType": "model_generation", "promptTokens": 1}],
            {"max_total_tokens": 10},
            'model generation "m" has missing or invalid token counts',
        ),
        ([{"name": "a"}], {"max_total_duration_ms": 10}, "missing or invalid duration"),
    ],
)
def test_efficiency_budgets_need_measurements(trajectory, options, message):
    with pytest.raises(EvalDagError, match=message):
        scorers.check_trajectory_efficiency(trajectory, **options)


def test_blacklist():
    steps = _names("a", "b", "c")
    assert scorers.check_trajectory_blacklist(steps, blacklisted_tools=["z"])["score"] == 1
    found = scorers.check_trajectory_blacklist(
        steps, blacklisted_tools=["b"], blacklisted_sequences=[["b", "c"], ["a", "c"], []]
    )
    assert found == {"score": 0, "violatedTools": ["b"], "violatedSequences": [["b", "c"]]}


def test_tool_failures():
    failing = [{"name": "a", "stepType": "tool_call", "success": False}] * 4
    fallback = [*failing, {"name": "b", "stepType": "tool_call", "success": True}]
    result = scorers.analyze_tool_failures(fallback, count_unrecovered_errors=False)
    assert result["score"] == 0.8
    assert "unrecoveredTools" not in result
    assert result["patterns"] == [
        {
            "toolName": "a",
            "retryCount": 3,
            "fellBackToAlternative": True,
            "alternativeTool": "b",
            "eventuallySucceeded": False,
        }
    ]
    recovered = [failing[0], {"name": "a", "stepType": "tool_call", "success": True}]
    assert scorers.analyze_tool_failures(recovered)["score"] == 1
    assert scorers.analyze_tool_failures(recovered)["unrecoveredTools"] == []


def test_tool_failures_count_tools_that_never_succeeded():
    """A tool whose last call failed is unrecovered: the retry score (0.8 for a's 3 retries)
    times the share of tools that worked (b of a and b)."""
    failing = [{"name": "a", "stepType": "tool_call", "success": False}] * 4
    fallback = [*failing, {"name": "b", "stepType": "tool_call", "success": True}]
    result = scorers.analyze_tool_failures(fallback)
    assert (result["score"], result["unrecoveredTools"]) == (0.4, ["a"])
    assert scorers.analyze_tool_failures(failing[:1])["score"] == 0
    assert scorers.analyze_tool_failures(failing[:1], count_unrecovered_errors=False)["score"] == 1
    # a later success of the same tool recovers it, even after another tool ran between
    later = [failing[0], fallback[-1], {"name": "a", "stepType": "tool_call"}]
    assert scorers.analyze_tool_failures(later)["unrecoveredTools"] == []


def test_redundant_calls_leave_out_retries_of_a_failed_call():
    retried = [
        {"name": "a", "stepType": "tool_call", "toolArgs": {"q": 1}, "success": False},
        {"name": "a", "stepType": "tool_call", "toolArgs": {"q": 1}, "success": True},
        {"name": "a", "stepType": "tool_call", "toolArgs": {"q": 1}, "success": True},
    ]
    assert scorers.check_trajectory_efficiency(retried)["redundantCalls"] == [
        {"name": "a", "index": 1},
        {"name": "a", "index": 2},
    ]
    ours = scorers.check_trajectory_efficiency(retried, redundant_retries=False)
    assert (ours["score"], ours["redundantCalls"]) == (0.8, [{"name": "a", "index": 2}])


def test_unified_trajectory_reason_names_unrecovered_tools():
    failed = [{"name": "search", "stepType": "tool_call", "success": False}] * 3
    result = scorers.trajectory().run(input="go", output=failed)
    assert result.reason == (
        "Score: 0\nTool failures (0): 2 total retries. failed without recovering: search."
    )


def test_unified_trajectory_counts_failures_in_nested_children():
    actual = [
        {
            "name": "research",
            "stepType": "agent_run",
            "children": [{"name": "search", "stepType": "tool_call", "success": False}],
        }
    ]
    expected = {"steps": [{"name": "research", "children": {"steps": _names("search")}}]}
    result = scorers.trajectory().run(input="go", output=actual, expected_trajectory=expected)
    nested = result.preprocess_step_result["nested"][0]
    assert nested["toolFailures"]["unrecoveredTools"] == ["search"]
    assert nested["score"] == 0.67  # (0.4 * 1 + 0.2 * 0) / 0.6
    assert result.score == 0.9  # 0.7 * 1 + 0.3 * 0.67


def test_trajectory_accuracy_from_options_item_or_nothing():
    scorer = scorers.trajectory_accuracy(expected_trajectory=_names("a", "b"))
    assert scorer.run(input="go", output={"steps": _names("a", "x", "b")}).score == 1
    from_item = scorers.trajectory_accuracy().run(
        input="go",
        output={"steps": _names("b", "a")},
        expected_trajectory={"steps": _names("a", "b"), "ordering": "unordered"},
    )
    assert from_item.score == 1
    nothing = scorers.trajectory_accuracy().run(input="go", output={"steps": _names("a")})
    assert nothing.score == 0
    assert nothing.preprocess_step_result["error"].startswith("No expected trajectory")
    recorded = {"steps": [{"name": "a", "durationMs": 5, "children": [{"name": "c"}]}]}
    described = scorers.trajectory_accuracy(expected_trajectory=recorded)
    assert described.description.startswith("Evaluates whether the trajectory matches")
    assert described.run(input="go", output=recorded).preprocess_step_result[
        "expectedTrajectory"
    ] == {"steps": [{"name": "a", "children": {"steps": [{"name": "c"}]}}]}


@pytest.mark.parametrize("factory", ["trajectory_accuracy", "trajectory"])
def test_an_expected_trajectory_of_an_apps_own_keys_fails_the_run(factory):
    # Mastra reads it as no expectation: trajectory accuracy 0 ("No expected trajectory
    # provided"), the unified trajectory scorer 1 (only tool failures checked).
    with pytest.raises(ScorerRunError) as caught:
        getattr(scorers, factory)().run(
            input="go",
            output={"steps": _names("a")},
            expected_trajectory={"question": "go", "id": 3},
        )
    assert (
        "run.expected_trajectory must be a trajectory expectation with some of the keys "
        "allowRepeatedSteps, "
    ) in caught.value.message
    assert "got a dict with keys ['question', 'id']" in caught.value.message


def test_an_expected_trajectory_with_only_a_budget_or_nothing_is_read():
    scorer = scorers.trajectory()
    run = {"input": "go", "output": {"steps": _names("a", "b")}}
    assert scorer.run(**run, expected_trajectory={"max_steps": 1}).score < 1
    assert scorer.run(**run, expected_trajectory={}).score == 1


@pytest.mark.parametrize(
    ("actual", "item", "score"),
    [
        (_names("a", "b"), None, 1),
        (_names("a", "x", "b"), None, 0.91),  # (0.4*1 + 0.3*0.75 + 0.1*1) / 0.8
        (_names("a", "z", "b"), None, 0),
        (_names("a", "b"), {"steps": _names("c")}, 0.5),
    ],
)
def test_unified_trajectory_vectors(actual, item, score):
    scorer = scorers.trajectory(
        defaults={"steps": _names("a", "b"), "max_steps": 2, "blacklisted_tools": ["z"]}
    )
    result = scorer.run(input="go", output={"steps": actual}, expected_trajectory=item)
    assert result.score == score
    assert result.reason.startswith(f"Score: {score:g}")


def test_unified_trajectory_nested_children():
    actual = {
        "steps": [
            {"name": "research", "stepType": "agent_run", "children": _names("search", "fetch")},
            {"name": "write"},
        ]
    }
    expected = {
        "steps": [
            {
                "name": "research",
                "stepType": "agent_run",
                "children": {"steps": _names("search", "summarize")},
            },
            {"name": "write"},
        ]
    }
    result = scorers.trajectory().run(input="go", output=actual, expected_trajectory=expected)
    assert result.score == 0.85
    assert result.preprocess_step_result["nested"][0]["score"] == 0.5
    assert result.reason.endswith("Nested scores: research: 0.5.")
    expected["steps"][0]["children"]["blacklistedTools"] = ["fetch"]
    blocked = scorers.trajectory().run(input="go", output=actual, expected_trajectory=expected)
    assert blocked.score == 0
    assert blocked.reason == "Score: 0\nNested blacklist violation in: research."


def test_unified_trajectory_weights():
    with pytest.raises(EvalDagError, match="unknown keys"):
        scorers.trajectory(weights={"speed": 1})
    only_accuracy = scorers.trajectory(
        defaults={"steps": _names("a", "b"), "maxSteps": 1},
        weights={"efficiency": 0, "tool_failures": 0},
    )
    assert only_accuracy.run(input="go", output=_names("a", "b")).score == 1


def test_the_trajectory_blacklist_counts_a_forbidden_call_that_was_not_made():
    """An agent stopped at its approval to delete a database asked for a forbidden tool: the
    call is not in its trajectory (Mastra's extractTrajectory), but the blacklist is violated."""
    from openai.types.responses.response_output_item import McpApprovalRequest

    waiting = McpApprovalRequest(
        id="mcpr_1", arguments='{"table": "users"}', name="delete_db", server_label="db",
        type="mcp_approval_request",
    ).model_dump(mode="json")  # fmt: skip
    scorer = scorers.trajectory(defaults={"blacklisted_tools": ["delete_db"]})
    result = scorer.run(input="q", output=[waiting])
    assert result.score == 0
    assert result.preprocess_step_result["blacklist"]["violatedTools"] == ["delete_db"]
    allowed = scorers.trajectory(defaults={"blacklisted_tools": ["drop_table"]})
    assert allowed.run(input="q", output=[waiting]).score == 1


def test_strict_tool_call_accuracy_counts_a_call_that_was_not_made():
    """Strict mode asks for the expected tool and no other: an agent that searched and then
    asked to delete a database (waiting for approval) did not keep to it."""
    from openai.types.responses import ResponseFunctionToolCall
    from openai.types.responses.response_input_item import FunctionCallOutput
    from openai.types.responses.response_output_item import McpApprovalRequest

    searched = ResponseFunctionToolCall(
        id="fc_1", call_id="call_1", name="search", arguments="{}", type="function_call",
        status="completed",
    )  # fmt: skip
    found = FunctionCallOutput(call_id="call_1", output="3 results", type="function_call_output")
    waiting = McpApprovalRequest(
        id="mcpr_1", arguments="{}", name="delete_db", server_label="db",
        type="mcp_approval_request",
    )  # fmt: skip
    output = [item.model_dump(mode="json") for item in (searched, found, waiting)]
    strict = scorers.tool_call_accuracy(expected_tool="search", strict_mode=True)
    result = strict.run(input="find it", output=output)
    assert result.score == 0
    assert result.preprocess_step_result["unfinishedTools"] == ["delete_db"]
    assert result.preprocess_step_result["correctToolCalled"] is False
    ordered = scorers.tool_call_accuracy(expected_tool_order=["search"], strict_mode=True)
    assert ordered.run(input="find it", output=output).score == 0
    loose = scorers.tool_call_accuracy(expected_tool="search")
    assert loose.run(input="find it", output=output).score == 1
