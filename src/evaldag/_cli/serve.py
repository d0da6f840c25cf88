"""``evaldag serve EVAL --store STORE``: an OTLP/HTTP receiver that scores the traces apps
export to it, as they finish, until SIGTERM or SIGINT (``docs/traces.md``).

Exits 0 once stopped gracefully (what it could not score is in the spool file it names), 3 on a
configuration error (the options are checked by the receiver, as for ``OtlpReceiver``).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from evaldag._util.credentials import location_without_credentials
from evaldag.errors import EvalDagError


def add_serve_command(commands: argparse._SubParsersAction) -> None:
    """The ``serve`` subcommand of the ``evaldag`` parser."""
    serve = commands.add_parser(
        "serve",
        help="receive OTLP traces over HTTP and score each as it finishes, into a score store",
        description="Serve an OTLP/HTTP receiver (POST /v1/traces and /v1/logs, protobuf or "
        "JSON, gzip or not: what OpenTelemetry's OTLP/HTTP exporters send) that scores each "
        "trace once its root span arrived (plus --grace) with the scorers and gates of EVAL, "
        "and writes LIVE rows with the trace's ids to --store. Stops on SIGTERM or SIGINT: "
        "scores what it holds for --shutdown-timeout seconds, appends what is left to --spool.",
    )
    serve.add_argument(
        "eval",
        metavar="EVAL",
        help="a Python file or module defining 'scorers' and/or 'gates' (and optionally "
        "'columns'), as for 'evaldag run'",
    )
    serve.add_argument(
        "--store",
        required=True,
        metavar="STORE",
        help="the score store the rows go to: a SQLite file or a database URL",
    )
    serve.add_argument(
        "--host",
        default="127.0.0.1",
        help="the address to listen on (default: 127.0.0.1; 0.0.0.0 for every interface)",
    )
    serve.add_argument(
        "--port", type=int, default=4318, help="the port (default: 4318, OTLP/HTTP's)"
    )
    serve.add_argument(
        "--token",
        metavar="TOKEN",
        help="require 'Authorization: Bearer TOKEN' on every request (default: the "
        "EVALDAG_RECEIVER_TOKEN environment variable; prefer it: a command line is visible to "
        "other users of the machine)",
    )
    serve.add_argument(
        "--root",
        metavar="NAME",
        help="the spans that are items, a glob of span names ('invoke_agent *'); default: each "
        "trace's span without a parent",
    )
    serve.add_argument(
        "--sampling",
        type=float,
        metavar="RATE",
        help="score this share of the traces, chosen by their trace id as Mastra chooses "
        "(default: every trace)",
    )
    serve.add_argument(
        "--filter",
        metavar="JSON",
        help="Mastra's scoring predicate as JSON, over requestContext (the root span's and its "
        "resource's attributes), entity, threadId, resourceId",
    )
    serve.add_argument(
        "--content-optional",
        action="store_true",
        help="score items whose model calls recorded no message content on their tool runs "
        "alone (default: an error row)",
    )
    serve.add_argument(
        "--grace",
        type=float,
        default=2.0,
        metavar="S",
        help="seconds a trace waits for late spans once its root span arrived (default: 2)",
    )
    serve.add_argument(
        "--max-wait",
        type=float,
        default=300.0,
        metavar="S",
        help="seconds a trace is held at most; one whose root never arrived is then an error "
        "row (default: 300)",
    )
    serve.add_argument(
        "--max-pending-spans",
        type=int,
        default=100_000,
        metavar="N",
        help="spans held at most before requests are answered 429 (default: 100000)",
    )
    serve.add_argument(
        "--worker",
        choices=("process", "thread"),
        default="process",
        help="score in separate processes (default) or in a thread of the server's",
    )
    serve.add_argument(
        "--processes",
        type=int,
        default=1,
        metavar="N",
        help="scoring processes, with --worker process (default: 1)",
    )
    serve.add_argument(
        "--concurrency",
        type=int,
        default=4,
        metavar="N",
        help="judge calls and async steps in flight at once, per worker (default: 4)",
    )
    serve.add_argument(
        "--shutdown-timeout",
        type=float,
        default=30.0,
        metavar="S",
        help="seconds a stop spends at most scoring what is held (default: 30)",
    )
    serve.add_argument(
        "--spool",
        default="evaldag-unscored-traces.jsonl",
        metavar="FILE",
        help="where traces not scored by the stop are appended, as OTLP JSON lines for "
        "'evaldag run EVAL --traces FILE' (default: evaldag-unscored-traces.jsonl)",
    )
    serve.set_defaults(command=_serve_command)


def _serve_command(args: argparse.Namespace) -> int:
    from evaldag._receiver import serve

    stats = serve(
        args.eval,
        store=args.store,
        host=args.host,
        port=args.port,
        token=args.token,
        root=args.root,
        sampling=args.sampling,
        filter=_filter(args.filter),
        content="optional" if args.content_optional else "required",
        grace=args.grace,
        max_wait=args.max_wait,
        max_pending_spans=args.max_pending_spans,
        worker=args.worker,
        processes=args.processes,
        concurrency=args.concurrency,
        shutdown_timeout=args.shutdown_timeout,
        spool=args.spool,
        started=lambda receiver: print(
            f"evaldag serve: {args.eval} on {receiver.url} (POST /v1/traces, /v1/logs), "
            f"rows to {location_without_credentials(args.store)}; bearer token "
            f"{'required' if receiver.requires_token else 'not required'}; stop with Ctrl-C "
            "or SIGTERM",
            flush=True,
        ),
    )
    print(f"evaldag serve: stopped. {_summary(stats)}")
    return 0


def _filter(text: str | None) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError as error:
        raise EvalDagError(
            "INVALID_CLI_OPTIONS", f"--filter is not JSON ({error}): give a Mastra predicate"
        ) from None


def _summary(stats: Any) -> str:
    return (
        f"{stats.traces} traces released for scoring: {stats.scored} rows with a score and "
        f"{stats.errors} error rows ({stats.incomplete} traces without their root span); "
        f"{stats.spans} spans taken, {stats.refused_spans} refused, {stats.throttled} "
        f"requests throttled, {stats.unauthorized} unauthorized; {stats.write_errors} rows "
        f"the store did not take; {stats.spooled} traces saved unscored to the spool file"
    )
