"""``evaldag.serve``: an OTLP receiver run until SIGTERM or SIGINT, then stopped gracefully."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Iterable
from typing import Any

from evaldag._receiver.receiver import OtlpReceiver, ReceiverStats
from evaldag.errors import EvalDagError

#: The environment variable a bearer token is read from when none is given.
TOKEN_VARIABLE = "EVALDAG_RECEIVER_TOKEN"


def serve(
    scorers: Iterable[Any] | str | os.PathLike[str],
    *,
    store: Any,
    host: str = "127.0.0.1",
    port: int = 4318,
    token: str | None = None,
    started: Callable[[OtlpReceiver], None] | None = None,
    **options: Any,
) -> ReceiverStats:
    """Serve an :class:`OtlpReceiver` (its options as keywords) on ``host:port`` until the
    process gets SIGTERM or SIGINT, then stop it gracefully; its stats. Call it from the main
    thread (signals reach only that one).

    :param token: the bearer token requests must carry; default: the ``EVALDAG_RECEIVER_TOKEN``
        environment variable, if set.
    :param started: called with the receiver once it listens.
    """
    if threading.current_thread() is not threading.main_thread():
        raise EvalDagError(
            "EVALDAG_RECEIVER_NOT_MAIN_THREAD",
            "serve() waits for SIGTERM or SIGINT, which only the main thread receives; from "
            "another thread use OtlpReceiver(...).start() and .stop()",
        )
    if token is None:
        token = os.environ.get(TOKEN_VARIABLE) or None
    receiver = OtlpReceiver(scorers, store=store, token=token, **options)
    stop = threading.Event()
    handlers = {
        number: signal.signal(number, lambda *_: stop.set())
        for number in (signal.SIGTERM, signal.SIGINT)
    }
    try:
        receiver.start(host, port)
        if started is not None:
            started(receiver)
        while not stop.wait(1.0):  # a bounded wait, so the signal's handler runs promptly
            pass
    finally:
        for number, handler in handlers.items():  # a second signal ends the process at once
            signal.signal(number, handler)
        stats = receiver.stop()
    return stats
