"""Trajectory accuracy (LLM): did the agent take a sensible sequence of steps for the request?

Mastra's ``createTrajectoryAccuracyScorerLLM`` (id ``llm-trajectory-accuracy-scorer``): a function
step writes the agent's trajectory (and the expected steps, when given) as numbered lines; the
judge says of each step whether it was necessary and in a sensible place, and lists missing and
extra steps. Score = 0.6 × necessary share + 0.3 × in-order share + 0.1 × completeness (the share
of steps that were not missing), so a trajectory with every step right scores 1. A step taken
that the judge did not evaluate is neither necessary nor in order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import Field

from evaldag._compat.js import js_json, round_to_two_decimals
from evaldag._scorer.builder import Scorer
from evaldag._scorer.needs import DataNeed
from evaldag._scorer.steps import PromptStep, described_step
from evaldag.errors import EvalDagError
from evaldag.scorers._trajectory import expected_step, known_expectation, trajectory_dict
from evaldag.scorers.llm._shared import (
    CamelAnswer,
    PromptTemplate,
    json_text,
    llm_scorer,
    model_documented,
    raw_output_response,
    response_text,
    user_text,
)

INSTRUCTIONS = """\
You review the path an AI agent took to handle a user's request: the sequence of steps (tool
calls, model calls, sub-agents, workflow steps) it went through.
- Judge each step: was it needed for the request, and did it come at a sensible point, after
  the steps it depends on?
- Notice steps the request needed that the agent never took, and steps that were redundant or
  unnecessary. Redundant steps make a path worse even when the final answer is right.
- When an expected path is given, use it as a guide: it shows the steps that should happen,
  but a different order that still respects the dependencies between steps can be fine.
Be consistent and specific, and answer in the JSON format you are asked for."""

EVALUATION_PROMPT = PromptTemplate("""\
Review the steps an agent took to handle the request below.

<user_request>
$input
</user_request>

<final_response>
$output
</final_response>

The steps the agent took, in order (nested steps are indented under the step that ran them):
<actual_steps>
$actual
</actual_steps>
$expected
Evaluate each step the agent took, in order: give "stepName" (its name), "wasNecessary" (true
when the request needed it), "wasInOrder" (true when it came at a sensible point in the
sequence) and "reasoning". Then list in "missingSteps" the needed steps the agent never took
(steps of the expected path, when one is given), in "extraSteps" the steps that were
redundant or unnecessary (empty lists when there are none), and sum up in
"overallAssessment".

Example: for the request "What is the weather in Rome?" and the steps
1. [tool_call] get_weather (args: {"city":"Rome"})
2. [tool_call] get_weather (args: {"city":"Rome"})
answer:
{"stepEvaluations": [
  {"stepName": "get_weather", "wasNecessary": true, "wasInOrder": true,
   "reasoning": "Fetches the weather asked for."},
  {"stepName": "get_weather", "wasNecessary": false, "wasInOrder": true,
   "reasoning": "Repeats the same call."}
], "missingSteps": [], "extraSteps": ["get_weather"],
 "overallAssessment": "Right tool, but called twice."}

Answer with JSON: {"stepEvaluations": [{"stepName": "...", "wasNecessary": true | false,
"wasInOrder": true | false, "reasoning": "..."}], "missingSteps": ["..."],
"extraSteps": ["..."], "overallAssessment": "..."}""")

EXPECTED_STEPS = PromptTemplate("""\

The steps that should happen (a guide to what is needed; the order may differ where the steps
do not depend on each other):
<expected_steps>
$expected
</expected_steps>
""")

REASON_PROMPT = PromptTemplate("""\
An agent's path through a request was scored from 0 to 1: 0.6 × the share of its steps that
were necessary + 0.3 × the share that came in a sensible order + 0.1 × the share of needed
steps it did not miss.

<user_request>
$input
</user_request>

Score: $score
Step evaluations: $evaluations
Missing steps: $missing
Extra steps: $extra

In one sentence, explain why the agent's path earned this score.""")

NO_STEPS = "(the agent took no steps)"


class StepEvaluation(CamelAnswer):
    """Whether one step was necessary and well placed."""

    step_name: str = Field(description="Name of the step (tool name or action).")
    was_necessary: bool = Field(description="Whether the request needed this step.")
    was_in_order: bool = Field(description="Whether it came at a sensible point.")
    reasoning: str = Field(description="Brief explanation of the evaluation.")


