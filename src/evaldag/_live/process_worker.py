"""The process worker of live scoring (``live(..., worker="process")``): sampled calls scored in a
separate Python process, so a scorer's computing does not hold the app's interpreter lock.

The scoring process is started with ``spawn`` (safe in an app that runs threads) and gets the
scorers pickled: by value with ``cloudpickle`` when it is installed (lambdas and closures
included), else by reference (the process imports the functions' modules). A sampled call is
pickled on the app's thread, its snapshot (an input or output that does not pickle makes it an
error row), and written to a pipe by that thread: no feeder thread to hand it to, since under CPU
contention each hand-off between two threads waits for the scheduler (ms). The write never blocks:
the app counts the bytes and calls in the pipe (what it wrote less what the process says it took),
and drops a call that would exceed the pipe's capacity or ``queue_size``; the pipe is non-blocking
besides, since a pipe holds less than its capacity in bytes when writes do not fill its pages (1
MiB takes 128 messages of 6.7 KB, 858 KB): a call it takes none of is dropped, one it takes in part
is finished by the next call, count or flush. The process takes up to
``batch_size`` calls at a time, scores them with the same code as the thread worker
(``BatchScoring``) and saves the rows over its own connection to the store; its counts are shared
memory only it writes.

It ends when told to (``stop``), and by itself when the app's process is gone, so it outlives
no app, however the app ended. Like any ``spawn`` child, it imports the app's main module under
another name: an app script must keep its entry point under ``if __name__ == "__main__":``. A
``live`` made while that module is imported there scores nothing (``in_scoring_process``).
"""

from __future__ import annotations

import gc
import logging
import multiprocessing
import multiprocessing.util  # noqa: F401 (its exit hook must run after live scoring's; see below)
import os
import pickle
import struct
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from evaldag._live.worker import BatchScoring, Call, CallsOf, Progress, Tally, copied_call
from evaldag._scorer.builder import Scorer
from evaldag._store.stores import ScoreStore
from evaldag._util.gc_pause import gc_paused
from evaldag.errors import EvalDagError

logger = logging.getLogger("evaldag.live")
#: The scoring process's name, by which a process knows it is one.
PROCESS_NAME = "evaldag-live-scoring"
#: Seconds the scoring process sleeps when the pipe is empty, and between its checks that the
#: app still runs. It sleeps rather than waits on the pipe, so a call written to the pipe wakes
#: no process that would compete with the app for a core at that moment.
_IDLE, _PARENT_CHECK = 0.01, 0.5
#: The scoring process's niceness: background work, it gives the app the cores it wants.
_NICENESS = 10
#: Seconds ``stop`` gives the process to end after its last batch, before terminating it.
_STOP_GRACE = 5.0
#: The pipe's capacity asked for (Linux's default maximum for a user); 16 KiB where it cannot
#: be set or read (the least a pipe holds on the systems Python runs on).
_PIPE_BYTES, _LEAST_PIPE_BYTES = 1 << 20, 1 << 14
#: The shared counts, which only the process writes: what its batches gave, the calls it
#: finished (``done``), and the calls and bytes it took from the pipe.
#: Then 1 once the process is ready to score (its imports done), and its slowest batch in ms.
_COUNTS = (
    "scored",
    "not_scorable",
    "errors",
    "write_errors",
    "done",
    "taken",
    "taken_bytes",
    "ready",
    "slowest_ms",
)
_DONE, _TAKEN, _TAKEN_BYTES, _READY, _SLOWEST_MS = 4, 5, 6, 7, 8
#: A message's frame in the pipe, as ``Connection.send_bytes`` makes it: a 4-byte length, then
#: the bytes.
_FRAME = struct.Struct("!i")
_HEADER = _FRAME.size
_STOP = b""


def in_scoring_process() -> bool:
    """Whether this is a scoring process (which imports the app's modules, but scores nothing
    of its own)."""
    return multiprocessing.current_process().name == PROCESS_NAME


