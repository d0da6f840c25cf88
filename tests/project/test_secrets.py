"""Secrets never leak: an API key given to a judge or found in the environment stays out of
every output.

A run scores items through the loopback judge server with a key that is unique to this test
session, then every output is searched for it: the Parquet results and checkpoint files, the
HTML report, the result and its items, judge records, the reply cache (its keys and file),
logs at DEBUG (litellm's included, with its verbose printing on), what was printed, the CLI's
output, and the errors of a judge that refuses the key (401) with a body that echoes it back,
as some providers and proxies do. Each test first checks that the server did receive the key,
so a test cannot pass because the key was never used.
"""

from __future__ import annotations

import contextlib
import io
import json
import pickle
import traceback
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qsl, quote

import pytest
from judge_server import TRANSPORTS, JudgeServer, Reply, rate_limited

from evaldag import (
    EvalDagError,
    EvalResult,
    Judge,
    UntrustworthyRunError,
    create_scorer,
    run_evals,
)
from evaldag._cli.main import main as cli_main
from evaldag._report.html import report_html, write_report
from evaldag.scorers import faithfulness

JUDGE_KEY = f"sk-judge-{uuid.uuid4().hex}"
ENVIRONMENT_KEY = f"sk-environment-{uuid.uuid4().hex}"
SECRETS = (JUDGE_KEY, ENVIRONMENT_KEY)
CONTEXT = ["Bern is the capital of Switzerland."]
DATA = [
    {"input": "What is the capital?", "output": "Bern is the capital."},
    {"input": "And the river?", "output": "The Aare."},
    {"input": "Anything else?", "output": "Bern is in Switzerland."},
]
EVAL_FILE = """\
from evaldag import Judge
from evaldag.scorers import faithfulness

judge = Judge(
    "openai/mock-judge", api_base={url!r}, cache=False, max_retries=0, transport={transport!r}
)
scorers = [faithfulness(judge, context={context!r})]
"""


def _clean(where: str, content: str | bytes, secrets: tuple[str, ...] = SECRETS) -> None:
    """``content`` holds none of ``secrets`` (nor the random part of any)."""
    text = content.decode("latin-1") if isinstance(content, bytes) else content
    for secret in secrets:
        for part in (secret, secret.rsplit("-", 1)[1]):
            assert part not in text, f"a key leaked into {where}"


def _clean_files(folder: Path, secrets: tuple[str, ...] = SECRETS) -> None:
    for path in folder.rglob("*"):
        if path.is_file():
            _clean(str(path), path.read_bytes(), secrets)


def _clean_result(where: str, result: EvalResult) -> None:
    _clean(f"{where}: items", result.items.to_json(default_handler=str))
    _clean(f"{where}: result", json.dumps(result.to_dict()) + repr(result))
    _clean(f"{where}: usage and definitions", json.dumps(result.model_dump(exclude={"items"})))
    _clean(f"{where}: report", report_html(result))


def _clean_error(where: str, error: BaseException) -> None:
    """The error, its details, snapshot, causes and traceback, and its pickled form."""
    _clean(f"{where}: traceback", "".join(traceback.format_exception(error)))
    _clean(f"{where}: pickle", pickle.dumps(error))
    chain: BaseException | None = error
    seen = set()
    while chain is not None and id(chain) not in seen:
        seen.add(id(chain))
        _clean(f"{where}: {type(chain).__name__}", f"{chain!s} {chain!r} {vars(chain)!r}")
        if isinstance(chain, EvalDagError):
            _clean(f"{where}: to_dict", json.dumps(chain.to_dict(), default=str))
        snapshot = getattr(chain, "result", None)
        if snapshot is not None:
            _clean(f"{where}: snapshot", json.dumps(snapshot.to_dict(), default=str))
        chain = chain.__cause__ or chain.__context__


def _faithfulness_replies(server: JudgeServer) -> None:
    server.reply = "The score is 1 because the context says so."
    server.on("List every claim", {"claims": ["Bern is the capital"]})
    verdict = {"claim": "Bern is the capital", "verdict": "yes", "reason": "It says so."}
    server.on("Check each claim", {"verdicts": [verdict]})


def _keys_received(server: JudgeServer) -> set[str]:
    return {r.headers.get("Authorization", "").removeprefix("Bearer ") for r in server.requests}


def _refusal(key: str) -> Reply:
    """A 401 whose body echoes the key, as some providers and proxies do."""
    body = {"error": {"message": f"Incorrect API key provided: {key}", "code": "invalid_api_key"}}
    return Reply(status=401, body=json.dumps(body))


