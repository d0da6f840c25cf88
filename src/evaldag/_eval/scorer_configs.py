"""Scorer configurations: Mastra's list, agent and workflow forms, read into one keyed plan.

A list (``[scorer, scorer.with_threshold(0.7), {"scorer": s, "threshold": t}]``) scores each
item's output, its results keyed by scorer id. An agent config ``{"agent": [...],
"trajectory": [...]}`` and a workflow config ``{"workflow": [...], "steps": {"<node>": [...]},
"trajectory": [...]}`` key them as Mastra nests them: ``agent.<id>``, ``trajectory.<id>``,
``workflow.<id>``, ``steps.<node>.<id>``. That key is the scorer's id in the eval graph: it names
its nodes, item columns, average and threshold. Validation follows Mastra (spec §6.2, §6.3).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from evaldag._graph.plan import RUNS, step_runs_node
from evaldag._results.item_columns import grouped_id, step_group
from evaldag._scorer.builder import Scorer, ScorerWithThreshold
from evaldag._scorer.thresholds import ThresholdSpec, validated_threshold
from evaldag.errors import EvalDagError

#: Node names of the eval graph that a scorer id must not take.
RESERVED_IDS = frozenset(
    {
        "dataset",
        "concurrency",
        "target_runs",
        "outputs",
        "read_outputs",
        "run_fields",
        "item_runs",
        "runs",
        "trajectory_runs",
        "turn_specs",
        "turn_items",
        "turn_results",
        "turns",
        "items",
        "batch_items",
        "data",
        "data_fields",
        "row_batch",
        "batch_size",
        "scores",
        "summary",
        "gate_results",
        "threshold_results",
        "verdict",
        "usage",
        "eval_result",
        "experiment_id",
        "experiment_name",
        "judge_cache",
        "judge_cache_rows_dropped",
        "judge_cache_problems",
        "judge_budget",
        "judge_limits",
        "step_timeout",
        "target_timeout",
        "target",
        # the graph's config keys
        "plan",
        "has_target",
        "has_scorers",
        "has_gates",
        "has_thresholds",
        "has_trajectory_runs",
        "has_turns",
        "workflow_target",
        "has_steps",
    }
)
#: Characters an id may not hold: '.' separates node names, Graphviz reads ':' as a port and
#: '\' as an escape.
_UNSAFE_ID = re.compile(r"[.:\\\x00-\x1f\x7f]")
#: The runs whose output is the item's trajectory (trajectory scorers and trajectory gates).
TRAJECTORY_RUNS = "trajectory_runs"
_AGENT_KEYS = ("agent", "trajectory")
_WORKFLOW_KEYS = ("workflow", "steps", "trajectory")

ConfigKind = Literal["list", "agent", "workflow"]


@dataclass(frozen=True)
class ScorerConfig:
    """Scorers keyed for the graph, their thresholds, and the runs each reads."""

    kind: ConfigKind
    scorers: tuple[Scorer, ...] = ()
    gates: tuple[Scorer, ...] = ()
    thresholds: dict[str, ThresholdSpec] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    steps: tuple[str, ...] = ()


def scorer_entries(
    entries: Iterable[Any], where: str
) -> tuple[list[Scorer], dict[str, ThresholdSpec]]:
    """Scorers and their thresholds, from scorers, ``with_threshold`` entries or Mastra dicts.

    :param where: names the list in errors, e.g. ``scorers`` or ``scorers['agent']``.
    """
    plain: list[Scorer] = []
    thresholds: dict[str, ThresholdSpec] = {}
    if isinstance(entries, str | bytes | Mapping) or not isinstance(entries, Iterable):
        raise EvalDagError(
            "INVALID_SCORER_ENTRY",
            f"{where} must be a list of scorers, got {type(entries).__name__}",
        )
    for index, entry in enumerate(entries):
        if isinstance(entry, ScorerWithThreshold):
            plain.append(entry.scorer)
            thresholds[entry.scorer.id] = entry.threshold
        elif isinstance(entry, Mapping) and "scorer" in entry and "threshold" in entry:
            scorer = entry["scorer"]
            if not isinstance(scorer, Scorer):
                raise EvalDagError(
                    "INVALID_SCORER_ENTRY",
                    f"{where}[{index}]['scorer'] must be a Scorer, got {type(scorer).__name__}",
                )
            thresholds[scorer.id] = validated_threshold(
                scorer.id, entry["threshold"], scorer.max_score, scorer.better
            )
            plain.append(scorer)
        elif isinstance(entry, Scorer):
            plain.append(entry)
        else:
            raise EvalDagError(
                "INVALID_SCORER_ENTRY",
                f"{where}[{index}] must be a Scorer, scorer.with_threshold(...) or "
                f"{{'scorer': ..., 'threshold': ...}}, got {type(entry).__name__}",
            )
    return plain, thresholds


def checked_gates(gates: Iterable[Any], where: str = "gates") -> list[Scorer]:
    """``gates`` as a list of scorers, else an error naming the entry."""
    gate_list = list(gates)
    for index, gate in enumerate(gate_list):
        if not isinstance(gate, Scorer):
            raise EvalDagError(
                "INVALID_SCORER_ENTRY",
                f"{where}[{index}] must be a Scorer (a check or a scorer scoring 0 or 1), got "
                f"{type(gate).__name__}",
            )
        if gate.max_score != 1:
            # A gate passes at an average of 1.0, the top of a 0-1 scale; on a larger scale
            # 1.0 would be a low score passing.
            raise EvalDagError(
                "INVALID_SCORER_ENTRY",
                f"{where}[{index}] ('{gate.id}') scores from 0 to {gate.max_score:g} "
                "(max_score), but a gate scores from 0 to 1 and passes at 1.0; give it as a "
                "scorer with a threshold on its own scale, e.g. "
                f"scorer.with_threshold({gate.max_score * 0.8:g})",
                details={"scorerId": gate.id, "maxScore": gate.max_score},
            )
        if gate.better == "lower":
            # A gate passes when every item scores 1.0: for such a scorer, its worst.
            raise EvalDagError(
                "INVALID_SCORER_ENTRY",
                f"{where}[{index}] ('{gate.id}') scores lower for better answers, but a gate "
                "passes only when every item scores 1.0, its worst; give it as a scorer with a "
                "maximum, e.g. scorer.with_threshold(max=0.2)",
                details={"scorerId": gate.id, "better": "lower"},
            )
    return gate_list


def checked_ids(groups: Iterable[tuple[str, list[Scorer]]]) -> None:
    """Each id is safe for node names, and unique within the runs it is keyed under.

    :param groups: ``(where, scorers)`` pairs whose ids share one key space, e.g.
        ``("scorers", [...])`` and ``("gates", [...])``.
    """
    seen: dict[str, str] = {}
    for role, group in groups:
        for index, scorer in enumerate(group):
            where = f"{role}[{index}]"
            if scorer.id in RESERVED_IDS or _UNSAFE_ID.search(scorer.id):
                raise EvalDagError(
                    "INVALID_SCORER_ID",
                    f"{where} has id {scorer.id!r}, which names a node of the eval graph or "
                    "contains '.', ':', '\\' or a control character (node names, result "
                    "columns and pictures are built from ids); give the scorer another id",
                    details={"scorerId": scorer.id},
                )
            if scorer.id in seen:
                raise EvalDagError(
                    "DUPLICATE_SCORER_ID",
                    f"{seen[scorer.id]} and {where} share the id '{scorer.id}'; each scorer and "
                    "gate needs its own id (checks take id=..., create_scorer takes a new id)",
                    details={"scorerId": scorer.id, "first": seen[scorer.id], "second": where},
                )
            seen[scorer.id] = where
            scorer.require_generate_score()


def _keyed(scorer: Scorer, key: str) -> Scorer:
    """``scorer`` under the id ``key``: its nodes and columns are named after the key."""
    return Scorer(
        key,
        name=scorer.name,
        description=scorer.description,
        type=scorer.type,
        judge=scorer.judge,
        prepare_run=scorer.prepare_run,
        columns=scorer.columns,
        max_score=scorer.max_score,
        step_timeout=scorer.step_timeout,
        steps=scorer.steps,
        needs=scorer.needs,
        better=scorer.better,
    )


def _config_kind(scorers: Mapping[Any, Any], workflow_target: bool) -> ConfigKind:
    """Mastra's classification (spec §6.3), refusing what it would silently misroute."""
    unknown = [str(key) for key in scorers if key not in (*_AGENT_KEYS, *_WORKFLOW_KEYS)]
    if unknown:
        raise EvalDagError(
            "INVALID_SCORER_CONFIG",
            f"scorers has unknown keys {unknown}: an agent config has 'agent' and 'trajectory', "
            "a workflow config 'workflow', 'steps' and 'trajectory'; a list of scorers scores "
            "each item's output",
            details={"keys": unknown},
        )
    agent = "agent" in scorers
    workflow = "workflow" in scorers or "steps" in scorers
    if agent and workflow:
        raise EvalDagError(
            "INVALID_SCORER_CONFIG",
            "scorers mixes an agent config ('agent') with a workflow config ('workflow', "
            "'steps'); give one of them",
        )
    if workflow and not workflow_target:
        raise EvalDagError(
            "INVALID_AGENT_SCORERS",
            "scorers is a workflow config ('workflow', 'steps'), which needs a workflow target "
            "(target=evaldag.workflow(...) or a Hamilton driver); for an agent, a function or "
            "recorded outputs give {'agent': [...], 'trajectory': [...]} or a list",
        )
    if agent and workflow_target:
        raise EvalDagError(
            "INVALID_WORKFLOW_SCORERS",
            "scorers is an agent config ('agent'), but the target is a workflow; give "
            "{'workflow': [...], 'steps': {'<node>': [...]}, 'trajectory': [...]}",
        )
    return "workflow" if workflow_target else "agent"


