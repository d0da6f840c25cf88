"""``OtlpReceiver``: an OTLP/HTTP endpoint that scores the traces apps export to it, as they
finish (``docs/traces.md``, "Scoring traces as they arrive").

Its event loop runs on a thread of its own and is the only code that touches the traces held:
a request's spans are read (``bodies``), sampled by trace id, and held (``pending``) until their
trace is due; a tick releases due traces (``finishing``: items, filter) and hands them to the
scoring workers, live scoring's (``evaldag._live``): processes by default, which read each
trace's items and score and store them in batches.

Memory is bounded by the spans held, wherever they are (arriving, released, in a worker): at
``max_pending_spans`` a request is answered 429 with ``Retry-After``, and the exporter retries.
"""

from __future__ import annotations

import asyncio
import functools
import hmac
import logging
import math
import os
import threading
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field

from evaldag._eval.eval_file import eval_definition
from evaldag._live.predicates import scoring_filter
from evaldag._live.process_worker import ProcessWorker
from evaldag._live.sampling import sampling_bound, sampling_rate, sha256
from evaldag._live.worker import Worker
from evaldag._receiver.bodies import (
    JSON,
    PROTOBUF,
    Refused,
    Signal,
    decoded,
    export_response,
    media_type,
    received,
    status_body,
)
from evaldag._receiver.calls import TraceCalls
from evaldag._receiver.finishing import Finishing
from evaldag._receiver.flow import TraceFlow
from evaldag._receiver.pending import PendingTraces
from evaldag._receiver.scorers import (
    checked_scorers,
    definition_scorers,
    eval_file_scorers,
    eval_spec,
    read_columns,
    run_fields,
)
from evaldag._receiver.spool import spooled
from evaldag._scorer.builder import Scorer
from evaldag._store.stores import ScoreStore, opened_store
from evaldag._traces.otlp import request_types
from evaldag.errors import EvalDagError

logger = logging.getLogger("evaldag.receiver")
#: Seconds between releases of due traces: the latency it adds, at most.
_TICK = 0.02
#: Seconds an exporter is asked to wait before retrying a request refused for room.
_RETRY_AFTER = "1"
#: Seconds an idle keep-alive connection stays open (exporters reuse theirs between batches).
_KEEPALIVE = 75.0
#: Problems a partial success names (their count is in full).
_NAMED_PROBLEMS = 3


class ReceiverStats(BaseModel):
    """What the receiver did so far."""

    model_config = ConfigDict(frozen=True)

    requests: int = Field(description="Export requests taken (200, partial successes too).")
    spans: int = Field(description="Spans taken and held for scoring.")
    log_records: int = Field(description="Span-bound log records taken.")
    not_sampled: int = Field(description="Spans and log records of traces not sampled.")
    refused_spans: int = Field(
        description="Spans refused in a partial success: an invalid id, or late (their trace "
        "was released already)."
    )
    refused_log_records: int = Field(description="Log records refused likewise.")
    throttled: int = Field(description="Requests answered 429: the receiver held too many spans.")
    unauthorized: int = Field(description="Requests answered 401: no or a wrong bearer token.")
    bad_requests: int = Field(
        description="Requests answered 400, 408, 413 or 415: not an OTLP request it takes."
    )
    traces: int = Field(description="Traces released for scoring.")
    incomplete: int = Field(
        description="Traces released without a root span: an error row per scorer names each."
    )
    without_items: int = Field(description="Traces released with no span matching root=.")
    filtered: int = Field(description="Items the filter left out.")
    filter_errors: int = Field(description="Items left out because the filter raised.")
    scored: int = Field(description="Rows written with a score.")
    not_scorable: int = Field(description="Runs a scorer declared not scorable (no row).")
    errors: int = Field(
        description="Error rows written (a scorer failed, or an item or trace "
        "could not be scored: the row says why)."
    )
    write_errors: int = Field(description="Rows the store did not take (logged).")
    pending_spans: int = Field(description="Spans held: arriving, released, or being scored.")
    pending_traces: int = Field(description="Traces held likewise.")
    spooled: int = Field(description="Traces saved unscored to the spool file when it stopped.")


