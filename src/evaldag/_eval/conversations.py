"""Conversations in the data: items with ``inputs`` (turns in order on one thread) or ``turns``
(``[{input, gates?, scorers?}]``, each turn with its own assertions), checked as Mastra checks
them (spec §6.2).

A conversation item keeps its first input as ``input`` (what Mastra's scorers get as the item's
input) and the inputs of its turns as ``inputs``; the ``turns`` column, which holds scorer
objects, becomes one :class:`TurnSpec` per turn, by item label.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pandas as pd

from evaldag._eval.scorer_configs import checked_gates, checked_ids, scorer_entries
from evaldag._graph.plan import TurnSpec, TurnSpecs
from evaldag._reader import looks_like_json
from evaldag._scorer.builder import Scorer, ScorerWithThreshold
from evaldag.errors import EvalDagError

_TURN_KEYS = frozenset({"input", "gates", "scorers"})


def _invalid(index: Any, problem: str, **details: Any) -> EvalDagError:
    return EvalDagError(
        "INVALID_DATA_ITEM",
        f"Invalid data item at index {index}: {problem}",
        details={"index": str(index), **details},
    )


def _present(value: Any) -> bool:
    """Whether a cell holds a value: pandas fills the keys an item lacks with NaN."""
    if value is None:
        return False
    return not (isinstance(value, float) and value != value)


def _is_list(value: Any) -> bool:
    """A list, or an array read back from Parquet."""
    return isinstance(value, list | tuple) or (
        hasattr(value, "tolist") and not isinstance(value, str | bytes)
    )


def _listed(index: Any, key: str, value: Any) -> Any:
    """``value``, or the list its JSON text holds (a CSV cell): any other text is an error."""
    if not isinstance(value, str):
        return value
    try:
        listed = json.loads(value) if looks_like_json(value) else None
    except ValueError as error:
        raise _invalid(index, f"'{key}' is text that is not a JSON array ({error})") from None
    if not isinstance(listed, list):
        raise _invalid(index, f"'{key}' must be a non-empty array, got text")
    return listed


def _turn(index: Any, number: int, turn: Any) -> TurnSpec:
    if not isinstance(turn, Mapping) or "input" not in turn:
        raise _invalid(index, f"turns[{number}] must be an object with an 'input'", turn=number)
    unknown = sorted(str(key) for key in turn if key not in _TURN_KEYS)
    if unknown:
        raise _invalid(
            index,
            f"turns[{number}] has unknown keys {unknown}; a turn has 'input', 'gates' and "
            "'scorers'",
            turn=number,
        )
    where = {key: f"data[{index}].turns[{number}].{key}" for key in ("gates", "scorers")}
    gates = checked_gates(turn.get("gates") or (), where["gates"])
    scorers, thresholds = scorer_entries(turn.get("scorers") or (), where["scorers"])
    checked_ids([(where["scorers"], scorers), (where["gates"], gates)])
    return TurnSpec(turn["input"], tuple(gates), tuple(scorers), thresholds)


def conversation_items(
    frame: pd.DataFrame, *, has_target: bool, workflow_target: bool
) -> tuple[pd.DataFrame, TurnSpecs]:
    """The data with its conversation items checked, and their turns by item label."""
    _require_no_item_assertions(frame)
    columns = [c for c in ("inputs", "turns") if c in frame.columns]
    if not columns:
        return frame, {}
    has_input = "input" in frame.columns
    specs: TurnSpecs = {}
    inputs: list[Any] = []
    firsts: list[Any] = []
    for label, row in frame.iterrows():
        given = {c: row[c] for c in ("input", "inputs", "turns") if c in frame and _present(row[c])}
        if "inputs" not in given and "turns" not in given:
            if "input" not in given and not has_input:
                raise _invalid(label, "must have 'input', 'inputs', or 'turns' property")
            inputs.append(None)
            firsts.append(row["input"] if has_input else None)
            continue
        if workflow_target:
            raise _invalid(
                label,
                "'inputs' and 'turns' (multi-turn conversations) are only supported for agent "
                "targets, not workflows",
            )
        if not has_target:
            raise _invalid(
                label,
                "'inputs' and 'turns' (multi-turn conversations) need a target to hold the "
                "conversation: pass target= (a function or evaldag.agent(...))",
            )
        if "turns" in given:
            if "input" in given or "inputs" in given:
                raise _invalid(label, "'turns' cannot be combined with 'input' or 'inputs'")
            turns = _listed(label, "turns", given["turns"])
            if not _is_list(turns) or not len(turns):
                raise _invalid(label, "'turns' must be a non-empty array")
            specs[label] = tuple(_turn(label, n, turn) for n, turn in enumerate(list(turns)))
        else:
            if "input" in given:
                raise _invalid(
                    label,
                    "'inputs' cannot be combined with 'input': give the conversation's inputs "
                    "in 'inputs' only",
                )
            turn_inputs = _listed(label, "inputs", given["inputs"])
            if not _is_list(turn_inputs) or not len(turn_inputs):
                raise _invalid(label, "'inputs' must be a non-empty array")
            specs[label] = tuple(TurnSpec(value) for value in list(turn_inputs))
        inputs.append([spec.input for spec in specs[label]])
        firsts.append(specs[label][0].input)
    _require_one_role_per_id(specs)
    checked = frame.drop(columns=columns)
    checked["input"] = pd.Series(firsts, index=frame.index, dtype=object)
    checked["inputs"] = pd.Series(inputs, index=frame.index, dtype=object)
    return checked, specs


def _require_no_item_assertions(frame: pd.DataFrame) -> None:
    """Scorers in an item's own ``gates`` or ``scorers`` (beside its ``turns``, or without
    any) would be data the run never reads, so a run of failing gates passed: an error."""

    def is_scorer(entry: Any) -> bool:
        if isinstance(entry, Mapping):
            entry = entry.get("scorer")
        return isinstance(entry, Scorer | ScorerWithThreshold)

    for key in ("gates", "scorers"):
        if key not in frame.columns:
            continue
        for label, value in frame[key].items():
            entries = list(value) if _is_list(value) else [value]
            if any(is_scorer(entry) for entry in entries):
                raise _invalid(
                    label,
                    f"'{key}' holds scorers, which the run reads only in a conversation's turns "
                    f"(turns=[{{'input': ..., '{key}': [...]}}]); move them into a turn, or give "
                    f"them to every item ({key}= of run_evals, an eval file's module-level "
                    f"{key})",
                    key=key,
                )


def _require_one_role_per_id(specs: TurnSpecs) -> None:
    """Turn results are keyed by id per turn index: one id must be a gate or a scorer, with at
    most one threshold, at each index across items."""
    roles: dict[tuple[int, str], tuple[str, Any, Any]] = {}
    for label, turns in specs.items():
        for index, turn in enumerate(turns):
            for role, group in (("scorer", turn.scorers), ("gate", turn.gates)):
                for scorer in group:
                    found = (role, turn.thresholds.get(scorer.id), label)
                    first = roles.setdefault((index, scorer.id), found)
                    if first[1] is None and found[1] is not None:
                        roles[index, scorer.id] = (first[0], found[1], label)
                    thresholds = (first[1], found[1])
                    if first[0] != role or (None not in thresholds and first[1] != found[1]):
                        raise _invalid(
                            label,
                            f"turns[{index}] has '{scorer.id}' as a {role}"
                            f"{_threshold_words(found[1])}, but item {first[2]}'s turns[{index}] "
                            f"has it as a {first[0]}{_threshold_words(first[1])}; turn results "
                            "are kept per turn and id, so give it one role and threshold",
                            turn=index,
                            scorerId=scorer.id,
                        )


def _threshold_words(threshold: Any) -> str:
    return "" if threshold is None else f" with threshold {threshold!r}"


def turn_assertions(specs: TurnSpecs) -> bool:
    """Whether any turn has a gate or scorer."""
    return any(turn.assertions for turns in specs.values() for turn in turns)
