"""The eval behind ``evaldag demo``: Fernwood Outfitters' support assistant, 33 conversations.

The dataset (``data/demo/support_assistant.jsonl``, written for evaldag) holds 18 answers to
help-center questions, each with the ``searchHelpCenter`` call that retrieved its context, and 15
agent transcripts that look up orders, open returns and quote shipping. Inputs and outputs are
Mastra's agent shapes (``inputMessages``, ``MastraDBMessage`` with tool-invocation parts). A few
answers are wrong on purpose: an invented fill power, a filter that "removes viruses", an answer
that skips half the question, a tool call that failed.

The eval: faithfulness to the retrieved context (when there is a judge), completeness and keyword
coverage with thresholds, tool errors as a score, and three checks as gates: the assistant never
issues refunds itself, makes at most five tool calls and never quotes the help center's internal
notes.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from evaldag import checks
from evaldag._judge.settings import Judge
from evaldag._scorer.builder import Scorer
from evaldag.scorers import completeness, faithfulness, keyword_coverage

TITLE = "Fernwood Outfitters support assistant"
DATA_FILE = "data/demo/support_assistant.jsonl"


def demo_items() -> list[dict[str, Any]]:
    """The demo dataset: one dict per conversation (id, kind, topic, input, output)."""
    text = resources.files("evaldag").joinpath(DATA_FILE).read_text("utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def demo_scorers(judge: Judge | None) -> list[Any]:
    """Faithfulness (only with a judge), completeness >= 0.6, keyword coverage >= 0.5, tool
    errors; thresholds that do not depend on the judge, so the verdict is the same without one."""
    judged = [faithfulness(judge)] if judge is not None else []
    return [
        *judged,
        completeness().with_threshold(0.6),
        keyword_coverage().with_threshold(0.5),
        checks.no_tool_errors(),
    ]


def demo_gates() -> list[Scorer]:
    """Policy checks every conversation must pass."""
    return [
        checks.did_not_call("issueRefund", id="no-direct-refunds"),
        checks.max_tool_calls(5),
        checks.excludes("internal note", id="no-internal-notes"),
    ]


def demo_judge(choice: str, api_base: str | None, api_key: str | None) -> tuple[Any, str]:
    """The judge of the demo's faithfulness scorer (None to skip it) and a line saying so."""
    from evaldag._judge.settings import LOCAL_MODEL
    from evaldag._util.credentials import url_without_credentials

    if choice == "none":
        return None, (
            "faithfulness: skipped, no --judge; the code scorers and checks still run "
            "(--judge openai/gpt-4o-mini, or --judge local for the bundled local judge: "
            "about 6 minutes on 2 cores)"
        )
    if choice == LOCAL_MODEL:
        from evaldag.local_judge import local_judge_endpoint

        endpoint = local_judge_endpoint()
        # The llama.cpp server answers one request at a time: two in flight keep it busy
        # without queueing calls into their timeout.
        judge = Judge(LOCAL_MODEL, max_concurrency=2)
        return judge, (
            f"faithfulness: judged by the local SmolLM2-135M judge on {endpoint.api_base}: "
            "89 calls of about 4 s each on 2 cores, about 6 minutes; its verdicts are weak, "
            "the plumbing is real"
        )
    settings = {"api_base": api_base, "api_key": api_key}
    judge = Judge(choice, **{name: value for name, value in settings.items() if value})
    where = f" at {url_without_credentials(api_base)}" if api_base else ""
    return judge, f"faithfulness: judged by {choice}{where}"