def require_some_scorer(scorers: tuple[Any, ...], turn_assertions: bool) -> None:
    """A run needs a scorer or gate: top-level, or in its conversations' turns.

    Checked once the data is read (after the scorers' thresholds, as Mastra orders it).
    """
    if not scorers and not turn_assertions:
        raise EvalDagError("NO_SCORERS_PROVIDED", "At least one scorer or gate must be provided")


def scorer_config(scorers: Any, gates: Iterable[Any], *, workflow_target: bool) -> ScorerConfig:
    """The scorers and gates of ``run_evals``, validated and keyed (see the module docstring).

    An empty list is left to :func:`require_some_scorer`: a conversation's turns may hold the
    run's only gates and scorers.
    """
    gate_list = checked_gates(gates)
    if not isinstance(scorers, Mapping):
        plain, thresholds = scorer_entries(scorers, "scorers")
        checked_ids([("scorers", plain), ("gates", gate_list)])
        sources = {g.id: TRAJECTORY_RUNS for g in gate_list if g.type == "trajectory"}
        return ScorerConfig("list", tuple(plain), tuple(gate_list), thresholds, sources)
    kind = _config_kind(scorers, workflow_target)
    # (key prefix, the runs its scorers read, where in the config, scorers, thresholds)
    groups: list[tuple[str, str, str, list[Scorer], dict]] = []
    for group in ("agent", "workflow"):
        if group in scorers:
            where = f"scorers['{group}']"
            groups.append((group, RUNS, where, *scorer_entries(scorers[group], where)))
    steps = scorers.get("steps", {})
    if not isinstance(steps, Mapping):
        raise EvalDagError(
            "INVALID_SCORER_ENTRY",
            "scorers['steps'] must map node names to lists of scorers, e.g. "
            f"{{'answer': [...]}}, got {type(steps).__name__}",
        )
    for step, entries in steps.items():
        if not isinstance(step, str) or not step or _UNSAFE_ID.search(step.replace(".", "")):
            raise EvalDagError(
                "INVALID_SCORER_ENTRY",
                f"scorers['steps'] has the key {step!r}; give the name of a node of the workflow",
            )
        where = f"scorers['steps'][{step!r}]"
        groups.append(
            (step_group(step), step_runs_node(step), where, *scorer_entries(entries, where))
        )
    if "trajectory" in scorers:
        where = "scorers['trajectory']"
        groups.append(
            ("trajectory", TRAJECTORY_RUNS, where, *scorer_entries(scorers["trajectory"], where))
        )
    if not any(group_scorers for *_, group_scorers, _ in groups):
        parts = "agent or trajectory" if kind == "agent" else "workflow, step, or trajectory"
        raise EvalDagError("NO_SCORERS_PROVIDED", f"At least one {parts} scorer must be provided")
    checked_ids([("gates", gate_list)])
    keyed: list[Scorer] = []
    thresholds = {}
    sources = {g.id: TRAJECTORY_RUNS for g in gate_list if g.type == "trajectory"}
    for prefix, runs, where, group_scorers, group_thresholds in groups:
        checked_ids([(where, group_scorers)])
        for scorer in group_scorers:
            key = grouped_id(prefix, scorer.id)
            keyed.append(_keyed(scorer, key))
            if scorer.id in group_thresholds:
                thresholds[key] = group_thresholds[scorer.id]
            if runs != RUNS:
                sources[key] = runs
    return ScorerConfig(kind, tuple(keyed), tuple(gate_list), thresholds, sources, tuple(steps))
