"""evaldag.testing and the pytest plugin: eval files collected as tests, run with pytester.

The plugin is installed through the ``pytest11`` entry point, so every ``pytester`` session
loads it as a user's pytest would.
"""

import pytest
from repo_paths import TESTS

from evaldag import EvalResult, checks, create_scorer, run_evals
from evaldag.errors import EvalDagError
from evaldag.testing import (
    EvalAssertionError,
    assert_evals,
    has_verdict,
    passes_gates,
    passes_thresholds,
    score_above,
    score_below,
)

pytest_plugins = ["pytester"]

EVAL_FILE = """
from evaldag import checks
from evaldag.scorers import completeness

data = [
    {"id": "a", "input": "How long is the return window for tents?",
     "output": "Tents can be returned within 60 days."},
    {"id": "b", "input": "Is shipping free?", "output": "Yes."},
]
scorers = [completeness().with_threshold(0.9)]
gates = [checks.excludes("internal", id="no-internal"), checks.includes("days", id="has-days")]
"""


def test_an_eval_file_is_one_test_per_gate_and_threshold(pytester):
    pytester.makepyfile(eval_support=EVAL_FILE)
    done = pytester.runpytest("-v", "-p", "no:cacheprovider")
    done.assert_outcomes(passed=1, failed=2)
    done.stdout.fnmatch_lines(
        [
            "eval_support.py::gate[[]no-internal[]] PASSED*",
            "eval_support.py::gate[[]has-days[]] FAILED*",
            "eval_support.py::threshold[[]completeness-scorer[]] FAILED*",
            # a failing threshold reads like a failing assertion, naming the worst items
            (
                "AssertionError: gate 'has-days' failed: score 0.50, required at least 1.00; "
                "worst items: b (0.00)"
            ),
            (
                "AssertionError: threshold of 'completeness-scorer' missed: average 0.12, "
                "required >= 0.90; worst items: b (0.00), a (0.25)"
            ),
            "evaldag: results of 1 eval file(s) in *.evaldag/pytest",
        ]
    )
    result = EvalResult.read_parquet(pytester.path / ".evaldag" / "pytest" / "eval_support.parquet")
    assert result.verdict == "failed" and len(result.items) == 2


def test_the_eval_runs_once_for_all_its_tests(pytester):
    pytester.makepyfile(
        eval_flaky="""
        from evaldag import create_scorer

        CALLS = []

        def flaky(run):
            CALLS.append(run)
            if run.input == "q":
                raise ValueError("the judge is down")
            return 1.0

        data = [
            {"id": "q1", "input": "q", "output": "a"},
            {"id": "r1", "input": "r", "output": "b"},
        ]
        scorers = [create_scorer("s").generate_score(flaky).with_threshold(0.5)]
        gates = [create_scorer("g").generate_score(lambda run: 1.0)]
        """,
        test_calls="""
        import sys

        def test_zz_the_scorer_ran_once_per_item():
            assert len(sys.modules["evaldag_eval_eval_flaky"].CALLS) == 2
        """,
    )
    done = pytester.runpytest("-p", "no:cacheprovider", "eval_flaky.py", "test_calls.py")
    done.assert_outcomes(passed=2, failed=1)
    done.stdout.fnmatch_lines(
        [
            (
                "AssertionError: threshold of 's' missed: average 1.00, required >= 0.50, and the "
                "scorer failed on 1 item(s); worst items: q1 (error)"
            )
        ]
    )


def test_an_untrustworthy_run_fails_every_test_with_its_message(pytester):
    pytester.makepyfile(
        eval_down="""
        from evaldag import create_scorer

        def boom(run):
            raise ValueError("the judge is down")

        data = [{"input": "q", "output": "a"}]
        scorers = [create_scorer("s").generate_score(boom).with_threshold(0.5)]
        gates = [create_scorer("g").generate_score(lambda run: 1.0)]
        """
    )
    done = pytester.runpytest("-p", "no:cacheprovider")
    done.assert_outcomes(failed=2)
    # each failing test shows it; the short summary repeats it where lines are not cut (CI)
    assert done.stdout.str().count("UntrustworthyRunError: Scorer 's' failed on every item") >= 2


def test_without_gates_or_thresholds_the_run_is_the_test_and_data_may_be_a_file(pytester):
    (pytester.path / "evals").mkdir()
    (pytester.path / "evals" / "items.jsonl").write_text('{"input": "q", "output": "q"}\n')
    (pytester.path / "evals" / "eval_plain.py").write_text(
        "from evaldag.scorers import completeness\n"
        "data = 'items.jsonl'  # beside this file\n"
        "scorers = [completeness()]\n"
    )
    done = pytester.runpytest("-v", "-p", "no:cacheprovider", "--evaldag-out", "out")
    done.assert_outcomes(passed=1)
    done.stdout.fnmatch_lines(["evals/eval_plain.py::run PASSED*"])
    assert (pytester.path / "out" / "evals" / "eval_plain.parquet").is_file()


