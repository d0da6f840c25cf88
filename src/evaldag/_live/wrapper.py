"""``live(...)``: score an app function's calls as they happen, without slowing them.

The wrapped call runs the app function and returns its value; on the way out it reads the call's
fields, keeps it if its trace (else run) id is sampled and the filter lets its scoring context
through, and queues it, with a snapshot of its output, for the background worker. What the call
returned decides when: a value at once; a coroutine or future once the app awaited it; a
generator or async generator (relayed, ``streams``) once the app read it. Nothing on that path
blocks, and nothing raises into the app: a full queue drops the call, a failing ``run_fields``
or filter skips it, and both are counted in ``stats()``.
"""

from __future__ import annotations

import atexit
import functools
import inspect
import itertools
import logging
import math
import os
import threading
import weakref
from asyncio import isfuture
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable, Iterator, Mapping
from types import AsyncGeneratorType, CoroutineType, GeneratorType
from typing import Any, Literal, cast

from pydantic import BaseModel, ConfigDict, Field

from evaldag._live.predicates import scoring_filter
from evaldag._live.process_worker import ProcessWorker, in_scoring_process
from evaldag._live.sampling import sampling_bound, sampling_rate, sha256
from evaldag._live.streams import async_relay, joined, relayed
from evaldag._live.worker import (
    CALL_FIELDS,
    Call,
    Worker,
    copied_call,
    exit_wait,
    fresh_run_id,
    snapshot,
)
from evaldag._scorer.builder import Scorer
from evaldag._store.rows import request_context_snapshot
from evaldag._store.stores import ScoreStore, opened_store
from evaldag.errors import EvalDagError

logger = logging.getLogger("evaldag.live")
#: Types of outputs that are read as they are: no awaitable or iterator to tell apart.
_PLAIN = frozenset({str, int, float, bool, type(None), bytes, dict, list, tuple})


class LiveStats(BaseModel):
    """What live scoring did with the calls it saw."""

    model_config = ConfigDict(frozen=True)

    calls: int = Field(
        description="Calls of the wrapped function that returned (a stream's once it is read)."
    )
    sampled: int = Field(description="Calls the sampling and the filter kept, queued to score.")
    dropped: int = Field(description="Calls they kept but the queue did not: full, or closed.")
    skipped: int = Field(
        description="Calls not scored because run_fields, the filter, output= or stream_output= "
        "raised (the first error is logged as a warning)."
    )
    scored: int = Field(description="Rows written to the store with a score.")
    not_scorable: int = Field(description="Runs a scorer declared not scorable (no row).")
    errors: int = Field(
        description="Error rows written to the store: the scorer failed, or the call could not "
        "be scored (its error says why)."
    )
    write_errors: int = Field(
        description="Rows the store did not take (logged); not counted in scored or errors."
    )
    pending: int = Field(description="Calls queued or being scored.")


