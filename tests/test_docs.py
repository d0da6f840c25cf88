"""docs/api.md and the help blocks of docs/cli.md match the code (docs/gen_reference.py)."""

import importlib.util
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"


def _generator():
    spec = importlib.util.spec_from_file_location("gen_reference", DOCS / "gen_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def generator():
    return _generator()


def test_api_reference_is_up_to_date(generator):
    assert (DOCS / "api.md").read_text() == generator.api_markdown(), (
        "docs/api.md is stale: run python docs/gen_reference.py"
    )


def test_cli_reference_is_up_to_date(generator):
    text = (DOCS / "cli.md").read_text()
    assert text == generator.cli_markdown(text), (
        "docs/cli.md is stale: run python docs/gen_reference.py"
    )


def test_api_reference_lists_every_public_name(generator):
    import evaldag
    import evaldag.checks
    import evaldag.scorers

    text = (DOCS / "api.md").read_text()
    names = [*evaldag.__all__, *evaldag.scorers.__all__]
    names += generator.public_names(evaldag.checks)
    assert len(names) > 40
    for name in names:
        assert f"`{name}" in text or f"module `{name}`" in text, name


def test_cli_reference_documents_every_command(generator):
    text = (DOCS / "cli.md").read_text()
    for command in ("run", "demo", "report"):
        assert f"<!-- help: evaldag {command} -->\n```text\nusage: evaldag {command}" in text
