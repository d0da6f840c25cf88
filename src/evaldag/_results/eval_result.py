"""What ``run_evals`` returns: averages, gates, thresholds, the verdict and one row per item."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Self

import pandas as pd
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ModelWrapValidatorHandler,
    PrivateAttr,
    computed_field,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

from evaldag._compat.js import json_text
from evaldag._judge.redaction import endpoint_name
from evaldag._results.intervals import ConfidenceInterval
from evaldag._results.item_columns import ScorerColumns, nested_by_group, scorer_ids
from evaldag._results.trials import TrialSpread
from evaldag._scorer.thresholds import ThresholdSpec
from evaldag.errors import EvalDagError

if TYPE_CHECKING:
    import graphviz

Verdict = Literal["passed", "scored", "failed"]
#: The longest name of a run.
NAME_CHARACTERS = 200


def checked_name(name: Any) -> str | None:
    """A run's name (``run_evals(name=...)``) checked: None, or a line of text that says which
    run it is without looking like an experiment id (a UUID), which lookups take first."""
    if name is None:
        return None
    problem = None
    if not isinstance(name, str):
        problem = f"must be a string, got {type(name).__name__}"
    elif not name.strip():
        problem = "is empty"
    elif name != name.strip():
        problem = "must be text without blanks at either end"
    elif len(name) > NAME_CHARACTERS or not name.isprintable():
        problem = f"must be one line of at most {NAME_CHARACTERS} printable characters"
    elif _is_uuid(name):
        problem = "looks like an experiment id; give a name that says what the run is"
    if problem:
        raise EvalDagError(
            "INVALID_EXPERIMENT_NAME",
            f"name={name!r} {problem}, such as 'nightly' or 'gpt-4o-mini baseline'",
            details={"name": str(name)[:NAME_CHARACTERS]},
        )
    return name


def _is_uuid(text: str) -> bool:
    try:
        uuid.UUID(text)
    except ValueError:
        return False
    return True


class _Model(BaseModel):
    model_config = ConfigDict(populate_by_name=True, alias_generator=to_camel, frozen=True)


class ScoreAverage(_Model):
    """A scorer's items summed up: the mean of its scores and what was left out of it."""

    scorer_id: str
    mean: float | None = Field(description="Mean of the numeric scores; None when there are none.")
    scored: int = Field(description="Items whose score entered the mean.")
    not_scorable: int = 0
    unjudged: int = Field(
        default=0,
        description="Not-scorable items the judge budget left unjudged (budget_usd= spent).",
    )
    errors: int = Field(default=0, description="Items where the scorer (or the target) failed.")
    interval: ConfidenceInterval | None = Field(
        default=None, description="Bootstrap interval of the mean; None below two scores."
    )


class GateResult(_Model):
    """A gate passes when its average is at least 1.0."""

    id: str
    passed: bool
    score: float
    reason: str | None = Field(default=None, description="Why it failed, beyond its score.")


class ThresholdResult(_Model):
    """A scorer's average checked against its threshold."""

    id: str
    passed: bool
    average_score: float
    threshold: ThresholdSpec
    errors: int = Field(default=0, description="Failed items; any makes the threshold fail.")
    reason: str | None = Field(default=None, description="Why it failed, beyond its average.")


class TurnResult(_Model):
    """One turn index of the conversations, across items: its gates, thresholds and averages."""

    index: int = Field(description="The turn's position in each conversation, from 0.")
    gate_results: list[GateResult] = Field(default_factory=list)
    threshold_results: list[ThresholdResult] = Field(default_factory=list)
    scores: dict[str, float] = Field(default_factory=dict, description="Turn scorer id → average.")

    def to_dict(self) -> dict[str, Any]:
        """Mastra's ``turnResults`` entry: ``{index, gateResults?, thresholdResults?, scores?}``."""
        data: dict[str, Any] = {"index": self.index}
        if self.gate_results:
            data["gateResults"] = [
                g.model_dump(by_alias=True, exclude_none=True) for g in self.gate_results
            ]
        if self.threshold_results:
            data["thresholdResults"] = [
                t.model_dump(by_alias=True, exclude_none=True) for t in self.threshold_results
            ]
        if self.scores:
            data["scores"] = dict(self.scores)
        return data


