"""What a scorer run returns: the score, every step's output and the judge record of each
prompt step (the record types are the judge's: :mod:`evaldag._judge.records`)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from evaldag._compat.js import camel
from evaldag._compat.records import CamelRecord
from evaldag._judge.records import JudgeStepRecord
from evaldag._scorer.run import ScorerRun


class NotScorableInfo(CamelRecord):
    """Which step declared the run not scorable, and why."""

    step: str
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        data = super().to_dict()
        data["step"] = camel(self.step)
        return data


class ScorerResult(ScorerRun):
    """The outcome of ``scorer.run``: the run's fields echoed, the score and every step's output.

    ``score`` is ``None`` only when a step declared the run not scorable (see ``not_scorable``).
    """

    score: float | None = None
    reason: Any = None
    preprocess_step_result: Any = None
    analyze_step_result: Any = None
    preprocess_prompt: str | None = None
    analyze_prompt: str | None = None
    generate_score_prompt: str | None = None
    generate_reason_prompt: str | None = None
    judge: dict[str, JudgeStepRecord] | None = Field(
        default=None, description="Judge record per prompt step that ran, keyed by step name."
    )
    not_scorable: NotScorableInfo | None = None

    def to_dict(self) -> dict[str, Any]:
        """Mastra's result shape: camelCase keys, fields that are ``None`` left out."""
        data = self.model_dump(by_alias=True, exclude={"judge", "not_scorable"})
        data = {key: value for key, value in data.items() if value is not None}
        if self.not_scorable is not None:
            data["notScorable"] = self.not_scorable.to_dict()
        if self.judge:
            data["judge"] = {camel(step): record.to_dict() for step, record in self.judge.items()}
        return data
