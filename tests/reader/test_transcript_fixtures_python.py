"""The Python transcript fixtures are what generate_python.py writes today, and every conversation
has a fixture in every Python shape or a reason in manifest-python.json why not."""

import json
from pathlib import Path

import pytest
from fixture_generators import assert_writes_committed, generator, missing
from repo_paths import FIXTURES

TRANSCRIPTS = FIXTURES / "transcripts"
MANIFEST = json.loads((TRANSCRIPTS / "manifest-python.json").read_text())
CONVERSATIONS = json.loads((TRANSCRIPTS / "conversations.json").read_text())["conversations"]
# The modules the generator imports, by the package that installs them.
LIBRARIES = {
    "openai": "openai",
    "anthropic": "anthropic",
    "google-genai": "google.genai",
    "langchain-core": "langchain_core",
    "pydantic-ai-slim": "pydantic_ai",
    "llama-index-core": "llama_index.core",
}
REGENERATE = "python tests/fixtures/transcripts/generate_python.py"


def _fixture_files(folder: Path) -> dict[str, bytes]:
    files = {"manifest-python.json": (folder / "manifest-python.json").read_bytes()}
    for shape in MANIFEST["shapes"]:
        for path in sorted((folder / shape).glob("*.json")):
            files[f"{shape}/{path.name}"] = path.read_bytes()
    return files


@pytest.mark.slow
# llama-index's workflows look their steps up with inspect.getmembers, which touches pydantic's
# deprecated attributes hundreds of times.
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.skipif(
    bool(missing(LIBRARIES)),
    reason=f"the fixture generator needs {', '.join(missing(LIBRARIES))}: pip install -e '.[dev]'",
)
def test_the_generator_writes_the_committed_fixtures_byte_for_byte(tmp_path):
    generator(TRANSCRIPTS / "generate_python.py").write_fixtures(tmp_path)
    assert_writes_committed(
        _fixture_files(tmp_path), _fixture_files(TRANSCRIPTS), MANIFEST, REGENERATE
    )


@pytest.mark.parametrize("shape", sorted(MANIFEST["shapes"]))
def test_every_conversation_has_a_fixture_or_a_reason(shape):
    entry = MANIFEST["shapes"][shape]
    files = {path.stem for path in (TRANSCRIPTS / shape).glob("*.json")}
    ids = {conversation["id"] for conversation in CONVERSATIONS}
    assert files <= ids, f"{shape} has fixtures of no conversation: {sorted(files - ids)}"
    assert files == set(entry["conversations"]), f"{shape}: the manifest lists other fixtures"
    for conversation_id in sorted(ids):
        reason = entry["missing"].get(conversation_id)
        assert (conversation_id in files) != bool(reason), f"{shape}/{conversation_id}: " + (
            "has a fixture and a reason for having none" if reason else "no fixture, no reason"
        )


@pytest.mark.parametrize(
    "path",
    sorted(path for shape in MANIFEST["shapes"] for path in (TRANSCRIPTS / shape).glob("*.json")),
    ids=lambda path: f"{path.parent.name}/{path.stem}",
)
def test_a_fixture_holds_its_conversations_texts_and_tool_calls(path):
    fixture = json.loads(path.read_text())
    conversation = next(c for c in CONVERSATIONS if c["id"] == fixture["conversation"])
    assert (fixture["shape"], fixture["conversation"]) == (path.parent.name, path.stem)
    assert fixture["produced_by"] == MANIFEST["shapes"][fixture["shape"]]["produced_by"]
    assert json.dumps(conversation["user"])[1:-1] in json.dumps(fixture["input"])
    output = json.dumps(fixture["output"])
    for step in conversation["steps"]:
        assert json.dumps(step.get("text", ""))[1:-1] in output
        for call in step.get("calls", []):
            assert f'"{call["tool"]}"' in output
