"""The peer bench's fake judge in a 429 storm: a share of chat-completions requests is answered
429 with ``Retry-After`` instead of being served.

``benchmarks/peer_bench.sh`` copies ``../shared/peer-bench`` to a scratch folder and, when
``RATE_LIMITED_SHARE`` is set, puts this file in place of its ``fake_judge.py`` (the original is
imported as ``fake_judge_base``). A refused request is not counted in the judge's ``/stats``
``requests``: those stay the calls that were served. Env: RATE_LIMITED_SHARE (0.3), RETRY_AFTER (1).
"""

import json
import os
import random
import threading

import fake_judge_base as base

SHARE = float(os.environ.get("RATE_LIMITED_SHARE", "0.3"))
RETRY_AFTER = os.environ.get("RETRY_AFTER", "1")
_serve = base.Handler.do_POST
_refused = {"count": 0}
_lock = threading.Lock()


def do_POST(self: base.Handler) -> None:
    """Answer 429 to a share of chat-completions requests; serve the rest as the bench does."""
    if self.path.split("?")[0].endswith("/chat/completions") and random.random() < SHARE:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        with _lock:
            _refused["count"] += 1
        body = json.dumps({"error": {"message": "Rate limit reached", "type": "rate_limit"}})
        self.send_response(429)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Retry-After", RETRY_AFTER)
        self.end_headers()
        self.wfile.write(body.encode())
        return
    _serve(self)


def do_GET(self: base.Handler) -> None:
    """``/stats`` also says how many requests were refused (``rate_limited``)."""
    if self.path.rstrip("/") == "/stats":
        with base._lock:
            stats = {**base._stats, "rate_limited": _refused["count"]}
        self._send(200, json.dumps(stats))
        return
    base.Handler.do_GET_served(self)


base.Handler.do_GET_served = base.Handler.do_GET
base.Handler.do_POST = do_POST
base.Handler.do_GET = do_GET

if __name__ == "__main__":
    base.main()
