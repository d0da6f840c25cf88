"""Conversations in run_evals: items with ``inputs`` (turns on one thread) or ``turns`` (each turn
with its gates and scorers), Mastra's validation (spec §6.2), per-turn rows and turn results."""

from __future__ import annotations

import pandas as pd
import pytest

import evaldag
from evaldag import EvalDagError, EvalResult, checks, create_scorer, run_evals
from evaldag.transcripts import get_text_content


def echo(input, history=(), thread_id=None):
    """Says which turn this is, on which thread, and what it heard."""
    return f"turn {len(history) // 2 + 1} on {thread_id}: you said {input}"


def test_inputs_run_in_order_on_one_thread_and_see_the_earlier_turns():
    seen = []

    def target(input, history=(), thread_id=None):
        seen.append((input, [get_text_content(m) for m in history], thread_id))
        return f"answer to {input}"

    result = run_evals(
        [{"id": "a", "inputs": ["hi", "and then?"]}, {"id": "b", "inputs": ["alone"]}],
        target=target,
        scorers=[checks.includes("answer to")],
        concurrency=1,
    )
    first, second, third = seen
    assert first[:2] == ("hi", []) and second[:2] == ("and then?", ["hi", "answer to hi"])
    assert first[2] == second[2] != third[2]
    items = result.items
    # Mastra's scoring input is the first turn's input; the output is every turn's messages.
    assert items["input"].tolist() == ["hi", "alone"]
    assert items["inputs"].tolist() == [["hi", "and then?"], ["alone"]]
    assert [get_text_content(m) for m in items["output"][0]] == [
        "answer to hi",
        "answer to and then?",
    ]
    turns = result.turns
    assert turns[["item", "id", "turn", "input"]].values.tolist() == [
        [0, "a", 0, "hi"],
        [0, "a", 1, "and then?"],
        [1, "b", 0, "alone"],
    ]
    assert turns["run_id"].tolist()[:2] == [items["run_id"][0]] * 2
    assert turns["thread_id"].tolist() == [first[2], second[2], third[2]]  # as the target got it
    assert [t.to_dict() for t in result.turn_results] == [{"index": 0}, {"index": 1}]


def test_turns_are_scored_by_their_own_gates_and_scorers():
    result = run_evals(
        [
            {
                "turns": [
                    {"input": "hello", "gates": [checks.includes("turn 1")]},
                    {
                        "input": "weather?",
                        "scorers": [checks.includes("weather").with_threshold(0.5)],
                    },
                ]
            },
            {
                "turns": [
                    {"input": "hi", "gates": [checks.includes("turn 2")]},
                    {"input": "bye", "scorers": [checks.includes("weather")]},
                ]
            },
        ],
        target=echo,
        scorers=[checks.includes("you said")],
    )
    turns = result.turns
    assert turns["turn"].tolist() == [0, 1, 0, 1]
    assert turns["check-includes.score"].tolist() == [1.0, 1.0, 0.0, 0.0]
    first, second = result.turn_results
    assert first.index == 0
    assert [(g.id, g.passed, g.score) for g in first.gate_results] == [
        ("check-includes", False, 0.5)
    ]
    assert second.scores == {"check-includes": 0.5}
    assert [(t.id, t.passed) for t in second.threshold_results] == [("check-includes", True)]
    assert result.verdict == "failed"  # a turn gate failed
    assert result.to_dict()["turnResults"] == [
        {"index": 0, "gateResults": [{"id": "check-includes", "passed": False, "score": 0.5}]},
        {
            "index": 1,
            "thresholdResults": [
                {
                    "id": "check-includes",
                    "passed": True,
                    "averageScore": 0.5,
                    "threshold": 0.5,
                    "errors": 0,
                }
            ],
            "scores": {"check-includes": 0.5},
        },
    ]


def test_a_missed_turn_threshold_scores_the_run():
    result = run_evals(
        [{"turns": [{"input": "x", "scorers": [checks.includes("nothing").with_threshold(1)]}]}],
        target=echo,
    )
    assert result.verdict == "scored"
    assert result.scores == {}


def test_turn_scorers_get_the_turns_input_and_output():
    seen = []
    probe = create_scorer("probe").generate_score(
        lambda run: seen.append((run.input, get_text_content(run.output[0]))) or 1
    )
    run_evals([{"turns": [{"input": "one"}, {"input": "two", "scorers": [probe]}]}], target=echo)
    ((turn_input, turn_output),) = seen
    assert turn_input == "two"
    assert turn_output.startswith("turn 2 on ") and turn_output.endswith(": you said two")