def test_eval_files_of_one_name_in_two_folders_get_two_results_files(pytester):
    for folder, output in (("support", "q"), ("billing", "")):
        (pytester.path / folder).mkdir()
        (pytester.path / folder / "eval_answers.py").write_text(
            "from evaldag.scorers import completeness\n"
            f"data = [{{'input': 'q', 'output': {output!r}}}]\n"
            "scorers = [completeness()]\n"
        )
    done = pytester.runpytest("-v", "-p", "no:cacheprovider")
    done.assert_outcomes(passed=2)
    done.stdout.fnmatch_lines(["evaldag: results of 2 eval file(s) in *.evaldag/pytest"])
    folder = pytester.path / ".evaldag" / "pytest"
    support = EvalResult.read_parquet(folder / "support" / "eval_answers.parquet")
    billing = EvalResult.read_parquet(folder / "billing" / "eval_answers.parquet")
    assert support.items.output.tolist() == ["q"] and billing.items.output.tolist() == [""]


def test_a_data_path_found_nowhere_fails_the_run_naming_where_it_was_looked_for(pytester):
    pytester.makepyfile(
        eval_lost="from evaldag.scorers import completeness\n"
        "data = 'items.jsonl'\n"
        "scorers = [completeness()]\n"
    )
    done = pytester.runpytest("-p", "no:cacheprovider")
    done.assert_outcomes(failed=1)
    done.stdout.fnmatch_lines(
        ["*eval_lost.py defines data = 'items.jsonl', which is neither beside it (*"]
    )


def test_a_broken_eval_file_is_a_collection_error_naming_it(pytester):
    pytester.makepyfile(eval_typo="data = []\nscorers = []\ngate = []\n")
    done = pytester.runpytest("-p", "no:cacheprovider")
    assert done.ret == pytest.ExitCode.INTERRUPTED
    done.stdout.fnmatch_lines(["*eval_typo.py: *defines 'gate', which evaldag does not read*"])


TICKET_FLOW = """
def category(ticket: str) -> str:
    \"\"\"What the ticket is about.\"\"\"
    if "crash" in ticket:
        raise RuntimeError("the classifier crashed")
    return "billing" if "invoice" in ticket else "other"


def reply(ticket: str, category: str) -> str:
    \"\"\"The answer, filed under the category.\"\"\"
    return f"[{category}] Thanks, we are looking into {ticket!r}."
"""

WORKFLOW_EVAL_FILE = """
import evaldag
import pytester_ticket_flow
from evaldag import checks, scorers

target = evaldag.workflow(pytester_ticket_flow, ["reply"])
data = [{"input": "invoice missing"}, {"input": "app slow"}, {"input": "app crash"}]
path = {"steps": [{"name": "category"}, {"name": "reply"}]}
scorers = {
    "workflow": [checks.includes("billing").with_threshold(0.9)],
    "steps": {"category": [checks.equals("other").with_threshold(0.5)]},
    "trajectory": [scorers.trajectory_accuracy(path).with_threshold(0.3)],
}
gates = [checks.excludes("internal")]
"""


def test_an_eval_file_may_target_a_hamilton_workflow(pytester):
    # Keyed as run_evals keys a workflow config: workflow.<id>, steps.<node>.<id>, trajectory.<id>.
    pytester.makepyfile(pytester_ticket_flow=TICKET_FLOW, eval_tickets=WORKFLOW_EVAL_FILE)
    done = pytester.runpytest("-v", "-p", "no:cacheprovider")
    done.stdout.fnmatch_lines(
        [
            "eval_tickets.py::gate[[]check-excludes[]] FAILED*",
            "eval_tickets.py::threshold[[]workflow.check-includes[]] FAILED*",
            "eval_tickets.py::threshold[[]steps.category.check-equals[]] FAILED*",
            "eval_tickets.py::threshold[[]trajectory.code-trajectory-accuracy-scorer[]] PASSED*",
        ]
    )
    done.assert_outcomes(passed=1, failed=3)
    result = EvalResult.read_parquet(pytester.path / ".evaldag" / "pytest" / "eval_tickets.parquet")
    items = result.items
    assert items["target_error"].tolist()[2] == (
        "RuntimeError: node 'category' failed: the classifier crashed"
    )
    # the crashed ticket's path up to the failure is scored; its output and failed node are not
    assert items["trajectory.code-trajectory-accuracy-scorer.error"].isna().all()
    assert items["steps.category.check-equals.error"].notna().tolist() == [False, False, True]


