"""Everything checkable about the data, checked before the first scorer step (and judge call).

``run_evals`` and ``cost_estimate`` read their data through :func:`checked_data`, which loads it
(its columns mapped, its conversations read), reads every item's run fields once (the run's
items are made of what is read here: ``run_fields``) and checks, for every item:

- that the data's columns do not take the names the run adds (``run_id``, ``<id>.score``, ...);
- that every input and output is a text or a transcript evaldag reads, and every structured
  field given as text (``request_context``, ``expected_trajectory``) is JSON of its kind;
- that every column a scorer or gate reads (``create_scorer(columns=...)``,
  ``context="contexts"``) is in the data, a turn's scorers included;
- every scorer's needs (``scorer.needs``): a column it requires (context recall's
  ``ground_truth``; a trajectory scorer's ``expected_trajectory`` when it has no expectation of
  its own) and the shape of each item's cell (a context column's pieces: a list of strings, or
  the JSON text of one; an expected trajectory the scorer can read);
- that every judge (a scorer's or gate's, a turn's, an agent target's model) is one its
  transport can call: a model ``http`` does not serve, credentials given twice (a user in
  ``api_base`` beside an API key), a provider litellm does not know.

A bad row late in the data thus costs no judge call: the run fails before the first with the
row, the column, the scorer and the fix, instead of failing that row's item after the other
scorers paid for theirs. An empty cell is left to the scorer (most often, the item is then not
scorable).
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Iterator
from typing import Any

import pandas as pd

from evaldag._eval.conversations import conversation_items, turn_assertions
from evaldag._eval.dataset import loaded_dataset
from evaldag._eval.scorer_configs import require_some_scorer
from evaldag._graph.plan import EvalPlan
from evaldag._judge.endpoints import require_endpoint
from evaldag._judge.errors import JudgeError
from evaldag._judge.settings import Judge
from evaldag._results.item_columns import ScorerColumns
from evaldag._scorer.needs import DataNeed
from evaldag._scorer.run import ScorerRun, run_field
from evaldag._scorer.steps import ScorerSpec, prompt_judges
from evaldag._targets.agent import Agent
from evaldag.errors import EvalDagError


def checked_data(
    data: Any, plan: EvalPlan, columns: dict[str, str]
) -> tuple[pd.DataFrame, pd.DataFrame, EvalPlan]:
    """``data`` loaded and checked against every scorer and gate before any of them runs, its
    items' run fields as read (the eval graph's ``run_fields``), and ``plan`` with the data's
    conversations (their turns' scorers checked too).

    :param columns: run field → the data's column holding it (checked ``columns=``).
    """
    has_target = plan.target is not None
    dataset = loaded_dataset(data, has_target=has_target, columns=columns)
    dataset, turns = conversation_items(
        dataset, has_target=has_target, workflow_target=plan.workflow
    )
    require_some_scorer(plan.all_scorers, turn_assertions(turns))
    plan = dataclasses.replace(plan, turn_specs=turns)
    _require_free_column_names(dataset, plan)
    fields = run_fields(dataset, plan.read_columns)
    for scorer, labels in scorers_and_rows(plan):
        _require_read_columns(dataset, scorer)
        for need in scorer.needs:
            _require_need(dataset, fields, scorer, need, labels)
    for owner, judge in _judges(plan):
        try:
            require_endpoint(judge)
        except EvalDagError as error:
            raise JudgeError(
                error.id,
                f"{owner} ({judge.model}): {error.message}",
                category=error.category,
                details={**error.details, "judgeOf": owner},
            ) from None
    return dataset, fields, plan


def _judges(plan: EvalPlan) -> Iterator[tuple[str, Judge]]:
    """The judges the run calls, each with whose it is: its scorers' and gates' (a turn's
    too), an agent target's model."""
    yield from scorer_judges(plan)
    if isinstance(plan.target, Agent):
        yield f"the model of {plan.target.name}", plan.target.model


def scorer_judges(plan: EvalPlan) -> Iterator[tuple[str, Judge]]:
    """The judges of the run's scorers and gates (a turn's too), each with whose it is."""
    for scorer, _ in scorers_and_rows(plan):
        for judge in prompt_judges(scorer):
            yield f"the judge of {scorer.id}", judge


def scorers_and_rows(plan: EvalPlan) -> Iterator[tuple[ScorerSpec, list[Any] | None]]:
    """Every scorer and gate of the run with the labels of the items it scores: None for all
    (the run's own), the conversations' labels for a turn's."""
    for scorer in plan.all_scorers:
        yield scorer, None
    by_scorer: dict[int, tuple[ScorerSpec, list[Any]]] = {}
    for label, turns in plan.turn_specs.items():
        for turn in turns:
            for scorer in turn.assertions:
                by_scorer.setdefault(id(scorer), (scorer, []))[1].append(label)
    yield from by_scorer.values()


def _require_free_column_names(dataset: pd.DataFrame, plan: EvalPlan) -> None:
    """Data columns must not take the names of the columns the run adds to each item."""
    added = {"run_id", *(c for s in plan.all_scorers for c in ScorerColumns(s.id).all)}
    if plan.target is not None:
        added |= {"output", "target_error"}
    clashes = sorted(str(c) for c in dataset.columns if c in added)
    if clashes:
        raise EvalDagError(
            "INVALID_DATA_ITEM",
            f"Data columns {clashes} clash with columns the run adds to each item; rename them",
            details={"columns": clashes},
        )


#: The data columns that are fields of a run: all of its own but the run id.
_RUN_FIELDS = tuple(field for field in ScorerRun.model_fields if field != "run_id")
_TRANSCRIPTS = ("input", "output")


def run_fields(dataset: pd.DataFrame, read_columns: list[str]) -> pd.DataFrame:
    """The fields of each item's run, read once (:func:`~evaldag._scorer.run.run_field`): the
    run's own (``input``, ``output``, ``ground_truth``, ...) and the data ``read_columns`` the
    scorers read, each where the data has it; an empty cell of the others as None. An input,
    output or structured field that reads as none of its kind fails with the row."""
    fields = {}
    for field in dict.fromkeys((*_RUN_FIELDS, *read_columns)):
        if field not in dataset.columns:
            continue
        cells = dataset[field].tolist()
        read: list[Any] = []
        try:
            for cell in cells if field in _TRANSCRIPTS else map(_cell, cells):
                read.append(run_field(field, cell))
        except EvalDagError as error:
            label = dataset.index[len(read)]
            raise EvalDagError(
                "INVALID_DATA_ITEM",
                f"Row {label!r}: {error.message}",
                details={**error.details, "row": str(label), "column": field},
            ) from error
        fields[field] = pd.Series(read, dtype=object).to_numpy()
    return pd.DataFrame(fields, index=dataset.index, dtype=object)


def _cell(value: Any) -> Any:
    """A dataset cell as a run field: pandas' missing markers become None."""
    if value is None or (isinstance(value, float) and value != value):
        return None
    return value


def _require_read_columns(dataset: pd.DataFrame, scorer: ScorerSpec) -> None:
    """Every dataset column the scorer reads (``create_scorer(columns=...)``) is in the data."""
    missing = [c for c in scorer.columns if c not in dataset.columns]
    if missing:
        found = [str(c) for c in dataset.columns]
        raise EvalDagError(
            "INVALID_DATA_ITEM",
            f"Scorer '{scorer.id}' reads the data column(s) {missing}, which the data does "
            f"not have (its columns: {found}){_close_match(missing[0], found)}; add them or "
            "configure the scorer to read another column",
            details={"scorerId": scorer.id, "columns": missing},
        )


def _require_need(
    dataset: pd.DataFrame,
    fields: pd.DataFrame,
    scorer: ScorerSpec,
    need: DataNeed,
    labels: list[Any] | None,
) -> None:
    """The data has the column ``need`` requires, and each item's cell there has its shape: a
    run field's as the run holds it (JSON text read), a data column's as it is."""
    if need.column not in dataset.columns:
        if need.required:
            raise _missing_column(dataset, scorer, need)
        return
    if need.cell is None:
        return
    read = need.column in _RUN_FIELDS and need.column not in _TRANSCRIPTS
    column = (fields if read else dataset)[need.column]
    cells = column if labels is None else column.loc[labels]
    for label, cell in cells.items():
        if _missing(cell):
            continue
        try:
            need.cell(cell)
        except EvalDagError as error:
            raise EvalDagError(
                "INVALID_DATA_ITEM",
                f"Row {label!r}{_item_id(dataset, label)}: {error.message} (scorer "
                f"'{scorer.id}' reads '{need.column}' as {need.reads})",
                details={
                    **error.details,
                    "row": str(label),
                    "column": need.column,
                    "scorerId": scorer.id,
                },
                cause=error,
            ) from error


def _missing_column(dataset: pd.DataFrame, scorer: ScorerSpec, need: DataNeed) -> EvalDagError:
    found = [str(c) for c in dataset.columns]
    if need.column in ScorerRun.model_fields:
        fix = f"name the column holding it: columns={{'{need.column}': '<column>'}}"
    else:
        fix = "give the scorer the column that holds it"
    return EvalDagError(
        "INVALID_DATA_ITEM",
        f"Scorer '{scorer.id}' needs {need.reads} from the data column '{need.column}', which "
        f"the data does not have (its columns: {found}){_close_match(need.column, found)}; add "
        f"it, or {fix}",
        details={"scorerId": scorer.id, "columns": [need.column]},
    )


def _close_match(column: str, found: list[str]) -> str:
    close = difflib.get_close_matches(column, found, n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""


def _item_id(dataset: pd.DataFrame, label: Any) -> str:
    """`` (id '...')`` when the data names its items, to find the row by."""
    value = dataset.at[label, "id"] if "id" in dataset.columns else None
    if _missing(value):
        return ""
    return f" (id {value!r})"


def _missing(cell: Any) -> bool:
    """Whether a cell is empty: None, NaN or pandas' NA (not a list, which may be empty)."""
    return cell is None or (pd.api.types.is_scalar(cell) and pd.isna(cell))