@pytest.fixture
def key_in_environment(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", ENVIRONMENT_KEY)


@pytest.fixture(params=TRANSPORTS)
def server(request) -> Iterator[JudgeServer]:
    """The judge server; every test runs once per transport (``server.transport``)."""
    with JudgeServer(transport=request.param) as running:
        _faithfulness_replies(running)
        yield running


@pytest.mark.parametrize("source", ["judge", "environment"])
def test_a_key_stays_out_of_every_output(
    source, server, tmp_path, capfd, everything_logged, key_in_environment
):
    key = JUDGE_KEY if source == "judge" else ENVIRONMENT_KEY
    settings = {"api_key": JUDGE_KEY} if source == "judge" else {}
    judge = Judge(
        "openai/mock-judge",
        api_base=server.url,
        cache=tmp_path / "cache",
        transport=server.transport,
        **settings,
    )
    scorer = faithfulness(judge, context=CONTEXT)
    seen = []

    def on_item_complete(item, output, scorer_results):
        seen.append(json.dumps({k: r.to_dict() for k, r in scorer_results.items()}, default=str))

    first = run_evals(
        DATA,
        scorers=[scorer.with_threshold(0.5)],
        out=tmp_path / "out" / "results.parquet",
        checkpoint=tmp_path / "out" / "checkpoint.parquet",
        on_item_complete=on_item_complete,
        batch_size=2,
    )
    assert _keys_received(server) == {key}  # the key was used
    again = run_evals(DATA, scorers=[scorer], out=tmp_path / "out" / "cached.parquet")
    assert again.usage == {}  # every reply came from the cache
    write_report(first, tmp_path / "out" / "report.html")

    assert first.scores == {"faithfulness-scorer": 1.0}
    _clean_result("first run", first)
    _clean_result("cached run", again)
    _clean("on_item_complete", "".join(seen))
    _clean_files(tmp_path / "out")
    _clean_files(tmp_path / "cache")
    _clean("the judge", f"{judge!r} {judge} {judge.model_dump_json()} {scorer.judge!r}")
    _clean("logs", everything_logged())
    printed = capfd.readouterr()
    _clean("stdout and stderr", printed.out + printed.err)


def test_a_checkpoint_of_an_interrupted_run_holds_no_key(server, tmp_path, everything_logged):
    judge = Judge(
        "openai/mock-judge",
        api_base=server.url,
        api_key=JUDGE_KEY,
        cache=False,
        transport=server.transport,
    )
    server.on("Anything else", _refusal(JUDGE_KEY))
    with pytest.raises(EvalDagError) as raised:
        run_evals(
            DATA,
            scorers=[faithfulness(judge, context=CONTEXT)],
            checkpoint=tmp_path / "run.parquet",
            on_error="raise",
            batch_size=2,
        )
    assert list((tmp_path / "run.parquet.partial").glob("batch-*.parquet"))  # one batch saved
    _clean_files(tmp_path)
    _clean_error("run_evals(on_error='raise')", raised.value)
    _clean("logs", everything_logged())


@pytest.mark.parametrize(
    "source",
    [
        "judge",
        "environment",
    ],
)
def test_a_refused_key_stays_out_of_the_errors(
    source, server, tmp_path, everything_logged, key_in_environment
):
    key = JUDGE_KEY if source == "judge" else ENVIRONMENT_KEY
    settings = {"api_key": JUDGE_KEY} if source == "judge" else {}
    judge = Judge(
        "openai/mock-judge",
        api_base=server.url,
        cache=False,
        max_retries=0,
        transport=server.transport,
        **settings,
    )
    scorer = faithfulness(judge, context=CONTEXT)
    server.reset()
    server.reply = _refusal(key)

    with pytest.raises(UntrustworthyRunError) as untrustworthy:  # it failed on every item
        run_evals(DATA[:1], scorers=[scorer], out=tmp_path / "out.parquet")
    _clean_error("run_evals (every item failed)", untrustworthy.value)
    recorded = untrustworthy.value.result
    assert _keys_received(server) == {key}
    assert "401" in recorded.items["faithfulness-scorer.error"].iloc[0]
    _clean_result("recorded 401", recorded)
    _clean_files(tmp_path)
    with pytest.raises(EvalDagError) as raised:
        run_evals(DATA[:1], scorers=[scorer], on_error="raise")
    _clean_error("run_evals(on_error='raise')", raised.value)
    with pytest.raises(EvalDagError) as raised:
        scorer.run(input="q", output="a")
    _clean_error("scorer.run", raised.value)
    _clean("logs", everything_logged())


def test_the_cli_prints_and_writes_no_key(server, tmp_path, capfd, key_in_environment):
    eval_file = tmp_path / "judged.py"
    eval_file.write_text(
        EVAL_FILE.format(url=server.url, context=CONTEXT, transport=server.transport)
    )
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(item) + "\n" for item in DATA))
    out = tmp_path / "results.parquet"
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = cli_main(["run", str(eval_file), "--data", str(data), "--out", str(out)])
    assert code == 0, stderr.getvalue()
    assert _keys_received(server) == {ENVIRONMENT_KEY}
    _clean("evaldag run's output", stdout.getvalue() + stderr.getvalue())
    printed = capfd.readouterr()
    _clean("stdout and stderr", printed.out + printed.err)
    _clean_files(tmp_path)