def test_the_plugin_is_inert_without_eval_files(pytester):
    pytester.makepyfile(
        eval_helpers="def data():\n    return []\n",  # an eval_*.py that is no eval file
        test_plain="def test_one():\n    assert True\n",
    )
    done = pytester.runpytest("-p", "no:cacheprovider")
    done.assert_outcomes(passed=1)
    assert "evaldag:" not in done.stdout.str()
    assert not (pytester.path / ".evaldag").exists()


def test_eval_files_assigning_in_blocks_or_by_unpacking_are_collected(pytester):
    """Module level includes with, if and try blocks and unpacking: such a file left out
    would leave its failing gate untested and the suite green."""
    gate = "from evaldag import checks\n"
    pytester.makepyfile(
        eval_with=gate + "import json\nwith open('d.json') as f:\n    data = json.load(f)\n"
        "gates = [checks.excludes('cat')]\n",
        eval_unpacked=gate + "data, gates = [{'input': 'a', 'output': 'a cat'}], "
        "[checks.excludes('cat')]\n",
        eval_if=gate + "import os\nif os.environ.get('FULL'):\n    data = 'big.jsonl'\n"
        "else:\n    data = [{'input': 'a', 'output': 'a cat'}]\n"
        "try:\n    gates = [checks.excludes('cat')]\nexcept ImportError:\n    gates = []\n",
        eval_helpers="def make():\n    data = []\n    gates = []\n    return data, gates\n",
    )
    (pytester.path / "d.json").write_text('[{"input": "a", "output": "a cat"}]')
    done = pytester.runpytest("-p", "no:cacheprovider")
    done.assert_outcomes(failed=3)


def test_the_plugin_can_be_turned_off(pytester):
    pytester.makepyfile(eval_support=EVAL_FILE)
    done = pytester.runpytest("-p", "no:cacheprovider", "-p", "no:evaldag")
    assert done.ret == pytest.ExitCode.NO_TESTS_COLLECTED


def test_evaldags_own_tests_hold_no_eval_file():
    assert list(TESTS.rglob("eval_*.py")) == []


# --- evaldag.testing -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def result():
    half = create_scorer("half").generate_score(lambda run: 0.5)
    flaky = create_scorer("flaky").generate_score(lambda run: float(run.input == "a"))
    return run_evals(
        [{"id": "x", "input": "a", "output": "o"}, {"id": "y", "input": "b", "output": "o"}],
        scorers={"agent": [half.with_threshold(0.8), flaky]},
        gates=[
            checks.includes("o", id="has-o"),
            create_scorer("g").generate_score(lambda run: float(run.input == "a")),
        ],
        progress=False,
    )


def _failures(result: EvalResult) -> list[str]:
    """The lines of the assertion ``assert_evals(result)`` fails with."""
    with pytest.raises(EvalAssertionError) as failed:
        assert_evals(result)
    assert str(failed.value) == "\n".join(failed.value.failures)
    return failed.value.failures


def test_assert_evals_says_each_failure_on_a_line(result):
    assert _failures(result) == [
        "gate 'g' failed: score 0.50, required at least 1.00; worst items: y (0.00)",
        (
            "threshold of 'agent.half' missed: average 0.50, required >= 0.80; worst items: "
            "x (0.50), y (0.50)"
        ),
    ]
    with pytest.raises(EvalAssertionError, match="^threshold of 'agent.half'"):
        assert_evals(result, min_pass_rate=0.5)
    for rate in (-0.1, 1.5, True, "1"):
        with pytest.raises(EvalDagError, match="min_pass_rate must be a number from 0 to 1"):
            assert_evals(result, min_pass_rate=rate)


def test_the_matchers(result):
    has_verdict(result, "failed")
    with pytest.raises(EvalAssertionError, match="expected the verdict 'passed', got 'failed'"):
        has_verdict(result, "passed")
    score_above(result, "agent.flaky", 0.4)
    score_below(result, "agent.flaky", 0.6)
    with pytest.raises(EvalAssertionError, match="above 0.5, got 0.5"):
        score_above(result, "agent.half", 0.5)  # strictly
    with pytest.raises(EvalAssertionError, match="below 0.5, got 0.5"):
        score_below(result, "agent.half", 0.5)
    with pytest.raises(EvalAssertionError, match=r"no average score named 'half'"):
        score_above(result, "half", 0)
    with pytest.raises(EvalAssertionError, match="^gate 'g' failed"):
        passes_gates(result)
    with pytest.raises(EvalAssertionError, match="^threshold of 'agent.half' missed"):
        passes_thresholds(result)


