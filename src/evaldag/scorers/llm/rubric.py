"""Rubric: does the output meet every required criterion of a checklist?

Mastra's ``createRubricScorer`` (id ``rubric-scorer``): the judge says of each criterion of the
rubric whether the output satisfies it. Score = scale when every required criterion is satisfied
(every criterion, when none is marked required), else 0. The rubric is the factory's
``criteria`` or, when that is empty, a ``rubric`` the run carries (request context, additional
context or input). The reason lists each criterion with the judge's reasoning (no judge call).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import Field

from evaldag._scorer.builder import Scorer
from evaldag._scorer.steps import PromptStep, described_step
from evaldag.errors import EvalDagError
from evaldag.scorers.llm._item_verdicts import aligned_verdicts
from evaldag.scorers.llm._options import ScorerOptions, options_model
from evaldag.scorers.llm._shared import (
    CamelAnswer,
    PromptTemplate,
    assistant_text,
    llm_scorer,
    model_documented,
    positive_scale,
    user_text,
)

INSTRUCTIONS = """\
You grade an AI agent's output against a rubric: a checklist of criteria. For each criterion
you decide, strictly and on its own, whether the output satisfies it.
- A criterion is satisfied only when the output clearly and completely meets it. If in doubt,
  it is not satisfied. Effort, intentions and partial progress do not count.
- Judge each criterion independently of the others.
- Look for evidence in the output itself (the task is there for context); do not assume what
  the output does not show.
Say specifically what is present or missing, and answer in the JSON format you are asked for."""

CRITERIA_PROMPT = PromptTemplate("""\
Grade the agent's output below against each criterion of the rubric.

<task>
$task
</task>

<output>
$output
</output>

The rubric has $criterion_count criteria:
<rubric>
$criteria
</rubric>

For each criterion, in the order given, give "criterion" (its text, exactly as written),
"required" (true for [required], false for [optional], as marked), "satisfied" (true only when
the output clearly and completely meets it) and "reasoning" (what in the output meets it, or
what is missing). Give exactly one entry per criterion: $criterion_count entries. Then sum up
in "overallAssessment" what passed and what is missing.

Example: for the output "Our Q3 revenue grew 12%." and the rubric
1. [required] States the revenue growth
2. [optional] Compares with the previous year
answer:
{"criteria": [
  {"criterion": "States the revenue growth", "required": true, "satisfied": true,
   "reasoning": "Gives 12% growth."},
  {"criterion": "Compares with the previous year", "required": false, "satisfied": false,
   "reasoning": "No comparison with last year."}
], "overallAssessment": "The required criterion is met; the optional comparison is missing."}

