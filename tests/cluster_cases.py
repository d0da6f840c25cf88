"""run_evals on a real local cluster, case by case against a local run on the same data: the
same scores, items and verdict for every option, and one judge limit and one budget for the
whole cluster, counted by the loopback judge server.

A test module runs every case on its cluster by subclassing :class:`ClusterCases` and giving
three fixtures: ``executor`` (what ``run_evals(executor=...)`` gets), ``executor_option`` (what
``evaldag run --executor`` gets) and ``kill_the_coordinator`` (kills the process of the running
run's coordinator actor and gives its pid). ``tests/cluster/test_cluster.py`` runs them on Dask's
``LocalCluster`` and ``tests/cluster/test_cluster_ray.py`` on Ray, each with 2 worker processes,
in two files so that ``pytest -n 2 --dist loadfile`` runs the two clusters side by side.
"""

import contextlib
import json
import os
import signal
import sys
import threading
import time

import litellm
import pandas as pd
import pytest
from judge_server import API_KEY, MODEL, JudgeServer, Reply, rate_limited
from parquet_folders import parquet_folder
from repo_paths import FIXTURES
from score_stores import store_contents
from scorer_cases import completions, length_scorer

import evaldag
from evaldag import (
    EvalDagError,
    EvalResult,
    PromptStep,
    checks,
    create_scorer,
    read_results,
    run_evals,
)
from evaldag.transcripts import get_text_content

# The workflow target's module, importable by name on the workers (which get this sys.path).
sys.path.insert(0, str(FIXTURES / "workflows"))
import support_flow  # noqa: E402

DATA = pd.DataFrame(
    {"input": [str(i) for i in range(60)], "output": ["x" * (i % 13) for i in range(60)]}
)


def graded(server, **settings):
    """``graded``: the judge's score of a run (its reply), one call per item."""
    judge = server.judge(instructions="Grade it.", **settings)
    return create_scorer("graded", judge=judge).generate_score(
        PromptStep("Grade", lambda run: f"Grade {run.input}: {run.output}")
    )


def scored(result):
    """What a run decided, without what differs from run to run (run ids, durations)."""
    items = result.items
    kept = [c for c in items.columns if c.endswith((".score", ".error", ".not_scorable"))]
    items = items[kept].astype(object).where(items[kept].notna(), None)  # NaN != NaN
    return {
        "verdict": result.verdict,
        "scores": result.scores,
        "summary": result.summary.model_dump(),
        "items": items.to_dict("list"),
        "gates": [g.passed for g in result.gate_results],
        "thresholds": [t.passed for t in result.threshold_results],
    }


def _config(server):
    flaky = create_scorer("flaky").generate_score(lambda run: 1 / 0 if run.input == "7" else 0.5)
    return {
        "scorers": [length_scorer().with_threshold(0.3), graded(server), flaky],
        "gates": [checks.includes("x")],
    }


def _options(tmp_path, name):
    """Every option that writes somewhere, in a folder of its own."""
    where = tmp_path / name
    where.mkdir()
    return {
        "checkpoint": where / "run.parquet",
        "cache": where / "cache",
        "out": where / "results.csv",
        "store": str(where / "scores.db"),
        "name": "nightly",
        "progress": True,
    }


USAGE = {"prompt_tokens": 1000, "completion_tokens": 500, "total_tokens": 1500}


def _one_call_usd():
    prices = litellm.get_model_info("gpt-4o-mini", custom_llm_provider="openai")
    return 1000 * prices["input_cost_per_token"] + 500 * prices["output_cost_per_token"]


def _said(input, history=()):
    if input == "boom":
        raise RuntimeError("lost the thread")
    return f"turn {len(history) // 2 + 1}: you said {input}"


def turned(result):
    """Each turn row as a run decided it: the input, the output's texts, the assertions'
    scores and errors (without run and thread ids)."""
    turns = result.turns
    kept = ["item", "turn", "input", *(c for c in turns if c.endswith((".score", ".error")))]
    said = [None if o is None else [get_text_content(m) for m in o] for o in turns["output"]]
    rows = turns[kept].astype(object).where(turns[kept].notna(), None)  # NaN != NaN
    return {**rows.to_dict("list"), "output": said}