class Summary(_Model):
    """Counts over the whole run."""

    total_items: int
    not_scorable: dict[str, int] = Field(default_factory=dict)
    errors: dict[str, int] = Field(default_factory=dict, description="Failed items per scorer.")
    target_errors: int = 0
    judge_cache_rows_dropped: int = Field(
        default=0, description="Judge-cache rows that held no reply: dropped, the call made again."
    )
    judge_cache_problems: list[str] = Field(
        default_factory=list,
        description="Why a judge cache was left out during the run (it could not open, read or "
        "write: a full disk, an I/O error); the calls went on without it.",
    )
    target_warnings: list[str] = Field(
        default_factory=list,
        description="What may make the target's outputs wrong for a reason no item shows (an "
        "agent's model that called no tool on any item though it had tools).",
    )
    intervals: dict[str, ConfidenceInterval] = Field(
        default_factory=dict,
        description="Scorer and gate id → 95 % bootstrap interval of its average (seeded).",
    )
    trials: dict[str, TrialSpread] = Field(
        default_factory=dict,
        description="Scorer and gate id → how its scores moved across the trials of "
        "run_evals(trials=N), N > 1; empty for one trial.",
    )
    untrustworthy: str | None = Field(
        default=None,
        description="Why the verdict cannot be trusted, when it cannot: the target or a scorer "
        "failed on every item (or on more than max_error_share of them), or nothing could be "
        "scored; run_evals raised UntrustworthyRunError with this message.",
    )


class JudgeLimit(_Model):
    """A judge endpoint's limit on calls in flight over the run: halved on 429, grown back by one
    per round of successful calls, never above max_concurrency (AIMD)."""

    endpoint: str = Field(description="The judge's model and api_base.")
    max_concurrency: int
    lowest: int = Field(description="The lowest the limit went during the run.")
    final: int
    changes: list[tuple[float, int]] = Field(
        description="(seconds since the run started, limit): the limit at the start and after "
        "each change."
    )

    @field_validator("endpoint")
    @classmethod
    def _without_credentials(cls, endpoint: str) -> str:
        """Credentials masked in the URL, also of a results file older than that masking."""
        model, at, api_base = endpoint.rpartition(" at ")
        return endpoint_name(model, api_base) if at else endpoint


