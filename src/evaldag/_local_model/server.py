"""The local judge's server: llama.cpp (xllamacpp) behind an OpenAI-compatible API on 127.0.0.1.

Runs in a process of its own, which :mod:`evaldag.local_judge` starts and stops. It serves
``GET /v1/models``, ``GET /health`` and ``POST /v1/chat/completions`` (no streaming). A request's
``response_format`` (OpenAI's ``json_schema``, or llama.cpp's ``json_object`` with a ``schema``)
becomes an LLGuidance grammar, so the reply is JSON that matches the schema: written compactly
(``{"a": 1, "b": [2, 3]}``), because SmolLM2 given room for indentation spends a third more tokens
and loops more. Requests beyond llama.cpp's slots wait in its queue.

The process exits when its parent closes its stdin, so it never outlives the parent, even one
killed by SIGKILL.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import sys
import threading
from typing import Any

from aiohttp import web

#: How the grammar lays out JSON: one space after ``,`` and ``:``, no newlines or indentation.
COMPACT_JSON = {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "}
#: llama-cpp-python's default, which the local judge used before: at 1.0 (llama.cpp's default)
#: SmolLM2 repeats the same claim until max_tokens in about one answer in four.
REPEAT_PENALTY = 1.1


def chat_request(body: Any) -> dict[str, Any]:
    """``body`` as llama.cpp takes it: ``response_format`` replaced by a compact-JSON grammar.

    :raises ValueError: the body is not a JSON object, asks for streaming, offers tools, or
        has a ``response_format`` this server cannot enforce.
    """
    if not isinstance(body, dict):
        raise ValueError("the request body must be a JSON object")
    if body.get("stream"):
        raise ValueError("the local judge does not stream: send stream=false")
    if body.get("tools"):
        # llama.cpp leaves them out of the prompt: the model would answer in prose, silently.
        raise ValueError("tools are not supported: the local judge's model does not call tools")
    request = dict(body)
    response_format = request.pop("response_format", None) or {"type": "text"}
    kind = response_format.get("type") if isinstance(response_format, dict) else None
    if kind == "json_schema":
        spec = response_format.get("json_schema")
        schema = spec.get("schema") if isinstance(spec, dict) else None
    elif kind == "json_object":
        schema = response_format.get("schema", {})
    elif kind == "text":
        return request
    else:
        raise ValueError(
            f"response_format type {kind!r} is not supported: use 'json_schema' (with "
            "json_schema.schema), 'json_object' (optionally with a schema) or 'text'"
        )
    if not isinstance(schema, dict):
        raise ValueError(f"response_format {kind!r} needs its JSON schema as an object")
    layout = {**COMPACT_JSON, **schema.get("x-guidance", {})}
    request["grammar"] = "%llguidance {}\nstart: %json " + json.dumps(
        {**schema, "x-guidance": layout}
    )
    return request


def _engine(args: argparse.Namespace) -> Any:
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = args.model
    params.model_alias = [args.alias]
    params.n_parallel = args.slots
    params.n_ctx = args.context * args.slots  # each slot gets its share of the context
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads_batch
    params.sampling.penalty_repeat = REPEAT_PENALTY
    params.verbosity = 1  # errors only: a line per request would fill the log of a long run
    params.ui = False
    # llama.cpp also listens on a port of its own; a random key keeps everyone out of it.
    params.hostnames = ["127.0.0.1"]
    params.port = 0
    params.api_keys = [secrets.token_hex(16)]
    return xllamacpp.Server(params)


def _app(engine: Any, alias: str) -> web.Application:
    async def models(_: web.Request) -> web.Response:
        model = {"id": alias, "object": "model", "owned_by": "evaldag"}
        return web.json_response({"object": "list", "data": [model]})

    async def health(_: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    async def chat_completions(request: web.Request) -> web.Response:
        try:
            body = chat_request(await request.json())
            reply = await asyncio.to_thread(engine.handle_chat_completions, body)
        except ValueError as error:  # also what xllamacpp raises for a malformed request
            return _error(400, str(error))
        failure = reply.get("error")
        if failure is not None:
            status = failure.get("code") if isinstance(failure.get("code"), int) else 500
            return web.json_response(reply, status=status)
        return web.json_response({**reply, "model": alias})

    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_get("/v1/models", models)
    app.router.add_get("/health", health)
    app.router.add_post("/v1/chat/completions", chat_completions)
    return app


def _error(status: int, message: str) -> web.Response:
    body = {"error": {"code": status, "message": message, "type": "invalid_request_error"}}
    return web.json_response(body, status=status)


def _exit_on_stdin_eof() -> None:
    sys.stdin.buffer.read()
    os._exit(0)


def main(argv: list[str] | None = None) -> None:
    """Load the model, then serve until the parent closes stdin."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="path of the GGUF file")
    parser.add_argument("--alias", required=True, help="the model's name in the API")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--slots", type=int, default=1, help="requests decoded together")
    parser.add_argument("--threads", type=int, default=1, help="threads that decode")
    parser.add_argument("--threads-batch", type=int, default=1, help="threads for prompts")
    parser.add_argument("--context", type=int, default=8192, help="tokens per slot")
    args = parser.parse_args(argv)
    threading.Thread(target=_exit_on_stdin_eof, name="evaldag-parent-watch", daemon=True).start()
    engine = _engine(args)
    web.run_app(
        _app(engine, args.alias), host="127.0.0.1", port=args.port, print=None, access_log=None
    )


if __name__ == "__main__":
    main()
