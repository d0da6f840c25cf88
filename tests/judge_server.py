"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1 for judge tests and benchmarks.

Judge calls in tests go through litellm over real HTTP to this server, never to a patched function::

    from judge_server import JudgeServer, Reply, rate_limited

    with JudgeServer({"score": 0.5}) as server:
        scorer = create_scorer("s", judge=server.judge(instructions="Grade it.")) ...
        server.script(rate_limited(retry_after=1), Reply({"score": 1}))  # the next two requests
        server.on("Extract the claims", {"claims": []})              # requests whose text has this
        ...
        server.requests                                               # every request received

``tests/conftest.py`` gives every test module a fresh server as the ``judge_server`` fixture; a
module that imports ``judge_server_on_each_transport`` gets one per transport instead (its
judges use ``Judge(transport=...)``), so its tests run on both.
``Reply`` fields script anything else: latency, status and headers, usage, finish reason, a raw
(malformed) body, tool calls (``Reply(tool_calls=[{"name": "get_weather", "arguments": {...}}])``,
for agents); ``rate_limited``, ``server_error``, ``refused``, ``hanging`` and
``malformed_body`` are the common faults, and ``max_in_flight`` says how many requests were
answered at once.

How a request is answered: the next scripted reply if any (``script``), else the first rule
whose text occurs in the request's messages (``on``; its replies are used in order, the last one
repeats), else the default ``reply``. With none of these, the server answers 400 (not retried),
so a test that forgot a reply fails fast.

Standalone, e.g. for a benchmark in its own process (prints the base URL, then serves until
stdin closes or SIGTERM)::

    python tests/judge_server.py --latency 0.1 --reply '{"score": 1}'
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiohttp import web

#: Usage reported for each completion unless a reply says otherwise (as Mastra's mock judge).
DEFAULT_USAGE: Mapping[str, int] = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
MODEL = "mock-judge"
API_KEY = "sk-judge-server-test-key"
TRANSPORTS = ("http", "litellm")


@dataclass(frozen=True)
class Reply:
    """One scripted answer.

    :param content: the assistant message; a dict or list is sent as its JSON text.
    :param status: HTTP status; anything but 200 sends an OpenAI-style error body.
    :param headers: extra response headers (e.g. ``{"Retry-After": "1"}``).
    :param latency: seconds to wait before answering (overrides the server's latency).
    :param usage: the ``usage`` object to report; None leaves it out of the response.
    :param finish_reason: the choice's finish reason.
    :param body: a raw response body sent as is (e.g. malformed JSON), replacing everything else.
    :param model: the model name the response reports (default: the requested one).
    :param tool_calls: tool calls the assistant makes, ``{"name": ..., "arguments": {...}}`` each
        (``id`` optional); the finish reason becomes ``tool_calls`` unless given.
    :param drip: seconds between the body's bytes, sent one at a time (a server that holds a
        call open with a trickle of bytes); None sends the body at once.
    :param chunked: send the body in chunked transfer encoding, without a Content-Length.
    """

    content: Any = ""
    status: int = 200
    headers: Mapping[str, str] = field(default_factory=dict)
    latency: float | None = None
    usage: Mapping[str, Any] | None = field(default_factory=lambda: dict(DEFAULT_USAGE))
    finish_reason: str = "stop"
    body: str | None = None
    model: str | None = None
    tool_calls: tuple[Mapping[str, Any], ...] = ()
    drip: float | None = None
    chunked: bool = False

    @property
    def text(self) -> str:
        """The assistant message text."""
        if isinstance(self.content, str):
            return self.content
        return json.dumps(self.content)


def rate_limited(retry_after: float | None = 1, *, in_ms: bool = False) -> Reply:
    """A 429 with ``Retry-After`` (seconds) or ``retry-after-ms`` when ``in_ms``; None omits it."""
    headers = {}
    if retry_after is not None:
        if in_ms:
            headers["retry-after-ms"] = str(int(retry_after))
        else:
            headers["Retry-After"] = f"{retry_after:g}"
    return Reply(status=429, headers=headers)