class LiveScoring:
    """Live scoring of an app function: its calls scored in the background, as Mastra scores an
    agent's; the rows go to ``store`` with ``source="LIVE"``.

    Use it as a decorator (``@evaldag.live([...], store=...)``) or call it on a function: sync
    and async functions and callable objects work; a coroutine or future a call returns is
    scored on what it gives once done, and an output the app alone can await or iterate (another
    awaitable, an iterator) gives an error row naming it. Call ``.live.flush()`` on the wrapped
    function to wait for the queued calls (at exit that happens by itself: ``exit_timeout``).

    :param scorers: the scorers (or one scorer) each sampled call is scored with.
    :param store: a ``ScoreStore``, a SQLite file path or a database URL.
    :param sampling: which calls to score: all (None, ``{"type": "none"}``), or a ratio
        (``0.1``, ``{"type": "ratio", "rate": 0.1}``) of calls chosen by the sha256 of their
        trace id, else run id, exactly as Mastra chooses them.
    :param filter: Mastra's scoring predicate over ``requestContext`` (the call's request
        context, flattened), ``entity``, ``entityType``, ``source``, ``threadId``,
        ``resourceId``, ``projectId``; or a function of that dict returning a bool.
    :param run_fields: a function of the call's arguments returning its fields: ``input``,
        ``request_context``, ``trace_id``, ``run_id``, ``span_id``, ``thread_id``,
        ``resource_id``, ``project_id``, ``organization_id``, ``entity_type``. Default: the
        first argument is the input, a ``request_context`` keyword argument the context, and
        each call gets a new run id.
    :param output: a function of the return value giving the output to score (default: the
        return value; for a stream, its chunks joined).
    :param stream_output: a function of the list of a stream's chunks giving its return value
        (default: the chunks concatenated when all are strings, else their list). A generator
        or async generator a call returns is read by the app as before and scored once read to
        its end; one the app closes before, or that raises, gives an error row holding the
        chunks read.
    :param entity: the rows' entity id and name (default: the function's qualified name).
    :param queue_size: calls waiting at most; a sampled call beyond it is dropped and counted.
    :param batch_size: calls scored in one execution of the scorers' DAGs.
    :param concurrency: judge calls and async steps in flight at once.
    :param worker: where the scorers run: ``"thread"``, a thread of the app's process, or
        ``"process"``, a process of their own, so a scorer's computing does not hold the app's
        interpreter lock; the scorers and the sampled calls must then pickle (the scorers by
        value when cloudpickle is installed) and the store be a file or URL both processes
        reach.
    :param exit_timeout: the seconds the interpreter's exit waits at most for the queued calls.
        It waits while the worker makes progress (it is still starting, or takes or finishes
        calls at least every 30 s, or twice its slowest batch), and warns how many calls it
        leaves unscored and why.
    """

    def __init__(
        self,
        scorers: Iterable[Scorer] | Scorer,
        *,
        store: ScoreStore | str | os.PathLike[str],
        sampling: Any = None,
        filter: Any = None,
        run_fields: Callable[..., Mapping[str, Any]] | None = None,
        output: Callable[[Any], Any] | None = None,
        stream_output: Callable[[list[Any]], Any] | None = None,
        entity: str | None = None,
        queue_size: int = 1000,
        batch_size: int = 64,
        concurrency: int = 4,
        worker: Literal["thread", "process"] = "thread",
        exit_timeout: float = 120.0,
    ) -> None:
        self._scorers = _checked_scorers(scorers)
        if worker not in ("thread", "process"):
            raise EvalDagError(
                "EVALDAG_LIVE_INVALID_OPTION",
                f"worker must be 'thread' or 'process', got {worker!r}",
            )
        for name, value in (
            ("queue_size", queue_size),
            ("batch_size", batch_size),
            ("concurrency", concurrency),
        ):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise EvalDagError(
                    "EVALDAG_LIVE_INVALID_OPTION", f"{name} must be an integer >= 1, got {value!r}"
                )
        if (
            not isinstance(exit_timeout, int | float)
            or isinstance(exit_timeout, bool)
            or not 0 < exit_timeout < math.inf
        ):
            raise EvalDagError(
                "EVALDAG_LIVE_INVALID_OPTION",
                f"exit_timeout must be a number of seconds > 0 (finite), got {exit_timeout!r}",
            )
        self._exit_timeout = float(exit_timeout)
        self._bound = sampling_bound(sampling_rate(sampling))
        self._filter = scoring_filter(filter)
        self._run_fields = run_fields
        self._output = output
        if stream_output is not None and not callable(stream_output):
            raise EvalDagError(
                "EVALDAG_LIVE_INVALID_OPTION",
                f"stream_output must be a function of a stream's chunks, got {stream_output!r}",
            )
        self._stream_output = stream_output
        self._entity_name = entity
        self._owns_store = not isinstance(store, ScoreStore)
        self._store = opened_store(store)
        self._options: dict[str, Any] = {"queue_size": queue_size, "batch_size": batch_size}
        self._concurrency = concurrency
        self._worker_kind = ProcessWorker if worker == "process" else Worker
        self._worker: Worker | ProcessWorker | None = None
        self._lock = threading.Lock()
        # Every call is counted by the counter (one C call, atomic), not under the lock.
        self._calls = itertools.count()
        self._counts = {"sampled": 0, "dropped": 0, "skipped": 0}
        self._warned = self._end_reported = False
        atexit.register(self._at_exit)
        os.register_at_fork(after_in_child=functools.partial(_forked, weakref.ref(self)))

    def __call__(self, function: Callable[..., Any]) -> Callable[..., Any]:
        """``function`` wrapped: same arguments, same result; its calls scored in the background."""
        if self._worker is not None:
            raise EvalDagError(
                "EVALDAG_LIVE_ALREADY_WRAPPING",
                "This live scoring already wraps a function; call evaldag.live(...) for each",
            )
        name = self._entity_name or _qualified_name(function)
        self._entity = {"id": name, "name": name}
        self._worker = self._worker_kind(
            self._scorers,
            self._store,
            entity=self._entity,
            concurrency=self._concurrency,
            **self._options,
        )
        self._enqueue = self._worker.offer
        chosen, delivered = self._chosen, self._delivered
        if in_scoring_process():
            wrapped = _refused_in_scoring_process(function)
        elif inspect.isgeneratorfunction(function):

            @functools.wraps(function)
            def wrapped(*args: Any, **kwargs: Any) -> Any:
                stream = function(*args, **kwargs)
                call = chosen(args, kwargs)
                if call is None:
                    return (yield from stream)
                return (yield from relayed(stream, self._stream_end(call)))

        elif inspect.isasyncgenfunction(function):
            wrapped = functools.wraps(function)(async_relay(self._opened(function)))
        elif inspect.iscoroutinefunction(function) or _has_async_call(function):

            @functools.wraps(function)
            async def wrapped(*args: Any, **kwargs: Any) -> Any:
                value = await function(*args, **kwargs)
                call = chosen(args, kwargs)
                return value if call is None else delivered(call, value)

        else:

            @functools.wraps(function)
            def wrapped(*args: Any, **kwargs: Any) -> Any:
                value = function(*args, **kwargs)
                call = chosen(args, kwargs)
                return value if call is None else delivered(call, value)

        wrapped.live = self  # type: ignore[attr-defined]
        return wrapped

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every sampled call so far is scored and its rows stored.

        :return: False when ``timeout`` (seconds) ran out first.
        """
        if self._worker is None:
            return True
        flushed = self._worker.flush(timeout)
        if not flushed:
            self._ended_warning()
        return flushed

    def close(self, timeout: float | None = None) -> bool:
        """Flush, stop the worker and close the store this scoring opened; later calls of the
        wrapped function still run but are not scored.

        :return: False when ``timeout`` ran out before the queue was empty.
        """
        atexit.unregister(self._at_exit)
        flushed = self.flush(timeout)
        if self._worker is not None:
            self._worker.stop(0)
        if self._owns_store:
            self._store.close()
        return flushed

    def stats(self) -> LiveStats:
        """The counts so far."""
        with self._lock:
            counts = dict(self._counts)
        counts["calls"] = _counted(self._calls)
        tally = self._worker.counts() if self._worker is not None else None
        worker = {
            name: 0 if tally is None else getattr(tally, name)
            for name in ("scored", "not_scorable", "errors", "write_errors", "pending")
        }
        return LiveStats(**counts, **worker)

    def _chosen(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Call | None:
        """Count a call that returned; the call to score (its output still to come) when the
        sampling and the filter keep it, else None. Never raises into the app.

        A call not sampled only reads its ids and hashes one (most calls stop there): after
        the app waited for I/O that code runs on cold caches, where each step costs µs.
        Sampling comes before the filter (Mastra tests the filter first; both must pass, so the
        same calls are scored).
        """
        next(self._calls)
        fields: Mapping[str, Any]
        try:
            if self._run_fields is None:
                fields = _default_fields(args, kwargs)
            else:
                fields = self._run_fields(*args, **kwargs)
            trace_id, run_id = fields.get("trace_id"), fields.get("run_id")
            if trace_id is None and run_id is None:
                run_id = fresh_run_id()
            bound = self._bound
            if bound is not None and sha256(str(trace_id or run_id).encode()).digest() >= bound:
                return None
            return self._filtered(fields, run_id)
        except Exception as error:
            self._skipped(error)
            return None

    def _filtered(self, fields: Mapping[str, Any], run_id: str | None) -> Call | None:
        """The call of a sampled call's fields, unless the filter leaves it out."""
        unknown = fields.keys() - CALL_FIELDS
        if unknown:
            raise EvalDagError(
                "EVALDAG_LIVE_INVALID_RUN_FIELDS",
                f"run_fields returned {sorted(unknown)}; it may return {sorted(CALL_FIELDS)}",
            )
        # A call without a run id gets one from the worker, off the app's path.
        fields = {**fields, "run_id": run_id or None}
        snapshot = request_context_snapshot(fields.get("request_context"))
        if self._filter is not None and not self._filter(
            {
                "requestContext": snapshot,
                "entity": self._entity,
                "entityType": fields.get("entity_type"),
                "source": "LIVE",
                "threadId": fields.get("thread_id"),
                "resourceId": fields.get("resource_id"),
                "projectId": fields.get("project_id"),
            }
        ):
            return None
        return Call(fields, None, snapshot)

    def _delivered(self, call: Call, value: Any) -> Any:
        """What the app gets for the value its call returned: the value, queued with ``call``;
        for a coroutine, one that awaits it, then queues what it gave; a future, queued once
        done. Never raises into the app."""
        kind = type(value)
        if kind in _PLAIN:  # most outputs: the one test a queued call's value costs
            self._queued(call, value)
            return value
        if kind is CoroutineType:
            awaiting = cast("CoroutineType[Any, Any, Any]", self._awaited(call, value))
            awaiting.__name__, awaiting.__qualname__ = value.__name__, value.__qualname__
            return awaiting
        if isfuture(value):
            value.add_done_callback(functools.partial(self._future_done, call))
            return value
        if kind is GeneratorType:
            return relayed(value, self._stream_end(call))
        if kind is AsyncGeneratorType:
            end = self._stream_end(call)
            return async_relay(lambda args, kwargs: (value, end))()
        self._queued(call, value)
        return value

    def _opened(self, function: Callable[..., Any]) -> Callable[..., Any]:
        """For an async generator function: its stream for a call's arguments, and the function
        to tell its end when the call is to be scored."""

        def opened(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any]:
            stream = function(*args, **kwargs)
            call = self._chosen(args, kwargs)
            return stream, None if call is None else self._stream_end(call)

        return opened

    def _stream_end(self, call: Call) -> Callable[[list[Any], str | None], None]:
        """What a stream's end tells, for ``call``: its input copied now, as the stream starts."""
        return functools.partial(self._stream_ended, copied_call(call, snapshot))

    def _stream_ended(self, call: Call, chunks: list[Any], problem: str | None) -> None:
        """Queue a stream's call with its chunks joined; one not read to its end is an error
        row, its output the chunks read."""
        try:
            value = joined(chunks) if self._stream_output is None else self._stream_output(chunks)
        except Exception as error:
            self._skipped(error)
            return
        if problem is not None:
            problem = f"{problem}, so it is not scored; its output holds the chunks read"
        self._queued(call, value, problem)

    async def _awaited(self, call: Call, coroutine: Coroutine[Any, Any, Any]) -> Any:
        return self._delivered(call, await coroutine)

    def _future_done(self, call: Call, future: Any) -> None:
        """Queue a future's result; as for a call that raised, nothing when it failed."""
        # Its exception is read from the attribute, not exception(), which would mark it read
        # and silence asyncio's warning that the app never read it.
        if not future.cancelled() and getattr(future, "_exception", None) is None:
            try:
                value = future.result()
            except BaseException:  # a future-like whose failure is not in _exception
                return
            self._queued(call, value)

    def _queued(self, call: Call, value: Any, problem: str | None = None) -> None:
        """Queue ``call`` with its output (``output=``'s of ``value``, if given), and with the
        reason it cannot be scored if there is one; count it. Never raises into the app."""
        try:
            output = value if self._output is None else self._output(value)
            unreadable = None if type(output) in _PLAIN else _unreadable(output)
            if unreadable is not None:
                output = None
            call = Call(call.fields, output, call.snapshot, call.error or problem or unreadable)
            outcome = "sampled" if self._enqueue(call) else "dropped"
        except Exception as error:
            self._skipped(error)
            return
        with self._lock:
            self._counts[outcome] += 1

    def _skipped(self, error: Exception) -> None:
        """Count a call skipped because ``error`` was raised; log the first."""
        with self._lock:
            self._counts["skipped"] += 1
            warn, self._warned = not self._warned, True
        if warn:
            logger.warning("live scoring skips calls: %s", error, exc_info=error)

    def _ended_warning(self) -> bool:
        """Whether the worker ended with calls not scored; the first time, a warning says so."""
        progress = self._worker.progress() if self._worker is not None else None
        if progress is None or progress.ended is None:
            return False
        if not self._end_reported:
            self._end_reported = True
            logger.warning(
                "live scoring: %s with %d calls not scored; its own error, if it had one, is "
                "printed above",
                progress.ended,
                progress.tally.pending,
            )
        return True

    def _at_exit(self) -> None:
        """Score the queued calls while the worker makes progress, then close; say what is
        left unscored, and why."""
        if self._worker is not None:
            gave_up = exit_wait(self._worker.progress, self._exit_timeout)
            if gave_up is not None and not self._ended_warning():
                logger.warning(
                    "live scoring: %d calls were not scored before exit: %s",
                    self._worker.counts().pending,
                    gave_up,
                )
        self.close(0)