Answer with JSON: {"criteria": [{"criterion": "...", "required": true | false,
"satisfied": true | false, "reasoning": "..."}], "overallAssessment": "..."}""")

NO_RUBRIC_PROMPT = PromptTemplate("""\
There is no rubric for this output, so there is nothing to grade. Answer with exactly this
JSON: {"criteria": [], "overallAssessment": "No rubric was given; nothing was graded."}""")

NO_RUBRIC_REASON = "No rubric was provided, so the rubric check passed by default."
_MARKER = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s*")


class RubricCriterion(ScorerOptions):
    """One criterion of a rubric."""

    id: str | None = None
    description: str = Field(min_length=1, description="What the output must do.")
    required: bool = True


class CriterionVerdict(CamelAnswer):
    """Whether the output satisfies one criterion."""

    criterion: str = Field(description="The criterion's text, as written in the rubric.")
    satisfied: bool = Field(description="True only when the output clearly fully meets it.")
    required: bool = Field(description="Whether the rubric marks it required.")
    reasoning: str


class RubricVerdicts(CamelAnswer):
    """One verdict per criterion, in rubric order, and a summary."""

    criteria: list[CriterionVerdict]
    overall_assessment: str


def parse_rubric(text: str) -> list[RubricCriterion]:
    """A checklist as criteria: one required criterion per non-empty line.

    List markers (``-``, ``*``, ``•``, ``1.``, ``1)``) at the start of a line are dropped.
    """
    lines = (_MARKER.sub("", line, count=1).strip() for line in text.split("\n"))
    return [RubricCriterion(description=line) for line in lines if line]


def rubric_criteria(value: Any, what: str) -> list[RubricCriterion]:
    """A rubric given as a checklist string or as a list of criteria (dicts or models)."""
    if value is None:
        return []
    if isinstance(value, str):
        return parse_rubric(value)
    if isinstance(value, Sequence) and not isinstance(value, bytes):
        found = []
        for index, item in enumerate(value):
            if not isinstance(item, Mapping | RubricCriterion):
                raise EvalDagError(
                    "EVALDAG_INVALID_SCORER_OPTION",
                    f"{what}[{index}] of rubric(...) must be a criterion such as "
                    f"{{'description': 'Includes a summary', 'required': True}}, got {item!r:.80}",
                    details={"option": what},
                )
            found.append(options_model(RubricCriterion, item, f"{what}[{index}]", "rubric"))
        return found
    raise EvalDagError(
        "EVALDAG_INVALID_SCORER_OPTION",
        f"{what} of rubric(...) must be a checklist string (one criterion per line) or a list "
        "of criteria such as {'description': 'Includes a summary', 'required': True}, got "
        f"{type(value).__name__}",
        details={"option": what},
    )


def _rubric_in(source: Any) -> Any:
    """The ``rubric`` a run's request context, additional context or input carries, if any; a
    value of another type is returned too, for :func:`rubric_criteria` to reject (never read as
    no rubric, which passes)."""
    if isinstance(source, Mapping):
        value = source.get("rubric")
    elif callable(getattr(source, "get", None)):
        value = source.get("rubric")
    else:
        value = getattr(source, "rubric", None)
    return value


def _field(value: Any, name: str) -> Any:
    return value.get(name) if isinstance(value, Mapping) else None


def _task(run: Any) -> str:
    task = _field(run.input, "originalTask")
    return task if isinstance(task, str) else user_text(run)


def _output(run: Any) -> str:
    current = _field(run.input, "currentText")
    return assistant_text(run) or (current if isinstance(current, str) else "")


def _gate(criteria: list[dict[str, Any]]) -> tuple[bool, list[dict[str, Any]]]:
    """Whether the rubric passes, and the gating criteria it failed.

    The gating criteria are the required ones, or all when none is required.
    """
    gating = [c for c in criteria if c["required"]] or criteria
    unmet = [c for c in gating if not c["satisfied"]]
    return not unmet, unmet


@model_documented
def rubric(
    model: Any,
    *,
    criteria: str | Sequence[RubricCriterion | Mapping[str, Any]] | None = None,
    scale: float = 1,
    id: str = "rubric-scorer",
) -> Scorer:
    """``scale`` when the output meets every required criterion of the rubric, else 0.

    :param criteria: the rubric: a list of criteria (dicts or :class:`RubricCriterion`:
        ``description``, ``required`` (default True), optional ``id``), or a checklist string
        with one required criterion per line. When empty, each run's rubric is the ``rubric``
        value of its request context, additional context or input (string or list).
    :param scale: the score of an output that passes.

    With no rubric at all, the judge is asked for nothing to grade and the run passes. Steps:
    analyze (judge: one verdict per criterion), analyze (one verdict per criterion, with the
    rubric's required flags: extra verdicts dropped, a missing one counts as unsatisfied, a
    mismatch is recorded in ``verdictCountMismatch`` and corrected flags in
    ``requiredFromRubric``), generate_score, generate_reason (a function listing each criterion
    with ✅ or ❌ and the judge's reasoning).
    """
    static = rubric_criteria(criteria, "criteria")
    scale = positive_scale(scale, "rubric")

    def rubric_of(run: Any) -> list[RubricCriterion]:
        if static:
            return static
        extra = run.model_extra or {}
        additional = extra.get("additionalContext", extra.get("additional_context"))
        for source, what in (
            (run.request_context, "the run's request_context['rubric']"),
            (additional, "the run's additional_context['rubric']"),
            (run.input, "the run's input['rubric']"),
        ):
            found = _rubric_in(source)
            if found is not None:
                return rubric_criteria(found, what)
        return []

    def criteria_prompt(run: Any) -> str:
        found = rubric_of(run)
        if not found:
            return NO_RUBRIC_PROMPT.render()
        return CRITERIA_PROMPT.render(
            task=_task(run) or "(no task was given)",
            output=_output(run) or "(the output is empty)",
            criterion_count=str(len(found)),
            criteria="\n".join(
                f"{number}. [{'required' if c.required else 'optional'}] {c.description}"
                for number, c in enumerate(found, 1)
            ),
        )

    def analyze(run: Any, analyze_step_result: Any) -> dict[str, Any]:
        return _one_verdict_per_criterion(analyze_step_result, rubric_of(run))

    described_step(analyze, "One verdict per criterion, with the rubric's required flags")

    def rubric_score(analyze_step_result: Any) -> float:
        passed, _ = _gate(analyze_step_result["criteria"])
        return scale if passed else 0.0

    def reason(analyze_step_result: Any) -> str:
        criteria = analyze_step_result["criteria"]
        if not criteria:
            return NO_RUBRIC_REASON
        passed, unmet = _gate(criteria)
        header = (
            "✅ Rubric satisfied: every required criterion is met."
            if passed
            else "❌ Rubric not yet satisfied."
        )
        lines = "\n".join(
            f"{'✅' if c['satisfied'] else '❌'} [{'required' if c['required'] else 'optional'}] "
            f"{c['criterion']}\n   → {c['reasoning']}"
            for c in criteria
        )
        assessment = analyze_step_result.get("overallAssessment")
        text = f"{header}\n\n{lines}" + (f"\n\n{assessment}" if assessment else "")
        if passed:
            return text
        kind = "required " if any(c["required"] for c in criteria) else ""
        noun = "criterion" if len(unmet) == 1 else "criteria"
        return f"{text}\n\nTo finish, address the {len(unmet)} unmet {kind}{noun} above."

    return (
        llm_scorer(
            id,
            model,
            INSTRUCTIONS,
            factory="rubric",
            max_score=scale,
            name="Rubric (LLM)",
            description="Grades an agent output against a rubric of criteria, returning 1 only "
            "when every required criterion is satisfied",
        )
        .analyze(
            PromptStep(
                "Judge the output against each rubric criterion",
                criteria_prompt,
                output_schema=RubricVerdicts,
            )
        )
        .analyze(analyze)
        .generate_score(rubric_score)
        .generate_reason(reason)
    )


def _one_verdict_per_criterion(
    judged: dict[str, Any], criteria: list[RubricCriterion]
) -> dict[str, Any]:
    """The judge's verdicts cut or padded to one per criterion, required flags from the rubric.

    An answer with one verdict per criterion and the rubric's flags is kept as it is; corrected
    flags are listed in ``requiredFromRubric``.
    """
    aligned = aligned_verdicts(judged, "criteria", criteria, _missing_verdict)
    verdicts = aligned["criteria"]
    corrected = [
        index
        for index, (verdict, criterion) in enumerate(zip(verdicts, criteria, strict=True))
        if verdict["required"] != criterion.required
    ]
    if not corrected:
        return aligned
    return {
        **aligned,
        "criteria": [
            {**verdict, "required": criterion.required}
            for verdict, criterion in zip(verdicts, criteria, strict=True)
        ],
        "requiredFromRubric": corrected,
    }


def _missing_verdict(criterion: RubricCriterion) -> dict[str, Any]:
    return {
        "criterion": criterion.description,
        "satisfied": False,
        "required": criterion.required,
        "reasoning": "The judge gave no verdict for this criterion.",
    }