class ScorerUsage(_Model):
    """Judge calls of one scorer, summed over its items."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    cost_usd: float = 0.0
    judge_limits: list[JudgeLimit] = Field(
        default_factory=list,
        description="The limits of the endpoints its judges called (in 'total': of all of them).",
    )


class EvalResult(BaseModel):
    """The outcome of an eval run. ``items`` has one row per data item (see ``run_evals``)."""

    model_config = ConfigDict(arbitrary_types_allowed=True, frozen=True)

    scores: dict[str, float] = Field(description="Scorer id → average score.")
    summary: Summary
    gate_results: list[GateResult] = Field(default_factory=list)
    threshold_results: list[ThresholdResult] = Field(default_factory=list)
    verdict: Verdict | None = None
    items: pd.DataFrame
    usage: dict[str, ScorerUsage] = Field(
        default_factory=dict, description="Judge usage per scorer id, plus 'total'."
    )
    target_usage: ScorerUsage | None = Field(
        default=None,
        description="The target's own model calls (evaldag.agent's), tokens and cost; None "
        "when it made none. Not in 'usage', which counts judge calls.",
    )
    scorers: list[dict[str, Any]] = Field(
        default_factory=list, description="The definitions of the scorers and gates that ran."
    )
    experiment_id: str | None = Field(
        default=None,
        description="This run's id (a uuid4 set by run_evals); None in files written before it.",
    )
    name: str | None = Field(
        default=None,
        description="This run's name (run_evals(name=...)), if given; runs may share a name.",
    )
    turns: pd.DataFrame | None = Field(
        default=None,
        description="One row per turn of the conversation items (item, turn, input, output, "
        "run_id, thread_id, each turn gate's and scorer's columns; where the target failed, "
        "the turns it completed scored, the rest without output, failing their gates and "
        "scorers); None without conversations.",
    )
    turn_results: list[TurnResult] = Field(
        default_factory=list, description="Per turn index: its gates, thresholds and averages."
    )
    columns: dict[str, str] = Field(
        default_factory=dict,
        description="Run field → the data column that held it, for the fields the data names "
        "otherwise (run_evals(columns=...)); ``items`` keeps the data's names.",
    )

    #: The DOT text, or what draws it: ``run_evals`` gives a drawing (see ``dag_dot``).
    _dag: str | Callable[[], str] | None = PrivateAttr(default=None)

    @model_validator(mode="wrap")
    @classmethod
    def _dag_given(cls, data: Any, handler: ModelWrapValidatorHandler[EvalResult]) -> EvalResult:
        """``dag_dot`` given with the fields (a results file's text) kept as the DOT text."""
        if not (isinstance(data, dict) and "dag_dot" in data):
            return handler(data)
        result = handler({key: value for key, value in data.items() if key != "dag_dot"})
        result._dag = data["dag_dot"]
        return result

    @computed_field(description="The eval's DAG as DOT text.")  # type: ignore[prop-decorator]
    @property
    def dag_dot(self) -> str | None:
        """The eval's DAG as DOT text; a run's is drawn when first read (by ``visualize``, by
        writing or pickling the result), not by the run itself."""
        # Most runs never look at it: graphviz's import and Hamilton's drawing were ~10 ms of a
        # first run's CPU and ~2 ms of every run.
        if callable(self._dag):
            self._dag = self._dag()
        return self._dag

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy; ``update`` may give ``dag_dot`` (DOT text, or a function drawing it)."""
        fields = {key: value for key, value in (update or {}).items() if key != "dag_dot"}
        copied = super().model_copy(update=fields, deep=deep)
        if update and "dag_dot" in update:
            copied._dag = update["dag_dot"]
        return copied

    def __getstate__(self) -> dict[Any, Any]:
        state = super().__getstate__()  # a drawing does not pickle: its text does
        state["__pydantic_private__"] = {**state["__pydantic_private__"], "_dag": self.dag_dot}
        return state

    def canonical_items(self) -> pd.DataFrame:
        """``items`` with the run fields under evaldag's names (``input``, ``output``,
        ``ground_truth``, ...) whatever the data called them."""
        if not self.columns:
            return self.items
        return self.items.rename(columns={column: field for field, column in self.columns.items()})

    def to_dict(self) -> dict[str, Any]:
        """Mastra's ``runEvals`` result shape (camelCase; absent parts left out)."""
        summary: dict[str, Any] = {"totalItems": self.summary.total_items}
        if self.summary.not_scorable:
            summary["notScorable"] = dict(self.summary.not_scorable)
        if self.summary.errors:
            summary["errors"] = dict(self.summary.errors)
        data: dict[str, Any] = {"scores": nested_by_group(self.scores), "summary": summary}
        if self.gate_results:
            data["gateResults"] = [
                g.model_dump(by_alias=True, exclude_none=True) for g in self.gate_results
            ]
        if self.threshold_results:
            data["thresholdResults"] = [
                t.model_dump(
                    by_alias=True, exclude_none=True, exclude={"errors"} if not t.errors else None
                )
                for t in self.threshold_results
            ]
        if self.turn_results:
            data["turnResults"] = [t.to_dict() for t in self.turn_results]
        if self.verdict is not None:
            data["verdict"] = self.verdict
        return data

    def to_parquet(
        self, path: str | os.PathLike[str], *, extra: dict[str, Any] | None = None
    ) -> Path:
        """Write the items, with everything else in the file's metadata; see ``read_parquet``.

        :param extra: more metadata to keep in the file (JSON-ready; ``read_parquet`` leaves it).
        """
        from evaldag._io.parquet import write_results

        return write_results(self.items, {**result_metadata(self), **(extra or {})}, Path(path))

    @classmethod
    def read_parquet(cls, path: str | os.PathLike[str]) -> EvalResult:
        """An EvalResult read back from ``to_parquet``'s file, or from the directory a run wrote
        its results to (``run_evals(out="results/")``: its parts and summary)."""
        from evaldag._io.parquet import parquet_results

        items, metadata = parquet_results(Path(path))
        return cls(
            scores=metadata["scores"],
            summary=Summary(**metadata["summary"]),
            gate_results=[GateResult(**g) for g in metadata["gate_results"]],
            threshold_results=[ThresholdResult(**t) for t in metadata["threshold_results"]],
            verdict=metadata["verdict"],
            usage={key: ScorerUsage(**u) for key, u in metadata["usage"].items()},
            target_usage=None
            if metadata.get("target_usage") is None
            else ScorerUsage(**metadata["target_usage"]),
            scorers=metadata["scorers"],
            dag_dot=metadata.get("dag_dot"),
            experiment_id=metadata.get("experiment_id"),
            name=metadata.get("name"),
            turn_results=[TurnResult(**t) for t in metadata.get("turn_results", [])],
            turns=None if metadata.get("turns") is None else _turn_rows(metadata["turns"]),
            columns=metadata.get("columns") or {},
            items=items,
        )

    def visualize(self, path: str | Path | None = None) -> graphviz.Source:
        """The DAG this result came from; written to ``path`` (.png, .svg, .dot) if given."""
        from evaldag._io.pictures import stored_picture

        if self.dag_dot is None:
            raise EvalDagError(
                "EVALDAG_NO_DAG", "This result carries no DAG; it was not made by run_evals"
            )
        return stored_picture(self.dag_dot, path)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, EvalResult):
            return NotImplemented
        same = result_metadata(self) == result_metadata(other)
        return same and _frames_equal(self.items, other.items)

    def __repr__(self) -> str:
        return (
            f"EvalResult(verdict={self.verdict!r}, scores={self.scores}, "
            f"items={len(self.items)} rows)"
        )

    __str__ = __repr__


