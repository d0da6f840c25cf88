"""Cost before cost: the judge calls a run would make, their tokens and dollars, no judge called.

For each item and scorer, the code steps before the scorer's first judged step run for real (an
item they declare not scorable costs nothing), then that step's prompt is rendered and counted
with the tokenizer litellm ships for the judge's model, its system prompt included. What is
estimated rather than counted:

- **calls**: one per judged step of each item that reaches its scorer's first judged step;
  retries, repaired answers and steps a later not-scorable skips are not foreseen;
- **input tokens**: a later judged step's prompt depends on the judge's earlier answers, so it
  is counted as large as the first one of its scorer and item (the JSON schema sent with a
  structured-output request is not counted);
- **output tokens**: ``OUTPUT_TOKENS`` per call (the answers are short JSON or a sentence);
- **dollars**: litellm's price table for each judge's model; the calls of a model it does not
  price are listed in ``unpriced`` and left out of the dollars; the local judge costs nothing;
- with **trials** (``trials=N``), a judged scorer's calls, tokens and dollars are one trial's
  plus N - 1 times those of the scorer without its reason step (each trial its own calls; the
  further trials keep the first's reason; code scorers score once);
- with a **target**, outputs are not produced (that would call it): prompts are rendered with
  an empty output; a **conversation's turns** each with their own input, their judged scorers
  and gates estimated per turn index (``turn N: <id>``) as the run's summary names them.

The data is checked as ``run_evals`` checks it (``_eval/preflight.py``): what would stop the run
before its first judge call stops the estimate with the same error. Each judged scorer's
estimate has ``notes`` saying why items make no call (not scorable, or failing, before the
judge: with the first reason) and which data it read from JSON text, so a scorer is never
silently estimated at 0 calls.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any, cast

import pandas as pd
from pydantic import BaseModel, Field

from evaldag._engine.stages import advanced_states, prepared_states
from evaldag._eval.column_mapping import column_mapping
from evaldag._eval.eval_plan import eval_plan
from evaldag._eval.preflight import checked_data
from evaldag._eval.trials import with_trials
from evaldag._graph.drivers import eval_driver
from evaldag._graph.plan import TurnSpecs
from evaldag._judge.settings import LOCAL_MODEL, Judge, resolved_judge
from evaldag._judge.via_litellm import configured_litellm
from evaldag._scorer.run import ScorerRun
from evaldag._scorer.steps import PromptStep, ScorerSpec
from evaldag._util.event_loop import run_sync
from evaldag.errors import error_message

#: Output tokens assumed for each judge call.
OUTPUT_TOKENS = 200


class JudgeCallEstimate(BaseModel):
    """The judge calls of a scorer (or of the run), estimated."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = Field(default=0.0, description="US dollars of the priced calls.")
    unpriced: list[str] = Field(
        default_factory=list, description="Models litellm's table lacks: their calls cost extra."
    )
    notes: list[str] = Field(
        default_factory=list,
        description="What the count rests on: the items that make no call and why, the data "
        "read from JSON text.",
    )

    def plus(self, other: JudgeCallEstimate) -> JudgeCallEstimate:
        """Both estimates' calls, tokens and dollars together (notes are a scorer's own)."""
        return JudgeCallEstimate(
            calls=self.calls + other.calls,
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cost_usd=self.cost_usd + other.cost_usd,
            unpriced=sorted({*self.unpriced, *other.unpriced}),
        )

    def times(self, count: int) -> JudgeCallEstimate:
        """The estimate of ``count`` such runs (trials), its notes kept."""
        return self.model_copy(
            update={
                "calls": self.calls * count,
                "input_tokens": self.input_tokens * count,
                "output_tokens": self.output_tokens * count,
                "cost_usd": self.cost_usd * count,
            }
        )


class CostEstimate(BaseModel):
    """What a run's judges would be asked, and cost, before anything is asked."""

    items: int = Field(description="Items of the data.")
    scorers: dict[str, JudgeCallEstimate] = Field(
        description="Per scorer and gate with judged steps."
    )
    total: JudgeCallEstimate = Field(description="Every judged scorer and gate together.")
    unjudged: list[str] = Field(
        default_factory=list,
        description="The scorers and gates without a judged step: they make no judge call.",
    )
    output_tokens_per_call: int = Field(
        default=OUTPUT_TOKENS, description="The output tokens assumed for each call."
    )


def cost_estimate(
    data: Any,
    *,
    scorers: Any = (),
    gates: Iterable[Any] = (),
    target: Any = None,
    columns: Mapping[str, str] | None = None,
    trials: int = 1,
) -> CostEstimate:
    """The judge calls ``run_evals`` would make on ``data``, with tokens and dollars; no judge
    (and no target) is called. Arguments as ``run_evals``'s; what is estimated rather than
    counted is in this module's docstring."""
    plan = eval_plan(scorers, gates, target)
    dataset, fields, plan = checked_data(data, plan, column_mapping(columns))
    plan = with_trials(plan, trials, "mean")
    runs = _runs(plan, dataset, fields)
    estimates, unjudged = {}, []
    for scorer in plan.all_scorers:
        estimate = _scorer_estimate(scorer, runs.tolist())
        if estimate is None:
            unjudged.append(scorer.id)
            continue
        notes = [*estimate.notes, *_text_notes(scorer, dataset)]
        if plan.trials is not None and plan.trials.repeats(scorer.id):
            # The further trials keep the first's reason: they make no generate_reason call.
            lean = _scorer_estimate(scorer.without_reason(), runs.tolist())
            estimate = estimate.plus(lean.times(plan.trials.count - 1)) if lean else estimate
        estimates[scorer.id] = estimate.model_copy(update={"notes": notes})
    for name, scorer, turn_runs in _turn_runs(plan.turn_specs, runs):
        estimate = _scorer_estimate(scorer, turn_runs)
        if estimate is None:
            unjudged.append(name)
        elif name in estimates:  # objects of one id at one turn index (a factory per item)
            found = estimates[name]
            estimates[name] = found.plus(estimate).model_copy(
                update={"notes": [*found.notes, *estimate.notes]}
            )
        else:
            estimates[name] = estimate
    total = JudgeCallEstimate()
    for estimate in estimates.values():
        total = total.plus(estimate)
    return CostEstimate(
        items=len(dataset), scorers=estimates, total=total, unjudged=list(dict.fromkeys(unjudged))
    )