def test_a_failing_turn_is_the_items_target_error():
    def flaky(input, history=()):
        if input == "boom":
            raise RuntimeError("lost the thread")
        return "ok"

    result = run_evals(
        [{"inputs": ["fine", "boom", "never"]}, {"inputs": ["fine"]}],
        target=flaky,
        scorers=[checks.includes("ok")],
    )
    assert result.items["target_error"][0] == "RuntimeError: turn 2 of 3: lost the thread"
    assert result.items["output"][0] is None  # as a failed workflow's: its turns are in turns
    turns = result.turns
    assert turns[["item", "turn", "input"]].values.tolist() == [
        [0, 0, "fine"],
        [0, 1, "boom"],
        [0, 2, "never"],
        [1, 0, "fine"],
    ]
    assert [get_text_content(m) for m in turns["output"][0]] == ["ok"]  # said before it failed
    assert turns["output"][1] is None and turns["output"][2] is None


def test_a_turn_returning_none_is_the_items_target_error():
    def forgetful(input, history=()):
        if input != "two":
            return "ok"

    result = run_evals(
        [{"inputs": ["one", "two"]}, {"inputs": ["one"]}],
        target=forgetful,
        gates=[checks.excludes("refund")],
    )
    assert result.items["target_error"][0].startswith("TypeError: turn 2 of 2: the target returned")
    assert result.verdict == "failed"


def test_an_agent_remembers_the_conversation(judge_server):
    judge_server.script("Nice to meet you, Ada.", "Your name is Ada.")
    agent = evaldag.agent(judge_server.judge(), instructions="Be brief.")
    result = run_evals(
        [
            {
                "turns": [
                    {"input": "My name is Ada."},
                    {"input": "What is my name?", "gates": [checks.includes("Ada")]},
                ]
            }
        ],
        target=agent,
    )
    assert result.verdict == "passed"
    second = judge_server.requests[1].messages
    assert [(m["role"], m["content"]) for m in second] == [
        ("system", "Be brief."),
        ("user", "My name is Ada."),
        ("assistant", "Nice to meet you, Ada."),
        ("user", "What is my name?"),
    ]


def test_turn_results_survive_parquet(tmp_path):
    result = run_evals(
        [{"turns": [{"input": "a", "gates": [checks.includes("said a")]}, {"input": "b"}]}],
        target=echo,
    )
    again = EvalResult.read_parquet(result.to_parquet(tmp_path / "r.parquet"))
    assert again.turn_results == result.turn_results
    assert again.turns["check-includes.score"].tolist()[:1] == [1.0]
    assert again.turns["input"].tolist() == ["a", "b"]


# --- validation (spec §6.2) --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ({"inputs": []}, "'inputs' must be a non-empty array"),
        ({"inputs": "hello"}, "'inputs' must be a non-empty array"),
        ({"turns": []}, "'turns' must be a non-empty array"),
        ({"turns": {"input": "x"}}, "'turns' must be a non-empty array"),
        ({"turns": [{"input": "x"}, {"gates": []}]}, "turns[1] must be an object with an 'input'"),
        ({"turns": ["x"]}, "turns[0] must be an object with an 'input'"),
        ({"input": "x", "turns": [{"input": "y"}]}, "'turns' cannot be combined with 'input'"),
        ({"inputs": ["x"], "turns": [{"input": "y"}]}, "'turns' cannot be combined"),
        ({"input": "x", "inputs": ["y"]}, "'inputs' cannot be combined with 'input'"),
        ({"turns": [{"input": "x", "gate": []}]}, "unknown keys ['gate']"),
    ],
)
def test_invalid_conversation_items(item, message):
    with pytest.raises(EvalDagError) as raised:
        run_evals([{"input": "ok"}, item], target=echo, scorers=[checks.includes("x")])
    assert raised.value.id == "INVALID_DATA_ITEM"
    assert raised.value.message.startswith("Invalid data item at index 1: ")
    assert message in raised.value.message


def test_items_need_an_input_inputs_or_turns():
    with pytest.raises(EvalDagError, match="must have 'input', 'inputs', or 'turns' property"):
        run_evals([{"output": "x"}], scorers=[checks.includes("x")])
    with pytest.raises(EvalDagError, match="must have 'input', 'inputs', or 'turns' property"):
        run_evals(
            pd.DataFrame({"inputs": [["a"], None]}), target=echo, scorers=[checks.includes("x")]
        )


