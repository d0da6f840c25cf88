"""The background worker of live scoring: a bounded queue of sampled calls, one thread that
scores them in batches through the scorers' DAGs and saves the rows in one transaction a batch.
``BatchScoring`` is that scoring, which the process worker (``process_worker``) runs too.

A batch is one execution of each scorer's DAG (``scorer_outcomes``), so the judge calls and
async steps of its runs go concurrently, at most ``concurrency`` at a time. A scorer that fails
on a run gives an error row; a run that is not scorable gives no row (as in Mastra); a batch the
store refuses is counted and logged, never raised into the app.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import pickle
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from random import getrandbits
from typing import Any, NamedTuple

from evaldag._compat.js import json_text
from evaldag._engine.run_state import RunState
from evaldag._graph.drivers import scorer_states, scorers_driver
from evaldag._reader import plain_data
from evaldag._scorer.builder import Scorer
from evaldag._scorer.run import ScorerRun, read_run, run_field
from evaldag._scorer.time_limits import DEFAULT_STEP_TIMEOUT
from evaldag._store.rows import ScoreRow
from evaldag._store.stores import ScoreStore
from evaldag._util.gc_pause import gc_paused
from evaldag.errors import EvalDagError, ScorerRunError, error_message

logger = logging.getLogger("evaldag.live")
#: Row fields a call may set (``run_fields=``); the rest come from the run and its score.
CALL_FIELDS = frozenset(
    {
        "input",
        "request_context",
        "run_id",
        "trace_id",
        "span_id",
        "thread_id",
        "resource_id",
        "project_id",
        "organization_id",
        "entity_type",
    }
)
#: The call's fields a row takes as they are.
_ROW_CALL_FIELDS = tuple(sorted(CALL_FIELDS - {"input", "request_context"}))
#: Seconds the exit waits for a worker that neither starts, takes nor finishes a call.
EXIT_STALL = 30.0
#: Types whose values never change: a call's input or output of one is not copied.
_IMMUTABLE = frozenset({str, int, float, bool, type(None), bytes})
#: The result's fields a row takes as they are.
_RESULT_FIELDS = (
    "score",
    "preprocess_step_result",
    "analyze_step_result",
    "preprocess_prompt",
    "analyze_prompt",
    "generate_score_prompt",
    "generate_reason_prompt",
)


class Call(NamedTuple):
    """A sampled call, waiting to be scored: its fields, output and request-context snapshot;
    ``error`` says why it cannot be scored (each scorer then gets an error row); ``columns``,
    the values of the columns its scorers read besides the run's fields (a trace's ``spans``);
    ``read``, whether its input, output, snapshot and columns are read already (``run_field``:
    a trace's item, made by evaldag of decoded OTLP)."""

    fields: dict[str, Any]
    output: Any
    snapshot: dict[str, Any]
    error: str | None = None
    columns: dict[str, Any] | None = None
    read: bool = False


#: What turns a batch of messages that are not calls into the calls to score.
CallsOf = Callable[[Sequence[Any]], list[Call]]


@dataclass
class Tally:
    """What the worker did so far."""

    scored: int = 0
    not_scorable: int = 0
    errors: int = 0
    write_errors: int = 0
    pending: int = 0
    #: Calls taken to score plus calls finished: grows while the worker works.
    steps: int = 0
    #: Seconds the slowest batch took.
    slowest: float = 0.0


class Progress(NamedTuple):
    """What a wait for a worker's queue watches."""

    tally: Tally
    #: Still starting (the scoring process importing the app's modules): no batch yet to time.
    starting: bool
    #: Why the worker ended before its queue was empty (None while it runs, or once stopped).
    ended: str | None


def exit_wait(progress: Callable[[], Progress], limit: float) -> str | None:
    """Wait at the interpreter's exit until the worker's queue is empty, as long as it makes
    progress (it is still starting, or it takes or finishes calls at least every
    ``EXIT_STALL`` seconds, or twice its slowest batch if longer) and ``limit`` seconds at most.
    None when the queue emptied, else why the wait ended first."""
    start = last = time.monotonic()
    steps, delay = -1, 0.001
    while True:
        now, state = time.monotonic(), progress()
        if state.tally.pending == 0:
            return None
        if state.ended is not None:
            return state.ended
        if state.starting or state.tally.steps != steps:
            steps, last = state.tally.steps, now
        stall = max(EXIT_STALL, 2 * state.tally.slowest)
        if now - last >= stall:
            return f"the worker finished no call for {stall:g} s (a scorer or the store may hang)"
        if now - start >= limit:
            return (
                f"exit_timeout ({limit:g} s) ran out while the worker was scoring; call "
                "flush() before exit, or give live(..., exit_timeout=...) more"
            )
        time.sleep(delay)
        delay = min(delay * 2, 0.05)


class Worker:
    """Scores queued calls on a daemon thread started with the first call it is given.

    One condition guards the queue and the tally: a call is queued with one lock and one
    notify, the cheapest hand-over Python has.

    :param calls: for a worker given other messages than calls (an OTLP receiver's finished
        traces), the function that turns a batch of them into the calls to score.
    """

    def __init__(
        self,
        scorers: Sequence[Scorer],
        store: ScoreStore,
        *,
        entity: dict[str, str],
        queue_size: int,
        batch_size: int,
        concurrency: int,
        calls: CallsOf | None = None,
    ) -> None:
        self._queue_size = queue_size
        self._batch_size = batch_size
        self._calls: deque[Any] = deque()
        self._lock = threading.Condition()
        self._thread: threading.Thread | None = None
        self._stopped = False
        self._scoring = BatchScoring(
            scorers, store, entity=entity, concurrency=concurrency, calls=calls
        )
        self.tally = Tally()

    def offer(self, call: Any) -> bool:
        """Queue a snapshot of ``call`` (``copied_call``; another message as it is) unless the
        queue is full or the worker stopped; never blocks."""
        if isinstance(call, Call) and (
            type(call.output) not in _IMMUTABLE or type(call.fields.get("input")) not in _IMMUTABLE
        ):
            call = copied_call(call, snapshot)
        if self._thread is None:
            self._start()
        with self._lock:
            if self._stopped or len(self._calls) >= self._queue_size:
                return False
            self._calls.append(call)
            self.tally.pending += 1
            self._lock.notify()
        return True

    def counts(self) -> Tally:
        """A copy of the tally, read under the lock."""
        with self._lock:
            return dataclasses.replace(self.tally)

    def progress(self) -> Progress:
        """The tally, and whether the thread ended while there were calls to score."""
        thread = self._thread
        ended = thread is not None and not thread.is_alive() and not self._stopped
        return Progress(self.counts(), False, "the scoring thread ended" if ended else None)

    def flush(self, timeout: float | None) -> bool:
        """Wait until every queued call is scored and stored; False if ``timeout`` ran out."""
        with self._lock:
            return self._lock.wait_for(lambda: self.tally.pending == 0, timeout)

    def stop(self, timeout: float | None) -> bool:
        """Flush, then end the thread; later calls are not taken."""
        flushed = self.flush(timeout)
        with self._lock:
            self._stopped = True
            self._lock.notify_all()
        if self._thread is not None:
            self._thread.join(timeout)
        return flushed

    def restart(self) -> None:
        """Forget the queue, the tally and the thread: for a forked child, whose parent's
        thread does not run in it."""
        self._calls = deque()
        self._lock = threading.Condition()
        self._thread = None
        self.tally = Tally()

    def _start(self) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._loop, name="evaldag-live-scoring", daemon=True
                )
                self._thread.start()

    def _loop(self) -> None:
        while True:
            with self._lock:
                self._lock.wait_for(lambda: self._calls or self._stopped)
                if not self._calls:
                    return
                size = min(len(self._calls), self._batch_size)
                batch = [self._calls.popleft() for _ in range(size)]
                self.tally.steps += size
            self._score(batch)

    def _score(self, batch: list[Any]) -> None:
        started = time.monotonic()
        counts = self._scoring.saved(batch)
        with self._lock:
            for name, count in counts.items():
                setattr(self.tally, name, getattr(self.tally, name) + count)
            self.tally.pending -= len(batch)
            self.tally.steps += len(batch)
            self.tally.slowest = max(self.tally.slowest, time.monotonic() - started)
            self._lock.notify_all()


