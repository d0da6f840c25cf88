"""docs/api.md and the help blocks of docs/cli.md match the code (docs/gen_reference.py)."""

import html
import importlib.util
import re
from pathlib import Path

import pandas as pd
import pytest
from repo_paths import FIXTURES, ROOT

DOCS = ROOT / "docs"


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


# --- links and pictures -------------------------------------------------------------------------

_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


@pytest.mark.parametrize(
    "page", [ROOT / "README.md", *sorted(DOCS.glob("*.md"))], ids=lambda p: p.name
)
def test_relative_links_and_pictures_resolve(page):
    for target in _LINK.findall(page.read_text()):
        if "://" in target or target.startswith(("#", "mailto:")):
            continue
        path = (page.parent / target.split("#")[0]).resolve()
        assert path.exists(), f"{page.name} links to {target}, which does not exist"


def _node_names(dot: str) -> set[str]:
    """The node names of a DOT text graphviz.Digraph wrote: a node statement is a name and its
    attributes (an edge statement has ``->`` after the name)."""
    names = set()
    for line in dot.splitlines():
        found = re.match(r'\t+("(?:[^"\\]|\\.)*"|[^\s"\[]+) \[', line)
        if found and found.group(1) not in ("graph", "node", "edge"):  # attribute statements
            names.add(found.group(1).strip('"'))
    return names


@pytest.mark.parametrize("name", ["target-function", "target-agent", "target-workflow"])
def test_target_pictures_are_drawn_from_the_current_dags(name):
    spec = importlib.util.spec_from_file_location("gen_pictures", DOCS / "gen_pictures.py")
    pictures = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pictures)
    drawn = _node_names(pictures.PICTURES[name]().source)
    assert {"dataset", "target_runs", "outputs", "runs"} <= drawn
    svg = (DOCS / "images" / f"{name}.svg").read_text()
    stored = {
        html.unescape(t)
        for t in re.findall(r"<g id=\"node\d+\" class=\"node\">\n<title>(.*?)</title>", svg)
    }
    assert stored == drawn, f"docs/images/{name}.svg is stale: run python docs/gen_pictures.py"
    if name == "target-workflow":  # the dataflow's own nodes, and the runs of its scored nodes
        assert {"flow.retrieved_passages", "flow.answer", "steps.retrieved_passages.runs"} <= drawn


# --- docs/traces.md's examples, one per source -------------------------------------------------

TRACES_PAGE = DOCS / "traces.md"
TRACE_FIXTURES = FIXTURES / "traces"


def _trace_examples() -> list[str]:
    text = TRACES_PAGE.read_text().split("\n## Sources\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", text, re.DOTALL)


def _spans_parquet(folder: Path) -> None:
    """A backend's export of pydantic-ai's spans of one_tool, with a service of the example's
    name, and another service's trace the example leaves out."""
    from trace_cases import spans_table

    mine = spans_table([TRACE_FIXTURES / "pydantic_ai" / "one_tool.jsonl"])
    mine["service_name"] = "support-bot"
    other = spans_table([TRACE_FIXTURES / "pydantic_ai" / "forbidden_tool.jsonl"])
    pd.concat([mine, other], ignore_index=True).to_parquet(folder / "spans.parquet")


#: Per example: the fixture files it reads (as the names it gives them), and its verdict.
TRACE_EXAMPLES = {
    "OTLP JSON": (
        {"spans.jsonl": "openai_v2_latest/forbidden_tool.jsonl"},
        "failed",
    ),
    "OTLP protobuf": (
        {
            "spans.pb": "openai_v2_events/one_tool.pb",
            "logs.pb": "openai_v2_events/one_tool.logs.pb",
        },
        "passed",
    ),
    "a table of spans": ({}, "passed"),
    "Mastra's span records": ({"trace.json": "mastra/thrown_error.json"}, "failed"),
}


def test_traces_page_has_an_example_per_source():
    assert len(_trace_examples()) == len(TRACE_EXAMPLES)
    assert all(len(code.strip().splitlines()) <= 16 for code in _trace_examples())


@pytest.mark.parametrize(
    ("code", "source"),
    list(zip(_trace_examples(), TRACE_EXAMPLES, strict=False)),
    ids=list(TRACE_EXAMPLES),
)
def test_traces_page_examples_work(code, source, tmp_path, monkeypatch, capsys):
    files, verdict = TRACE_EXAMPLES[source]
    for name, fixture in files.items():
        (tmp_path / name).write_bytes((TRACE_FIXTURES / fixture).read_bytes())
    if source == "a table of spans":
        _spans_parquet(tmp_path)
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "traces_example"}
    exec(compile(code, str(TRACES_PAGE), "exec"), namespace)
    assert namespace["result"].verdict == verdict
    assert len(namespace["items"]) == 1
    printed = capsys.readouterr().out
    assert f"{verdict}\n" in printed
    if source == "OTLP protobuf":
        assert "It is 18 degrees and clear in Paris." in printed