def test_per_turn_thresholds_are_checked():
    bad = {"scorer": checks.includes("x"), "threshold": {"min": 0.9, "max": 0.1}}
    with pytest.raises(EvalDagError) as raised:
        run_evals([{"turns": [{"input": "a", "scorers": [bad]}]}], target=echo)
    assert raised.value.id == "INVALID_SCORER_THRESHOLD"


def test_a_turn_entry_that_is_no_scorer_is_named():
    with pytest.raises(EvalDagError, match=r"data\[0\]\.turns\[0\]\.gates\[0\]"):
        run_evals([{"turns": [{"input": "a", "gates": ["includes"]}]}], target=echo)


@pytest.mark.parametrize(
    "item",
    [
        {"input": "a", "gates": [checks.excludes("a", id="never-a")]},
        {"input": "a", "output": "a", "scorers": [checks.excludes("a").with_threshold(1)]},
        {"turns": [{"input": "a"}], "gates": [checks.excludes("a", id="never-a")]},
        {"input": "a", "scorers": [{"scorer": checks.excludes("a"), "threshold": 1}]},
    ],
)
def test_an_items_own_gates_or_scorers_outside_its_turns_are_refused(item):
    # They were an ignored data column: a run whose item gate failed every item passed.
    key = "gates" if "gates" in item else "scorers"
    with pytest.raises(EvalDagError) as raised:
        run_evals([{"input": "b"}, item], target=echo, scorers=[checks.includes("turn")])
    assert raised.value.id == "INVALID_DATA_ITEM"
    assert raised.value.message.startswith(
        f"Invalid data item at index 1: '{key}' holds scorers, which the run reads only in a "
        f"conversation's turns (turns=[{{'input': ..., '{key}': [...]}}]); move them into a turn"
    )
    # a column of that name holding data is data
    run_evals([{"input": "a", "gates": "AND"}], target=echo, scorers=[checks.includes("turn")])


def test_conversations_need_a_target():
    with pytest.raises(EvalDagError, match="need a target"):
        run_evals([{"inputs": ["a"], "output": "x"}], scorers=[checks.includes("x")])


def test_turn_assertions_stand_in_for_scorers_but_plain_inputs_do_not():
    run_evals([{"turns": [{"input": "a", "gates": [checks.includes("a")]}]}], target=echo)
    with pytest.raises(EvalDagError) as raised:
        run_evals([{"inputs": ["a"]}], target=echo)
    assert raised.value.id == "NO_SCORERS_PROVIDED"


def test_one_id_has_one_role_per_turn_index():
    with pytest.raises(
        EvalDagError, match="as a gate, but item 0's turns\\[0\\] has it as a scorer"
    ):
        run_evals(
            [
                {"turns": [{"input": "a", "scorers": [checks.includes("a")]}]},
                {"turns": [{"input": "b", "gates": [checks.includes("b")]}]},
            ],
            target=echo,
        )


def _logged(log):
    """A target that raises at the turn 'boom' and writes each input it gets to ``log`` (a
    file: a list the target held would be part of its fingerprint, and change)."""

    def target(input, history=(), thread_id=None):
        with open(log, "a") as calls:
            calls.write(f"{input}\n")
        if input == "boom":
            raise RuntimeError("crashed")
        return f"ok {input}"

    return target


def _called(log):
    """The inputs the target got since the last look."""
    called = log.read_text().split() if log.exists() else []
    log.write_text("")
    return called


def _resumable_conversations(log):
    """Six gated conversations, the fourth failing at its second turn, and an ``inputs`` one;
    and the target, logging its inputs to ``log``."""
    data = [_conversation(f"c{n}", f"a{n}", "boom" if n == 3 else f"b{n}") for n in range(6)]
    return [*data, {"id": "p", "inputs": ["x", "y"]}], _logged(log)


def _decided(turns):
    """The turn rows without their run and thread ids (a run's own), missing values as None
    (a results file reads them back so)."""
    rows = turns.drop(columns=["run_id", "thread_id"]).astype(object)
    return rows.where(rows.notna(), None)


