"""Where judge calls happen: a prompt step's prompt goes to an LLM through litellm."""

from __future__ import annotations

from typing import Any

from evaldag.errors import EvalDagError
from evaldag.results import JudgeExecution
from evaldag.steps import PromptStep, StageName


async def judged_value(
    step: PromptStep, stage: StageName, scorer_judge: Any, prompt: str
) -> tuple[Any, JudgeExecution]:
    """The judge's answer to ``prompt`` for ``stage`` and the record of how it was obtained."""
    raise EvalDagError(
        "EVALDAG_JUDGE_UNAVAILABLE",
        f"prompt step '{step.description}' ({stage}) cannot run: judge calls are not built yet",
        category="SYSTEM",
    )
