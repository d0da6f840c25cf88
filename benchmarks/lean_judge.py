"""A lean fake judge for throughput benchmarks: an OpenAI-compatible chat-completions endpoint
on 127.0.0.1 that answers every request with one fixed completion after ``latency`` seconds.

The tests' scripted server (``tests/judge_server.py``, aiohttp) parses and keeps every request
and builds every reply: 0.27 ms of CPU a call, and at 1,280 calls/s on a shared 2-core machine
its own loop's delays held a call 52.5 ms for a nominal 50. This one is an asyncio protocol: a
request's bytes are counted, not parsed past the head, and the reply's bytes are built once; a
timer (no task) sends it. It counts what the benchmarks read: requests, calls in flight (the
most, and now), and the seconds the calls were held (from a request's last byte to its reply).
"""

from __future__ import annotations

import asyncio
import json
import random
import threading
import time

MODEL = "judge-model"
#: The most a request's head (its request line and headers) may take.
HEAD_LIMIT = 65_536


def _response(status: str, body: dict, headers: dict[str, str]) -> bytes:
    payload = json.dumps(body).encode()
    head = [f"HTTP/1.1 {status}", "Content-Type: application/json"]
    head += [f"{name}: {value}" for name, value in headers.items()]
    head.append(f"Content-Length: {len(payload)}")
    return ("\r\n".join(head) + "\r\n\r\n").encode() + payload


def completion(content: str) -> bytes:
    """A chat completion whose message is ``content``, with usage."""
    return _response(
        "200 OK",
        {
            "id": "chatcmpl-lean",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": MODEL,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        },
        {},
    )


def rate_limited(retry_after: float) -> bytes:
    """A 429 with ``Retry-After`` and OpenAI's error body."""
    error = {"message": "Rate limit reached", "type": "rate_limit_error", "code": None}
    return _response("429 Too Many Requests", {"error": error}, {"Retry-After": f"{retry_after:g}"})


class _Connection(asyncio.Protocol):
    def __init__(self, judge: LeanJudge) -> None:
        self.judge = judge
        self.buffer = bytearray()
        self.needed: int | None = None  # the bytes of the request being read, head included
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while True:
            if self.needed is None:
                end = self.buffer.find(b"\r\n\r\n")
                if end < 0:
                    if len(self.buffer) > HEAD_LIMIT:
                        self.transport.close()  # type: ignore[union-attr]
                    return
                self.needed = end + 4 + _content_length(bytes(self.buffer[:end]))
            if len(self.buffer) < self.needed:
                return
            del self.buffer[: self.needed]
            self.needed = None
            self.judge.answer(self.transport)  # type: ignore[arg-type]


def _content_length(head: bytes) -> int:
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value)
    return 0


class LeanJudge:
    """The lean judge, served from a thread of its own; ``storm`` of the replies are 429s
    (``Retry-After`` ``storm_retry_after``), ``tail`` of them wait ``tail_latency``."""

    def __init__(
        self,
        latency: float,
        *,
        storm: float = 0.0,
        storm_retry_after: float = 0.05,
        tail: float = 0.0,
        tail_latency: float = 1.0,
    ) -> None:
        self.latency, self.storm, self.tail, self.tail_latency = latency, storm, tail, tail_latency
        self._ok = completion(json.dumps({"score": 1}))
        self._limited = rate_limited(storm_retry_after)
        self.requests = 0
        self._in_flight = 0
        self.max_in_flight = 0
        self.held_seconds = 0.0
        self.url = ""
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def answer(self, transport: asyncio.Transport) -> None:
        """Count a request read in full, and send its reply after the latency."""
        self.requests += 1
        self._in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self._in_flight)
        limited = self.storm and random.random() < self.storm
        slow = self.tail and random.random() < self.tail
        reply = self._limited if limited else self._ok
        latency = self.tail_latency if slow else self.latency
        loop = self._loop
        assert loop is not None
        loop.call_later(latency, self._sent, transport, reply, loop.time())

    def _sent(self, transport: asyncio.Transport, reply: bytes, read_at: float) -> None:
        self._in_flight -= 1
        self.held_seconds += self._loop.time() - read_at  # type: ignore[union-attr]
        if not transport.is_closing():
            transport.write(reply)

    def _serve(self, ready: threading.Event) -> None:
        loop = self._loop = asyncio.new_event_loop()
        server = loop.run_until_complete(
            loop.create_server(lambda: _Connection(self), "127.0.0.1", 0, backlog=1024)
        )
        port = server.sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}/v1"
        ready.set()
        try:
            loop.run_forever()
        finally:
            server.close()
            loop.close()

    def __enter__(self) -> LeanJudge:
        ready = threading.Event()
        self._thread = threading.Thread(
            target=self._serve, args=(ready,), name="lean-judge", daemon=True
        )
        self._thread.start()
        if not ready.wait(30):
            raise RuntimeError("the lean judge did not start within 30 s")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(10)