@pytest.mark.parametrize("kept", ["checkpoint", "out"])
def test_a_stopped_conversation_run_resumes_as_an_uninterrupted_one(kept, tmp_path):
    """Stopped midway (the callback raised on the fifth conversation), the same run again
    calls the target only for the batches not saved, and its turns, turn results and verdict
    are an uninterrupted run's; the results it writes hold them too."""
    log = tmp_path / "calls.log"
    data, target = _resumable_conversations(log)
    options = {
        "target": target,
        "scorers": [checks.includes("ok")],
        "batch_size": 2,
        "concurrency": 1,
    }
    whole = run_evals(data, **options)
    where = {kept: tmp_path / ("run.parquet" if kept == "checkpoint" else "results")}

    def stop(item, output, results):
        if item["id"] == "c4":
            raise KeyError("stop")

    with pytest.raises(evaldag.OnItemCompleteError):
        run_evals(data, **options, **where, on_item_complete=stop)
    _called(log)
    resumed = run_evals(data, **options, **where)
    assert _called(log) == ["x", "y"]  # the batches up to c4's were saved
    pd.testing.assert_frame_equal(
        resumed.turns.drop(columns=["run_id", "thread_id"]),
        whole.turns.drop(columns=["run_id", "thread_id"]),
    )
    runs = resumed.items.set_index("id")["run_id"]
    assert resumed.turns["run_id"].tolist() == runs[resumed.turns["id"]].tolist()
    assert resumed.turn_results == whole.turn_results
    assert (resumed.verdict, resumed.summary) == (whole.verdict, whole.summary)
    written = EvalResult.read_parquet(where[kept])
    pd.testing.assert_frame_equal(_decided(written.turns), _decided(whole.turns))
    assert written.turn_results == whole.turn_results
    if kept == "out":
        assert len(list(where[kept].glob("turns-part-*.parquet"))) == 4  # a part's turn rows


def test_a_failed_conversations_completed_turns_survive_a_resume(tmp_path):
    log = tmp_path / "calls.log"
    data = [_conversation("bad", "a", "boom", "c"), _conversation("good", "a", "b")]
    options = {"target": _logged(log), "batch_size": 1, "checkpoint": tmp_path / "run.parquet"}

    def stop(item, output, results):
        if item["id"] == "good":
            raise KeyError("stop")

    with pytest.raises(evaldag.OnItemCompleteError):
        run_evals(data, **options, on_item_complete=stop)
    _called(log)
    resumed = run_evals(data, **options)
    assert _called(log) == []  # both conversations' batches were saved
    bad = resumed.turns.set_index(["id", "turn"]).loc["bad"]
    assert [get_text_content(m) for m in bad["output"][0]] == ["ok a"]
    assert bad["check-includes.score"][0] == 1.0 and pd.isna(bad["check-includes.error"][0])
    why = "the target failed in this conversation: RuntimeError: turn 2 of 3: crashed"
    assert bad["check-includes.error"].tolist()[1:] == [why, why]
    assert resumed.items["target_error"][0] == "RuntimeError: turn 2 of 3: crashed"
    gates = [[(g.passed, g.score) for g in t.gate_results] for t in resumed.turn_results]
    assert gates == [[(True, 1.0)], [(False, 0.5)], [(False, 0.0)]]


def test_a_changed_turn_is_refused_and_refreshed_by_running_the_conversations_again(tmp_path):
    log = tmp_path / "calls.log"
    data, target = _resumable_conversations(log)
    options = {"target": target, "batch_size": 2, "checkpoint": tmp_path / "run.parquet"}

    def stop(item, output, results):
        if item["id"] == "c2":
            raise KeyError("stop")

    with pytest.raises(evaldag.OnItemCompleteError):
        run_evals(data, **options, on_item_complete=stop)
    data[0]["turns"][0]["gates"] = [checks.includes("ok a")]
    with pytest.raises(EvalDagError) as refused:
        run_evals(data, **options)
    assert refused.value.id == "CHECKPOINT_MISMATCH"
    assert "the conversations' turns: their gates, scorers and thresholds changed" in str(
        refused.value
    )
    _called(log)
    refreshed = run_evals(data, **options, resume="refresh")
    assert len(_called(log)) == 14  # every turn again: a turn is scored on the target's run of it
    whole = run_evals(data, target=target, batch_size=2)
    pd.testing.assert_frame_equal(_decided(refreshed.turns), _decided(whole.turns))