def _runs(plan: Any, dataset: pd.DataFrame, fields: pd.DataFrame) -> pd.Series:
    """The items as the scorers receive them; with a target, an empty output each."""
    overrides = {}
    if plan.target is not None:
        empty = pd.Series([""] * len(dataset), index=dataset.index, dtype=object)
        overrides = {"outputs": empty, "read_outputs": empty}
    dr = eval_driver(plan)
    inputs = {"dataset": dataset, "run_fields": fields}
    return dr.execute(["runs"], inputs=inputs, overrides=overrides)["runs"]


def _turn_runs(
    turn_specs: TurnSpecs, runs: pd.Series
) -> list[tuple[str, ScorerSpec, list[ScorerRun]]]:
    """Per turn index and assertion object, named ``turn N: <id>``: the runs its turns give it,
    each its item's run with the turn's input and an empty output."""
    grouped: dict[tuple[int, int], tuple[str, ScorerSpec, list[ScorerRun]]] = {}
    for label, specs in turn_specs.items():
        for index, spec in enumerate(specs):
            turn_run = runs[label].model_copy(update={"input": spec.input, "output": ""})
            for scorer in spec.assertions:
                name = f"turn {index}: {scorer.id}"
                grouped.setdefault((index, id(scorer)), (name, scorer, []))[2].append(turn_run)
    return list(grouped.values())


def _scorer_estimate(scorer: ScorerSpec, runs: list[ScorerRun]) -> JudgeCallEstimate | None:
    judged = [i for i, step in enumerate(scorer.steps) if isinstance(step.definition, PromptStep)]
    if not judged:
        return None
    states = prepared_states(runs, scorer, 8)
    for step in scorer.steps[: judged[0]]:
        states = advanced_states(states, scorer, step, 8)
    first_step = scorer.steps[judged[0]]
    first = cast(PromptStep, first_step.definition)
    judges = [
        resolved_judge(step.definition.judge, scorer.judge, step.stage)
        for step in scorer.steps
        if isinstance(step.definition, PromptStep)
    ]
    estimate = JudgeCallEstimate()
    uncalled: Counter[str] = Counter()
    for state in states:
        if state.not_scorable is not None:
            uncalled[f"not scorable ({state.not_scorable.reason})"] += 1
            continue
        if state.error is not None:
            cause = state.error.cause or state.error
            uncalled[f"failing at {state.error.failed_step} ({error_message(cause)})"] += 1
            continue
        try:
            prompt = first.create_prompt(**state.inputs(first_step.inputs))
            if hasattr(prompt, "__await__"):
                prompt = run_sync(_awaited(prompt))
        except Exception as error:  # the step fails the item before calling its judge
            uncalled[f"failing at {scorer.steps[judged[0]].stage} ({error_message(error)})"] += 1
            continue
        for judge in judges:
            estimate = estimate.plus(_call_estimate(judge, str(prompt)))
    return estimate.model_copy(update={"notes": _uncalled_notes(uncalled, len(states))})


def _uncalled_notes(uncalled: Counter[str], items: int) -> list[str]:
    """Why items make no judge call, the most frequent first; ``0 calls`` when none makes one."""
    notes = [
        f"{count} of {items} items make no call, {why}" for why, count in uncalled.most_common()
    ]
    if sum(uncalled.values()) == items:
        notes.insert(0, "0 calls: no item reaches the judge")
    return notes


def _text_notes(scorer: ScorerSpec, dataset: pd.DataFrame) -> list[str]:
    """The columns of JSON text a scorer reads as JSON (a CSV's cells)."""
    notes = []
    for need in scorer.needs:
        if need.from_text and need.column in dataset.columns:
            texts = sum(isinstance(cell, str) for cell in dataset[need.column])
            if texts:
                notes.append(
                    f"the data column '{need.column}' holds JSON text in {texts} items, read as "
                    f"the JSON it holds ({need.reads})"
                )
    return notes


async def _awaited(value: Any) -> Any:
    return await value


def _call_estimate(judge: Judge, prompt: str) -> JudgeCallEstimate:
    litellm = configured_litellm()
    messages = [{"role": "user", "content": prompt}]
    if judge.instructions:
        messages.insert(0, {"role": "system", "content": judge.instructions})
    tokens = litellm.token_counter(model=judge.model, messages=messages)
    cost = 0.0
    unpriced: list[str] = []
    if judge.prices is not None:
        cost = tokens * judge.prices[0] + OUTPUT_TOKENS * judge.prices[1]
    elif judge.model != LOCAL_MODEL:  # the local judge costs nothing
        try:
            input_usd, output_usd = litellm.cost_per_token(
                model=judge.model, prompt_tokens=tokens, completion_tokens=OUTPUT_TOKENS
            )
            cost = input_usd + output_usd
        except Exception:  # litellm's table does not price the model
            unpriced = [str(judge.model)]
    return JudgeCallEstimate(
        calls=1, input_tokens=tokens, output_tokens=OUTPUT_TOKENS, cost_usd=cost, unpriced=unpriced
    )