EVAL_FILE = """\
from evaldag import checks, create_scorer


def longer_than_two(run):
    return float(len(run.output) > 2)


scorers = [create_scorer("long").generate_score(longer_than_two).with_threshold(0.9)]
gates = [checks.includes("x")]
"""


def run_arguments(tmp_path):
    """``evaldag run``'s arguments for ``EVAL_FILE`` on ``DATA`` (written under ``tmp_path``),
    whose own function, loaded from its path, reaches the workers by value."""
    (tmp_path / "eval_cluster.py").write_text(EVAL_FILE)
    DATA.to_json(tmp_path / "data.jsonl", orient="records", lines=True)
    return ["run", str(tmp_path / "eval_cluster.py"), "--data", str(tmp_path / "data.jsonl")]


def _slow_length(workers=None, pause=0.05):
    """``slow``: the output's length over 13, after a ``pause`` per row (which lets a worker be
    killed mid-run); each process scoring with it leaves a file named after its pid in the
    folder ``workers`` (where given)."""

    def slow(run):
        if workers is not None:
            (workers / str(os.getpid())).touch()
        time.sleep(pause)
        return len(run.output) / 13

    return create_scorer("slow").generate_score(slow)


def stopping_length(folder, item="59"):
    """``slow``: the output's length over 13; the process scoring ``item`` while the file
    ``stop`` is in ``folder`` stops itself (SIGSTOP: alive, answering nothing), once: it deletes
    the file and leaves its pid in ``stopped`` first. (The last item by default: the batches
    before it are done or running elsewhere.)"""

    def slow(run):
        stop = folder / "stop"
        if run.input == item and stop.exists():
            with contextlib.suppress(FileNotFoundError):  # another batch's row took it
                stop.unlink()
                (folder / "stopped").write_text(str(os.getpid()))
                os.kill(os.getpid(), signal.SIGSTOP)
        time.sleep(0.01)
        return len(run.output) / 13

    return create_scorer("slow").generate_score(slow)


def resumed(pid_file):
    """Wake the process whose pid is in ``pid_file`` (if one stopped), as an operator would."""
    if pid_file.exists():
        with contextlib.suppress(ProcessLookupError):  # ended meanwhile
            os.kill(int(pid_file.read_text()), signal.SIGCONT)


def _worker_pid(workers, deadline):
    """The pid of a process other than this one that scored with :func:`_slow_length`."""
    while time.monotonic() < deadline:
        pids = [int(p.name) for p in workers.iterdir() if int(p.name) != os.getpid()]
        if pids:
            return pids[0]
        time.sleep(0.01)
    raise AssertionError("no worker scored a row in time")


def within(seconds, run):
    """``run()``'s value or error, which must come within ``seconds`` (a run that waits
    forever fails the test instead of hanging it)."""
    ended = {}

    def ran():
        try:
            ended["value"] = run()
        except BaseException as error:  # handed to the test
            ended["error"] = error

    runner = threading.Thread(target=ran, daemon=True)
    runner.start()
    runner.join(seconds)
    assert ended, f"still waiting after {seconds} s"
    if "error" in ended:
        raise ended["error"]
    return ended["value"]