class BatchScoring:
    """Scores batches of calls with the scorers and saves their rows: the work of either
    worker, the thread or the process. A step is bounded by its scorer's ``step_timeout``, else
    :data:`DEFAULT_STEP_TIMEOUT` (a step that never returned stopped all scoring unseen).

    :param calls: turns a batch of messages into the calls to score (default: the messages
        are the calls); it must not raise.
    """

    def __init__(
        self,
        scorers: Sequence[Scorer],
        store: ScoreStore,
        *,
        entity: dict[str, str],
        concurrency: int,
        calls: CallsOf | None = None,
    ) -> None:
        self.scorers = tuple(scorers)
        self.store = store
        self._entity = entity
        self._concurrency = concurrency
        self._calls = calls
        self._driver = scorers_driver(self.scorers)
        self._records = {s.id: _scorer_record(s) for s in self.scorers}

    def saved(self, batch: Sequence[Any]) -> dict[str, int]:
        """Score ``batch`` and save its rows in one transaction: the counts of what it gave
        (``scored``, ``not_scorable``, ``errors``, ``write_errors``). Never raises."""
        # a batch's calls, runs and rows: many objects, no cycles; they are gone (with
        # _saved's frame) before the collector resumes, so its first pass does not scan them
        with gc_paused():
            return self._saved(batch)

    def _saved(self, batch: Sequence[Any]) -> dict[str, int]:
        rows: list[ScoreRow] = []
        counts = {"scored": 0, "not_scorable": 0, "errors": 0, "write_errors": 0}
        written = {"scored": 0, "errors": 0}
        plain = _PlainData()
        calls = batch if self._calls is None else self._calls(batch)
        try:
            for scorer_id, call, outcome in self._outcomes(calls):
                if isinstance(outcome, RunState):
                    if outcome.not_scorable is not None:
                        counts["not_scorable"] += 1
                        continue
                    if outcome.error is not None:
                        outcome = outcome.error
                written["scored" if isinstance(outcome, RunState) else "errors"] += 1
                rows.append(self._row(scorer_id, call, outcome, plain))
            self.store.save(rows)
        except Exception:  # the app never sees a scoring or storage failure
            logger.exception("live scoring: %d rows of %d calls not saved", len(rows), len(calls))
            counts["write_errors"] += len(rows)
        else:  # one transaction: a batch's rows are all written, or none is
            counts.update(written)
        return counts

    def _outcomes(self, batch: Sequence[Call]) -> list[tuple[str, Call, Any]]:
        """Each scorer's outcome for each call: the state its run ended in, or the exception
        that kept it from running."""
        runs: list[Any] = []
        readable: list[Call] = []
        outcomes: list[tuple[str, Call, Any]] = []
        for call in batch:
            if not call.fields.get("run_id"):
                call.fields["run_id"] = fresh_run_id()
            if call.error is not None:
                error = EvalDagError("EVALDAG_LIVE_CALL_NOT_SCORABLE", call.error)
                outcomes += [(s.id, call, error) for s in self.scorers]
                continue
            try:
                runs.append(_run(call))
                readable.append(call)
            except Exception as error:  # an output the scorers cannot read: an error row each
                outcomes += [(s.id, call, error) for s in self.scorers]
        for scorer in self.scorers:
            if runs:
                results = scorer_states(
                    self._driver,
                    scorer,
                    runs,
                    concurrency=self._concurrency,
                    step_timeout=DEFAULT_STEP_TIMEOUT,
                )
                outcomes += zip([scorer.id] * len(runs), readable, results, strict=True)
        return outcomes

    def _row(
        self,
        scorer_id: str,
        call: Call,
        outcome: RunState | Exception,
        plain: _PlainData,
    ) -> ScoreRow:
        """The LIVE row of one scorer's outcome on one call (a state it ended in, scored); an
        error row when it failed. A scored run's row is made of its state, with what its steps
        produced read as ``ScorerResult`` reads it (the model itself, validated, is not
        needed: 20 us a row)."""
        result: Mapping[str, Any] | None
        if isinstance(outcome, RunState):
            run = outcome.run
            result = {key: run_field(key, value) for key, value in outcome.produced().items()}
            given, output = run.input, run.output
        else:
            snapshot = getattr(outcome, "result", None)
            result = None if snapshot is None else snapshot.__dict__
            given, output = (
                (call.fields.get("input"), call.output)
                if snapshot is None
                else (snapshot.input, snapshot.output)
            )
        row: dict[str, Any] = {
            "id": fresh_run_id(),  # a version-4 UUID as uuid4 gives, without its system call
            "scorer_id": scorer_id,
            "entity_id": self._entity["id"],
            "entity": self._entity,
            "scorer": self._records[scorer_id],
            "source": "LIVE",
            "request_context": call.snapshot or None,
            "input": plain(given),
            "output": plain(output),
            "score": None,
            **{key: call.fields.get(key) for key in _ROW_CALL_FIELDS},
        }
        if result is not None:
            row.update(_result_fields(result))
        if isinstance(outcome, Exception):
            row.update(score=None, error=error_message(outcome))
            if isinstance(outcome, ScorerRunError):
                row.update(
                    failed_step=outcome.failed_step, completed_steps=list(outcome.completed_steps)
                )
        return ScoreRow(**row)