class ProcessWorker:
    """Scores queued calls in a separate process; the same methods as the thread ``Worker``.

    Importing this module imports ``multiprocessing.util``, whose exit hook ends daemon
    processes: imported before any ``live`` registers its own exit hook, it runs after it (exit
    hooks run last registered first), so the queue is flushed before the process is ended.

    :param calls: for a worker given other messages than calls, the function that turns a batch
        of them into the calls to score, in the process (it is pickled).
    :param load_scorers: a function the process calls for its scorers instead of unpickling
        ``scorers`` (pickled by reference: an eval file's scorers, which the process imports).
    :param niceness: the process's niceness; background work by default.
    """

    # Set by restart(): the process, the pipe's end and the shared counts (None until started),
    # the pipe's capacity and what was offered and written to it.
    _process: Any
    _writer: Any
    _counts: Any
    _capacity: int
    _offered: int
    _written_bytes: int
    _taken: tuple[int, int]

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
        load_scorers: Callable[[], Sequence[Scorer]] | None = None,
        niceness: int = _NICENESS,
    ) -> None:
        self._arguments = (
            pickle.dumps(load_scorers) if load_scorers is not None else _pickled_scorers(scorers),
            _pickled_store(store),
            entity,
            batch_size,
            concurrency,
            calls,
            niceness,
        )
        self._queue_size = queue_size
        self._context = multiprocessing.get_context("spawn")
        self._stopped = in_scoring_process()
        self.restart()
        if not self._stopped:
            self._start()  # now, not on the app's first sampled call (a spawn takes ms)

    def offer(self, call: Any) -> bool:
        """Write ``call`` (or another message) to the process unless the pipe has no room for it
        or the worker stopped; never blocks. It is pickled here, which snapshots it; a call's
        input or output that does not pickle is left out and makes it an error call
        (``copied_call``)."""
        if self._process is None and not self._stopped:
            self._start()
        with self._lock:  # a full pipe or queue refuses it before it is pickled
            if self._process is None or not self._pushed() or not self._room(0):
                return False
        # A plain tuple: pickling the named tuple's class reference costs more than its fields.
        try:
            message = pickle.dumps(
                tuple(call) if isinstance(call, Call) else call, protocol=pickle.HIGHEST_PROTOCOL
            )
        except Exception:
            if not isinstance(call, Call):
                raise
            call = copied_call(call, _pickling)
            message = pickle.dumps(tuple(call), protocol=pickle.HIGHEST_PROTOCOL)
        size = _HEADER + len(message)
        with self._lock:
            if self._process is None:  # stopped
                return False
            if not self._pushed() or not self._room(size):
                return False
            frame = _FRAME.pack(len(message)) + message  # send_bytes's frame, in one write
            try:
                written = _sent(self._fd, frame)
            except OSError:  # the process is gone
                return False
            if not written:
                return False
            self._rest = frame[written:]
            self._offered += 1
            self._written_bytes += size
        return True

    def _pushed(self) -> bool:
        """Whether the last message is in the pipe whole: what it did not take is written now,
        as far as it takes it."""
        if self._rest:
            try:
                self._rest = self._rest[_sent(self._fd, self._rest) :]
            except OSError:  # the process is gone: nothing more will be read
                self._rest = b""
        return not self._rest

    def _room(self, size: int) -> bool:
        """Whether the pipe takes ``size`` more bytes and the queue one more call. What the
        process took is read from shared memory only when the last reading leaves no room:
        its counts only grow, so an old reading leaves less room than there is, never more."""
        for fresh in (False, True):
            if fresh:
                self._taken = self._counts[_TAKEN], self._counts[_TAKEN_BYTES]
            calls, written = self._offered - self._taken[0], self._written_bytes - self._taken[1]
            if calls < self._queue_size and written + size <= self._capacity:
                return True
        return False

    def counts(self) -> Tally:
        """The counts so far."""
        with self._lock:
            self._pushed()
            offered = self._offered
            shared = self._counts
            counts = {} if shared is None else dict(zip(_COUNTS, shared, strict=True))
        done = counts.get("done", 0)
        return Tally(
            scored=counts.get("scored", 0),
            not_scorable=counts.get("not_scorable", 0),
            errors=counts.get("errors", 0),
            write_errors=counts.get("write_errors", 0),
            pending=offered - done,
            steps=counts.get("taken", 0) + done,
            slowest=counts.get("slowest_ms", 0) / 1000,
        )

    def progress(self) -> Progress:
        """The counts, whether the process is still starting, and whether it ended."""
        tally = self.counts()
        with self._lock:
            shared, process = self._counts, self._process
        ended = None
        if process is not None and not process.is_alive():
            ended = f"the scoring process ended (exit code {process.exitcode})"
        return Progress(tally, shared is not None and not shared[_READY], ended)

    def flush(self, timeout: float | None) -> bool:
        """Wait until every queued call is scored and stored; False if ``timeout`` ran out or
        the process ended first."""
        deadline = None if timeout is None else time.monotonic() + timeout
        delay = 0.001
        while self.counts().pending > 0:
            process = self._process
            if process is None or not process.is_alive():
                return False
            if deadline is not None and time.monotonic() >= deadline:
                return False
            time.sleep(delay)
            delay = min(delay * 2, 0.05)
        return True

    def stop(self, timeout: float | None) -> bool:
        """Flush, then end the process (terminated if it does not end in time); later calls
        are not taken."""
        flushed = self.flush(timeout)
        with self._lock:
            self._stopped = True
            process, self._process = self._process, None
            if process is not None and flushed:
                try:
                    self._writer.send_bytes(_STOP)  # the pipe is empty: this cannot block
                except OSError:
                    pass
        if process is None:
            return flushed
        process.join(_STOP_GRACE if flushed else 0)
        if process.is_alive():
            process.terminate()
            process.join(1)
        if process.is_alive():
            process.kill()
            process.join()
        self._writer.close()
        return flushed

    def restart(self) -> None:
        """No process, pipe or counts until the next call: at the start, and in a forked
        child, which must not write to its parent's process."""
        self._lock = threading.Lock()
        self._process = None
        self._writer = None
        self._fd = -1
        self._rest = b""
        self._counts = None
        self._capacity = 0
        self._offered = self._written_bytes = 0
        self._taken = (0, 0)

    def _start(self) -> None:
        with self._lock:
            if self._process is not None or self._stopped:
                return
            reader, self._writer = self._context.Pipe(duplex=False)
            self._fd = self._writer.fileno()
            os.set_blocking(self._fd, False)
            self._capacity = _capacity(self._fd)
            self._counts = self._context.RawArray("q", len(_COUNTS))
            self._offered = self._written_bytes = 0
            self._taken = (0, 0)
            process = self._context.Process(
                target=_serve,
                args=(*self._arguments, reader, self._counts),
                name=PROCESS_NAME,
                daemon=True,
            )
            process.start()
            reader.close()  # the process's end: a write to a process that is gone then fails
            self._process = process


