"""No secret reaches any output, in the places ``test_secrets`` leaves aside: the credentials
of a data URL, of a cluster's address and of a score store's URL the receiver names, a key a
judge's proxy echoes in a reply it sends as a success, and credentials under other settings of
a judge than ``api_key`` (``azure_ad_token=``, ``extra_body={'api_key': ...}``, a cookie).

Each test plants secrets unique to the session, checks they were used (sent, or given where a
run takes them), then searches every output for them: what was printed, the logs at DEBUG,
every file written, the results and the reply cache, and each error with its details, causes,
traceback and pickled form.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import io
import json
import os
import pickle
import threading
import traceback
import uuid
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from judge_server import TRANSPORTS, JudgeServer, Reply

from evaldag import EvalDagError, EvalResult, Judge, create_scorer, run_evals
from evaldag._cli.main import main as cli_main
from evaldag.scorers import faithfulness

TOKEN = f"tok-{uuid.uuid4().hex}"
PASSWORD = f"pw-{uuid.uuid4().hex}"
KEY = f"sk-{uuid.uuid4().hex}"
SECRETS = (TOKEN, PASSWORD, KEY)
CONTEXT = ["Bern is the capital of Switzerland."]
DATA = pd.DataFrame(
    {"input": ["What is the capital?", "And the river?"], "output": ["Bern.", "The Aare."]}
)
CONSTANT = """\
from evaldag import create_scorer

scorers = [create_scorer("constant").generate_score(lambda run: 1)]
"""


def _clean(where: str, content: str | bytes) -> None:
    text = content.decode("latin-1") if isinstance(content, bytes) else content
    for secret in SECRETS:
        assert secret.split("-", 1)[1] not in text, f"a secret leaked into {where}"


def _clean_files(folder: Path) -> None:
    for path in folder.rglob("*"):
        _clean(f"the name of {path}", str(path))
        if path.is_file():
            _clean(str(path), path.read_bytes())


def _clean_error(where: str, error: BaseException) -> None:
    """The error, its details and its chain of causes and contexts, traceback and pickle."""
    _clean(f"{where}: traceback", "".join(traceback.format_exception(error)))
    _clean(f"{where}: pickle", pickle.dumps(error))
    chain: BaseException | None = error
    while chain is not None:
        _clean(f"{where}: {type(chain).__name__}", f"{chain!s} {chain!r} {vars(chain)!r}")
        if isinstance(chain, EvalDagError):
            _clean(f"{where}: to_dict", json.dumps(chain.to_dict(), default=str))
        chain = chain.__cause__ or chain.__context__


def _cli(*argv: str) -> tuple[int, str]:
    """``evaldag ARGV``'s exit code and everything it printed."""
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        try:
            code = cli_main(list(argv))
        except SystemExit as exited:  # argparse refusing an option
            code = exited.code
    return int(code or 0), stdout.getvalue() + stderr.getvalue()


class _Files(http.server.SimpleHTTPRequestHandler):
    """Serves a folder; remembers the paths asked (with their query)."""

    asked: list[str]

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        self.asked.append(self.path)
        super().do_GET()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def data_server(tmp_path) -> Iterator[tuple[str, list[str]]]:
    """An HTTP server of a folder holding ``data.parquet`` and ``empty.parquet`` (no rows); its
    URL and the paths asked."""
    folder = tmp_path / "served"
    folder.mkdir()
    DATA.to_parquet(folder / "data.parquet")
    DATA.iloc[:0].to_parquet(folder / "empty.parquet")
    asked: list[str] = []
    handler = type("Files", (_Files,), {"asked": asked})
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(handler, directory=str(folder))
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", asked
    finally:
        server.shutdown()
        server.server_close()


def test_a_data_urls_credentials_stay_out_of_the_cli_and_its_files(data_server, tmp_path, capfd):
    url, asked = data_server
    eval_file, written = tmp_path / "eval_constant.py", tmp_path / "written"
    eval_file.write_text(CONSTANT)
    written.mkdir()
    os.chdir(written)  # the checkpoints evaldag keeps go here
    signed = f"{url}/data.parquet?sig={TOKEN}"
    code, printed = _cli("run", str(eval_file), "--data", signed, "--out", str(written / "out"))
    assert code == 0, printed
    assert f"/data.parquet?sig={TOKEN}" in asked  # the signed URL was used
    assert "eval_constant.py on data.parquet?sig=**********: 2 items" in printed
    code, missing = _cli("run", str(eval_file), "--data", f"{url}/gone.parquet?sig={TOKEN}")
    assert code == 3 and f"{url}/gone.parquet?sig=**********' matches no file" in missing
    for where in ("evaldag run", "evaldag run on missing data"):
        _clean(where, printed if where == "evaldag run" else missing)
    captured = capfd.readouterr()
    _clean("stdout and stderr", captured.out + captured.err)
    _clean_files(written)