HEADER_TOKEN = f"hdr-{uuid.uuid4().hex}"
URL_PASSWORD = f"pw-{uuid.uuid4().hex}"


def _no_part(where: str, text: str, secret: str) -> None:
    """Not the secret, nor any first 8 or more characters of it."""
    for size in range(8, len(secret) + 1):
        assert secret[:size] not in text, f"{size} characters of a secret leaked into {where}"


def _error_text(error: BaseException) -> str:
    parts = ["".join(traceback.format_exception(error))]
    if isinstance(error, EvalDagError):
        parts.append(json.dumps(error.to_dict(), default=str))
    snapshot = getattr(error, "result", None)
    if snapshot is not None:
        parts.append(json.dumps(snapshot.to_dict(), default=str))
    return "\n".join(parts)


@pytest.mark.parametrize("padding", [380, 420, 440, 455, 470])
def test_a_key_echoed_at_the_cut_leaves_not_even_a_prefix(server, everything_logged, padding):
    body = {"error": {"message": "p" * padding + f"Incorrect API key provided: {JUDGE_KEY}"}}
    server.reset()
    server.reply = Reply(status=401, body=json.dumps(body))
    judge = Judge(
        "openai/mock-judge", api_base=server.url, api_key=JUDGE_KEY, cache=False, max_retries=0
    )
    with pytest.raises(EvalDagError) as raised:
        faithfulness(judge, context=CONTEXT).run(input="q", output="a")
    text = _error_text(raised.value)
    assert "Incorrect API key provided" in text  # the server's words are shown
    _no_part("the error", text, JUDGE_KEY)
    _no_part("the logs", everything_logged(), JUDGE_KEY)


def test_header_values_stay_out_of_errors_and_logs(server, everything_logged):
    echoed = f"the gateway token {HEADER_TOKEN} is wrong"
    server.reset()
    server.reply = Reply(status=403, body=json.dumps({"error": {"message": echoed}}))
    judge = Judge(
        "openai/mock-judge",
        api_base=server.url,
        api_key="sk-anything-long",
        cache=False,
        max_retries=0,
        extra_headers={"X-Gateway-Auth": f"Bearer {HEADER_TOKEN}"},
    )
    with pytest.raises(EvalDagError) as raised:
        faithfulness(judge, context=CONTEXT).run(input="q", output="a")
    assert server.requests[0].headers.get("X-Gateway-Auth") == f"Bearer {HEADER_TOKEN}"
    assert "the gateway token" in raised.value.message
    _no_part("the error", _error_text(raised.value), HEADER_TOKEN)
    _no_part("the logs", everything_logged(), HEADER_TOKEN)


def test_url_credentials_stay_out_of_errors_and_logs(server, everything_logged):
    host = server.url.split("://", 1)[1]
    judge = Judge(
        "openai/mock-judge",
        api_base=f"http://evaldag-user:{URL_PASSWORD}@{host}?api-key={HEADER_TOKEN}",
        cache=False,
        max_retries=0,
    )
    with pytest.raises(EvalDagError) as raised:
        faithfulness(judge, context=CONTEXT).run(input="q", output="a")
    for secret in (URL_PASSWORD, HEADER_TOKEN):
        _no_part("the error", _error_text(raised.value), secret)
        _no_part("the logs", everything_logged(), secret)