def verdict_word(result: EvalResult) -> str | None:
    """The verdict as shown and stored: ``untrustworthy`` for a run whose verdict cannot be
    trusted (it measured nothing: ``summary.untrustworthy``), else ``passed``, ``scored``,
    ``failed``, or None for no verdict."""
    return "untrustworthy" if result.summary.untrustworthy else result.verdict


def result_metadata(result: EvalResult) -> dict[str, Any]:
    """Everything of ``result`` but its items, as a results file keeps it."""
    return {
        "scores": result.scores,
        "summary": result.summary.model_dump(),
        "gate_results": [g.model_dump() for g in result.gate_results],
        "threshold_results": [t.model_dump() for t in result.threshold_results],
        "verdict": result.verdict,
        "usage": {key: u.model_dump() for key, u in result.usage.items()},
        "target_usage": None if result.target_usage is None else result.target_usage.model_dump(),
        "scorers": result.scorers,
        "dag_dot": result.dag_dot,
        "experiment_id": result.experiment_id,
        "name": result.name,
        "turn_results": [t.model_dump() for t in result.turn_results],
        "turns": None if result.turns is None else json_text(result.turns.to_dict("records")),
        "columns": result.columns,
    }


def _turn_rows(text: str) -> pd.DataFrame:
    rows = pd.DataFrame(json.loads(text))
    return rows.astype({ScorerColumns(sid).score: "float64" for sid in scorer_ids(rows.columns)})


def _frames_equal(a: pd.DataFrame, b: pd.DataFrame) -> bool:
    return a.columns.equals(b.columns) and a.dtypes.equals(b.dtypes) and a.equals(b)