def _pickling(value: Any) -> Any:
    """``value``, once it is known to pickle."""
    pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    return value


def _sent(fd: int, data: bytes) -> int:
    """Write as much of ``data`` to the non-blocking ``fd`` as it takes now; the bytes written."""
    view, written = memoryview(data), 0
    while written < len(view):
        try:
            written += os.write(fd, view[written:])
        except BlockingIOError:
            break
    return written


def _capacity(fd: int) -> int:
    """The bytes pipe ``fd`` holds, made as large as the system lets a user make it."""
    try:
        import fcntl

        try:
            fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, _PIPE_BYTES)
        except OSError:  # above the system's maximum: keep the default
            pass
        return int(fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ))
    except (ImportError, AttributeError, OSError):  # not Linux
        return _LEAST_PIPE_BYTES


def _pickled_scorers(scorers: Sequence[Scorer]) -> bytes:
    """The scorers as the scoring process gets them: by value with cloudpickle, if installed."""
    try:
        import cloudpickle
    except ImportError:
        dumps = pickle.dumps
    else:
        dumps = cloudpickle.dumps
    try:
        return dumps(tuple(scorers))
    except Exception as error:
        raise EvalDagError(
            "EVALDAG_LIVE_SCORERS_NOT_PICKLABLE",
            "worker='process' sends the scorers to another process, and they cannot be "
            f"pickled ({error}); define their step functions at a module's top level, or "
            "install cloudpickle to send lambdas and closures too",
            details={"scorers": [s.id for s in scorers]},
        ) from error