@pytest.mark.parametrize(
    ("model", "authorization"),
    [
        ("openai/mock-judge", {"api_key": JUDGE_KEY}),
        ("hosted_vllm/mock-judge", {"extra_headers": {"authorization": f"Bearer {HEADER_TOKEN}"}}),
    ],
)
def test_url_credentials_beside_an_authorization_header_are_named_on_http(model, authorization):
    with JudgeServer(transport="http") as server:
        host = server.url.split("://", 1)[1]
        judge = Judge(
            model,
            api_base=f"http://evaldag-user:{URL_PASSWORD}@{host}",
            cache=False,
            max_retries=0,
            transport="http",
            **authorization,
        )
        with pytest.raises(EvalDagError) as raised:
            faithfulness(judge, context=CONTEXT).run(input="q", output="a")
        assert server.requests == []  # refused before sending, not retried
    message = raised.value.message
    assert f"api_base 'http://**********@{host}'" in message
    assert "remove user:password@ from api_base" in message
    assert "Cannot combine" not in message
    for secret in (URL_PASSWORD, JUDGE_KEY, HEADER_TOKEN):
        _no_part("the error", _error_text(raised.value), secret)


QUERY_KEY = f"qk-{uuid.uuid4().hex}"
AZURE_CODE = f"code-{uuid.uuid4().hex}"
AZURE_SIG = f"sig-{uuid.uuid4().hex}+/="  # percent-encoded in the URL
QUERY_SECRETS = (QUERY_KEY, AZURE_CODE, AZURE_SIG, quote(AZURE_SIG, safe=""))
QUERY_EVAL_FILE = """\
from evaldag import Judge
from evaldag.scorers import faithfulness

judge = Judge(
    "openai/mock-judge", api_base={api_base!r}, api_key="sk-anything-long", cache=False,
    transport={transport!r},
)
scorers = [faithfulness(judge, context={context!r})]
"""


def _with_secret_query(url: str) -> str:
    return f"{url}?api-key={QUERY_KEY}&code={AZURE_CODE}&sig={quote(AZURE_SIG, safe='')}"


def test_an_api_base_query_stays_out_of_every_output(server, tmp_path, capfd):
    """The endpoint the adaptive limit names (usage.judge_limits) once held the raw api_base:
    results, checkpoint, store, evaldag run's output and the reports."""
    given, written = tmp_path / "given", tmp_path / "written"
    given.mkdir()
    written.mkdir()
    eval_file, data = given / "judged.py", given / "data.jsonl"
    api_base = _with_secret_query(server.url)
    eval_file.write_text(
        QUERY_EVAL_FILE.format(api_base=api_base, context=CONTEXT, transport=server.transport)
    )
    data.write_text("".join(json.dumps(item) + "\n" for item in DATA))
    out, store = written / "results.parquet", written / "scores.db"
    server.script(rate_limited(retry_after=0.05))  # the limit halves: the summary names it
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        run = ["run", str(eval_file), "--data", str(data), "--out", str(out), "--resume"]
        assert cli_main([*run, "--store", str(store)]) == 0, stderr.getvalue()
        assert cli_main(["report", str(out), "--out", str(written / "report.html")]) == 0
        assert cli_main(["report", str(store), "--out", str(written / "stored.html")]) == 0
    sent = {tuple(parse_qsl(r.query)) for r in server.requests}
    assert sent == {tuple(parse_qsl(api_base.split("?", 1)[1]))}  # the query was used
    (limit,) = EvalResult.read_parquet(out).usage["total"].judge_limits
    assert limit.endpoint == (
        f"openai/mock-judge at {server.url}?api-key=**********&code=**********&sig=**********"
    )
    assert "judge limit for openai/mock-judge at" in stdout.getvalue()
    _clean("evaldag's output", stdout.getvalue() + stderr.getvalue(), QUERY_SECRETS)
    printed = capfd.readouterr()
    _clean("stdout and stderr", printed.out + printed.err, QUERY_SECRETS)
    assert {p.name for p in written.iterdir()} >= {"report.html", "stored.html", "scores.db"}
    _clean_files(written, QUERY_SECRETS)


@pytest.mark.parametrize("echoed", ["decoded", "encoded"])
def test_every_query_value_of_an_api_base_stays_out_of_errors(server, everything_logged, echoed):
    """Azure's ?code= and ?sig= are keys whatever their names; a server may echo a value
    percent-decoded or as the URL has it."""
    sig = AZURE_SIG if echoed == "decoded" else quote(AZURE_SIG, safe="")
    message = f"code {AZURE_CODE} with signature {sig} is not valid"
    server.reset()
    server.reply = Reply(status=403, body=json.dumps({"error": {"message": message}}))
    judge = Judge(
        "openai/mock-judge",
        api_base=_with_secret_query(server.url),
        api_key="sk-anything-long",
        cache=False,
        max_retries=0,
        transport=server.transport,
    )
    with pytest.raises(EvalDagError) as raised:
        faithfulness(judge, context=CONTEXT).run(input="q", output="a")
    assert server.requests  # the call was made, and refused
    assert "is not valid" in raised.value.message
    shown = f"{judge!r} {judge.model_dump_json()}"
    for secret in QUERY_SECRETS:
        _no_part("the error", _error_text(raised.value), secret)
        _no_part("the logs", everything_logged(), secret)
        _no_part("the judge", shown, secret)