def test_a_refreshed_item_scorer_keeps_the_saved_turns(tmp_path):
    log = tmp_path / "calls.log"
    data, target = _resumable_conversations(log)
    options = {"target": target, "batch_size": 2, "checkpoint": tmp_path / "run.parquet"}
    first = run_evals(data, **options, scorers=[checks.includes("ok")])
    _called(log)
    refreshed = run_evals(data, **options, scorers=[checks.includes("b")], resume="refresh")
    assert _called(log) == []  # the saved outputs are scored again
    pd.testing.assert_frame_equal(_decided(refreshed.turns), _decided(first.turns))
    assert refreshed.turn_results == first.turn_results
    assert refreshed.scores == run_evals(data, target=target, scorers=[checks.includes("b")]).scores


def test_the_report_shows_a_conversation_as_a_thread():
    from evaldag._report.html import report_html

    result = run_evals(
        [
            {"id": "fine", "inputs": ["a", "b"]},
            {"id": "broken", "turns": [{"input": "hi", "gates": [checks.includes("turn 2")]}]},
        ],
        target=echo,
        scorers=[checks.includes("said")],
    )
    page = report_html(result)
    section = page[page.index('<section id="conversations">') :]
    section = section[: section.index("</section>")]
    assert section.index("broken") < section.index("fine")  # a failing turn first
    assert section.count('<li class="turn">') == 3
    assert '<div class="bubble bubble-user">hi</div>' in section
    assert "turn 1 on " in section and 'title="check-includes (gate)"' in section


def test_the_report_shows_where_the_target_failed_in_a_conversation(tmp_path):
    from evaldag._report.html import report_html

    target, _ = _failing_at("boom")
    data = [{"id": "fine", "inputs": ["a"]}, {"id": "broken", "inputs": ["a", "boom", "c"]}]
    result = run_evals(data, target=target, scorers=[checks.includes("ok")])
    again = EvalResult.read_parquet(result.to_parquet(tmp_path / "r.parquet"))
    for page in (report_html(result), report_html(again)):
        section = page[page.index('<section id="conversations">') :]
        section = section[: section.index("</section>")]
        assert section.index("broken") < section.index("fine")  # the failed conversation first
        kept, failed, unreached = section.split('<li class="turn">')[1:4]
        assert '<div class="bubble bubble-agent">ok a</div>' in kept
        assert "the target failed: RuntimeError: turn 2 of 3: crashed" in failed
        assert "not reached" in unreached


def test_the_report_counts_and_lists_the_turns_gates_and_thresholds():
    from evaldag._report.html import report_html

    half = create_scorer("half").generate_score(lambda run: 0.5)
    result = run_evals(
        [{"id": "c", "turns": [{"input": "hi", "gates": [checks.includes("turn 2")]}]}],
        target=echo,
        scorers=[half.with_threshold(0.4)],
    )
    page = report_html(result)
    assert result.verdict == "failed"
    assert "gate failed: turn 0: check-includes; all 1 thresholds met" in page
    assert '<span class="card-value">0 / 1</span>' in page  # gates passed, the turn's counted
    table = page[page.index('<section id="requirements">') :]
    table = table[: table.index("</section>")]
    assert "<code>half</code>" in table and "<code>turn 0: check-includes</code>" in table


def _failing_at(turn_input):
    """A target that raises at the turn whose input is ``turn_input``; the threads it ran on."""
    threads = []

    def target(input, history=(), thread_id=None):
        threads.append(thread_id)
        if input == turn_input:
            raise RuntimeError("crashed")
        return f"ok {input}"

    return target, threads


def _conversation(id, *inputs):
    """A conversation gated by ``includes('ok')`` at every turn, scored by ``length`` at its
    last."""
    turns = [{"input": i, "gates": [checks.includes("ok")]} for i in inputs]
    turns[-1]["scorers"] = [create_scorer("length").generate_score(lambda run: 1.0)]
    return {"id": id, "turns": turns}