def test_missing_or_empty_data_at_a_signed_url_is_named_without_the_signature(data_server):
    url, asked = data_server
    constant = create_scorer("constant").generate_score(lambda run: 1)
    with pytest.raises(EvalDagError) as raised:
        run_evals(f"{url}/gone.parquet?sig={TOKEN}", scorers=[constant])
    assert asked  # the server was asked
    assert f"'{url}/gone.parquet?sig=**********' matches no file" in raised.value.message
    _clean_error("run_evals", raised.value)
    with pytest.raises(EvalDagError) as raised:
        run_evals(f"{url}/empty.parquet?sig={TOKEN}", scorers=[constant])
    assert f"/empty.parquet?sig={TOKEN}" in asked
    assert f"(no rows in '{url}/empty.parquet?sig=**********')" in raised.value.message
    _clean_error("run_evals on no rows", raised.value)


def _faithfulness_replies(server: JudgeServer, reason: str) -> None:
    server.reply = reason
    server.on("List every claim", {"claims": ["Bern is the capital"]})
    verdict = {"claim": "Bern is the capital", "verdict": "yes", "reason": reason}
    server.on("Check each claim", {"verdicts": [verdict]})


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_key_a_proxy_echoes_in_a_reply_stays_out_of_every_output(
    transport, tmp_path, everything_logged, capfd
):
    """A proxy that answers 200 with the key in its text (in a verdict, in the reason): the
    reply is redacted as it arrives, so neither results, cache, report nor errors hold it."""
    with JudgeServer(transport=transport) as server:
        _faithfulness_replies(server, f"Proxy note: request authorized with key {KEY}.")
        judge = Judge(
            "openai/mock-judge",
            api_base=server.url,
            api_key=KEY,
            cache=tmp_path / "cache",
            transport=transport,
        )
        out = tmp_path / "written" / "results.parquet"
        first = run_evals(DATA, scorers=[faithfulness(judge, context=CONTEXT)], out=out)
        again = run_evals(DATA, scorers=[faithfulness(judge, context=CONTEXT)])
        assert {r.headers.get("Authorization") for r in server.requests} == {f"Bearer {KEY}"}
        server.reset()
        server.reply = f"Incorrect API key provided: {KEY}"  # a 200 that is no verdict
        with pytest.raises(EvalDagError) as raised:
            faithfulness(judge.overridden_by(Judge(cache=False)), context=CONTEXT).run(
                input="q", output="Bern."
            )
    assert "Proxy note: request authorized with key **********." in first.items.to_json()
    assert again.usage == {}  # every reply came from the cache, redacted
    for where, result in (("the run", first), ("the cached run", again)):
        _clean(where, result.items.to_json(default_handler=str))
        _clean(where, json.dumps(result.to_dict(), default=str))
    _clean_error("a reply that is not JSON", raised.value)
    assert _cli("report", str(out), "--out", str(tmp_path / "written" / "report.html"))[0] == 0
    _clean_files(tmp_path)
    _clean("the logs", everything_logged())
    captured = capfd.readouterr()
    _clean("stdout and stderr", captured.out + captured.err)
    _clean("the results read back", EvalResult.read_parquet(out).items.to_json())


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_credentials_under_other_settings_stay_out_of_errors_logs_and_dumps(
    transport, everything_logged
):
    """Keys under other settings than api_key: a provider's own (azure_ad_token), one in the
    body (extra_body), a cookie, each echoed by a server refusing the call."""
    echoed = f"token {TOKEN}, body key {KEY}, cookie {PASSWORD} are not valid"
    judge = Judge(
        "openai/mock-judge",
        api_key="sk-anything-long",
        cache=False,
        max_retries=0,
        transport=transport,
        azure_ad_token=TOKEN,
        extra_body={"api_key": KEY, "top_k": 3},
        extra_headers={"Cookie": f"session={PASSWORD}; theme=dark"},
    )
    with JudgeServer(transport=transport) as server:
        server.reply = Reply(status=401, body=json.dumps({"error": {"message": echoed}}))
        with pytest.raises(EvalDagError) as raised:
            faithfulness(judge.overridden_by(Judge(api_base=server.url)), context=CONTEXT).run(
                input="q", output="a"
            )
        (request,) = server.requests
    assert request.headers.get("Cookie") == f"session={PASSWORD}; theme=dark"
    assert "are not valid" in raised.value.message
    _clean_error("the refusal", raised.value)
    _clean("the logs", everything_logged())
    _clean("the judge", f"{judge!r} {judge.model_dump_json()}")
    assert "'top_k': 3" in repr(judge)  # what is no credential is shown