class ClusterCases:
    """The cases every cluster runs (see the module's docstring for the fixtures they take)."""

    def test_calls_in_flight_never_pass_the_limit_of_the_whole_cluster(self, executor):
        with JudgeServer(Reply({"score": 1}), latency=0.05) as server:
            result = run_evals(
                [{"input": f"q{n}", "output": f"a{n}"} for n in range(60)],
                scorers=[graded(server, max_concurrency=3)],
                executor=executor,
                concurrency=8,
                batch_size=10,
                progress=False,
            )
            assert len(server.requests) == 60
            assert server.max_in_flight <= 3
        assert result.scores == {"graded": 1.0}
        (limit,) = result.usage["total"].judge_limits
        assert limit.max_concurrency == 3 and limit.final == 3

    def test_a_worker_runs_batches_with_its_heap_frozen_and_the_lock_handed_over_quickly(
        self, executor
    ):
        """A worker's modules and the run's driver are out of the collector's passes (a full
        pass over them stalled the judge calls' event loop 100 to 200 ms), and its batches'
        threads hand the interpreter lock to that loop within a millisecond."""

        def frozen(run):
            import gc

            return float(gc.get_freeze_count() > 0)

        def handed_over(run):
            import sys

            return float(sys.getswitchinterval() <= 0.001)

        result = run_evals(
            DATA,
            scorers=[
                create_scorer("frozen").generate_score(frozen),
                create_scorer("handed-over").generate_score(handed_over),
            ],
            executor=executor,
            batch_size=20,
            progress=False,
        )
        assert result.scores == {"frozen": 1.0, "handed-over": 1.0}

    def test_each_worker_runs_two_batches_at_once(self, executor):
        """A batch starts beside its worker's other one, not after it, and the batches go to
        the workers running fewest: with 2 workers, 4 batches of one slow call each are all in
        flight at once (a worker that ran one batch at a time, or took three, would make 2 or
        3)."""
        with JudgeServer(Reply({"score": 1}), latency=3.0) as server:
            result = run_evals(
                [{"input": f"q{n}", "output": f"a{n}"} for n in range(4)],
                scorers=[graded(server, max_concurrency=8)],
                executor=executor,
                batch_size=1,
                progress=False,
            )
            assert server.max_in_flight == 4
        assert result.scores == {"graded": 1.0}

    def test_a_batch_of_judge_calls_is_4_times_larger_on_a_cluster(self, executor, tmp_path):
        """A batch costs more on a cluster (sent to a worker, its results sent back to the
        client): a run with judge calls takes concurrency * 32 items per batch there, 8 rounds
        of its concurrency locally."""
        items = [{"input": f"q{n}", "output": "a"} for n in range(200)]
        with JudgeServer(Reply({"score": 1})) as server:
            config = {"scorers": [graded(server)], "concurrency": 4, "progress": False}
            run_evals(items, **config, out=tmp_path / "local")
            run_evals(items, **config, executor=executor, out=tmp_path / "cluster")
        parts = {
            run: len(list((tmp_path / run).glob("part-*.parquet"))) for run in ("local", "cluster")
        }
        assert parts == {"local": 4, "cluster": 2}  # 200 items by 64, by 128

    def test_a_429_seen_by_one_worker_lowers_the_limit_of_all(self, executor):
        with JudgeServer(Reply({"score": 1}), latency=0.02) as server:
            server.script(rate_limited(retry_after=0.1))
            result = run_evals(
                [{"input": f"q{n}", "output": f"a{n}"} for n in range(40)],
                scorers=[graded(server, max_concurrency=4)],
                executor=executor,
                batch_size=10,
                progress=False,
            )
        assert result.scores == {"graded": 1.0}
        (limit,) = result.usage["total"].judge_limits
        assert limit.lowest == 2  # halved once, on the coordinator every worker asks

    def test_same_result_as_local(self, executor):
        config = {"scorers": [length_scorer().with_threshold(0.3)]}
        local = run_evals(DATA, **config, progress=False)
        remote = run_evals(DATA, **config, executor=executor, batch_size=16, progress=False)
        columns = [c for c in local.items.columns if c != "run_id"]
        assert remote.to_dict() == local.to_dict()
        assert remote.items[columns].equals(local.items[columns])

    # --- every option, as in a local run ---------------------------------------------------

    def test_every_option_gives_the_local_result(self, executor, tmp_path, capsys):
        with JudgeServer(Reply({"score": 0.25})) as server:
            seen = {}
            local = run_evals(
                DATA,
                **_config(server),
                **_options(tmp_path, "local"),
                on_item_complete=lambda item, output, results: seen.setdefault("local", []).append(
                    (item["input"], sorted(results))
                ),
                batch_size=16,
            )
            local_calls = len(server.requests)
            options = _options(tmp_path, "cluster")
            remote = run_evals(
                DATA,
                **_config(server),
                **options,
                on_item_complete=lambda item, output, results: seen.setdefault("remote", []).append(
                    (item["input"], sorted(results))
                ),
                executor=executor,
                batch_size=16,
            )
            assert len(server.requests) == 2 * local_calls == 2 * len(DATA)
            assert scored(remote) == scored(local)
            assert seen["remote"] == seen["local"] and len(seen["remote"]) == len(DATA)
            assert "60/60" in capsys.readouterr().err  # the progress
            # out, the store and the checkpoint hold the run
            assert read_results(options["out"])["len.score"].equals(remote.items["len.score"])
            saved = evaldag.ScoreStore(options["store"]).result("nightly")
            assert saved.experiment_id == remote.experiment_id and saved.scores == remote.scores
            assert scored(EvalResult.read_parquet(options["checkpoint"])) == scored(remote)
            # the workers' cache is the client's: a local run with it calls no judge
            again = run_evals(DATA, **_config(server), cache=options["cache"], progress=False)
            assert len(server.requests) == 2 * local_calls
            assert scored(again) == scored(local)

    def test_the_workers_share_a_cache_in_a_database(self, executor, postgres_url):
        """cache="postgresql://..." is one cache for every worker and every machine that reaches
        it."""
        with JudgeServer(Reply({"score": 0.25})) as server:
            options = {"scorers": [graded(server)], "cache": postgres_url, "progress": False}
            first = run_evals(DATA[:20], **options, executor=executor, batch_size=5)
            assert len(server.requests) == 20
            again = run_evals(DATA[:20], **options, executor=executor, batch_size=5)
            here = run_evals(DATA[:20], **options)
            assert len(server.requests) == 20  # the replies the workers stored, read back
        assert first.scores == again.scores == here.scores == {"graded": 0.25}
        assert first.summary.judge_cache_problems == again.summary.judge_cache_problems == []

    def test_a_crashed_run_resumes_from_its_checkpoint_and_repeats_no_judge_call(
        self, executor, tmp_path
    ):
        checkpoint = tmp_path / "run.parquet"

        def crash(item, output, results):
            if item["input"] == "35":
                raise KeyboardInterrupt

        with JudgeServer(Reply({"score": 0.25})) as server:
            local = run_evals(DATA, **_config(server), progress=False)
            server.reset()
            server.reply = Reply({"score": 0.25})
            with pytest.raises(KeyboardInterrupt):
                run_evals(
                    DATA,
                    **_config(server),
                    executor=executor,
                    checkpoint=checkpoint,
                    on_item_complete=crash,
                    batch_size=8,
                    progress=False,
                )
            assert 0 < len(server.requests)
            # the batches on the workers when the client stopped still finish their calls (and
            # journal them); a resume started before they do may ask those calls again, which is
            # allowed (calls in flight), so the count below waits for them: until no call came
            # for a second, within a bound
            deadline, seen, still = time.monotonic() + 30, -1, time.monotonic()
            while time.monotonic() < deadline and time.monotonic() - still < 1.0:
                if seen != len(server.requests):
                    seen, still = len(server.requests), time.monotonic()
                time.sleep(0.1)
            resumed = run_evals(
                DATA,
                **_config(server),
                executor=executor,
                checkpoint=checkpoint,
                batch_size=8,
                progress=False,
            )
            # each item judged once over both runs: finished batches are kept, and the replies
            # of the batches cut short are in the checkpoint's journal, written by the workers
            assert len(server.requests) == len(DATA)
        assert scored(resumed) == scored(local)

    def test_a_stopped_conversation_run_resumes_from_its_checkpoint_as_locally(
        self, executor, tmp_path
    ):
        """The client saves each batch's turn rows beside its items, wherever it ran: the run
        again on the cluster takes them back, the failed conversation's completed turn too."""
        data = [
            {"id": "a", "inputs": ["hi", "and then?"]},
            {"turns": [{"input": "hi", "gates": [checks.includes("turn 1")]}]},
            {
                "turns": [
                    {"input": "hi", "gates": [checks.includes("turn 1")]},
                    {"input": "boom", "scorers": [checks.includes("you said")]},
                ]
            },
            {"id": "d", "inputs": ["bye"]},
        ]
        config = {"target": _said, "scorers": [checks.includes("you said")], "progress": False}
        local = run_evals(data, **config)
        options = {**config, "executor": executor, "checkpoint": tmp_path / "run.parquet"}

        def stop(item, output, results):
            if item["id"] == "d":
                raise KeyError("stop")

        with pytest.raises(evaldag.OnItemCompleteError):
            run_evals(data, **options, batch_size=1, on_item_complete=stop)
        resumed = run_evals(data, **options, batch_size=1)
        assert turned(resumed) == turned(local)
        assert turned(resumed)["output"][3:5] == [["turn 1: you said hi"], None]
        assert resumed.turn_results == local.turn_results
        assert scored(resumed) == scored(local)

    def test_trials_as_locally(self, executor):
        with JudgeServer(Reply({"score": 0.25})) as server:
            local = run_evals(DATA, scorers=[graded(server)], trials=2, progress=False)
            remote = run_evals(
                DATA, scorers=[graded(server)], trials=2, executor=executor, progress=False
            )
            assert len(server.requests) == 2 * 2 * len(DATA)
        assert scored(remote) == scored(local)

    def test_on_error_raise_stops_at_the_first_failure_as_locally(self, executor):
        config = {
            "scorers": [length_scorer(), create_scorer("flaky").generate_score(lambda run: 1 / 0)]
        }
        with pytest.raises(EvalDagError) as local:
            run_evals(DATA, **config, on_error="raise", progress=False)
        with pytest.raises(EvalDagError) as remote:
            run_evals(DATA, **config, on_error="raise", executor=executor, progress=False)
        assert remote.value.id == local.value.id == "RUN_EXPERIMENT_SCORER_FAILED_TO_SCORE_RESULT"
        assert str(remote.value) == str(local.value)

    def test_the_budget_holds_for_the_whole_cluster(self, executor):
        items = [{"input": f"q{n}", "output": f"a{n}"} for n in range(40)]
        with JudgeServer(Reply({"score": 1}, usage=USAGE), latency=0.1) as server:
            judged = graded(server, model="openai/gpt-4o-mini", max_concurrency=1)
            nothing = run_evals(
                items,
                scorers=[judged, length_scorer()],
                budget_usd=0,
                executor=executor,
                progress=False,
            )
            assert server.requests == []
            assert nothing.summary.not_scorable == {"graded": 40}
            result = run_evals(
                items,
                scorers=[judged],
                budget_usd=2.5 * _one_call_usd(),
                executor=executor,
                concurrency=1,
                batch_size=5,
                progress=False,
            )
        # Three calls spend the budget; past them, only the rows of the two batches running then
        # that had asked the budget before the third call ended (one row each: concurrency=1).
        calls = result.usage["graded"].calls
        assert calls == len(server.requests) and 3 <= calls <= 3 + 2
        not_scorable = result.items["graded.not_scorable"].dropna()
        assert len(not_scorable) == 40 - calls
        assert all(json.loads(r)["reason"].startswith("budget: ") for r in not_scorable)

    def test_conversations_agents_and_workflows_as_locally(self, executor):
        conversations = {
            "data": [
                {"id": "a", "inputs": ["hi", "and then?"]},
                {"turns": [{"input": "hello", "gates": [checks.includes("turn 1")]}]},
                {  # fails at its second turn: the first is kept and scored
                    "turns": [
                        {"input": "hi", "gates": [checks.includes("turn 1")]},
                        {"input": "boom", "gates": [checks.includes("turn 2")]},
                        {"input": "never", "scorers": [checks.includes("you said")]},
                    ]
                },
            ],
            "target": _said,
            "scorers": [checks.includes("you said")],
        }
        with JudgeServer("Sunny, 22 degrees.") as server:
            model = {"model": f"openai/{MODEL}", "api_base": server.url, "api_key": API_KEY}
            agent = {
                "data": [{"input": f"weather {n}?"} for n in range(6)],
                "target": evaldag.agent(server.judge(), instructions="Say the weather."),
                "scorers": {"agent": [checks.includes("22")]},
            }
            workflow = {
                "data": [{"input": "Where is my invoice?"}, {"input": "a crash"}],
                "target": evaldag.workflow(support_flow, ["reply"], inputs=model),
                "scorers": {
                    "workflow": [checks.includes("support team")],
                    "steps": {"draft": [checks.includes("Sunny")]},
                },
            }
            for config in (conversations, agent, workflow):
                data = config.pop("data")
                local = run_evals(data, **config, progress=False)
                remote = run_evals(data, **config, executor=executor, progress=False)
                assert scored(remote) == scored(local)
                if "turns" in str(data):
                    assert turned(remote) == turned(local)
                    said = [["turn 1: you said hi"], None, None]  # the failed conversation's
                    assert turned(local)["output"][3:] == said
                    assert [r.to_dict() for r in remote.turn_results] == [
                        r.to_dict() for r in local.turn_results
                    ]

    # --- evaldag run --executor --------------------------------------------------------------

    def test_evaldag_run_on_a_cluster_exits_as_locally(self, executor_option, tmp_path):
        from evaldag._cli.main import main

        run = run_arguments(tmp_path)
        codes = [
            main([*run, "--out", str(tmp_path / "local.parquet")]),
            main([*run, "--out", str(tmp_path / "cluster.parquet"), "--executor", executor_option]),
        ]
        assert codes == [2, 2]  # the gate fails on the empty output
        local, remote = (
            EvalResult.read_parquet(tmp_path / f"{n}.parquet") for n in ("local", "cluster")
        )
        assert scored(remote) == scored(local)

    # --- streamed data, results in a directory -----------------------------------------------

    def test_streamed_data_and_results_directory_as_locally(self, executor, tmp_path):
        folder = parquet_folder(DATA, tmp_path / "data")
        with JudgeServer(Reply({"score": 0.25})) as server:
            config = {**_config(server), "batch_size": 16, "progress": False}
            local = run_evals(DATA, **config, out=tmp_path / "local.parquet")
            remote = run_evals(
                f"file://{folder}", **config, executor=executor, out=tmp_path / "out"
            )
            assert len(server.requests) == 2 * len(DATA)
        assert remote.to_dict() == local.to_dict() and remote.verdict == local.verdict == "failed"
        assert "input" not in remote.items  # the client held the verdict's columns only
        back = EvalResult.read_parquet(tmp_path / "out")
        single = EvalResult.read_parquet(tmp_path / "local.parquet")
        assert scored(back) == scored(single)
        columns = [c for c in single.items.columns if c not in ("run_id", "graded.judge")]
        assert back.items[columns].equals(single.items[columns])

    def test_a_streamed_run_calls_back_and_fills_the_store_as_locally(self, executor, tmp_path):
        """on_item_complete gets each item once, in order, as in a local run (its arguments come
        back with the batch from the worker that scored it); the store, filled part by part,
        holds what saving the directory afterwards would."""
        folder = parquet_folder(DATA, tmp_path / "data")
        out, store = tmp_path / "out", tmp_path / "scores.db"
        local, remote = [], []
        with JudgeServer(Reply({"score": 0.25})) as server:
            config = {**_config(server), "batch_size": 16, "progress": False}
            run_evals(DATA, **config, on_item_complete=lambda *a: local.append(a))
            result = run_evals(
                folder,
                **config,
                executor=executor,
                out=out,
                store=str(store),
                on_item_complete=lambda *a: remote.append(a),
            )
        assert completions(remote) == completions(local) and len(remote) == len(DATA)
        with evaldag.ScoreStore(str(tmp_path / "afterwards.db")) as afterwards:
            afterwards.save_result(EvalResult.read_parquet(out))
        streamed = store_contents(str(store))
        assert streamed == store_contents(str(tmp_path / "afterwards.db"))
        assert len(streamed["evaldag_scores"]) == 4 * len(DATA)  # 3 scorers and a gate
        assert streamed["evaldag_experiments"][0]["id"] == result.experiment_id

    # --- faults --------------------------------------------------------------------------------

    def test_a_worker_killed_mid_streamed_run_loses_and_repeats_no_row_of_out(
        self, executor, tmp_path
    ):
        """A worker killed once the first part is written: its batches run again elsewhere,
        each part is written whole once (temporary file, then renamed)."""
        folder = parquet_folder(DATA, tmp_path / "data")
        out, workers = tmp_path / "out", tmp_path / "pids"
        workers.mkdir()
        killed = []

        def kill():
            deadline = time.monotonic() + 60
            while not (out / "part-00000.parquet").exists() and time.monotonic() < deadline:
                time.sleep(0.01)
            killed.append(_worker_pid(workers, deadline))
            os.kill(killed[0], signal.SIGKILL)

        killer = threading.Thread(target=kill)
        killer.start()
        remote = run_evals(
            folder, scorers=[_slow_length(workers)], executor=executor, batch_size=4, out=out
        )
        killer.join()
        assert killed
        local = run_evals(DATA, scorers=[_slow_length(pause=0)], progress=False)
        back = EvalResult.read_parquet(out)
        assert back.items["input"].tolist() == DATA["input"].tolist()  # each row once, in order
        assert len(list(out.glob("part-*.parquet"))) == 9 + 7  # 35 and 25 rows by 4
        assert not list(out.glob(".*"))  # no temporary file left
        assert scored(back) == scored(local) and remote.scores == local.scores

    def test_a_worker_killed_mid_run_loses_and_repeats_no_item(self, executor, tmp_path):
        """The dead worker's batches run again elsewhere (a new worker process takes its place);
        the client keeps each batch once."""
        workers = tmp_path / "pids"
        workers.mkdir()
        killed = []

        def kill(item, output, results):
            if not killed:
                killed.append(_worker_pid(workers, time.monotonic() + 60))
                os.kill(killed[0], signal.SIGKILL)

        local = run_evals(DATA, scorers=[_slow_length(pause=0)], progress=False)
        remote = run_evals(
            DATA,
            scorers=[_slow_length(workers)],
            executor=executor,
            batch_size=4,
            on_item_complete=kill,
            progress=False,
        )
        assert killed
        assert remote.items["input"].tolist() == DATA["input"].tolist()  # each item once, in order
        assert scored(remote) == scored(local)

    def test_the_coordinator_killed_mid_run_loses_no_item_and_waits_not_forever(
        self, executor, kill_the_coordinator, monkeypatch
    ):
        """Neither cluster starts a run's coordinator actor again: the workers' calls, waiting
        for slots from a coordinator that may never answer, probe it, find it lost and go on
        under their share of the limit (the probe's timings, shortened here, travel with the
        run)."""
        from evaldag._cluster import limits

        monkeypatch.setattr(limits, "PROBE_AFTER_SECONDS", 0.5)
        monkeypatch.setattr(limits, "PROBE_WAIT_SECONDS", 0.5)
        killed = []
        # replies slow enough that a third of the run (3 s at least) is left after the kill
        with JudgeServer(Reply({"score": 1}), latency=0.2) as server:

            def kill():
                deadline = time.monotonic() + 60
                while len(server.requests) < 12 and time.monotonic() < deadline:
                    time.sleep(0.01)
                killed.append(kill_the_coordinator())

            killer = threading.Thread(target=kill)
            killer.start()
            ran = {}
            options = {"executor": executor, "batch_size": 10, "progress": False}
            scorers = [graded(server, max_concurrency=4)]
            runner = threading.Thread(
                target=lambda: ran.update(result=run_evals(DATA, scorers=scorers, **options)),
                daemon=True,
            )
            runner.start()
            runner.join(120)
            killer.join()
            assert "result" in ran, "the run still waits on its lost coordinator after 120 s"
            result = ran["result"]
            assert server.max_in_flight <= 2 * 4  # a lost block's calls end beside the shares
        assert killed
        assert result.items["input"].tolist() == DATA["input"].tolist()  # each item once, in order
        assert result.items["graded.score"].notna().all() and result.scores == {"graded": 1.0}