def server_error(status: int = 500) -> Reply:
    """A 5xx answer with an OpenAI-style error body."""
    return Reply(status=status)


def refused(status: int = 401) -> Reply:
    """An authentication (401), permission (403) or bad-request (400) answer."""
    return Reply(status=status)


def hanging(seconds: float = 30.0) -> Reply:
    """A reply that takes ``seconds``: longer than the judge's timeout, so the call times out."""
    return Reply(content="too late", latency=seconds)


def malformed_body() -> Reply:
    """A 200 whose body is not JSON at all (a broken proxy, not a bad judge answer)."""
    return Reply(body="{this is not json")


_ERRORS = {
    400: ("invalid_request_error", "Bad request"),
    401: ("invalid_request_error", "Incorrect API key provided"),
    403: ("permission_denied", "You are not allowed to use this model"),
    404: ("not_found_error", "No such model"),
    429: ("rate_limit_exceeded", "Rate limit reached, slow down"),
}


@dataclass(frozen=True)
class ReceivedRequest:
    """A request as the server received it; ``time`` is ``time.monotonic()`` on arrival and
    ``client`` the client's (host, port): one per connection."""

    time: float
    path: str
    headers: Mapping[str, str]
    body: Any
    client: tuple[str, int] | None = None
    #: The URL's query string, without the ``?``.
    query: str = ""

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages", [])) if isinstance(self.body, dict) else []

    @property
    def system(self) -> str:
        """The system messages' text."""
        return "\n".join(_text(m) for m in self.messages if m.get("role") == "system")

    @property
    def prompt(self) -> str:
        """The user messages' text."""
        return "\n".join(_text(m) for m in self.messages if m.get("role") == "user")

    @property
    def response_format(self) -> Any:
        return self.body.get("response_format") if isinstance(self.body, dict) else None

    @property
    def model(self) -> str | None:
        return self.body.get("model") if isinstance(self.body, dict) else None


def _text(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content or "")


#: A reply worked out from the request (``on(match, answer)``): a ``Reply`` or its content.
Answer = Callable[["ReceivedRequest"], "Reply | str | Mapping[str, Any] | list"]


def _as_reply(value: Reply | str | Mapping[str, Any] | list | Answer) -> Reply | Answer:
    return value if isinstance(value, Reply) or callable(value) else Reply(content=value)


class _Rule:
    def __init__(self, match: str | Callable[[ReceivedRequest], bool], replies: list[Reply]):
        self.match = match
        self.replies = replies
        self.used = 0

    def matches(self, request: ReceivedRequest) -> bool:
        if callable(self.match):
            return bool(self.match(request))
        return any(self.match in _text(m) for m in request.messages)

    def next_reply(self, request: ReceivedRequest) -> Reply:
        reply = self.replies[min(self.used, len(self.replies) - 1)]
        self.used += 1
        return _as_reply(reply(request)) if callable(reply) else reply