STORE_PASSWORD = f"pw-{uuid.uuid4().hex}"


def test_a_store_url_with_a_password_in_its_query_stays_out_of_errors_and_output(capfd):
    """PostgreSQL takes ?password=; the store's URL is shown with every query value masked."""
    url = f"postgresql://evaldag@127.0.0.1:9/scores?password={STORE_PASSWORD}&sslmode=disable"
    secrets = (STORE_PASSWORD,)
    scorer = create_scorer("constant").generate_score(lambda run: 1)
    with pytest.raises(EvalDagError) as raised:  # nothing listens on port 9
        run_evals(DATA, scorers=[scorer], store=url)
    assert raised.value.id == "EVALDAG_STORE_FAILED"
    assert "postgresql://**********@127.0.0.1:9/scores?password=**********" in str(raised.value)
    _clean("the error", _error_text(raised.value), secrets)
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        assert cli_main(["report", url]) != 0
    assert "127.0.0.1:9" in stderr.getvalue()
    _clean("evaldag report's output", stdout.getvalue() + stderr.getvalue(), secrets)
    printed = capfd.readouterr()
    _clean("stdout and stderr", printed.out + printed.err, secrets)


def test_url_credentials_beside_a_key_stop_the_run_before_any_call(tmp_path, capsys, monkeypatch):
    """A judge configuration error, not a step error on every item: run_evals and the CLI stop
    before the first call (exit 3) naming the scorer, the setting and the fix, even where most
    items would never reach the judge (not scorable) and the rest would make a verdict."""
    monkeypatch.setenv("HOSTED_VLLM_API_KEY", ENVIRONMENT_KEY)  # the key may come from there
    with JudgeServer(transport="http") as server:
        host = server.url.split("://", 1)[1]
        api_base = f"http://evaldag-user:{URL_PASSWORD}@{host}"
        data = [{**DATA[0], "contexts": CONTEXT}, *({**item, "contexts": []} for item in DATA)]
        judge = Judge("hosted_vllm/mock-judge", api_base=api_base, transport="http")
        with pytest.raises(EvalDagError) as raised:
            run_evals(  # the gate passes: this run was 'passed', its judge never reached
                data,
                scorers=[faithfulness(judge, context="contexts")],
                gates=[create_scorer("answered").generate_score(lambda run: 1.0)],
            )
        path = tmp_path / "eval_credentials.py"
        path.write_text(
            EVAL_FILE.replace("openai/mock-judge", "hosted_vllm/mock-judge").format(
                url=api_base, transport="http", context=CONTEXT
            )
        )
        items = tmp_path / "items.jsonl"
        items.write_text("".join(json.dumps(item) + "\n" for item in DATA))
        assert cli_main(["run", str(path), "--data", str(items)]) == 3
        assert server.requests == []
    error = raised.value
    assert error.id == "EVALDAG_INVALID_JUDGE" and error.category == "USER"
    assert error.message.startswith(
        f"the judge of faithfulness-scorer (hosted_vllm/mock-judge): api_base "
        f"'http://**********@{host}' holds a user and password"
    )
    assert "remove user:password@ from api_base" in error.message
    printed = capsys.readouterr().err
    assert printed.startswith("evaldag: error: the judge of faithfulness-scorer")
    for secret in (URL_PASSWORD, ENVIRONMENT_KEY):
        _no_part("the error", _error_text(error) + printed, secret)


def test_an_agents_model_with_credentials_twice_stops_the_run_before_any_call():
    import evaldag

    with JudgeServer(transport="http") as server:
        host = server.url.split("://", 1)[1]
        model = Judge(
            "openai/mock-judge", api_base=f"http://u:{URL_PASSWORD}@{host}", api_key=JUDGE_KEY
        )
        with pytest.raises(EvalDagError) as raised:
            run_evals(
                [{"input": item["input"]} for item in DATA],
                target=evaldag.agent(model, name="helper"),
                scorers=[evaldag.checks.includes("Bern")],
            )
        assert server.requests == []
    assert raised.value.message.startswith("the model of helper (openai/mock-judge): api_base")