def _pickled_store(store: ScoreStore) -> bytes:
    """The store as the scoring process gets it, to open connections of its own."""
    try:
        return pickle.dumps(store, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as error:
        raise EvalDagError(
            "EVALDAG_LIVE_STORE_NOT_PICKLABLE",
            f"worker='process' sends the store to another process, and {store.location} cannot "
            f"be pickled ({error}); give the store a __reduce__ that reopens it, or use "
            "worker='thread'",
            details={"store": store.location},
        ) from error


def started_scoring(
    scorers_pickle: bytes,
    store_pickle: bytes,
    entity: dict[str, str],
    concurrency: int,
    calls: CallsOf | None,
) -> BatchScoring:
    """The scoring process's ``BatchScoring``, its imports and setup done; what exists then is
    frozen out of the collector's passes (``gc.freeze``): the modules' objects live as long as
    the process, and a full pass over them took 160 ms (0.03 ms a trace)."""
    scorers = pickle.loads(scorers_pickle)
    if callable(scorers):
        scorers = scorers()
    store = pickle.loads(store_pickle)
    scoring = BatchScoring(scorers, store, entity=entity, concurrency=concurrency, calls=calls)
    gc.collect()
    gc.freeze()
    return scoring


def _serve(
    scorers_pickle: bytes,
    store_pickle: bytes,
    entity: dict[str, str],
    batch_size: int,
    concurrency: int,
    calls: CallsOf | None,
    niceness: int,
    reader: Any,
    counts: Any,
) -> None:
    """The scoring process: score the calls from the pipe in batches until told to stop, or
    the app's process is gone."""
    if niceness:
        try:
            os.nice(niceness)
        except (AttributeError, OSError):  # not on this system, or not allowed
            pass
    scoring = started_scoring(scorers_pickle, store_pickle, entity, concurrency, calls)
    scorers = scoring.scorers
    store = scoring.store
    counts[_READY] = 1
    parent = multiprocessing.parent_process()
    checked = time.monotonic()
    try:
        while True:
            if not reader.poll(0):
                if time.monotonic() - checked >= _PARENT_CHECK:
                    if parent is not None and not parent.is_alive():
                        return
                    checked = time.monotonic()
                time.sleep(_IDLE)
                continue
            messages: list[bytes] = []
            while len(messages) < batch_size and (not messages or reader.poll(0)):
                message = reader.recv_bytes()
                if message == _STOP:
                    _score(scoring, messages, counts, len(scorers), calls is None)
                    return
                messages.append(message)
                counts[_TAKEN] += 1
                counts[_TAKEN_BYTES] += _HEADER + len(message)
            _score(scoring, messages, counts, len(scorers), calls is None)
    except EOFError:  # the app's end of the pipe closed: the app is gone
        return
    finally:
        store.close()


def _score(
    scoring: BatchScoring, messages: list[bytes], counts: Any, scorers: int, of_calls: bool
) -> None:
    """Score one batch and add what it gave to the shared counts."""
    started = time.monotonic()
    # The collector stays paused until the batch's objects are gone (but for the runs that
    # Hamilton's execution keeps in a reference cycle): resumed while they all lived, its
    # first pass would scan every one of them.
    with gc_paused():
        given = _scored(scoring, messages, scorers, of_calls)
    for index, name in enumerate(_COUNTS[:_DONE]):
        counts[index] += given.get(name, 0)
    counts[_SLOWEST_MS] = max(counts[_SLOWEST_MS], int((time.monotonic() - started) * 1000))
    counts[_DONE] += len(messages)


def _scored(
    scoring: BatchScoring, messages: list[bytes], scorers: int, of_calls: bool
) -> dict[str, int]:
    """The counts of one batch scored and saved; a message that cannot be read is an error
    row per scorer."""
    batch, unreadable = [], 0
    for message in messages:
        try:
            batch.append(Call(*pickle.loads(message)) if of_calls else pickle.loads(message))
        except Exception:  # a call of a class this process cannot import
            logger.exception("live scoring: a call could not be read by the scoring process")
            unreadable += 1
    given = scoring.saved(batch) if batch else {}
    given["errors"] = given.get("errors", 0) + unreadable * scorers
    return given
