"""Live scoring (spec §10.1): Mastra's sampling, filters and request-context snapshots checked
against Mastra's own runScorer (tests/fixtures/live/mastra_live.json); a real app function under
load; error rows, drops, skips and store failures that never reach the app; flush and close."""

import asyncio
import functools
import inspect
import json
import math
import os
import sqlite3
import threading
import time
import uuid

import pytest
from repo_paths import FIXTURES

import evaldag
from evaldag import EvalDagError, PromptStep, create_scorer, live, not_scorable, read_scores
from evaldag._live import worker as live_worker
from evaldag._live.predicates import scoring_filter
from evaldag._live.sampling import sampling_bound, sampling_rate, sha256, unit_interval
from evaldag._store.rows import request_context_snapshot

MASTRA = json.loads((FIXTURES / "live/mastra_live.json").read_text())
IDS = [f"trace-{n:05d}" for n in range(10_000)]
CLAIMS = {"type": "object", "properties": {"claims": {"type": "array"}}, "required": ["claims"]}


def _given(value):
    """A fixture context as Python: Mastra's non-finite numbers were written as {'number': ...}."""
    if isinstance(value, dict):
        if set(value) == {"number"}:
            return float(value["number"].replace("Infinity", "inf"))
        return {key: _given(item) for key, item in value.items()}
    return value


def _length():
    return create_scorer("length").generate_score(lambda run: len(run.output) / 100)


def _fields(question, request_context=None):
    return {"input": question, "trace_id": question, "request_context": request_context}


# --- Mastra's decisions ----------------------------------------------------------------------


def test_ratio_sampling_picks_the_ids_mastra_picks():
    assert MASTRA["sampling"]["rate"] == 0.1
    assert [i for i in IDS if unit_interval(i) < 0.1] == MASTRA["sampling"]["sampled"]
    bound = sampling_bound(0.1)  # what the wrapper compares digests with
    assert [i for i in IDS if sha256(i.encode()).digest() < bound] == MASTRA["sampling"]["sampled"]


@pytest.mark.parametrize("rate", [0.0, 2**-48, 0.1, 1 / 3, 0.5, 1 - 2**-40, 1.0])
def test_a_digest_below_the_bound_is_an_id_below_the_rate(rate):
    bound = sampling_bound(rate)
    for key in IDS[:2000]:
        below = bound is None or sha256(key.encode()).digest() < bound
        assert below == (unit_interval(key) < rate), key
    for value in (math.ceil(rate * 2**48) - 1, math.ceil(rate * 2**48)):  # either side of it
        if bound is not None and 0 <= value < 2**48:
            digest = value.to_bytes(6, "big") + bytes(26)
            assert (digest < bound) == (value / 2**48 < rate)


def test_request_context_snapshots_are_mastras():
    for context in MASTRA["contexts"]:
        assert request_context_snapshot(_given(context["given"])) == context["snapshot"]


def test_filters_let_through_what_mastras_let_through():
    contexts = [_given(c["given"]) for c in MASTRA["contexts"]]
    for case in MASTRA["cases"]:
        check = scoring_filter(MASTRA["filters"][case["filter"]])
        scoring_context = {
            "requestContext": request_context_snapshot(contexts[case["context"]]),
            "entity": {"id": "app", "name": "app"},
            "entityType": "AGENT",
            "source": "LIVE",
            "threadId": "t1" if case["context"] == 1 else None,
        }
        assert check(scoring_context) == case["scored"], case


@pytest.mark.parametrize(
    ("sampling", "message"),
    [
        (1.5, "less than or equal to 1"),
        ({"type": "ratio"}, "Field required"),
        ({"type": "sometimes"}, "does not match any of the expected tags"),
        ("0.1", "is not a sampling"),
    ],
)
def test_bad_sampling_is_refused_when_given(sampling, message):
    with pytest.raises(EvalDagError) as raised:
        sampling_rate(sampling)
    assert message in raised.value.message


