"""Row batches overlap: the next batch runs beside the current one's last rows, within the run's
concurrency, and the run still hands on results, checkpoints, callbacks and progress in dataset
order, and stops a batch run ahead when it fails fast or is interrupted."""

import asyncio
import threading
import time

import pandas as pd
import pytest
from judge_server import Reply

from evaldag import EvalDagError, PromptStep, create_scorer, run_evals
from evaldag._engine.concurrency import BatchSlots, RowSlots

INSTRUCTIONS = "Grade the answer."
SLOW = 3.0  # long enough that a busy machine starts batch 2 within it


def _judged(judge, scorer_id="judged"):
    return create_scorer(scorer_id, judge=judge).generate_score(
        PromptStep("score", lambda run: f"Score {run.output}")
    )


def _data(count):
    return pd.DataFrame({"input": ["q"] * count, "output": [f"a{i}" for i in range(count)]})


def test_the_next_batch_runs_beside_the_tail_of_the_current_one(judge_server):
    judge_server.on("Score a0 ", Reply({"score": 0}, latency=SLOW))  # batch 1's tail
    judge_server.on("Score", Reply({"score": 1}, latency=0.02))
    scorer = _judged(judge_server.judge(instructions=INSTRUCTIONS, max_concurrency=16))
    done = []
    result = run_evals(
        _data(12).assign(output=["a0 ", *[f"a{i}" for i in range(1, 12)]]),
        scorers=[scorer],
        concurrency=3,
        batch_size=4,
        progress=False,
        on_item_complete=lambda item, output, results: done.append(item["output"]),
    )
    arrived = {r.prompt: r.time for r in judge_server.requests}
    # batch 2 was judged while batch 1's slow row was in flight; batch 3 waited for batch 1
    # to be handed on (one batch runs ahead at most)
    assert arrived["Score a7"] - arrived["Score a0 "] < SLOW
    assert arrived["Score a8"] - arrived["Score a0 "] >= SLOW
    assert judge_server.max_in_flight <= 3  # the run's concurrency, across the batches
    assert result.items["output"].tolist() == done == ["a0 ", *[f"a{i}" for i in range(1, 12)]]
    assert result.items["judged.score"].tolist() == [0.0] + [1.0] * 11


def test_a_judge_endpoint_stays_within_its_limit_across_batches(judge_server):
    judge_server.on("Score a0 ", Reply({"score": 1}, latency=0.5))
    judge_server.on("Score", Reply({"score": 1}, latency=0.02))
    scorer = _judged(judge_server.judge(instructions=INSTRUCTIONS, max_concurrency=2))
    data = _data(12).assign(output=["a0 ", *[f"a{i}" for i in range(1, 12)]])
    result = run_evals(data, scorers=[scorer], concurrency=8, batch_size=4, progress=False)
    assert result.scores == {"judged": 1.0}
    assert judge_server.max_in_flight == 2  # the endpoint's limit is the process's, shared


def test_a_target_stays_within_concurrency_across_batches(judge_server):
    judge_server.on("Score", Reply({"score": 1}, latency=0.01))
    running, most = [0], [0]

    async def target(input):
        running[0] += 1
        most[0] = max(most[0], running[0])
        await asyncio.sleep(0.02)
        running[0] -= 1
        return "an answer"

    result = run_evals(
        _data(24)[["input"]],
        target=target,
        scorers=[_judged(judge_server.judge(instructions=INSTRUCTIONS))],
        concurrency=2,
        batch_size=4,
        progress=False,
    )
    assert result.scores == {"judged": 1.0} and most[0] == 2
    assert judge_server.max_in_flight <= 2


def test_failing_fast_stops_the_batch_run_ahead(judge_server):
    judge_server.on("Score a1", Reply({"score": "not a number"}, latency=0.2))
    judge_server.on("Score", Reply({"score": 1}, latency=0.3))
    scorer = _judged(judge_server.judge(instructions=INSTRUCTIONS, max_retries=0))
    with pytest.raises(EvalDagError) as raised:
        run_evals(
            _data(40),
            scorers=[scorer],
            concurrency=4,
            batch_size=4,
            on_error="raise",
            progress=False,
        )
    assert raised.value.id == "RUN_EXPERIMENT_SCORER_FAILED_TO_SCORE_RESULT"
    assert raised.value.details["completedItems"] == 0
    asked = len(judge_server.requests)
    time.sleep(0.5)
    assert len(judge_server.requests) == asked  # nothing of the batch run ahead goes on
    assert asked < 16


def test_an_interrupted_run_stops_the_batch_run_ahead(judge_server, tmp_path):
    judge_server.on("Score", Reply({"score": 1}, latency=0.1))
    scorer = _judged(judge_server.judge(instructions=INSTRUCTIONS))

    def interrupted(item, output, scorer_results):
        if item["output"] == "a3":
            raise KeyboardInterrupt

    checkpoint = tmp_path / "run.parquet"
    options = {"concurrency": 4, "batch_size": 4, "progress": False, "checkpoint": checkpoint}
    with pytest.raises(KeyboardInterrupt):
        run_evals(_data(40), scorers=[scorer], on_item_complete=interrupted, **options)
    asked = len(judge_server.requests)
    time.sleep(0.3)
    assert len(judge_server.requests) == asked and asked < 16
    parts = sorted(p.name for p in (tmp_path / "run.parquet.partial").glob("batch-*"))
    assert parts == ["batch-000000000000.parquet"]  # saved in order: the first batch only
    resumed = run_evals(_data(40), scorers=[scorer], **options)
    prompts = [r.prompt for r in judge_server.requests]
    # only the calls in flight when it was interrupted are made again
    assert len(set(prompts)) == 40 and len(prompts) - 40 <= 4
    assert resumed.items["output"].tolist() == _data(40)["output"].tolist()


def test_an_earlier_batch_gets_a_freed_slot_first():
    slots = RowSlots(1)
    order = []

    async def row(batch, name):
        async with batch.limit("s"):
            order.append(name)
            await asyncio.sleep(0.01)

    async def rows():
        first, ahead = BatchSlots(slots, 0), BatchSlots(slots, 4)
        holder = asyncio.ensure_future(row(first, "first-0"))
        await asyncio.sleep(0)
        waiting = [asyncio.ensure_future(row(ahead, "ahead-4"))]
        await asyncio.sleep(0)
        waiting.append(asyncio.ensure_future(row(first, "first-1")))
        await asyncio.gather(holder, *waiting)

    asyncio.run(rows())
    assert order == ["first-0", "first-1", "ahead-4"]
    assert slots.held("s") == 0


def test_a_stopped_batch_cancels_its_rows_and_frees_their_slots():
    slots = RowSlots(1)
    batch = BatchSlots(slots, 0)
    started = threading.Event()

    async def row():
        async with batch.limit("s"):
            started.set()
            await asyncio.sleep(10)

    async def rows():
        tasks = [asyncio.ensure_future(row()) for _ in range(3)]
        while not started.is_set():
            await asyncio.sleep(0)
        batch.stop()
        return await asyncio.gather(*tasks, return_exceptions=True)

    outcomes = asyncio.run(asyncio.wait_for(rows(), 2))
    assert all(isinstance(o, asyncio.CancelledError) for o in outcomes)
    assert slots.held("s") == 0