class TrajectoryEvaluation(CamelAnswer):
    """One evaluation per step taken, the missing and extra steps, and a summary."""

    step_evaluations: list[StepEvaluation]
    missing_steps: list[str] | None = Field(
        default=None, description="Steps that should have been taken but were not."
    )
    extra_steps: list[str] | None = Field(
        default=None, description="Steps that were unnecessary or redundant."
    )
    overall_assessment: str


def _step_details(step: Mapping[str, Any]) -> str:
    kind = step.get("stepType")
    if kind in ("tool_call", "mcp_tool_call"):
        parts = [
            f"{label}: {js_json(step[key])}"
            for key, label in (("toolArgs", "args"), ("toolResult", "result"))
            if key in step
        ]
        return f" ({', '.join(parts)})" if parts else ""
    if kind == "model_generation":
        return f" (model: {step['modelId']})" if step.get("modelId") else ""
    if kind == "workflow_step" and "output" in step:
        return f" (output: {js_json(step['output'])})"
    return ""


def formatted_steps(steps: Sequence[Mapping[str, Any]], depth: int = 0) -> str:
    """Taken steps as numbered lines ``1. [tool_call] name (args: …, result: …)``; a step's
    children follow it, indented two spaces per level."""
    lines = []
    for number, step in enumerate(steps, 1):
        line = f"{'  ' * depth}{number}. [{step.get('stepType')}] {step.get('name')}"
        line += _step_details(step)
        children = step.get("children")
        if children:
            line += "\n" + formatted_steps(children, depth + 1)
        lines.append(line)
    return "\n".join(lines)


def formatted_expectation(steps: Sequence[Mapping[str, Any]], depth: int = 0) -> str:
    """Expected steps as numbered lines ``1. [tool_call] name ({fields JSON})``; nested
    expectations (``children: {steps}``) follow their step, indented."""
    lines = []
    for number, step in enumerate(steps, 1):
        kind = f"[{step['stepType']}] " if step.get("stepType") else ""
        fields = {k: v for k, v in step.items() if k not in ("name", "stepType", "children")}
        line = f"{'  ' * depth}{number}. {kind}{step.get('name')}"
        line += f" ({js_json(fields)})" if fields else ""
        children = step.get("children")
        if isinstance(children, Mapping) and children.get("steps"):
            line += "\n" + formatted_expectation(children["steps"], depth + 1)
        lines.append(line)
    return "\n".join(lines)


def _static_expectation(expected_trajectory: Any) -> list[dict[str, Any]] | None:
    if expected_trajectory is None:
        return None
    what = "expected_trajectory of trajectory_accuracy_llm(...)"
    steps = trajectory_dict(expected_trajectory, what)["steps"]
    if not steps:
        raise EvalDagError(
            "EVALDAG_INVALID_SCORER_OPTION",
            f"{what} has no steps: give the steps the agent should take, e.g. "
            "[{'stepType': 'tool_call', 'name': 'search'}], or leave it out",
            details={"option": "expected_trajectory"},
        )
    if isinstance(expected_trajectory, Sequence):
        return steps
    return [expected_step(step) for step in steps]


def _run_expectation(run: Any) -> list[dict[str, Any]] | None:
    return _item_steps(run.expected_trajectory, "run.expected_trajectory['steps']")


def _item_steps(expectation: Any, what: str) -> list[dict[str, Any]] | None:
    """The steps of an item's expected trajectory (a list of steps or a dict with ``steps``)."""
    if expectation is None:
        return None
    if hasattr(expectation, "model_dump") or isinstance(expectation, Mapping):
        expectation = known_expectation(expectation, what.removesuffix("['steps']")).get("steps")
        if not expectation:
            return None
    steps = trajectory_dict(expectation, what)["steps"]
    return steps or None


#: Without an expectation of its own, the scorer reads each item's: one it can read, when given.
_EXPECTATION = DataNeed(
    "expected_trajectory",
    "the trajectory expected of each item",
    lambda value: _item_steps(value, "the item's expected_trajectory"),
    required=False,
)