def test_gates_and_thresholds_matchers_fail_without_any():
    bare = run_evals(
        [{"input": "a", "output": "a"}],
        scorers=[create_scorer("s").generate_score(lambda run: 1.0)],
        progress=False,
    )
    with pytest.raises(EvalAssertionError, match="expected gates, but the run has none"):
        passes_gates(bare)
    with pytest.raises(EvalAssertionError, match="expected thresholds, but the run has none"):
        passes_thresholds(bare)
    assert_evals(bare)


# --- a conversation's turns: their gates and thresholds are the run's too ----------------------

TURNS_EVAL_FILE = """
from evaldag import checks, create_scorer

def target(input, history=()):
    return "sorry" if input == "refund?" else f"answer to {input}"

half = create_scorer("half").generate_score(lambda run: 0.5)
data = [
    {"id": "c1", "turns": [
        {"input": "hi", "gates": [checks.excludes("sorry", id="polite")]},
        {"input": "refund?", "gates": [checks.excludes("sorry", id="polite")],
         "scorers": [half.with_threshold(0.8)]},
    ]},
]
scorers = [checks.includes("answer", id="answers")]
"""


def _turn_result() -> EvalResult:
    half = create_scorer("half").generate_score(lambda run: 0.5)
    return run_evals(
        [
            {
                "id": "c1",
                "turns": [
                    {"input": "hi", "gates": [checks.excludes("sorry", id="polite")]},
                    {
                        "input": "refund?",
                        "gates": [checks.excludes("sorry", id="polite")],
                        "scorers": [half.with_threshold(0.8)],
                    },
                ],
            }
        ],
        target=lambda input: "sorry" if input == "refund?" else f"answer to {input}",
        scorers=[checks.includes("answer", id="answers")],
        progress=False,
    )


def test_assertions_and_matchers_see_the_turns_gates_and_thresholds():
    result = _turn_result()
    assert result.verdict == "failed" and not result.gate_results
    assert _failures(result) == [
        "turn 1: gate 'polite' failed: score 0.00, required at least 1.00; worst items: c1 (0.00)",
        (
            "turn 1: threshold of 'half' missed: average 0.50, required >= 0.80; "
            "worst items: c1 (0.50)"
        ),
    ]
    with pytest.raises(EvalAssertionError, match="^turn 1: gate 'polite' failed"):
        passes_gates(result)
    with pytest.raises(EvalAssertionError, match="^turn 1: threshold of 'half' missed"):
        passes_thresholds(result)


def test_an_eval_files_turns_are_tests_of_their_own(pytester):
    pytester.makepyfile(eval_turns=TURNS_EVAL_FILE)
    outcomes = pytester.runpytest("-v", "-p", "no:cacheprovider")
    assert outcomes.parseoutcomes() == {"passed": 1, "failed": 2}
    lines = outcomes.stdout.lines
    assert [line.split(" ")[0] for line in lines if " PASSED" in line or " FAILED" in line] == [
        "eval_turns.py::gate[turn0.polite]",
        "eval_turns.py::gate[turn1.polite]",
        "eval_turns.py::threshold[turn1.half]",
    ]
    assert any(line.startswith("AssertionError: turn 1: gate 'polite' failed") for line in lines)


def test_an_eval_files_item_gates_outside_turns_fail_its_run(pytester):
    # The data's own gates, without turns, were an ignored column: `run` passed, nothing checked.
    pytester.makepyfile(
        eval_item_gates="""
        from evaldag import checks

        def target(input, history=()):
            return "sorry"

        data = [{"id": "c1", "input": "hi", "gates": [checks.excludes("sorry", id="polite")]}]
        scorers = [checks.includes("answer", id="answers")]
        """
    )
    done = pytester.runpytest("-p", "no:cacheprovider")
    done.assert_outcomes(failed=1)
    done.stdout.fnmatch_lines(["*Invalid data item at index 0: 'gates' holds scorers, *"])


def test_a_run_that_fails_before_writing_leaves_no_earlier_results_file(pytester):
    # The file an earlier session wrote stayed: `evaldag report` after a run whose data had gone
    # read the old 'passed'.
    pytester.makepyfile(eval_kept=EVAL_FILE)
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1, failed=2)
    results = pytester.path / ".evaldag" / "pytest" / "eval_kept.parquet"
    assert results.is_file()
    pytester.makepyfile(eval_kept=EVAL_FILE.replace("data = [", "data = 'gone.jsonl'\n_ = ["))
    done = pytester.runpytest("-p", "no:cacheprovider")
    done.assert_outcomes(failed=3)
    done.stdout.fnmatch_lines(["*eval_kept.py defines data = 'gone.jsonl', which is neither*"])
    assert not results.exists()