def _refused_in_scoring_process(function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` as a scoring process's import of the app's main module sees it: calling it
    there means the script calls it outside ``if __name__ == "__main__":``, which would run
    the app's calls a second time; the call raises instead, before the app's code runs."""

    @functools.wraps(function)
    def refused(*args: Any, **kwargs: Any) -> Any:
        raise EvalDagError(
            "EVALDAG_LIVE_MAIN_GUARD_MISSING",
            f"{function.__qualname__} was called while evaldag's scoring process (worker="
            "'process') imported the app's main module, so the script's calls would run twice; "
            "put the script's calls under 'if __name__ == \"__main__\":' (or use "
            "worker='thread')",
        )

    return refused


def _forked(scoring: weakref.ref[LiveScoring]) -> None:
    """In a forked child: new locks, and a worker of its own (the parent's thread is not
    there); the child's calls are scored in the child."""
    live_scoring = scoring()
    if live_scoring is not None:
        live_scoring._lock = threading.Lock()
        if live_scoring._worker is not None:
            live_scoring._worker.restart()


def _qualified_name(function: Callable[..., Any]) -> str:
    """``module.qualname`` of a function, of the function a partial calls, or of the class of
    a callable object."""
    while isinstance(function, functools.partial):
        function = function.func
    named = function if hasattr(function, "__qualname__") else type(function)
    return f"{named.__module__}.{named.__qualname__}"


def _has_async_call(function: Callable[..., Any]) -> bool:
    """Whether ``function`` is an object whose class has an ``async def __call__``."""
    return inspect.iscoroutinefunction(type(function).__call__)


def _unreadable(output: Any) -> str | None:
    """Why ``output`` cannot be scored, or None: an awaitable or an iterator can be awaited or
    read only once, and that is the app's to do."""
    if inspect.isawaitable(output):
        what, cannot = "an awaitable", "cannot wait for without changing what the app gets"
    elif isinstance(output, AsyncIterator):
        what, cannot = "an async iterator", "cannot read without taking its items from the app"
    elif isinstance(output, Iterator):
        what, cannot = "an iterator", "cannot read without taking its items from the app"
    else:
        return None
    kind = type(output)
    name = (
        kind.__qualname__
        if kind.__module__ == "builtins"
        else f"{kind.__module__}.{kind.__qualname__}"
    )
    return (
        f"the call returned {name} ({what}), which live scoring {cannot}, so it is not "
        "scored; return a coroutine or a generator (scored once awaited or read), or give "
        "live(..., output=...) a function that returns the plain data to score"
    )


def _counted(counter: itertools.count) -> int:
    """How many times ``counter`` was advanced (its repr, ``count(n)``, is the one way to read
    it without advancing it)."""
    return int(repr(counter)[len("count(") : -1])


def _default_fields(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """The input (the first argument, else the keyword arguments) and ``request_context``."""
    context = kwargs.get("request_context")
    if args:
        return {"input": args[0], "request_context": context}
    rest = {key: value for key, value in kwargs.items() if key != "request_context"}
    return {"input": rest or None, "request_context": context}


def _checked_scorers(scorers: Iterable[Any] | Scorer) -> tuple[Scorer, ...]:
    checked = tuple(scorers) if not isinstance(scorers, Scorer) else (scorers,)
    if not checked:
        raise EvalDagError("NO_SCORERS_PROVIDED", "live(...) needs at least one scorer")
    seen: set[str] = set()
    for index, scorer in enumerate(checked):
        if not isinstance(scorer, Scorer):
            raise EvalDagError(
                "INVALID_SCORER_ENTRY",
                f"scorers[{index}] must be a Scorer, got {type(scorer).__name__}",
            )
        if scorer.id in seen:
            raise EvalDagError(
                "DUPLICATE_SCORER_ID", f"two live scorers share the id '{scorer.id}'"
            )
        seen.add(scorer.id)
        scorer.require_generate_score()
    return checked


def live(scorers: Iterable[Scorer] | Scorer, **options: Any) -> LiveScoring:
    """Score an app function's calls in the background, as Mastra scores an agent's: a
    :class:`LiveScoring` (see it for ``store=``, ``sampling=``, ``filter=`` and the other
    options), used as a decorator (``@evaldag.live([...], store=...)``) or called on a
    function."""
    return LiveScoring(scorers, **options)