class JudgeServer:
    """An OpenAI-compatible ``POST /v1/chat/completions`` endpoint on 127.0.0.1, in a thread.

    :param reply: the default answer (a ``Reply``, or content: text, dict or list).
    :param latency: seconds every answer waits unless its ``Reply`` says otherwise.
    :param port: 0 picks a free port.
    :param transport: the ``transport`` of the judges ``judge()`` makes (None: the default).
    """

    def __init__(
        self,
        reply: Reply | str | Mapping[str, Any] | list | None = None,
        *,
        latency: float = 0.0,
        port: int = 0,
        transport: str | None = None,
    ) -> None:
        self.reply = reply
        self.latency = latency
        self.port = port
        self.transport = transport
        self._script: deque[Reply] = deque()
        self._rules: list[_Rule] = []
        self._requests: list[ReceivedRequest] = []
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._in_flight = 0
        #: The most requests this server was answering at once.
        self.max_in_flight = 0
        #: Seconds the requests were answered for, in all (from their arrival to their reply).
        self.held_seconds = 0.0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._startup_error: BaseException | None = None

    # --- scripting ---------------------------------------------------------------------------

    def script(self, *replies: Reply | str | Mapping[str, Any] | list) -> JudgeServer:
        """Answer the next requests, in order, with ``replies`` (before rules and default)."""
        with self._lock:
            self._script.extend(_as_reply(r) for r in replies)
        return self

    def on(
        self,
        match: str | Callable[[ReceivedRequest], bool],
        *replies: Reply | str | Mapping[str, Any] | list | Answer,
    ) -> JudgeServer:
        """Answer requests containing ``match`` (or for which it returns true) with ``replies``.

        The replies are used in order; the last one repeats. A reply may be a function of the
        request (``Answer``), called in the server's thread for each request it answers.
        """
        if not replies:
            raise ValueError("on() needs at least one reply")
        with self._lock:
            self._rules.append(_Rule(match, [_as_reply(r) for r in replies]))
        return self

    def reset(self) -> None:
        """Forget scripts, rules, the default reply, the requests received, max_in_flight and
        held_seconds."""
        with self._lock:
            self._script.clear()
            self._rules.clear()
            self._requests.clear()
            self._reply = None
            self.max_in_flight = 0
            self.held_seconds = 0.0

    @property
    def reply(self) -> Reply | None:
        """The default answer; set it to a ``Reply``, to content, or to None for none."""
        return self._reply

    @reply.setter
    def reply(self, value: Reply | str | Mapping[str, Any] | list | None) -> None:
        self._reply = None if value is None else _as_reply(value)

    @property
    def requests(self) -> list[ReceivedRequest]:
        """Every request received so far, in arrival order."""
        with self._lock:
            return list(self._requests)

    @property
    def url(self) -> str:
        """The OpenAI-style base URL (``api_base``)."""
        return f"http://127.0.0.1:{self.port}/v1"

    def judge(self, model: str = f"openai/{MODEL}", **settings: Any):
        """An ``evaldag.Judge`` that talks to this server (through ``transport``, if set)."""
        from evaldag import Judge

        if self.transport is not None:
            settings.setdefault("transport", self.transport)
        return Judge(model, api_base=self.url, api_key=API_KEY, **settings)

    # --- serving -------------------------------------------------------------------------------

    def _next_reply(self, request: ReceivedRequest) -> Reply | None:
        if self._script:
            return self._script.popleft()
        for rule in self._rules:
            if rule.matches(request):
                return rule.next_reply(request)
        return self._reply

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        peer = request.transport.get_extra_info("peername") if request.transport else None
        received = ReceivedRequest(
            time.monotonic(),
            request.path,
            dict(request.headers),
            body,
            peer and tuple(peer[:2]),
            request.query_string,
        )
        with self._lock:
            self._requests.append(received)
            reply = self._next_reply(received)
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
        try:
            response = await self._answer(received, reply)
            if reply is not None and (reply.drip is not None or reply.chunked):
                return await _streamed(request, response, reply)
            return response
        finally:
            with self._lock:
                self._in_flight -= 1
                self.held_seconds += time.monotonic() - received.time

    async def _answer(self, received: ReceivedRequest, reply: Reply | None) -> web.StreamResponse:
        if reply is None:
            return _error_response(400, "JudgeServer has no reply scripted for this request", {})
        latency = self.latency if reply.latency is None else reply.latency
        if latency > 0:
            await asyncio.sleep(latency)
        if reply.body is not None:
            return web.Response(
                status=reply.status,
                text=reply.body,
                content_type="application/json",
                headers=reply.headers,
            )
        if reply.status != 200:
            return _error_response(reply.status, None, reply.headers)
        message: dict[str, Any] = {"role": "assistant", "content": reply.text}
        finish_reason = reply.finish_reason
        if reply.tool_calls:
            message["content"] = reply.text or None
            message["tool_calls"] = [
                {
                    "id": call.get("id", f"call_{next(self._ids)}"),
                    "type": "function",
                    "function": {
                        "name": call["name"],
                        "arguments": json.dumps(call.get("arguments", {})),
                    },
                }
                for call in reply.tool_calls
            ]
            finish_reason = "tool_calls" if finish_reason == "stop" else finish_reason
        completion = {
            "id": f"chatcmpl-{next(self._ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": reply.model or received.model or MODEL,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": finish_reason,
                }
            ],
        }
        if reply.usage is not None:
            completion["usage"] = dict(reply.usage)
        return web.json_response(completion, headers=reply.headers)

    def _serve(self, ready: threading.Event) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._handle)
        app.router.add_post("/chat/completions", self._handle)
        runner = web.AppRunner(
            app, access_log=None, handler_cancellation=True, shutdown_timeout=0.1
        )
        try:
            loop.run_until_complete(runner.setup())
            site = web.TCPSite(runner, "127.0.0.1", self.port, backlog=1024)
            loop.run_until_complete(site.start())
            self.port = runner.addresses[0][1]
        except BaseException as error:  # reported by start()
            self._startup_error = error
            ready.set()
            loop.close()
            return
        ready.set()
        try:
            loop.run_forever()
        finally:
            loop.run_until_complete(runner.cleanup())
            loop.close()

    def start(self) -> JudgeServer:
        """Start serving in a daemon thread; returns once the port is bound."""
        ready = threading.Event()
        self._thread = threading.Thread(
            target=self._serve, args=(ready,), name="judge-server", daemon=True
        )
        self._thread.start()
        ready.wait(30)
        if self._startup_error is not None:
            raise RuntimeError("JudgeServer could not start") from self._startup_error
        return self

    def stop(self) -> None:
        """Stop serving and join the thread."""
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(30)
            self._thread = None

    def __enter__(self) -> JudgeServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


