"""Traces whose spans are still arriving, held until they finish.

An exporter sends a span once it ended, so a trace's root span arriving means the trace ended;
its children may still be on their way (another batch, another service), so a trace is due
``grace`` seconds after its last item root arrived. A trace whose root never arrives is due
``max_wait`` seconds after its first span, as incomplete. Both waits run in arrival order, so
each is a queue, not a search.

Once released, a trace id is remembered (the last ``remember`` of them): a span of it that
arrives later is refused, saying so, rather than scored as a trace of its own.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from evaldag._traces.spans import LogEvent, Span


@dataclass(slots=True)
class PendingTrace:
    """A trace's spans and log events so far."""

    trace_id: str
    first_seen: float
    spans: list[Span] = field(default_factory=list)
    logs: list[LogEvent] = field(default_factory=list)
    #: When it is due: its last item root's arrival plus the grace (None: no root yet).
    due: float | None = None
    #: When its last item root arrived.
    ended: float | None = None


class PendingTraces:
    """The traces being received.

    :param is_root: whether a span is an item's root: its arrival ends the trace.
    :param grace: seconds a trace waits for late spans once a root arrived.
    :param max_wait: seconds a trace without a root is held after its first span.
    :param remember: released trace ids remembered, to refuse their late spans.
    """

    def __init__(
        self,
        is_root: Callable[[Span], bool],
        *,
        grace: float,
        max_wait: float,
        remember: int = 100_000,
    ) -> None:
        self._is_root = is_root
        self._grace = grace
        self._max_wait = max_wait
        self._remember = remember
        self._traces: dict[str, PendingTrace] = {}
        self._ended: deque[tuple[float, str]] = deque()
        self._started: deque[tuple[float, str]] = deque()
        self._released: OrderedDict[str, float] = OrderedDict()
        #: Spans held.
        self.spans = 0

    def __len__(self) -> int:
        return len(self._traces)

    def add_spans(self, spans: Iterable[Span], now: float) -> list[str]:
        """Hold ``spans``; the problems of those refused (their trace was released)."""
        refused = []
        for span in spans:
            trace = self._trace(span.trace_id, now)
            if trace is None:
                refused.append(self._late(span.trace_id, f"span {span.span_id} {span.name!r}", now))
                continue
            trace.spans.append(span)
            self.spans += 1
            if self._is_root(span):
                trace.due, trace.ended = now + self._grace, now
                self._ended.append((trace.due, trace.trace_id))
        return refused

    def add_logs(self, logs: Iterable[LogEvent], now: float) -> list[str]:
        """Hold span-bound log events; the problems of those refused."""
        refused = []
        for event in logs:
            trace = self._trace(event.trace_id, now)
            if trace is None:
                refused.append(self._late(event.trace_id, f"log record {event.name!r}", now))
            else:
                trace.logs.append(event)
        return refused

    def due(self, now: float) -> Iterator[PendingTrace]:
        """Release the traces due by ``now``: ended ones past their grace, then those held
        ``max_wait`` (without a root their ``due`` is None; with one, roots kept coming)."""
        while self._ended and self._ended[0][0] <= now:
            due, trace_id = self._ended.popleft()
            trace = self._traces.get(trace_id)
            if trace is not None and trace.due == due:  # else released, or a later root came
                yield self._release(trace, now)
        while self._started:
            started, trace_id = self._started[0]
            trace = self._traces.get(trace_id)
            if trace is not None and started + self._max_wait > now:
                break
            self._started.popleft()  # released already, or held as long as any trace is
            if trace is not None:
                yield self._release(trace, now)

    def every(self, now: float) -> list[PendingTrace]:
        """Release every trace held, due or not (the receiver stops)."""
        released = [self._release(trace, now) for trace in list(self._traces.values())]
        self._ended.clear()
        self._started.clear()
        return released

    def _trace(self, trace_id: str, now: float) -> PendingTrace | None:
        """The held trace of ``trace_id`` (new if unseen); None once it was released."""
        trace = self._traces.get(trace_id)
        if trace is None:
            if trace_id in self._released:
                return None
            trace = self._traces[trace_id] = PendingTrace(trace_id, now)
            self._started.append((now, trace_id))
        return trace

    def _late(self, trace_id: str, what: str, now: float) -> str:
        ago = now - self._released[trace_id]
        return (
            f"{what} of trace {trace_id} came {ago:.1f} s after the trace was released for "
            f"scoring ({self._grace:g} s after its root span arrived); a longer grace waits "
            "for such spans"
        )

    def _release(self, trace: PendingTrace, now: float) -> PendingTrace:
        del self._traces[trace.trace_id]
        self.spans -= len(trace.spans)
        self._released[trace.trace_id] = now
        if len(self._released) > self._remember:
            self._released.popitem(last=False)
        return trace