class OtlpReceiver:
    """An OTLP/HTTP receiver (``POST /v1/traces``, ``POST /v1/logs``; protobuf or JSON, gzip or
    not) that scores each trace once it finished, with the scorers and gates given or those of
    an eval file, and writes ``source="LIVE"`` rows with the trace's ``trace_id`` and
    ``span_id`` to ``store``. ``start()`` serves it on a thread, ``stop()`` ends it gracefully;
    ``evaldag.serve`` (``evaldag serve``) runs one until SIGTERM or SIGINT.

    :param scorers: the scorers (a list, ``with_threshold`` entries too: a threshold has no
        average to hold live), or the path of an eval file (or a module) whose ``scorers``,
        ``gates`` and ``columns`` it takes.
    :param gates: gates, scored as scorers (each row says whether the trace passed).
    :param store: a ``ScoreStore``, a SQLite file or a database URL.
    :param sampling: which traces to score, by the sha256 of their trace id, as ``evaldag.live``
        and Mastra sample: None (every trace), a rate, or ``{"type": "ratio", "rate": r}``.
        Spans of a trace not sampled are dropped as they arrive.
    :param filter: Mastra's scoring predicate (or a function) over an item's
        ``requestContext`` (its resource's and root span's attributes), ``entity``,
        ``threadId`` (``gen_ai.conversation.id``, ``session.id``) and ``resourceId``
        (``user.id``).
    :param root: the glob of the span names that are items (``"invoke_agent *"``); None: each
        trace's span without a parent. An item's root arriving ends its trace.
    :param content: as ``read_traces``: ``"required"`` (a model call without message content
        is an error row) or ``"optional"``.
    :param columns: run field → item column (``{"output": "trajectory"}``); an eval file's
        ``columns`` by default.
    :param entity: the rows' entity id and name (default: the eval file's name, else
        ``"otlp-receiver"``).
    :param grace: seconds a trace waits for late spans once its root span arrived.
    :param max_wait: seconds a trace is held at most: one without a root span is then an error
        row per scorer (with ``root=`` a trace without a matching span is left out).
    :param max_pending_spans: spans held at most before requests are answered 429.
    :param queue_size: traces each worker holds at most (queued or being scored).
    :param batch_size: traces a worker scores in one execution of the scorers' DAGs.
    :param concurrency: judge calls and async steps in flight at once, per worker.
    :param worker: ``"process"`` (scoring processes beside the receiver's, so reading and
        scoring traces use other cores) or ``"thread"`` (a thread of this process).
    :param processes: scoring processes, with ``worker="process"``.
    :param token: a bearer token every request must carry (``Authorization: Bearer ...``);
        None takes requests without one. It is never logged nor shown.
    :param max_request_bytes: the largest body taken, compressed or not (413 beyond).
    :param request_timeout: seconds a request's body may take to arrive (408 beyond).
    :param shutdown_timeout: seconds ``stop()`` takes at most to score what it holds; the
        traces not scored by then are appended to ``spool``.
    :param spool: where unscored traces go when the receiver stops (OTLP JSON lines that
        ``evaldag run EVAL --traces FILE`` scores later).
    """

    def __init__(
        self,
        scorers: Iterable[Any] | str | os.PathLike[str],
        gates: Iterable[Scorer] = (),
        *,
        store: ScoreStore | str | os.PathLike[str],
        sampling: Any = None,
        filter: Any = None,
        root: str | None = None,
        content: Literal["required", "optional"] = "required",
        columns: Mapping[str, str] | None = None,
        entity: str | None = None,
        grace: float = 2.0,
        max_wait: float = 300.0,
        max_pending_spans: int = 100_000,
        queue_size: int = 1_000,
        batch_size: int = 256,
        concurrency: int = 4,
        worker: Literal["thread", "process"] = "process",
        processes: int = 1,
        token: str | None = None,
        max_request_bytes: int = 32 << 20,
        request_timeout: float = 30.0,
        shutdown_timeout: float = 30.0,
        spool: str | os.PathLike[str] = "evaldag-unscored-traces.jsonl",
    ) -> None:
        request_types()  # protobuf bodies need opentelemetry-proto: say so now, not per request
        self._spec: str | None = None
        if isinstance(scorers, str | os.PathLike):
            if tuple(gates):
                raise _invalid("give gates in the eval file, not beside it")
            self._spec = eval_spec(scorers)
            definition = eval_definition(self._spec)
            self._scorers = definition_scorers(definition)
            columns = definition.columns if columns is None else columns
            entity = entity or definition.name
        else:
            self._scorers = checked_scorers(scorers, gates)
        for name, value in (("grace", grace), ("request_timeout", request_timeout)):
            _require_seconds(name, value, zero=name == "grace")
        for name, value in (("max_wait", max_wait), ("shutdown_timeout", shutdown_timeout)):
            _require_seconds(name, value)
        for name, value in (
            ("max_pending_spans", max_pending_spans),
            ("queue_size", queue_size),
            ("batch_size", batch_size),
            ("concurrency", concurrency),
            ("processes", processes),
            ("max_request_bytes", max_request_bytes),
        ):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise _invalid(f"{name} must be an integer >= 1, got {value!r}")
        if worker not in ("thread", "process"):
            raise _invalid(f"worker must be 'thread' or 'process', got {worker!r}")
        if content not in ("required", "optional"):
            raise _invalid(f"content must be 'required' or 'optional', got {content!r}")
        if root is not None and not isinstance(root, str):
            raise _invalid(f"root must be a glob of span names or None, got {root!r}")
        if token is not None and (not isinstance(token, str) or not token.strip()):
            raise _invalid("token must be a non-empty text (the bearer token), or None")
        name = entity or "otlp-receiver"
        self._entity = {"id": name, "name": name}
        self._calls = TraceCalls(
            content == "required", run_fields(columns), read_columns(self._scorers)
        )
        self._bound = sampling_bound(sampling_rate(sampling))
        finishing = Finishing(root, scoring_filter(filter), self._entity, max_wait)
        self._flow = TraceFlow(
            PendingTraces(finishing.is_root, grace=grace, max_wait=max_wait), finishing
        )
        self._owns_store = not isinstance(store, ScoreStore)
        self._store = opened_store(store)
        self._worker_options = {
            "queue_size": queue_size,
            "batch_size": batch_size,
            "concurrency": concurrency,
        }
        self._worker_kind, self._processes = worker, processes
        self._authorization = None if token is None else f"Bearer {token}".encode()
        self._max_pending_spans = max_pending_spans
        self._max_ready = queue_size * (processes if worker == "process" else 1)
        self._max_request_bytes = max_request_bytes
        self._request_timeout = request_timeout
        self._shutdown_timeout = shutdown_timeout
        self._spool = Path(spool)
        self._counts = dict.fromkeys(
            (
                "requests",
                "spans",
                "log_records",
                "not_sampled",
                "refused_spans",
                "refused_log_records",
                "throttled",
                "unauthorized",
                "bad_requests",
                "spooled",
            ),
            0,
        )
        self._warned: set[str] = set()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop_requested: asyncio.Event | None = None
        self._stopping = False
        self._failure: BaseException | None = None
        #: The port it listens on, once started (the one the system chose for port 0).
        self.port: int | None = None
        self._host = "127.0.0.1"

    def __repr__(self) -> str:  # the token stays out
        where = f"port {self.port}" if self.port else "not started"
        return f"<OtlpReceiver {self._entity['id']!r}, {len(self._scorers)} scorers, {where}>"

    @property
    def requires_token(self) -> bool:
        """Whether requests must carry the bearer token."""
        return self._authorization is not None

    @property
    def url(self) -> str:
        """The base URL exporters are given (``OTEL_EXPORTER_OTLP_ENDPOINT``)."""
        if self.port is None:
            raise EvalDagError("EVALDAG_RECEIVER_NOT_STARTED", "the receiver is not started")
        return f"http://{self._host}:{self.port}"

    def start(
        self, host: str = "127.0.0.1", port: int = 4318, *, timeout: float = 60.0
    ) -> OtlpReceiver:
        """Serve on ``host:port`` from a thread of its own (port 0: a free port, then
        ``self.port``); returns the receiver once it listens.

        :param timeout: seconds to wait for it to listen.
        """
        if self._thread is not None:
            raise EvalDagError("EVALDAG_RECEIVER_STARTED", "this receiver was started already")
        self._host = host
        self._flow.use([self._worker() for _ in range(self._processes)])
        listening = threading.Event()
        self._thread = threading.Thread(
            target=lambda: asyncio.run(self._lifetime(host, port, listening)),
            name="evaldag-otlp-receiver",
            daemon=True,
        )
        self._thread.start()
        if not listening.wait(timeout) or self._failure is not None:
            self._flow.stop_workers()
            problem = self._failure or f"it did not listen within {timeout:g} s"
            raise EvalDagError(
                "EVALDAG_RECEIVER_START_FAILED",
                f"the OTLP receiver could not listen on {host}:{port}: {problem}",
                details={"host": host, "port": port},
            )
        return self

    def stop(self) -> ReceiverStats:
        """Stop taking requests (503 meanwhile), score what it holds for ``shutdown_timeout``
        seconds at most, append what is left unscored to ``spool``, and close; its stats."""
        thread, loop, stop = self._thread, self._loop, self._stop_requested
        if thread is not None and loop is not None and stop is not None and thread.is_alive():
            loop.call_soon_threadsafe(stop.set)
            thread.join(self._shutdown_timeout + 30)  # the drain is bounded; this is a backstop
        if self._owns_store:
            self._store.close()
        return self.stats()

    def __enter__(self) -> OtlpReceiver:
        return self if self._thread is not None else self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stats(self) -> ReceiverStats:
        """The counts so far."""
        worker = {"scored": 0, "not_scorable": 0, "errors": 0, "write_errors": 0}
        for each in self._flow.workers:
            tally = each.counts()
            for key in worker:
                worker[key] += getattr(tally, key)
        return ReceiverStats(
            **self._counts,
            **self._flow.counts,
            **self._flow.finishing.counts,
            **worker,
            pending_spans=self._flow.spans,
            pending_traces=self._flow.traces,
        )

    # --- the server's life, on its thread ----------------------------------------------------

    async def _lifetime(self, host: str, port: int, listening: threading.Event) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop_requested = asyncio.Event()
        app = web.Application(client_max_size=self._max_request_bytes)
        app.router.add_post("/v1/traces", functools.partial(self._export, signal="traces"))
        app.router.add_post("/v1/logs", functools.partial(self._export, signal="logs"))
        app.router.add_get("/health", self._health)
        runner = web.AppRunner(
            app,
            access_log=None,
            shutdown_timeout=min(5.0, self._shutdown_timeout),
            auto_decompress=False,  # decompressed by ``decoded``, within max_request_bytes
            keepalive_timeout=_KEEPALIVE,
        )
        await runner.setup()
        try:
            await web.TCPSite(runner, host, port).start()
        except OSError as error:
            self._failure = error
            listening.set()
            await runner.cleanup()
            return
        self.port = runner.addresses[0][1]
        listening.set()
        ticks = asyncio.create_task(self._ticking())
        await self._stop_requested.wait()
        deadline = time.monotonic() + self._shutdown_timeout
        self._stopping = True
        await runner.cleanup()  # no new connections; requests in flight end (bounded)
        ticks.cancel()
        await self._drained(deadline)

    async def _ticking(self) -> None:
        while True:
            try:
                self._flow.release(time.monotonic())
            except Exception:  # a bug here must not stop the releases that follow
                logger.exception("evaldag receiver: releasing due traces failed")
            await asyncio.sleep(_TICK)

    async def _drained(self, deadline: float) -> None:
        """Score what is held until ``deadline``; save what is left to the spool file."""
        unfinished = self._flow.release_all(time.monotonic())
        while time.monotonic() < deadline:
            self._flow.dispatch()
            if self._flow.idle:
                break
            await asyncio.sleep(_TICK)
        left: list[Any] = [*unfinished, *self._flow.unscored()]
        await asyncio.to_thread(self._flow.stop_workers)
        if left:
            self._counts["spooled"] += spooled(self._spool, left)
            logger.warning(
                "evaldag receiver: %d traces were not scored before it stopped (%d held "
                "without their root span); their spans are appended to %s: score them with "
                "'evaldag run EVAL --traces %s --store STORE'",
                len(left),
                len(unfinished),
                self._spool,
                self._spool,
            )

    def _worker(self) -> Worker | ProcessWorker:
        if self._worker_kind == "thread":
            return Worker(
                self._scorers,
                self._store,
                entity=self._entity,
                calls=self._calls,
                **self._worker_options,
            )
        return ProcessWorker(
            self._scorers,
            self._store,
            entity=self._entity,
            calls=self._calls,
            load_scorers=None
            if self._spec is None
            else functools.partial(eval_file_scorers, self._spec),
            niceness=0,
            **self._worker_options,
        )

    # --- requests ------------------------------------------------------------------------------

    async def _export(self, request: web.Request, signal: Signal) -> web.Response:
        """An export request: its spans or log records held (those sampled), answered with the
        export response, a partial success naming what it refused."""
        kind = request.headers.get("Content-Type", "")
        media = JSON if kind.lower().startswith(JSON) else PROTOBUF
        try:
            if self._stopping:
                raise Refused(503, "the receiver is stopping; send the data elsewhere or later")
            self._authorize(request)
            if self._flow.spans >= self._max_pending_spans or self._flow.ready >= self._max_ready:
                self._counts["throttled"] += 1
                raise Refused(
                    429,
                    f"the receiver holds {self._flow.spans:,} spans (at most "
                    f"{self._max_pending_spans:,}) while its workers score; retry later",
                )
            media = media_type(kind)
            body = await asyncio.wait_for(request.read(), self._request_timeout)
            got = received(
                decoded(body, request.headers.get("Content-Encoding", ""), self._max_request_bytes),
                media,
                signal,
            )
        except Refused as refused:
            return self._refusal(refused, media)
        except TimeoutError:
            return self._refusal(
                Refused(408, f"the body did not arrive within {self._request_timeout:g} s"),
                media,
            )
        except web.HTTPRequestEntityTooLarge:
            return self._refusal(
                Refused(413, f"the body is larger than {self._max_request_bytes:,} bytes"), media
            )
        now = time.monotonic()
        spans, logs = self._sampled(got.spans), self._sampled(got.logs)
        late_spans = self._flow.pending.add_spans(spans, now)
        late_logs = self._flow.pending.add_logs(logs, now)
        problems = [*got.problems, *late_spans, *late_logs]
        self._counts["requests"] += 1
        self._counts["spans"] += len(spans) - len(late_spans)
        self._counts["log_records"] += len(logs) - len(late_logs)
        self._counts["refused_spans" if signal == "traces" else "refused_log_records"] += len(
            problems
        )
        if problems:
            self._warn_once(signal, problems[0])
        message = "; ".join(problems[:_NAMED_PROBLEMS]) + (
            f"; and {len(problems) - _NAMED_PROBLEMS} more"
            if len(problems) > _NAMED_PROBLEMS
            else ""
        )
        return web.Response(
            body=export_response(media, signal, len(problems), message), content_type=media
        )

    def _authorize(self, request: web.Request) -> None:
        if self._authorization is None:
            return
        given = request.headers.get("Authorization", "").encode()
        if not hmac.compare_digest(given, self._authorization):
            self._counts["unauthorized"] += 1
            raise Refused(401, "a bearer token is required (Authorization: Bearer <token>)")

    def _sampled(self, records: list[Any]) -> list[Any]:
        """The records of sampled traces; the others are counted and dropped."""
        bound = self._bound
        if bound is None or not records:
            return records
        verdicts: dict[str, bool] = {}
        kept = []
        for record in records:
            verdict = verdicts.get(record.trace_id)
            if verdict is None:
                verdict = verdicts[record.trace_id] = (
                    sha256(record.trace_id.encode()).digest() < bound
                )
            if verdict:
                kept.append(record)
        self._counts["not_sampled"] += len(records) - len(kept)
        return kept

    def _refusal(self, refused: Refused, media: str) -> web.Response:
        if refused.status in (400, 408, 413, 415):
            self._counts["bad_requests"] += 1
        headers = {}
        if refused.status in (429, 503):
            headers["Retry-After"] = _RETRY_AFTER
        if refused.status == 401:
            headers["WWW-Authenticate"] = 'Bearer realm="evaldag"'
        return web.Response(
            status=refused.status,
            body=status_body(media, refused.status, refused.message),
            content_type=media,
            headers=headers,
        )

    async def _health(self, request: web.Request) -> web.Response:
        stats = self.stats().model_dump()
        return web.json_response(
            {"status": "stopping" if self._stopping else "serving", **stats},
            status=503 if self._stopping else 200,
        )

    def _warn_once(self, kind: str, problem: str) -> None:
        if kind not in self._warned:
            self._warned.add(kind)
            logger.warning(
                "evaldag receiver refuses %s (counted in stats(); this is said once): %s",
                "spans" if kind == "traces" else "log records",
                problem,
            )


def _require_seconds(name: str, value: Any, *, zero: bool = False) -> None:
    if (
        not isinstance(value, int | float)
        or isinstance(value, bool)
        or not (0 <= value if zero else 0 < value)
        or not math.isfinite(value)
    ):
        raise _invalid(
            f"{name} must be a finite number of seconds > {'= ' if zero else ''}0, got {value!r}"
        )


def _invalid(problem: str) -> EvalDagError:
    return EvalDagError("EVALDAG_RECEIVER_INVALID_OPTION", problem)