def test_bad_filters_are_refused_when_given():
    with pytest.raises(EvalDagError) as raised:
        scoring_filter({"op": "eq", "left": {"path": "input.text"}, "right": {"literal": 1}})
    assert "'input.text' must start with one of: requestContext, entity" in raised.value.message
    with pytest.raises(EvalDagError) as raised:
        scoring_filter({"op": "between", "value": {"literal": 1}})
    assert raised.value.id == "EVALDAG_LIVE_INVALID_FILTER"


# --- an app under load -----------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("worker", ["thread", "process"])
def test_ten_thousand_calls_score_exactly_mastras_sample_and_store_every_row(tmp_path, worker):
    store = tmp_path / "scores.db"
    judged = create_scorer("words").generate_score(lambda run: len(run.output.split()) / 10)

    @live([_length(), judged], store=store, sampling={"type": "ratio", "rate": 0.1},
          run_fields=_fields, queue_size=10_000, worker=worker)  # fmt: skip
    def answer(question, request_context=None):
        """The app: answers with a sentence about the question."""
        return f"An answer about {question} for {request_context['user']}."

    def client(ids):
        for trace_id in ids:
            assert answer(trace_id, request_context={"user": trace_id[-2:]}).startswith("An ")

    threads = [threading.Thread(target=client, args=(IDS[n::4],)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert answer.live.flush(timeout=120)
    stats = answer.live.stats()
    sampled = MASTRA["sampling"]["sampled"]
    assert (stats.calls, stats.sampled, stats.dropped, stats.skipped) == (10_000, 908, 0, 0)
    assert (stats.scored, stats.errors, stats.write_errors, stats.pending) == (2 * 908, 0, 0, 0)
    rows = read_scores(store)
    answer.live.close()
    assert len(rows) == 2 * len(sampled) and rows.id.is_unique
    assert set(rows.source) == {"LIVE"} and set(rows.scorer_id) == {"length", "words"}
    for scorer_id, group in rows.groupby("scorer_id"):
        assert sorted(group.trace_id) == sampled, scorer_id
    row = rows[(rows.trace_id == sampled[0]) & (rows.scorer_id == "length")].iloc[0]
    output = f"An answer about {sampled[0]} for {sampled[0][-2:]}."
    assert (row.input, row.output, row.score) == (sampled[0], output, len(output) / 100)
    assert row.request_context == {"user": sampled[0][-2:]}
    assert row.entity == {"id": f"{__name__}.{answer.__qualname__}"} | {"name": row.entity_id}
    assert len(row.run_id) == 36 and row.scorer["id"] == "length"


def test_an_async_app_function_is_scored_too(tmp_path):
    scoring = live(_length(), store=tmp_path / "scores.db")

    @scoring
    async def answer(question):
        await asyncio.sleep(0)
        return question.upper()

    async def main():
        return await asyncio.gather(*(answer(f"q{n}") for n in range(20)))

    assert asyncio.run(main())[3] == "Q3"
    assert scoring.flush(timeout=30)
    rows = read_scores(tmp_path / "scores.db")
    scoring.close()
    assert sorted(rows.input) == sorted(f"q{n}" for n in range(20))
    assert answer.__name__ == "answer" and answer.live is scoring


def _decorated(function):
    """A plain decorator, as apps write them: the async function behind it looks sync."""

    @functools.wraps(function)
    def decorated(*args, **kwargs):
        return function(*args, **kwargs)

    return decorated


class AsyncAnswerer:
    """An async callable object (a class with ``async def __call__``)."""

    async def __call__(self, question):
        await asyncio.sleep(0)
        return question.upper()


def _awaited_rows(tmp_path, function, questions):
    """``function`` wrapped, awaited once per question by the app; the stats and rows."""
    scoring = live(_length(), store=tmp_path / "scores.db")
    answer = scoring(function)

    async def main():
        return await asyncio.gather(*(answer(question) for question in questions))

    replies = asyncio.run(main())
    assert scoring.flush(timeout=30)
    stats, rows = scoring.stats(), read_scores(tmp_path / "scores.db")
    scoring.close()
    return answer, replies, stats, rows


@pytest.mark.parametrize("kind", ["decorated", "callable object"])
def test_an_async_function_that_looks_sync_is_scored_on_what_it_returns(tmp_path, kind):
    async def shout(question):
        await asyncio.sleep(0)
        return question.upper()

    function = _decorated(shout) if kind == "decorated" else AsyncAnswerer()
    answer, replies, stats, rows = _awaited_rows(tmp_path, function, ["ab", "abcd"])
    assert replies == ["AB", "ABCD"]
    assert (stats.calls, stats.sampled, stats.scored, stats.errors) == (2, 2, 2, 0)
    assert sorted(zip(rows.output, rows.score, strict=True)) == [("AB", 0.02), ("ABCD", 0.04)]
    if kind == "callable object":  # frameworks see an async callable, as they did before
        assert inspect.iscoroutinefunction(answer)
        assert rows.entity_id[0] == f"{__name__}.AsyncAnswerer"


def test_a_future_is_scored_when_done_and_given_to_the_app_untouched(tmp_path):
    futures = []

    def answer_later(question):
        future = asyncio.get_running_loop().create_future()
        asyncio.get_running_loop().call_soon(future.set_result, question.upper())
        futures.append(future)
        return future

    answer, replies, stats, rows = _awaited_rows(tmp_path, answer_later, ["abc"])
    assert replies == ["ABC"] and futures[0].result() == "ABC"
    assert (stats.scored, list(rows.output)) == (1, ["ABC"])


class Pending:
    """An awaitable that is neither a coroutine nor a future."""

    def __await__(self):
        yield from asyncio.sleep(0).__await__()
        return "later"


@pytest.mark.parametrize(
    ("returned", "named"),
    [
        (lambda question: Pending(), f"{__name__}.Pending (an awaitable)"),
        (lambda question: map(str.upper, question), "map (an iterator)"),
        (lambda question: aiter(AsyncIterable()), f"{__name__}.AsyncIterable (an async iterator)"),
    ],
)
def test_what_cannot_be_scored_is_an_error_row_never_its_repr(tmp_path, returned, named):
    scoring = live(_length(), store=tmp_path / "scores.db")
    answer = scoring(returned)
    value = answer("ab")
    assert type(value) is type(returned("ab"))  # the app's value, untouched
    assert scoring.flush(timeout=30)
    stats, row = scoring.stats(), read_scores(tmp_path / "scores.db").iloc[0]
    scoring.close()
    assert (stats.scored, stats.errors) == (0, 1)
    assert (row.input, row.output, row.score) == ("ab", None, None)
    assert f"the call returned {named}" in row.error and "output=" in row.error


class AsyncIterable:
    def __aiter__(self):
        return self

    async def __anext__(self):
        raise StopAsyncIteration


# --- streams ----------------------------------------------------------------------------------


def _streamed_rows(tmp_path, function, read, **options):
    """``function`` wrapped; what ``read`` (the app) made of one call to it; stats and rows."""
    scoring = live(_length(), store=tmp_path / "scores.db", **options)
    answer = scoring(function)
    app_got = read(answer)
    assert scoring.flush(timeout=30)
    stats, rows = scoring.stats(), read_scores(tmp_path / "scores.db")
    scoring.close()
    return answer, app_got, stats, rows


def test_a_generator_is_the_apps_to_read_lazily_and_scored_once_read(tmp_path):
    produced = []

    def tokens(question):
        for token in ["An ", "answer ", "about ", question]:
            produced.append(token)
            yield token
        return "finished"

    def read(answer):
        stream, got = answer("q"), []
        got.append(next(stream))
        assert produced == ["An "]  # lazily: one chunk made per chunk read
        while True:
            try:
                got.append(next(stream))
            except StopIteration as end:
                return got, end.value

    answer, app_got, stats, rows = _streamed_rows(tmp_path, tokens, read)
    assert app_got == (["An ", "answer ", "about ", "q"], "finished")
    assert inspect.isgeneratorfunction(answer)
    assert (stats.calls, stats.sampled, stats.scored, stats.errors) == (1, 1, 1, 0)
    assert (rows.input[0], rows.output[0], rows.score[0]) == ("q", "An answer about q", 0.17)


def test_an_async_generator_is_the_apps_to_read_and_scored_once_read(tmp_path):
    async def tokens(question):
        for token in ["An ", "answer ", "about ", question]:
            await asyncio.sleep(0)
            yield token

    def read(answer):
        async def main():
            return [token async for token in answer("q")]

        return asyncio.run(main())

    answer, app_got, stats, rows = _streamed_rows(tmp_path, tokens, read)
    assert app_got == ["An ", "answer ", "about ", "q"]
    assert inspect.isasyncgenfunction(answer)
    assert (stats.scored, rows.output[0], rows.score[0]) == (1, "An answer about q", 0.17)


def test_send_and_throw_reach_the_apps_generator(tmp_path):
    def echo(question):
        received = yield "ready"
        while True:
            try:
                received = yield f"got {received}"
            except KeyError:
                received = yield "handled"

    def read(answer):
        stream = answer("q")
        got = [next(stream), stream.send("a"), stream.throw(KeyError("k")), stream.send("b")]
        stream.close()
        return got

    answer, app_got, stats, rows = _streamed_rows(tmp_path, echo, read)
    assert app_got == ["ready", "got a", "handled", "got b"]
    assert rows.output[0] == "readygot ahandledgot b"  # closed before its end: not scored
    assert "the app closed the stream after 4 chunks, before its end" in rows.error[0]


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_function_that_returns_a_stream_is_relayed_too(tmp_path, kind):
    def tokens(question):
        yield from ["a", "b"]

    async def async_tokens(question):
        for token in ["a", "b"]:
            yield token

    def read(answer):
        if kind == "sync":
            return list(answer("q"))

        async def main():
            return [token async for token in answer("q")]

        return asyncio.run(main())

    function = _decorated(tokens if kind == "sync" else async_tokens)
    answer, app_got, stats, rows = _streamed_rows(tmp_path, function, read)
    assert (app_got, stats.scored, rows.output[0], stats.errors) == (["a", "b"], 1, "ab", 0)


def test_streams_not_sampled_are_the_apps_own_generators(tmp_path):
    stream = (token for token in ["a", "b"])
    scoring = live(_length(), store=tmp_path / "scores.db", sampling=0.0)
    answer = scoring(lambda question: stream)
    assert answer("q") is stream and list(stream) == ["a", "b"]
    assert scoring.stats().calls == 1
    scoring.close()


def test_chunks_that_are_not_strings_are_a_list_or_what_stream_output_makes(tmp_path):
    def events(question):
        for n in range(3):
            yield {"delta": f"part {n}"}

    scoring = live(_length(), store=tmp_path / "list.db")
    answer = scoring(events)
    assert [event["delta"] for event in answer("q")] == ["part 0", "part 1", "part 2"]
    assert scoring.flush(timeout=30)
    rows = read_scores(tmp_path / "list.db")
    scoring.close()
    assert rows.output[0] == [{"delta": "part 0"}, {"delta": "part 1"}, {"delta": "part 2"}]

    def read(answer):
        return list(answer("q"))

    deltas = lambda chunks: " ".join(chunk["delta"] for chunk in chunks)  # noqa: E731
    _, _, stats, rows = _streamed_rows(tmp_path, events, read, stream_output=deltas)
    assert (stats.scored, rows.output[0]) == (1, "part 0 part 1 part 2")
    with pytest.raises(EvalDagError, match="stream_output must be a function"):
        live(_length(), store=tmp_path / "s.db", stream_output="join")


def test_a_chunk_is_kept_as_it_was_read(tmp_path):
    def events(question):
        yield {"text": "kept"}

    def read(answer):
        chunks = list(answer("q"))
        chunks[0]["text"] = "changed by the app"
        return chunks

    _, _, stats, rows = _streamed_rows(tmp_path, events, read)
    assert rows.output[0] == [{"text": "kept"}]


@pytest.mark.parametrize("kind", ["sync", "async"])
@pytest.mark.parametrize("end", ["closed", "raised", "dropped"])
def test_a_stream_not_read_to_its_end_is_an_error_row_with_the_chunks_read(tmp_path, kind, end):
    def tokens(question):
        yield "a"
        yield "b"
        raise ValueError("the model hung up")

    async def async_tokens(question):
        for token in tokens(question):
            yield token

    def read(answer):
        async def reading():
            stream, got = answer("q"), []
            next_chunk = (lambda: next(stream)) if kind == "sync" else None
            for _ in range(2 if end == "raised" else 1):
                got.append(next_chunk() if kind == "sync" else await anext(stream))
            if end == "closed":
                if kind == "sync":
                    stream.close()
                else:
                    await stream.aclose()
            elif end == "raised":
                with pytest.raises(ValueError, match="the model hung up"):  # the app's, as before
                    got.append(next_chunk() if kind == "sync" else await anext(stream))
            else:  # the app drops it: Python closes a generator it collects (asyncio, by a task)
                del stream
                for _ in range(3):
                    await asyncio.sleep(0)
            return got

        return asyncio.run(reading())

    answer, app_got, stats, rows = _streamed_rows(
        tmp_path, tokens if kind == "sync" else async_tokens, read
    )
    assert (stats.scored, stats.errors) == (0, 1)
    row = rows.iloc[0]
    assert row.output == "".join(app_got) and row.score is None
    if end == "raised":
        assert "the stream raised ValueError (the model hung up) after 2 chunks" in row.error
    else:
        assert "the app closed the stream after 1 chunks, before its end" in row.error
    assert "so it is not scored; its output holds the chunks read" in row.error


def test_llm_scorers_run_their_dag_with_the_judge(tmp_path, judge_server):
    judge_server.on("Extract", {"claims": ["a", "b"]})
    judge_server.on("Score", {"score": 0.7})
    scorer = (
        create_scorer("judged", judge=judge_server.judge(instructions="Grade it."))
        .preprocess(PromptStep("claims", lambda run: f"Extract claims from {run.output}", CLAIMS))
        .generate_score(PromptStep("score", lambda preprocess_step_result: "Score the claims"))
    )
    scoring = live([scorer], store=tmp_path / "scores.db")
    answer = scoring(lambda question: f"Said {question}.")
    answer("hi")
    assert scoring.flush(timeout=60)
    row = read_scores(tmp_path / "scores.db").iloc[0]
    scoring.close()
    assert row.error is None, row.error
    assert row.score == 0.7 and row.preprocess_step_result == {"claims": ["a", "b"]}
    assert row.preprocess_prompt == "Extract claims from Said hi."
    assert row.judge["preprocess"]["executions"][0]["status"] == "success"
    assert row.scorer["hasJudge"] is True


def test_a_rows_score_and_steps_are_what_the_scorers_result_holds():
    """The row is made of the run's state, not of its ScorerResult: what each step produced is
    read as the result reads it (numpy values as Python data: a store of its own gets them so,
    not only the SQL store, whose JSON would write numpy too), the reason as text."""
    import numpy as np

    class Kept(evaldag.ScoreStore):
        location = "memory"

        def __init__(self):
            self.rows = []

        def save(self, rows):
            self.rows.extend(rows)
            return len(rows)

        def scores(self, **filters):
            raise NotImplementedError

    scorer = (
        create_scorer("counted")
        .preprocess(lambda run: {"words": np.array(run.output.split()), "n": np.int64(2)})
        .analyze(lambda preprocess_step_result: [np.float64(0.5), "{not json"])
        .generate_score(lambda analyze_step_result: 1)
        .generate_reason(lambda run, score: {"why": np.array([score])})
    )
    store = Kept()
    scoring = live([scorer], store=store)
    answer = scoring(lambda question: f"Said {question}.")
    answer("hi")
    assert scoring.flush(timeout=60)
    scoring.close()
    (row,) = store.rows
    result = scorer.run(input="hi", output="Said hi.")
    assert row.error is None, row.error
    assert row.score == result.score == 1.0 and type(row.score) is float
    assert row.preprocess_step_result == result.preprocess_step_result
    assert row.preprocess_step_result == {"words": ["Said", "hi."], "n": 2}
    assert type(row.preprocess_step_result["words"]) is list
    assert type(row.preprocess_step_result["n"]) is int
    assert row.analyze_step_result == result.analyze_step_result == [0.5, "{not json"]
    assert row.reason == json.dumps(result.reason, separators=(",", ":")) == '{"why":[1.0]}'
    assert row.judge is None and row.not_scorable is None
    assert uuid.UUID(row.id).version == 4 and str(uuid.UUID(row.id)) == row.id


# --- never blocks or fails the app -----------------------------------------------------------


def test_scorer_errors_are_error_rows_and_not_scorable_runs_are_not_stored(tmp_path):
    def picky(run):
        if run.output == "empty":
            return not_scorable("nothing to score")
        if run.output == "boom":
            raise ValueError("the scorer broke")
        return 1.0

    scoring = live(create_scorer("picky").generate_score(picky), store=tmp_path / "scores.db")
    answer = scoring(lambda text: text)
    for text in ("fine", "empty", "boom"):
        assert answer(text) == text
    assert scoring.flush(timeout=30)
    stats = scoring.stats()
    rows = read_scores(tmp_path / "scores.db").set_index("output")
    scoring.close()
    assert (stats.scored, stats.errors, stats.not_scorable) == (1, 1, 1)
    assert sorted(rows.index) == ["boom", "fine"]
    assert "the scorer broke" in rows.loc["boom", "error"]
    assert rows.loc["boom", "failed_step"] == "generate_score"
    assert math.isnan(rows.loc["boom", "score"])


def test_a_step_that_never_returns_is_an_error_row_and_scoring_goes_on(tmp_path, monkeypatch):
    """Live scoring bounds each step by the default limit (cut here to 1 s): a step that never
    returned held the worker, so no later call was scored and nothing said so."""
    monkeypatch.setattr(live_worker, "DEFAULT_STEP_TIMEOUT", 1.0)
    release = threading.Event()

    def stuck(run):
        if run.output == "hang":
            release.wait()
        return 1.0

    scoring = live(
        create_scorer("stuck").generate_score(stuck), store=tmp_path / "scores.db", batch_size=1
    )
    answer = scoring(lambda text: text)
    try:
        for text in ("before", "hang", "after"):
            answer(text)
        assert scoring.flush(timeout=30)
        stats = scoring.stats()
        rows = read_scores(tmp_path / "scores.db").set_index("output")
    finally:
        release.set()
        scoring.close()
    assert (stats.scored, stats.errors) == (2, 1)
    assert rows.loc[["before", "after"], "score"].tolist() == [1.0, 1.0]
    assert "took longer than step_timeout=1 s" in rows.loc["hang", "error"]


def test_a_full_queue_drops_and_counts_without_blocking_the_app(tmp_path):
    release = threading.Event()
    slow = create_scorer("slow").generate_score(lambda run: release.wait(30) and 1.0)
    scoring = live(slow, store=tmp_path / "scores.db", queue_size=2, batch_size=1)
    answer = scoring(lambda n: n)
    answer(0)
    deadline = time.monotonic() + 10
    while scoring._worker._calls and time.monotonic() < deadline:
        time.sleep(0.01)  # until the worker took call 0; it then waits in its scorer
    for n in range(1, 11):  # none waits for the stuck scorer: the queue takes 2, drops 8
        assert answer(n) == n
    release.set()
    assert scoring.flush(timeout=30)
    stats = scoring.stats()
    rows = read_scores(tmp_path / "scores.db")
    scoring.close()
    assert (stats.calls, stats.sampled, stats.dropped) == (11, 3, 8)
    assert sorted(rows.input) == [0, 1, 2] and stats.scored == 3


def _held_worker(scoring, answer, release):
    """Call ``answer`` once and wait until the worker holds that call in its scorer, which
    waits for ``release``: later calls stay queued until then."""
    answer({"hold": True})
    deadline = time.monotonic() + 30
    while scoring._worker._calls and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not release.is_set() and not scoring._worker._calls


def test_the_input_and_output_are_scored_as_they_were_when_the_call_returned(tmp_path):
    release = threading.Event()

    def reply_words(run):
        if run.input == {"hold": True}:
            release.wait(30)
        return len(run.output["words"]) / 10

    scoring = live(create_scorer("words").generate_score(reply_words), store=tmp_path / "s.db")
    answer = scoring(lambda messages: {"words": ["an", "answer"]})
    _held_worker(scoring, answer, release)
    messages = ["hi"]
    reply = answer(messages)
    reply["words"].extend(["that", "the", "app", "changed", "later"])  # the app's own value
    messages.append("the next turn")
    release.set()
    assert scoring.flush(timeout=30)
    rows = read_scores(tmp_path / "s.db")
    scoring.close()
    row = rows[rows.input.map(lambda value: value == ["hi"])].iloc[0]
    assert (row.output, row.score) == ({"words": ["an", "answer"]}, 0.2)


def test_an_output_that_cannot_be_copied_is_an_error_row_naming_it(tmp_path):
    scoring = live(create_scorer("text").generate_score(lambda run: 1.0), store=tmp_path / "s.db")
    answer = scoring(lambda question: {"text": "hi", "client_lock": threading.Lock()})
    assert answer("q")["text"] == "hi"
    assert scoring.flush(timeout=30)
    rows = read_scores(tmp_path / "s.db")
    stats = scoring.stats()
    scoring.close()
    assert (stats.scored, stats.errors, stats.write_errors) == (0, 1, 0)
    row = rows.iloc[0]
    assert (row.input, row.output, row.score) == ("q", None, None)
    assert "output could not be copied when the call returned" in row.error
    assert "cannot pickle '_thread.lock' object" in row.error and "output=" in row.error


def test_failing_run_fields_and_filters_skip_the_call_not_the_app(tmp_path, caplog):
    def broken(run):
        raise RuntimeError("no")

    scoring = live(_length(), store=tmp_path / "scores.db", filter=broken)
    answer = scoring(lambda text: text)
    assert answer("x") == "x"
    fields = live(_length(), store=tmp_path / "scores.db", run_fields=lambda text: {"nope": 1})
    other = fields(lambda text: text)
    assert other("y") == "y"
    assert scoring.stats().skipped == 1 and fields.stats().skipped == 1
    assert "live scoring skips calls" in caplog.text
    scoring.close()
    fields.close()


def test_rows_the_store_refuses_are_write_errors_not_scored_or_errors(tmp_path, caplog):
    path = tmp_path / "scores.db"
    broken = create_scorer("broken").generate_score(lambda run: 1 / 0)
    scoring = live([_length(), broken], store=path)
    answer = scoring(lambda text: text)
    with sqlite3.connect(path) as connection:
        connection.execute("DROP TABLE evaldag_scores")
    assert answer("lost") == "lost"
    assert scoring.flush(timeout=30)
    scoring.close()
    stats = scoring.stats()
    assert (stats.scored, stats.errors, stats.write_errors) == (0, 0, 2)  # nothing was written
    assert "live scoring: 2 rows of 1 calls not saved" in caplog.text


def test_filters_choose_calls_by_their_request_context(tmp_path):
    pro_only = {"op": "eq", "left": {"path": "requestContext.plan.tier"},
                "right": {"literal": "pro"}}  # fmt: skip
    scoring = live(_length(), store=tmp_path / "scores.db", filter=pro_only)
    answer = scoring(lambda question, request_context=None: question)
    for n in range(6):
        answer(f"q{n}", request_context={"plan": {"tier": "pro" if n % 2 else "free"}})
    answer("no context")
    assert scoring.flush(timeout=30)
    rows = read_scores(tmp_path / "scores.db")
    scoring.close()
    assert sorted(rows.input) == ["q1", "q3", "q5"]
    assert set(rows.request_context.map(json.dumps)) == {'{"plan.tier": "pro"}'}


def test_close_flushes_and_later_calls_run_unscored(store_url):
    scoring = live(_length(), store=store_url)
    answer = scoring(lambda text: text)
    answer("before")
    assert scoring.close(timeout=30)
    assert answer("after") == "after"
    assert scoring.stats().dropped == 1
    assert list(read_scores(store_url).input) == ["before"]


def test_a_forked_child_scores_its_own_calls(tmp_path):
    scoring = live(_length(), store=tmp_path / "scores.db")
    answer = scoring(lambda text: text)
    answer("parent")
    assert scoring.flush(timeout=30)
    pid = os.fork()  # as a server that imports the app, then forks its workers
    if pid == 0:
        code = 1
        try:
            answer("child")
            code = 0 if scoring.flush(timeout=30) and scoring.stats().scored == 1 else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    answer("parent again")
    assert scoring.flush(timeout=30)
    rows = read_scores(tmp_path / "scores.db")
    scoring.close()
    assert sorted(rows.input) == ["child", "parent", "parent again"]


def test_the_exit_waits_while_the_worker_finishes_calls(tmp_path, monkeypatch):
    monkeypatch.setattr(live_worker, "EXIT_STALL", 2.0)
    slow = create_scorer("slow").generate_score(lambda run: time.sleep(0.4) or 1.0)
    scoring = live(slow, store=tmp_path / "scores.db", batch_size=1)
    answer = scoring(lambda n: n)
    # 4 s to score, 2 stall windows: each call finishes within one, with room for a busy machine
    for n in range(10):
        answer(n)
    scoring._at_exit()
    assert scoring.stats().scored == 10


@pytest.mark.parametrize("limit", ["stall", "exit_timeout"])
def test_the_exit_gives_up_on_a_worker_that_makes_no_progress_saying_why(
    tmp_path, monkeypatch, caplog, limit
):
    monkeypatch.setattr(live_worker, "EXIT_STALL", 0.5 if limit == "stall" else 60)
    release = threading.Event()
    stuck = create_scorer("stuck").generate_score(lambda run: release.wait(60) and 1.0)
    scoring = live(
        stuck, store=tmp_path / "scores.db", exit_timeout=0.5 if limit == "exit_timeout" else 60
    )
    answer = scoring(lambda n: n)
    answer(1), answer(2)
    try:
        scoring._at_exit()
    finally:
        release.set()
    reason = {
        "stall": "the worker finished no call for 0.5 s",
        "exit_timeout": "exit_timeout (0.5 s) ran out",
    }[limit]
    assert f"live scoring: 2 calls were not scored before exit: {reason}" in caplog.text


def test_live_options_are_checked(tmp_path):
    with pytest.raises(EvalDagError, match="at least one scorer"):
        live([], store=tmp_path / "s.db")
    with pytest.raises(EvalDagError, match="queue_size must be an integer >= 1"):
        live(_length(), store=tmp_path / "s.db", queue_size=0)
    with pytest.raises(EvalDagError, match="exit_timeout must be a number of seconds > 0"):
        live(_length(), store=tmp_path / "s.db", exit_timeout=None)
    with pytest.raises(EvalDagError, match="exit_timeout must be .* got inf"):
        live(_length(), store=tmp_path / "s.db", exit_timeout=math.inf)
    with pytest.raises(EvalDagError, match="share the id 'length'"):
        live([_length(), _length()], store=tmp_path / "s.db")
    scoring = live(_length(), store=tmp_path / "s.db")
    scoring(lambda: 1)
    with pytest.raises(EvalDagError, match="already wraps a function"):
        scoring(lambda: 2)
    scoring.close()
    assert evaldag.LiveStats.model_fields.keys() >= {"dropped", "errors", "pending"}