def test_a_conversation_keeps_the_turns_before_the_target_failed():
    target, threads = _failing_at("boom")
    result = run_evals(
        [_conversation("good", "a", "b", "c"), _conversation("bad", "a", "boom", "c")],
        target=target,
        concurrency=1,
    )
    items = result.items
    assert items["target_error"].tolist()[1] == "RuntimeError: turn 2 of 3: crashed"
    assert result.summary.target_errors == 1
    turns = result.turns.set_index(["id", "turn"])
    bad = turns.loc["bad"]
    # Turn 1 completed: its input, output, run and thread as in a conversation held to the end.
    assert [get_text_content(m) for m in bad["output"][0]] == ["ok a"]
    assert bad["run_id"].tolist() == [items["run_id"][1]] * 3
    assert bad["thread_id"].tolist() == [threads[3]] * 3  # the thread the target got
    assert bad["check-includes.score"][0] == 1.0
    assert pd.isna(bad["check-includes.error"][0])
    # Turn 2 failed, turn 3 was never reached: each of their gates and scorers fails, naming why.
    why = "the target failed in this conversation: RuntimeError: turn 2 of 3: crashed"
    assert bad["check-includes.error"].tolist()[1:] == [why, why]
    assert bad["length.error"][2] == why
    assert bad["check-includes.score"][1:].isna().all() and pd.isna(bad["length.score"][2])
    assert bad["input"].tolist() == ["a", "boom", "c"] and bad["output"][1:].isna().all()
    # The first turn's gate passed on both conversations; the later turns' gates fail the run.
    gates = [[(g.passed, g.score) for g in t.gate_results] for t in result.turn_results]
    assert gates == [[(True, 1.0)], [(False, 0.5)], [(False, 0.5)]]
    assert [(t.id, t.errors) for t in result.turn_results[2].threshold_results] == []
    assert result.turn_results[2].scores == {"length": 1.0}
    assert result.verdict == "failed"


def test_a_gate_on_the_turns_a_failed_conversation_completed_judges_what_was_said():
    target, _ = _failing_at("boom")
    gated = [{"input": "a", "gates": [checks.includes("ok")]}]
    result = run_evals(
        [{"turns": [*gated, {"input": "b"}]}, {"turns": [*gated, {"input": "boom"}]}],
        target=target,
    )
    # Turn 1 was said and checked in both conversations: its gate passes on it (it failed with
    # the crash before). The crash at turn 2, which no gate covers, is the item's target error,
    # and fails the run all the same: the agent crashed.
    assert [[(g.passed, g.score) for g in t.gate_results] for t in result.turn_results] == [
        [(True, 1.0)],
        [],
    ]
    assert result.summary.target_errors == 1
    assert result.items["target_error"][1] == "RuntimeError: turn 2 of 2: crashed"
    assert result.verdict == "failed"


def test_a_conversation_the_target_dropped_at_its_first_turn_fails_every_turn_gate():
    target, _ = _failing_at("boom")
    result = run_evals(
        [_conversation("good", "a", "b"), _conversation("bad", "boom", "b")], target=target
    )
    assert result.verdict == "failed"  # the good conversation alone passed the gates
    assert [g.passed for t in result.turn_results for g in t.gate_results] == [False, False]
    turns = result.turns
    assert turns["id"].tolist() == ["good", "good", "bad", "bad"]
    errors = turns["check-includes.error"].tolist()
    assert pd.isna(errors[:2]).all()
    assert all("the target failed in this conversation: RuntimeError" in e for e in errors[2:])


def test_a_turn_scorer_is_not_blamed_for_the_turns_the_target_failed():
    target, _ = _failing_at("boom")
    polite = create_scorer("polite").generate_score(lambda run: 1.0)
    first = {"input": "a", "gates": [checks.includes("ok")]}
    result = run_evals(  # polite ran on one turn only, where the target failed
        [{"turns": [first]}, {"turns": [first, {"input": "boom", "scorers": [polite]}]}],
        target=target,
    )
    assert result.summary.untrustworthy is None
    assert result.turns["polite.failed_step"].tolist()[2] == "target"  # as an item's scorers


def test_a_failed_conversations_turns_survive_parquet(tmp_path):
    target, _ = _failing_at("boom")
    data = [_conversation("bad", "a", "boom"), _conversation("good", "a", "b")]
    result = run_evals(data, target=target)
    again = EvalResult.read_parquet(result.to_parquet(tmp_path / "r.parquet"))
    assert again.turn_results == result.turn_results
    assert again.turns["check-includes.score"].tolist()[:1] == [1.0]
    assert [get_text_content(m) for m in again.turns["output"][0]] == ["ok a"]
    assert again.turns["check-includes.error"][1] == result.turns["check-includes.error"][1]
    assert again.turns["thread_id"][0] == result.turns["thread_id"][1]


def test_on_error_raise_stops_at_a_failed_turn():
    target, _ = _failing_at("boom")
    with pytest.raises(EvalDagError, match=r"item 0\): turn 2 of 2: crashed"):
        run_evals([_conversation("bad", "a", "boom")], target=target, on_error="raise")
