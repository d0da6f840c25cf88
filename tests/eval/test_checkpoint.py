"""Resumable runs: a run killed with SIGKILL and started again repeats no finished item."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest

from evaldag import (
    EvalDagError,
    EvalResult,
    OnItemCompleteError,
    PromptStep,
    create_scorer,
    run_evals,
)

SCRIPT = textwrap.dedent(
    """
    import asyncio, os, sys
    import pandas as pd
    from evaldag import create_scorer, run_evals

    log = open(sys.argv[2], "a")

    async def judged(run):
        # read when called: a module constant is part of the step's fingerprint
        await asyncio.sleep(float(os.environ["DELAY"]))
        log.write(run.input + "\\n")
        log.flush()
        os.fsync(log.fileno())
        return (int(run.input) % 5) / 4

    scorer = create_scorer("judged").analyze(judged).generate_score(
        lambda analyze_step_result: analyze_step_result
    )
    data = pd.DataFrame({"input": [str(i) for i in range(40)], "output": ["o"] * 40})
    run_evals(
        data, scorers=[scorer.with_threshold(0.4)], batch_size=5, concurrency=5,
        checkpoint=sys.argv[1], progress=False,
    )
    """
)


def _start(tmp_path: Path, checkpoint: Path, log: Path, delay: float) -> subprocess.Popen:
    script = tmp_path / "eval_job.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "DELAY": str(delay)}
    return subprocess.Popen([sys.executable, str(script), str(checkpoint), str(log)], env=env)


@pytest.mark.slow
def test_sigkill_then_resume_repeats_no_finished_item(tmp_path):
    checkpoint, log = tmp_path / "run.parquet", tmp_path / "calls.log"
    parts = tmp_path / "run.parquet.partial"
    job = _start(tmp_path, checkpoint, log, delay=0.2)
    deadline = time.monotonic() + 60
    while len(list(parts.glob("batch-*.parquet"))) < 3 and time.monotonic() < deadline:
        assert job.poll() is None, "the job ended before it could be killed"
        time.sleep(0.02)
    os.kill(job.pid, signal.SIGKILL)
    job.wait()
    finished = {
        int(row) for part in parts.glob("batch-*.parquet") for row in pd.read_parquet(part)["input"]
    }
    assert len(finished) >= 15 and not checkpoint.exists()
    calls_before = log.read_text().split()

    resumed = _start(tmp_path, checkpoint, log, delay=0.0)
    assert resumed.wait(timeout=120) == 0
    calls_after = log.read_text().split()[len(calls_before) :]
    assert finished.isdisjoint(int(c) for c in calls_after)
    assert set(map(int, calls_before + calls_after)) == set(range(40))
    assert not parts.exists()

    result = EvalResult.read_parquet(checkpoint)
    uninterrupted = _start(tmp_path, tmp_path / "whole.parquet", tmp_path / "w.log", delay=0.0)
    assert uninterrupted.wait(timeout=120) == 0
    whole = EvalResult.read_parquet(tmp_path / "whole.parquet")
    assert result.to_dict() == whole.to_dict()
    assert result.items["judged.score"].tolist() == whole.items["judged.score"].tolist()


def _scorer(scorer_id="s"):
    return create_scorer(scorer_id).generate_score(lambda run: len(run.output) / 10)


DATA = pd.DataFrame({"input": ["a", "b", "c"], "output": ["x", "xx", "xxx"]})


def test_finished_checkpoint_is_reused(tmp_path):
    completed = []

    def on_item_complete(item, output, scorer_results):
        completed.append(item["input"])

    options = {"checkpoint": tmp_path / "run.parquet", "on_item_complete": on_item_complete}
    first = run_evals(DATA, scorers=[_scorer()], **options)
    again = run_evals(DATA, scorers=[_scorer()], **options)
    assert completed == ["a", "b", "c"]  # the second run scored nothing
    assert again == first


@pytest.mark.parametrize(
    "change",
    [
        lambda: {"data": DATA, "scorers": [_scorer("other")]},
        lambda: {"data": DATA.assign(output=["y", "yy", "yyy"]), "scorers": [_scorer()]},
    ],
)
def test_checkpoint_of_another_run_is_refused(tmp_path, change):
    run_evals(DATA, scorers=[_scorer()], checkpoint=tmp_path / "run.parquet")
    with pytest.raises(EvalDagError) as raised:
        run_evals(**change(), checkpoint=tmp_path / "run.parquet")
    assert raised.value.id == "CHECKPOINT_MISMATCH"
    assert "resume='refresh'" in raised.value.message and "resume=False" in raised.value.message


def test_a_checkpoint_differing_in_what_decides_no_verdict_is_resumed(tmp_path):
    """A scorer's name, description and direction (``better``, which an earlier evaldag did not
    record) decide no score and no verdict: its checkpoint is taken; a threshold is refused."""
    checkpoint = tmp_path / "run.parquet"

    def stop(item, output, scorer_results):
        if item["input"] == "b":
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_evals(
            DATA, scorers=[_scorer()], checkpoint=checkpoint, on_item_complete=stop, batch_size=1
        )
    first = run_evals(DATA, scorers=[_scorer()])
    manifest = tmp_path / "run.parquet.partial" / "run.json"
    saved = json.loads(manifest.read_text())
    for definition in saved["scorers"]:
        del definition["better"]
        definition["description"] = "said otherwise"
    manifest.write_text(json.dumps(saved))
    resumed = run_evals(DATA, scorers=[_scorer()], checkpoint=checkpoint, batch_size=1)
    assert resumed.scores == first.scores
    with pytest.raises(EvalDagError, match="has another threshold or role"):
        run_evals(
            DATA, scorers=[_scorer().with_threshold(0.5)], checkpoint=checkpoint, batch_size=1
        )


def test_out_writes_the_result_that_run_evals_returns(tmp_path):
    result = run_evals(DATA, scorers=[_scorer()], out=tmp_path / "results.parquet")
    assert EvalResult.read_parquet(tmp_path / "results.parquet") == result


JUDGED_SCRIPT = textwrap.dedent(
    """
    import sys
    import pandas as pd
    from evaldag import Judge, PromptStep, create_scorer, run_evals

    class Label(dict):
        pass

    judge = Judge("openai/mock-judge", api_base=sys.argv[2], api_key="k", instructions="Grade.")
    scorer = (
        create_scorer("judged", judge=judge)
        .analyze(PromptStep("label", lambda run: f"Label item {run.input}", output_schema={
            "type": "object", "properties": {"label": {"type": "string"}}, "required": ["label"]
        }))
        .generate_score(PromptStep("score", lambda run: f"Score item {run.input}"))
    )
    data = pd.DataFrame({"input": [str(i) for i in range(30)], "output": ["o"] * 30})
    run_evals(data, scorers=[scorer], concurrency=4, batch_size=10,
              checkpoint=sys.argv[1], progress=False)
    """
)


@pytest.mark.slow
def test_a_resumed_run_repeats_no_judge_call_that_had_completed(tmp_path, judge_server):
    """SIGKILL in the middle of a batch, then resume: one judge call per item and step."""
    from judge_server import Reply

    judge_server.on("Label item", Reply({"label": "ok"}, latency=0.1))
    judge_server.on("Score item", Reply({"score": 1}, latency=0.1))
    script = tmp_path / "judged_job.py"
    script.write_text(JUDGED_SCRIPT)
    checkpoint = tmp_path / "run.parquet"
    command = [sys.executable, str(script), str(checkpoint), judge_server.url]
    job = subprocess.Popen(command)
    deadline = time.monotonic() + 90
    parts = tmp_path / "run.parquet.partial"
    # killed once the second batch has judge calls done but is not finished
    while time.monotonic() < deadline and not (
        len(list(parts.glob("batch-*.parquet"))) == 1 and len(judge_server.requests) >= 26
    ):
        assert job.poll() is None, "the job ended before it could be killed"
        time.sleep(0.01)
    os.kill(job.pid, signal.SIGKILL)
    killed = time.monotonic()
    job.wait()
    assert not checkpoint.exists()
    assert subprocess.run(command, timeout=120).returncode == 0
    first_sent: dict[str, float] = {}
    repeated = []
    for request in judge_server.requests:
        if request.prompt in first_sent:
            repeated.append(request.prompt)
        first_sent.setdefault(request.prompt, request.time)
    assert len(first_sent) == 60  # 30 items x 2 prompt steps
    # Only calls still waiting for their 0.1 s reply when the job was killed are made again.
    assert len(repeated) <= 4
    assert all(first_sent[prompt] > killed - 0.15 for prompt in repeated), repeated
    result = EvalResult.read_parquet(checkpoint)
    assert result.scores == {"judged": 1.0} and result.summary.total_items == 30


@pytest.mark.parametrize("cache", [None, False])
def test_judge_replies_are_journaled_with_no_cache(cache, tmp_path, judge_server, monkeypatch):
    """cache=False (or no cache) turns off the reply cache, not the checkpoint's journal: a
    resumed run would repeat completed calls without it. A cache, when there is one, is the
    journal."""
    from judge_server import Reply

    monkeypatch.delenv("EVALDAG_CACHE_DIR", raising=False)
    judge_server.reply = Reply({"score": 1})
    judge = judge_server.judge(instructions="Grade.")
    scorer = create_scorer("judged", judge=judge).generate_score(
        PromptStep("Grade", lambda run: f"Grade {run.input}")
    )
    journal = tmp_path / "run.parquet.partial" / "judge-replies"
    seen = []
    data = pd.DataFrame({"input": [str(i) for i in range(6)], "output": ["o"] * 6})
    options = {"checkpoint": tmp_path / "run.parquet", "progress": False, "batch_size": 3}
    on_item = lambda *_: seen.append(journal.exists())  # noqa: E731
    run_evals(data, scorers=[scorer], cache=cache, on_item_complete=on_item, **options)
    assert seen == [True] * 6 and not journal.exists()  # gone once the run is complete
    monkeypatch.setenv("EVALDAG_CACHE_DIR", str(tmp_path / "cache"))
    seen.clear()
    run_evals(
        data,
        scorers=[scorer],
        cache=cache,
        on_item_complete=on_item,
        **options | {"checkpoint": tmp_path / "again.parquet"},
    )
    again = tmp_path / "again.parquet.partial" / "judge-replies"
    assert not again.exists() and (tmp_path / "cache").exists() == (cache is None)


class _Stopped(Exception):
    pass


@pytest.mark.parametrize(
    ("how_called", "what_asked"),
    [
        ({"transport": "litellm"}, {"temperature": 0.5}),
        ({"timeout": 5}, {"model": "openai/other"}),
        ({"max_retries": 0}, {"instructions": "Grade strictly."}),
        ({"max_concurrency": 2}, {"max_tokens": 50}),
        ({"cache": False}, {"api_base": "http://127.0.0.1:9/v2"}),
    ],
)
def test_how_a_judge_is_called_keeps_the_fingerprint_what_it_is_asked_changes_it(
    how_called, what_asked
):
    from evaldag import Judge
    from evaldag._scorer.fingerprint import scorer_fingerprint

    base = {"model": "openai/judge", "api_base": "http://127.0.0.1:9/v1", "transport": "http"}

    def fingerprint(**settings):
        return scorer_fingerprint(create_scorer("judged", judge=Judge(**{**base, **settings})))

    assert fingerprint(**how_called) == fingerprint()
    assert fingerprint(**what_asked) != fingerprint()


def test_a_run_checkpointed_on_one_transport_resumes_on_the_other(tmp_path, judge_server):
    """``transport=`` says how calls travel, not what the judge answers: switching it keeps the
    checkpoint (and the journaled replies' keys), so no item is judged again."""
    from judge_server import Reply

    from evaldag import PromptStep

    judge_server.on("Score item", Reply({"score": 1}))

    def scorer(transport):
        judge = judge_server.judge(instructions="Grade.", transport=transport)
        step = PromptStep("score", lambda run: f"Score item {run.input}")
        return create_scorer("judged", judge=judge).generate_score(step)

    def stop_after_the_first_batch(item, output, scorer_results):
        if item["input"] == "3":
            raise _Stopped

    data = pd.DataFrame({"input": [str(i) for i in range(8)], "output": ["o"] * 8})
    checkpoint = tmp_path / "run.parquet"
    options = {"batch_size": 4, "checkpoint": checkpoint, "progress": False}
    with pytest.raises(OnItemCompleteError):
        run_evals(
            data, scorers=[scorer("http")], on_item_complete=stop_after_the_first_batch, **options
        )
    asked = [request.prompt for request in judge_server.requests]
    assert {f"Score item {i}" for i in range(4)} <= set(asked)
    result = run_evals(data, scorers=[scorer("litellm")], **options)
    again = [request.prompt for request in judge_server.requests][len(asked) :]
    assert set(asked).isdisjoint(again) and len(asked) + len(again) == 8
    assert result.scores == {"judged": 1.0}

    cache = {"cache": tmp_path / "replies", "progress": False}
    run_evals(data, scorers=[scorer("litellm")], **cache)
    before = len(judge_server.requests)
    cached = run_evals(data, scorers=[scorer("http")], **cache)  # the same reply keys
    assert len(judge_server.requests) == before and cached.scores == {"judged": 1.0}


def test_a_disk_that_fills_mid_run_loses_no_item(full_disk):
    """The batches are saved until the disk is full; the run goes on without saving more, and
    ends in ResultNotSavedError carrying the whole result; the saved batches stay for a rerun."""
    from small_disks import filled

    from evaldag import ResultNotSavedError

    data = pd.DataFrame(
        {"input": [str(i) for i in range(6)], "output": ["o" * i for i in range(6)]}
    )

    def fill_after_the_first_batch(item, output, scorer_results):
        if item["input"] == "1" and not (full_disk / "filler").exists():
            filled(full_disk)

    with pytest.raises(ResultNotSavedError) as raised:
        run_evals(
            data,
            scorers=[_scorer()],
            checkpoint=full_disk / "run.parquet",
            batch_size=2,
            on_item_complete=fill_after_the_first_batch,
            progress=False,
        )
    assert "No space left on device" in raised.value.message
    assert raised.value.result.items["s.score"].tolist() == [i / 10 for i in range(6)]
    saved = sorted(p.name for p in (full_disk / "run.parquet.partial").glob("batch-*"))
    assert saved == ["batch-000000000000.parquet"]


def test_a_failing_on_item_complete_names_the_item_and_keeps_what_was_scored(tmp_path):
    # The callback's own KeyError came out of run_evals naming no item, and the items scored
    # were on nothing unless a checkpoint held them.
    ids = [f"i{n}" for n in range(10)]
    data = pd.DataFrame({"id": ids, "input": ids, "output": ["x" * n for n in range(10)]})
    scored = []
    counting = create_scorer("length").generate_score(
        lambda run: scored.append(run.input) or len(run.output) / 10
    )

    def broken(item, output, scorer_results):
        if item["id"] == "i6":
            raise KeyError("no such dashboard")

    checkpoint, out = tmp_path / "run.parquet", tmp_path / "results.parquet"
    options = {"scorers": [counting], "batch_size": 4, "progress": False}
    with pytest.raises(OnItemCompleteError) as raised:
        run_evals(data, on_item_complete=broken, checkpoint=checkpoint, out=out, **options)
    error = raised.value
    assert error.message.startswith(
        "on_item_complete raised KeyError: 'no such dashboard' on item 6 (id 'i6'). The run "
        f"stopped there, without a verdict; the 8 items scored so far are kept in "
        f"checkpoint='{checkpoint}' and on this error (error.items)"
    )
    assert "run again with the same checkpoint: it scores only the rest" in error.message
    assert isinstance(error.cause, KeyError) and error.item == 6
    assert error.details == {"item": "6", "scoredItems": 8, "kept": f"checkpoint='{checkpoint}'"}
    assert error.items["id"].tolist() == ids[:8]  # the item's batch whole
    assert error.items["length.score"].tolist() == [n / 10 for n in range(8)]
    assert not out.exists()  # a partial run has no verdict to write, as on_error="raise"
    scored.clear()
    resumed = run_evals(data, checkpoint=checkpoint, out=out, **options)
    assert scored == ids[8:]  # only the rest
    assert resumed.items["length.score"].tolist() == [n / 10 for n in range(10)]
    with pytest.raises(OnItemCompleteError) as unkept:  # no checkpoint: on the error alone
        run_evals(data, on_item_complete=broken, **options)
    assert "are kept on this error (error.items)" in unkept.value.message
    assert "with checkpoint='run.parquet', a run stopped so resumes" in unkept.value.message
    kept = ["id", "length.score"]  # (each run its own run ids)
    assert unkept.value.items[kept].equals(error.items[kept])