@model_documented
def trajectory_accuracy_llm(
    model: Any,
    *,
    expected_trajectory: Any = None,
    id: str = "llm-trajectory-accuracy-scorer",
) -> Scorer:
    """How sensible the agent's sequence of steps was for the request, from 0 to 1.

    :param expected_trajectory: the steps the agent should take: a list of expected steps
        (``{'stepType': 'tool_call', 'name': 'search', 'toolArgs': {...}}``) or a recorded
        trajectory (its durations and metadata are left out). Without it, each run's
        ``expected_trajectory['steps']`` is used when given; with neither, the judge judges the
        path against the request alone.

    ``run.output`` is the trajectory (``{'steps': [...], 'rawOutput': messages}``, a list of
    steps, or the agent's messages, whose tool calls become the steps); the final response is
    read from its ``rawOutput``. Steps: preprocess (the steps as text), analyze (judge),
    analyze (with fewer evaluations than steps taken, the steps left are padded in as neither
    necessary nor in order, and ``verdictCountMismatch`` records it), generate_score,
    generate_reason (judge).
    """
    static = _static_expectation(expected_trajectory)

    def trajectory_text(run: Any) -> dict[str, Any]:
        actual = trajectory_dict(run.output, "run.output")
        expected = static if static is not None else _run_expectation(run)
        prepared: dict[str, Any] = {
            "actualTrajectory": actual,
            "actualTrajectoryFormatted": formatted_steps(actual["steps"]),
        }
        if expected:
            prepared["expectedTrajectoryFormatted"] = formatted_expectation(expected)
        prepared["hasSteps"] = bool(actual["steps"])
        return prepared

    def evaluation_prompt(run: Any, preprocess_step_result: Any) -> str:
        actual = preprocess_step_result["actualTrajectory"]
        expected = preprocess_step_result.get("expectedTrajectoryFormatted")
        return EVALUATION_PROMPT.render(
            input=user_text(run),
            output=response_text(*raw_output_response(actual.get("rawOutput"))),
            actual=preprocess_step_result["actualTrajectoryFormatted"] or NO_STEPS,
            expected=EXPECTED_STEPS.render(expected=expected) if expected else "",
        )

    def every_step_evaluated(
        preprocess_step_result: Any, analyze_step_result: Any
    ) -> dict[str, Any]:
        steps = preprocess_step_result["actualTrajectory"]["steps"]
        evaluations = list(analyze_step_result.get("stepEvaluations") or [])
        if len(evaluations) >= len(steps):  # more: the children of a step, evaluated one by one
            return analyze_step_result
        return {
            **analyze_step_result,
            "stepEvaluations": evaluations
            + [_missing_evaluation(step) for step in steps[len(evaluations) :]],
            "verdictCountMismatch": {"expected": len(steps), "received": len(evaluations)},
        }

    described_step(
        every_step_evaluated,
        "At least one evaluation per step taken: a step not evaluated is neither necessary nor "
        "in order",
    )

    def trajectory_score(analyze_step_result: Any) -> float:
        evaluations = analyze_step_result["stepEvaluations"]
        missing = len(analyze_step_result.get("missingSteps") or [])
        if not evaluations:
            if missing:
                return 0.0
            return 0.5 if analyze_step_result.get("extraSteps") else 1.0
        taken = len(evaluations)
        necessary = sum(e["wasNecessary"] for e in evaluations) / taken
        in_order = sum(e["wasInOrder"] for e in evaluations) / taken
        complete = taken / (taken + missing)
        score = necessary * 0.6 + in_order * 0.3 + complete * 0.1
        return round_to_two_decimals(max(0.0, min(1.0, score)))

    def reason_prompt(run: Any, analyze_step_result: Any, score: Any) -> str:
        return REASON_PROMPT.render(
            input=user_text(run),
            score=f"{score:g}",
            evaluations=json_text(analyze_step_result["stepEvaluations"]),
            missing=json_text(analyze_step_result.get("missingSteps") or []),
            extra=json_text(analyze_step_result.get("extraSteps") or []),
        )

    description = (
        "Evaluates the trajectory against an expected trajectory using LLM analysis"
        if static is not None
        else "Evaluates the quality and appropriateness of the trajectory using LLM analysis"
    )
    return (
        llm_scorer(
            id,
            model,
            INSTRUCTIONS,
            factory="trajectory_accuracy_llm",
            name="Trajectory Accuracy (LLM)",
            description=description,
            type="trajectory",
        )
        .needing(*(() if static is not None else (_EXPECTATION,)))
        .preprocess(trajectory_text)
        .analyze(
            PromptStep(
                "Analyze the quality and appropriateness of the agent trajectory",
                evaluation_prompt,
                output_schema=TrajectoryEvaluation,
            )
        )
        .analyze(every_step_evaluated)
        .generate_score(trajectory_score)
        .generate_reason(
            PromptStep(
                "Generate human-readable explanation of trajectory evaluation", reason_prompt
            )
        )
    )


def _missing_evaluation(step: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "stepName": step.get("name") or step.get("stepType") or "",
        "wasNecessary": False,
        "wasInOrder": False,
        "reasoning": "The judge gave no evaluation for this step.",
    }
