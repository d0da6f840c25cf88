"""The traces a receiver holds, from their first span to their rows: held until due
(``pending``), made ready to score (``finishing``), then given to a scoring worker, which keeps
them until it scored them. Every count of what is held, and so the receiver's memory bound,
comes from here.

A worker scores what it is given in order, so the traces it finished are always the oldest it
was given: what it still holds is known from its count of pending traces alone, and is what a
stop that runs out of time saves to the spool file.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

from evaldag._live.process_worker import ProcessWorker
from evaldag._live.worker import Worker
from evaldag._receiver.calls import FinishedTrace
from evaldag._receiver.finishing import Finishing
from evaldag._receiver.pending import PendingTrace, PendingTraces


class TraceFlow:
    """The traces held, and the workers they go to (given by ``use``)."""

    def __init__(self, pending: PendingTraces, finishing: Finishing) -> None:
        self.pending = pending
        self.finishing = finishing
        self.workers: Sequence[Worker | ProcessWorker] = ()
        self._given: list[deque[FinishedTrace]] = []
        self._ready: deque[FinishedTrace] = deque()
        self._ready_spans = self._given_spans = 0
        self._next = 0
        #: Traces released for scoring, and those among them without a root span.
        self.counts = {"traces": 0, "incomplete": 0}

    def use(self, workers: Sequence[Worker | ProcessWorker]) -> None:
        """Score with ``workers`` from now on."""
        self.workers = workers
        self._given = [deque() for _ in workers]

    @property
    def spans(self) -> int:
        """The spans held, wherever they are."""
        return self.pending.spans + self._ready_spans + self._given_spans

    @property
    def traces(self) -> int:
        """The traces held, wherever they are."""
        return len(self.pending) + len(self._ready) + sum(len(given) for given in self._given)

    @property
    def ready(self) -> int:
        """The traces released and waiting for a worker to have room."""
        return len(self._ready)

    @property
    def idle(self) -> bool:
        """Whether no released trace waits to be scored."""
        self._forget_scored()
        return not self._ready and not any(self._given)

    def release(self, now: float) -> None:
        """Give the traces due by ``now`` to the workers, as far as they have room."""
        for trace in self.pending.due(now):
            self._readied(trace)
        self.dispatch()

    def release_all(self, now: float) -> list[PendingTrace]:
        """Make every trace held ready (the receiver stops); those without a root span yet are
        returned instead, whole, to be saved for later."""
        unfinished = []
        for trace in self.pending.every(now):
            if trace.due is None:
                unfinished.append(trace)
            else:
                self._readied(trace)
        return unfinished

    def dispatch(self) -> None:
        """Offer the ready traces, oldest first, to the workers in turn, until none has room."""
        self._forget_scored()
        count = len(self.workers)
        while self._ready and count:
            trace = self._ready[0]
            for step in range(count):
                index = (self._next + step) % count
                if self.workers[index].offer(trace):
                    self._next = (index + 1) % count
                    break
            else:
                return
            self._ready.popleft()
            self._ready_spans -= len(trace.spans)
            self._given[index].append(trace)
            self._given_spans += len(trace.spans)

    def unscored(self) -> list[FinishedTrace]:
        """The traces ready or in a worker, not scored yet."""
        self._forget_scored()
        return [*self._ready, *(trace for given in self._given for trace in given)]

    def stop_workers(self) -> None:
        """Stop the workers now: what they did not score is in ``unscored()``, read before."""
        for worker in self.workers:
            worker.stop(0)

    def _readied(self, trace: PendingTrace) -> None:
        finished = self.finishing.finished(trace)
        if finished is None:
            return
        self.counts["traces"] += 1
        if finished.problem is not None:
            self.counts["incomplete"] += 1
        self._ready.append(finished)
        self._ready_spans += len(finished.spans)

    def _forget_scored(self) -> None:
        for worker, given in zip(self.workers, self._given, strict=True):
            pending = worker.counts().pending
            while len(given) > pending:
                self._given_spans -= len(given.popleft().spans)