class _PlainData:
    """``plain_data`` of the values of one batch, each converted once: a call's scorers share
    its run, so its input and output go into a row per scorer."""

    def __init__(self) -> None:
        self._done: dict[int, tuple[Any, Any]] = {}

    def __call__(self, value: Any) -> Any:
        if type(value) in _IMMUTABLE:
            return value
        known = self._done.get(id(value))
        if known is None:  # the value is kept with its conversion, so its id stays its own
            known = self._done[id(value)] = (value, plain_data(value))
        return known[1]


def snapshot(value: Any) -> Any:
    """``value`` as it is now: itself if it cannot change, else a copy. A pickle round trip
    copies plain data 2-4 times faster than ``copy.deepcopy`` (a chat message: 6 µs, not 12);
    what does not pickle (a local class's object) is deep-copied."""
    if type(value) in _IMMUTABLE:
        return value
    try:
        return pickle.loads(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
    except Exception:
        return copy.deepcopy(value)


def copied_call(call: Call, copying: Callable[[Any], Any]) -> Call:
    """``call`` with copies (made by ``copying``) of its input and output, their state when it
    returned; one that cannot be copied is left out (None) and the call's ``error`` says why."""
    values, errors = {}, [] if call.error is None else [call.error]
    for name, value in (("input", call.fields.get("input")), ("output", call.output)):
        try:
            values[name] = copying(value)
        except Exception as error:
            values[name] = None
            option = "run_fields" if name == "input" else "output"
            errors.append(
                f"the call's {name} could not be copied when the call returned "
                f"({type(error).__name__}: {error_message(error)}), so it is not scored; give "
                f"live(..., {option}=...) a function that returns the plain data to score"
            )
    return Call(
        {**call.fields, "input": values["input"]},
        values["output"],
        call.snapshot,
        "; ".join(errors) or None,
        call.columns,
    )


def _result_fields(result: Mapping[str, Any]) -> dict[str, Any]:
    """A row's fields from a scorer's (possibly partial) result's fields."""
    fields = {key: result.get(key) for key in _RESULT_FIELDS}
    reason, judge = result.get("reason"), result.get("judge")
    return {
        **fields,
        "reason": None if reason is None else _text(reason),
        "judge": {step: record.to_dict() for step, record in judge.items()} if judge else None,
    }


def _run(call: Call) -> ScorerRun:
    """The run a call's scorers score: as Mastra, with the request context's snapshot."""
    fields = {
        "input": call.fields.get("input"),
        "output": call.output,
        "run_id": call.fields["run_id"],
        "request_context": call.snapshot or None,
        **(call.columns or {}),
    }
    return read_run(fields) if call.read else ScorerRun(**fields)


def _scorer_record(scorer: Scorer) -> dict[str, Any]:
    """Mastra's ``scorer`` field of a row: ``{id, name, description, type, hasJudge}``."""
    return {
        "id": scorer.id,
        "name": scorer.name,
        "description": scorer.description,
        "type": scorer.type,
        "hasJudge": any(step["type"] == "prompt" for step in scorer.get_steps()),
    }


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json_text(value) or "null"


def fresh_run_id() -> str:
    """A random version-4 UUID string, without a system call (``uuid.uuid4`` reads the OS's
    random source, several microseconds on some VMs)."""
    bits = getrandbits(128) & ~(0xF000 << 64) & ~(0xC000 << 48) | (0x4000 << 64) | (0x8000 << 48)
    h = f"{bits:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
