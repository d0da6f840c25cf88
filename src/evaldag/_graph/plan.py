"""What one eval's graph is built from: scorers (with thresholds), gates and a target."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from evaldag._results.trials import TrialSettings
from evaldag._scorer.fingerprint import Parts, digest, scorer_parts
from evaldag._scorer.reach import Memo
from evaldag._scorer.steps import ScorerSpec
from evaldag._scorer.thresholds import ThresholdSpec


@dataclass(frozen=True)
class TurnSpec:
    """One turn of a conversation item: its input and the gates and scorers of that turn."""

    input: Any
    gates: tuple[ScorerSpec, ...] = ()
    scorers: tuple[ScorerSpec, ...] = ()
    thresholds: dict[str, ThresholdSpec] = field(default_factory=dict)

    @property
    def assertions(self) -> tuple[ScorerSpec, ...]:
        """Scorers, then gates."""
        return (*self.scorers, *self.gates)


#: Per conversation item (by its label in the data): its turns.
TurnSpecs = dict[Any, tuple[TurnSpec, ...]]


#: The runs every scorer reads unless its group says otherwise: each item's input and output.
RUNS = "runs"


def step_runs_node(step: str) -> str:
    """The node holding the runs of a workflow's node ``step``: its inputs and its output."""
    return f"steps.{step}.runs"


def last_node(scorer: ScorerSpec) -> str:
    """The name of the scorer's last step node: its runs as they end."""
    return f"{scorer.id}.{scorer.steps[-1].value_name}"


@dataclass(frozen=True)
class EvalPlan:
    """The scorers, gates, thresholds and target of one eval; the graph's configuration."""

    scorers: tuple[ScorerSpec, ...]
    gates: tuple[ScorerSpec, ...] = ()
    thresholds: dict[str, ThresholdSpec] = field(default_factory=dict)
    target: Callable[..., Any] | None = None
    #: Scorer id → the node of runs it reads, where that is not ``runs`` (the item's input and
    #: output): ``trajectory_runs`` for trajectory scorers.
    sources: dict[str, str] = field(default_factory=dict)
    #: The data's conversations: each item's turns, by item label (an input of the graph).
    turn_specs: TurnSpecs = field(default_factory=dict)
    #: Whether the target is a workflow (a Hamilton dataflow), and its nodes with scorers.
    workflow: bool = False
    steps: tuple[str, ...] = ()
    #: ``run_evals(trials=N)`` past one: how many, and how each judged scorer's are reduced.
    trials: TrialSettings | None = None

    @property
    def all_scorers(self) -> tuple[ScorerSpec, ...]:
        """Scorers, then gates: every scorer whose nodes the graph holds."""
        return (*self.scorers, *self.gates)

    @property
    def gate_ids(self) -> tuple[str, ...]:
        return tuple(g.id for g in self.gates)

    @property
    def scorer_ids(self) -> tuple[str, ...]:
        """The ids of the scorers that are not gates."""
        return tuple(s.id for s in self.scorers)

    @property
    def read_columns(self) -> list[str]:
        """The data columns the scorers and gates read (``columns=``), the turns' included."""
        turn_scorers = [
            scorer
            for turns in self.turn_specs.values()
            for turn in turns
            for scorer in turn.assertions
        ]
        return sorted({c for s in (*self.all_scorers, *turn_scorers) for c in s.columns})

    def runs_of(self, scorer: ScorerSpec) -> str:
        """The node of runs ``scorer`` reads."""
        return self.sources.get(scorer.id, RUNS)

    @cached_property
    def fingerprints(self) -> dict[str, Parts]:
        """Scorer and gate id → what decides its scores, in named parts (found once per plan:
        the plan of a run is made anew for each run, as the code it reaches may have changed)."""
        memo = Memo()  # a constant many steps read is described once
        trials = self.trials or TrialSettings(1)
        return {s.id: {**scorer_parts(s, memo), **trials.parts(s.id)} for s in self.all_scorers}

    def definitions(self) -> list[dict[str, Any]]:
        """JSON-ready description of every scorer and gate, kept with the results."""
        gate_ids = set(self.gate_ids)
        return [
            {
                "id": s.id,
                "name": s.name,
                "description": s.description,
                "role": "gate" if s.id in gate_ids else "scorer",
                "threshold": self.thresholds.get(s.id),
                "better": s.better,
                "steps": [{"name": st.stage, "type": st.kind} for st in s.steps],
                "fingerprint": digest(self.fingerprints[s.id]),
                **({"trials": self.trials.definition(s.id)} if self.trials else {}),
            }
            for s in self.all_scorers
        ]

    def config(self) -> dict[str, Any]:
        """The Hamilton config of the eval graph: this plan, and what ``@config.when`` tests."""
        return {
            "hamilton.enable_power_user_mode": True,  # per-scorer nodes come from @resolve
            "plan": self,
            "has_target": self.target is not None,
            "has_scorers": bool(self.scorers),
            "has_gates": bool(self.gates),
            "has_thresholds": bool(self.thresholds),
            "has_trajectory_runs": "trajectory_runs" in self.sources.values(),
            "has_turns": bool(self.turn_specs),
            "workflow_target": self.workflow,
            "has_steps": bool(self.steps),
        }

    def __repr__(self) -> str:  # shown by Hamilton where config values are listed
        return (
            f"EvalPlan(scorers={list(self.scorer_ids)}, gates={list(self.gate_ids)}, "
            f"thresholds={sorted(self.thresholds)}, target={self.target is not None})"
        )
