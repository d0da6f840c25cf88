"""What each LLM scorer's judge reads, rendered for a sample run and kept for review.

Each scorer runs once on a sample run against the loopback judge server; every request's system
prompt and user prompt are written, in call order, to
``tests/fixtures/llm_scorers/prompts/<scorer-id>.md``, and the test checks that file is current.
After changing a prompt, regenerate with ``EVALDAG_UPDATE_PROMPTS=1 pytest
tests/scorers/llm/test_llm_scorer_prompts.py`` and review the diff.
"""

from __future__ import annotations

import os
import re

import pytest
from judge_server import JudgeServer
from llm_scorer_cases import SAMPLES
from repo_paths import FIXTURES

from evaldag import Scorer

PROMPTS = FIXTURES / "llm_scorers" / "prompts"
_LEFTOVER_PLACEHOLDER = re.compile(r"\$\{?[A-Za-z_]\w*")
_STEP_NAMES = ("preprocess", "analyze", "generate_score", "generate_reason")


def _transcript(scorer: Scorer, server: JudgeServer) -> str:
    judged = [step for step in scorer.get_steps() if step["type"] == "prompt"]
    lines = [
        f"# {scorer.id}: what the judge reads",
        "",
        (
            "Rendered by tests/scorers/llm/test_llm_scorer_prompts.py for a sample run; after "
            "changing a prompt, regenerate with EVALDAG_UPDATE_PROMPTS=1 and review the diff."
        ),
    ]
    systems = {request.system for request in server.requests}
    (system,) = systems
    lines += ["", "## System prompt (the judge's instructions)", "", "```text", system, "```"]
    for step, request in zip(judged, server.requests, strict=True):
        lines += ["", f"## {step['name']}: {step['description']}", "", "```text"]
        lines += [request.prompt, "```"]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("scorer_id", sorted(SAMPLES))
def test_prompts_are_rendered_for_a_sample_run(judge_server, scorer_id):
    sample = SAMPLES[scorer_id]
    judge_server.script(*sample.replies)
    scorer = sample.scorer(judge_server.judge())
    result = scorer.run(**sample.run)

    assert scorer.id == scorer_id
    assert len(judge_server.requests) == len(sample.replies)
    for request in judge_server.requests:
        assert not _LEFTOVER_PLACEHOLDER.search(request.prompt), request.prompt
    rendered = "\n".join(request.prompt for request in judge_server.requests)
    for text in sample.shown:
        assert text in rendered
    prompts = {name: getattr(result, f"{name}_prompt") for name in _STEP_NAMES}
    assert [p for p in prompts.values() if p] == [r.prompt for r in judge_server.requests]

    transcript = _transcript(scorer, judge_server)
    path = PROMPTS / f"{scorer_id}.md"
    if os.environ.get("EVALDAG_UPDATE_PROMPTS"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(transcript, encoding="utf-8")
    assert path.exists(), f"{path} is missing: run with EVALDAG_UPDATE_PROMPTS=1"
    assert path.read_text(encoding="utf-8") == transcript, (
        f"{path.name} is out of date: run with EVALDAG_UPDATE_PROMPTS=1 and review the diff"
    )
