"""The ``everything_logged`` fixture: every log record of a test at DEBUG, evaldag's and the
libraries' (litellm's with its verbose printing on, fsspec's, aiohttp's ...), as one text."""

import logging
from collections.abc import Callable, Iterator

import pytest


@pytest.fixture
def everything_logged(caplog, monkeypatch) -> Iterator[Callable[[], str]]:
    """All log records at DEBUG, litellm printing too; call it for their text."""
    import litellm  # here: a test session that needs no judge does without its import time

    caplog.set_level(logging.DEBUG)
    for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy"):
        caplog.set_level(logging.DEBUG, logger=name)
    monkeypatch.setattr(litellm, "set_verbose", True)
    yield lambda: "\n".join(
        f"{record.name} {record.getMessage()} {record.exc_text or ''}" for record in caplog.records
    )
