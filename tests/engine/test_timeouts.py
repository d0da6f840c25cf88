"""Time limits: a step or target longer than ``step_timeout`` / ``target_timeout`` is that item's
error, the run goes on, and nothing already computed is lost.

Slow steps and targets are real: async ones sleep, sync ones block on a ``threading.Event`` that
each test releases at its end (so no thread outlives it). Limits are 1 s, which the fast items
keep on a busy machine too (0.2 s did not, where a loaded machine paused a thread that long);
nothing asserts how fast anything ran.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
import threading
import time
from collections.abc import Iterator

import pytest
from judge_server import Reply

from evaldag import EvalResult, PromptStep, ScorerRunError, create_scorer, run_evals
from evaldag._cli.main import main
from evaldag._scorer.fingerprint import scorer_fingerprint
from evaldag._scorer.time_limits import DEFAULT_STEP_TIMEOUT, DEFAULT_TARGET_TIMEOUT
from evaldag.errors import TimeLimitError

LIMIT = 1.0
DATA = [{"input": "q", "output": output} for output in ("fast", "hang", "quick")]


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """Blocks sync steps and targets until the test ends; then every thread they held ends."""
    event = threading.Event()
    yield event
    event.set()
    deadline = time.monotonic() + 10
    for thread in threading.enumerate():
        if thread.name.startswith("evaldag-timed-"):
            thread.join(max(0.0, deadline - time.monotonic()))
            assert not thread.is_alive(), f"{thread.name} outlived its test"


def _words(run):
    return len(run.output.split())


def _analyzing(scorer_id, preprocess, analyze):
    """A scorer whose score is 1 once its analyze step returned."""
    steps = create_scorer(scorer_id).preprocess(preprocess).analyze(analyze)
    return steps.generate_score(lambda analyze_step_result: 1.0)


def _until(condition) -> bool:
    deadline = time.monotonic() + 5
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)
    return condition()


def test_a_hanging_async_step_is_cancelled_and_recorded_as_the_items_error():
    cancelled = []

    async def analyze(run):
        if run.output == "hang":
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                cancelled.append(run.output)
                raise
        return "checked"

    items = run_evals(
        DATA, scorers=[_analyzing("slow", _words, analyze)], step_timeout=LIMIT, progress=False
    ).items
    assert items["slow.score"].tolist()[0::2] == [1.0, 1.0]
    error = items["slow.error"][1]
    assert f"step 'analyze' of scorer 'slow' took longer than step_timeout={LIMIT:g} s" in error
    assert "cancelled" in error
    assert items["slow.failed_step"][1] == "analyze"
    assert json.loads(items["slow.completed_steps"][1]) == ["preprocess"]
    assert json.loads(items["slow.steps"][1])["preprocess_step_result"] == 1  # kept
    assert _until(lambda: cancelled == ["hang"])


def test_a_step_that_ignores_its_cancellation_does_not_hold_its_item(release):
    gave_up = []

    async def stubborn(run):
        if run.output == "hang":
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:  # refuses to stop until the test has its results
                for _ in range(1000):
                    if release.is_set():
                        break
                    await asyncio.sleep(0.01)
                gave_up.append(run.output)
        return 1.0

    scorer = create_scorer("stubborn").generate_score(stubborn)
    items = run_evals(DATA, scorers=[scorer], step_timeout=LIMIT, progress=False).items
    assert gave_up == []  # the run did not wait for the step to stop
    assert items["stubborn.error"].notna().tolist() == [False, True, False]
    release.set()
    assert _until(lambda: gave_up == ["hang"])


def test_a_hanging_sync_step_is_reported_while_its_thread_runs_on(release):
    def score(run):
        if run.output == "hang":
            release.wait()
        return 0.5

    scorer = create_scorer("sync", step_timeout=LIMIT).generate_score(score)
    result = run_evals(DATA, scorers=[scorer], progress=False)
    items = result.items
    assert items["sync.score"].tolist()[0::2] == [0.5, 0.5]
    error = items["sync.error"][1]
    assert (
        f"step 'generate_score' of scorer 'sync' took longer than step_timeout={LIMIT:g} s" in error
    )
    assert "thread runs on" in error
    assert items["sync.failed_step"][1] == "generate_score"
    assert result.scores["sync"] == 0.5


def test_rows_after_an_overrun_go_on_in_order(release):
    seen = []

    def score(run):
        seen.append(run.output)
        if run.output.startswith("hang"):
            release.wait()
        return 1.0

    outputs = ["a", "hang 1", "b", "hang 2", "c"]
    scorer = create_scorer("order", step_timeout=LIMIT).generate_score(score)
    items = run_evals(
        [{"input": "q", "output": o} for o in outputs], scorers=[scorer], progress=False
    ).items
    assert seen == outputs
    assert items["order.error"].notna().tolist() == [False, True, False, True, False]


def test_a_sync_step_after_an_async_one_is_limited_too(release):
    async def preprocess(run):
        await asyncio.sleep(0)
        return run.output

    def analyze(preprocess_step_result):
        if preprocess_step_result == "hang":
            release.wait()
        return preprocess_step_result

    items = run_evals(
        DATA, scorers=[_analyzing("mixed", preprocess, analyze)], step_timeout=LIMIT, progress=False
    ).items
    assert items["mixed.error"].notna().tolist() == [False, True, False]
    assert "step 'analyze' of scorer 'mixed'" in items["mixed.error"][1]


def test_prepare_run_is_a_step_under_the_limit(release):
    def prepare(run):
        if run.output == "hang":
            release.wait()
        return run

    scorer = create_scorer("prepared", prepare_run=prepare).generate_score(lambda run: 1.0)
    items = run_evals(DATA, scorers=[scorer], step_timeout=LIMIT, progress=False).items
    assert items["prepared.failed_step"].tolist()[1] == "prepare_run"
    assert "step 'prepare_run' of scorer 'prepared'" in items["prepared.error"][1]
    assert items["prepared.score"].tolist()[0::2] == [1.0, 1.0]


def test_a_scorers_own_limit_comes_before_the_runs():
    async def score(run):
        await asyncio.sleep(2 * LIMIT if run.output == "hang" else 0)
        return 1.0

    patient = create_scorer("patient").generate_score(score).with_step_timeout(30)
    hasty = create_scorer("hasty").generate_score(score)
    items = run_evals(DATA, scorers=[patient, hasty], step_timeout=LIMIT, progress=False).items
    assert items["patient.error"].isna().all()
    assert items["hasty.error"].notna().tolist() == [False, True, False]


def test_scoring_one_run_raises_the_time_limit_error():
    async def score(run):
        await asyncio.sleep(30)

    scorer = create_scorer("one", step_timeout=LIMIT).generate_score(score)
    with pytest.raises(ScorerRunError) as raised:
        scorer.run(input="q", output="a")
    assert raised.value.failed_step == "generate_score"
    assert isinstance(raised.value.cause, TimeLimitError)
    assert raised.value.cause.id == "EVALDAG_STEP_TIMEOUT"


def test_a_hanging_target_is_the_items_target_error(release):
    async def async_target(input):
        await asyncio.sleep(30 if input == "hang" else 0)
        return f"answer to {input}"

    def sync_target(input):
        if input == "hang":
            release.wait()
        return f"answer to {input}"

    scorer = create_scorer("length").generate_score(lambda run: 1.0)
    data = [{"input": text} for text in ("a", "hang", "b")]
    for target, stopped in ((async_target, "was cancelled"), (sync_target, "thread runs on")):
        items = run_evals(
            data, scorers=[scorer], target=target, target_timeout=LIMIT, progress=False
        ).items
        assert items["output"].tolist()[0::2] == ["answer to a", "answer to b"]
        error = items["target_error"][1]
        assert error.startswith(
            f"TimeLimitError: the target took longer than target_timeout={LIMIT:g}"
        )
        assert stopped in error
        assert items["length.score"].tolist()[0::2] == [1.0, 1.0]


def test_each_turn_of_a_conversation_has_the_target_limit():
    async def target(input, history):
        await asyncio.sleep(30 if input == "hang" else 0)
        return "ok"

    scorer = create_scorer("length").generate_score(lambda run: 1.0)
    data = [{"inputs": ["hello", "hang"]}, {"inputs": ["hello", "again"]}]
    items = run_evals(
        data, scorers=[scorer], target=target, target_timeout=LIMIT, progress=False
    ).items
    error = items["target_error"][0]
    assert f"turn 2 of 2: the target took longer than target_timeout={LIMIT:g} s" in error
    assert items["target_error"].isna().tolist() == [False, True]


def test_the_limit_stops_create_prompt_not_the_judge_call(judge_server):
    async def slow_prompt(run):
        await asyncio.sleep(30 if run.output == "hang" else 0)
        return f"Grade {run.output}"

    judge_server.reply = Reply({"score": 1}, latency=2 * LIMIT)  # the judge's own timeout rules
    judge = judge_server.judge(instructions="Grade it.", cache=False, max_retries=0)
    scorer = create_scorer("judged", judge=judge).generate_score(
        PromptStep("Grade the answer", slow_prompt)
    )
    items = run_evals(DATA, scorers=[scorer], step_timeout=LIMIT, progress=False).items
    assert items["judged.score"].tolist()[0::2] == [1.0, 1.0]
    assert "step 'generate_score' of scorer 'judged'" in items["judged.error"][1]
    assert len(judge_server.requests) == 2  # the hanging item never called the judge


def test_time_limits_are_not_part_of_a_scorers_fingerprint():
    scorer = create_scorer("same").generate_score(lambda run: 1.0)
    assert scorer_fingerprint(scorer.with_step_timeout(5)) == scorer_fingerprint(scorer)


#: Calls of the resumed scorer's step: a global, as a closure's values are in its fingerprint.
async def _resumed_score(run):
    await asyncio.sleep(30 if run.output == "hang" else 0)
    return 1.0


def test_a_checkpoint_resumes_under_another_limit(tmp_path):
    scorer = create_scorer("resumed").generate_score(_resumed_score)
    completed = []
    options = {
        "checkpoint": tmp_path / "run.parquet",
        "progress": False,
        "on_item_complete": lambda item, *_: completed.append(item["output"]),
    }
    first = run_evals(DATA, scorers=[scorer], step_timeout=LIMIT, **options)
    again = run_evals(DATA, scorers=[scorer], step_timeout=30, **options)
    assert len(completed) == len(DATA)  # the finished run was read back, not scored again
    assert again.items["resumed.error"].tolist() == first.items["resumed.error"].tolist()


def test_the_cli_passes_its_limits_on(tmp_path):
    eval_file = tmp_path / "limited.py"
    eval_file.write_text(
        "from evaldag import create_scorer\n"
        "import asyncio\n"
        "async def score(run):\n"
        "    await asyncio.sleep(30 if run.output == 'hang' else 0)\n"
        "    return 1.0\n"
        "scorers = [create_scorer('limited').generate_score(score)]\n"
    )
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(item) + "\n" for item in DATA))
    out = tmp_path / "results.parquet"
    limit = ["--step-timeout", str(LIMIT)]
    main(["run", str(eval_file), "--data", str(data), "--out", str(out), *limit])
    items = EvalResult.read_parquet(out).items
    assert items["limited.error"].notna().tolist() == [False, True, False]


def test_a_run_is_bounded_unless_told_otherwise():
    """Every wait has a bound: with no limit given, a step that never returned held its batch
    forever. None lifts a limit."""
    defaults = inspect.signature(run_evals).parameters
    assert defaults["step_timeout"].default == DEFAULT_STEP_TIMEOUT == 600
    assert defaults["target_timeout"].default == DEFAULT_TARGET_TIMEOUT == 1800


def test_the_cli_bounds_a_run_by_default_and_none_lifts_it(tmp_path, monkeypatch):
    running = importlib.import_module("evaldag._eval.run_evals")  # the module, not its function
    given = []

    def recorded(*args, **kwargs):
        given.append((kwargs["step_timeout"], kwargs["target_timeout"]))
        return run_evals(*args, **kwargs)

    monkeypatch.setattr(running, "run_evals", recorded)
    eval_file = tmp_path / "bounded.py"
    eval_file.write_text(
        "from evaldag import create_scorer\n"
        "scorers = [create_scorer('one').generate_score(lambda run: 1.0)]\n"
    )
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(item) + "\n" for item in DATA))
    main(["run", str(eval_file), "--data", str(data)])
    main(["run", str(eval_file), "--data", str(data), "--step-timeout", "none"])
    main(["run", str(eval_file), "--data", str(data), "--target-timeout", "None"])
    assert given == [(600, 1800), (None, 1800), (600, None)]


def test_an_overrun_says_how_to_give_more_time(release):
    def stuck(run):
        if run.output == "hang":
            release.wait()
        return 1.0

    scorer = create_scorer("stuck").generate_score(stuck)
    error = run_evals(DATA, scorers=[scorer], step_timeout=LIMIT, progress=False).items[
        "stuck.error"
    ][1]
    assert "if it needs longer, raise step_timeout (None: no limit)" in error


def test_a_scorers_own_limit_holds_in_an_agent_config():
    async def score(run):
        await asyncio.sleep(2 * LIMIT if run.output == "hang" else 0)
        return 1.0

    patient = create_scorer("patient").generate_score(score).with_step_timeout(30)
    result = run_evals(DATA, scorers={"agent": [patient]}, step_timeout=LIMIT, progress=False)
    assert result.items["agent.patient.error"].isna().all()