async def _streamed(
    request: web.Request, response: web.Response, reply: Reply
) -> web.StreamResponse:
    """``response``'s body sent a byte every ``reply.drip`` seconds, or in chunks."""
    body = response.body or b""
    stream = web.StreamResponse(
        status=response.status, headers={"Content-Type": response.content_type, **reply.headers}
    )
    if reply.chunked:
        stream.enable_chunked_encoding()
    else:
        stream.content_length = len(body)
    await stream.prepare(request)
    size = 1 if reply.drip is not None else 65_536
    for start in range(0, len(body), size):
        await stream.write(body[start : start + size])
        if reply.drip is not None:
            await asyncio.sleep(reply.drip)
    await stream.write_eof()
    return stream


def _error_response(status: int, message: str | None, headers: Mapping[str, str]) -> web.Response:
    kind, default_message = _ERRORS.get(status, ("server_error", "The server had an error"))
    return web.json_response(
        {"error": {"message": message or default_message, "type": kind, "code": kind}},
        status=status,
        headers=headers,
    )


@pytest.fixture(name="judge_server")
def judge_server_fixture() -> Iterator[JudgeServer]:
    """A fresh server per test, as fixture ``judge_server`` (``tests/conftest.py`` registers it)."""
    with JudgeServer() as server:
        yield server


@pytest.fixture(name="judge_server", params=TRANSPORTS)
def judge_server_on_each_transport(request: pytest.FixtureRequest) -> Iterator[JudgeServer]:
    """A fresh server per test and transport; ``server.transport`` says which."""
    with JudgeServer(transport=request.param) as server:
        yield server


def main(argv: list[str] | None = None) -> None:
    """Serve one default reply until stdin closes or SIGTERM; print the base URL first."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reply", default='{"score": 1}', help="JSON value or text to answer")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds per answer")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    try:
        content = json.loads(args.reply)
    except ValueError:
        content = args.reply
    server = JudgeServer(content, latency=args.latency, port=args.port).start()
    print(server.url, flush=True)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    threading.Thread(target=lambda: (sys.stdin.read(), done.set()), daemon=True).start()
    done.wait()
    server.stop()


if __name__ == "__main__":
    main()
