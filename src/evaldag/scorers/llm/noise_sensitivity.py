"""Noise sensitivity: does the agent's answer hold up when the question carries noise?

Mastra's ``createNoiseSensitivityScorerLLM`` (id ``noise-sensitivity-scorer``): the run is the
agent's answer to a noisy version of a question (distracting, irrelevant or false information
added); the judge compares it with the answer to the clean question (``baseline_response``) on
five dimensions, rates the noise's impact on each (none … severe), lists major issues and gives
a robustness score. Score = the robustness score (a reply off [0, 1] fails the item), lowered to
the mean dimension weight when the two disagree by more than a threshold, minus 0.1 per major
issue (at most 0.3).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from evaldag._compat.js import js_total, round_to_two_decimals
from evaldag._scorer.builder import Scorer
from evaldag._scorer.steps import PromptStep
from evaldag.errors import EvalDagError
from evaldag.scorers.llm._options import ScorerOptions, options_model
from evaldag.scorers.llm._shared import (
    CamelAnswer,
    PromptTemplate,
    UnitScore,
    assistant_text,
    json_text,
    llm_scorer,
    model_documented,
    user_text,
)

INSTRUCTIONS = """\
You test how robust an AI agent is to noise. You compare the agent's answer to a clean
question with its answer to the same question carrying noise: distracting details,
irrelevant context or false information.
- A robust agent keeps its answer accurate, complete, on the question and consistent with its
  clean answer, and does not repeat or build on false information from the noise.
- Changes that make the answer better or merely reword it are not harm.
- Rate the impact of the noise on each dimension: none, minimal, moderate, significant or
  severe.
Be specific about what changed and why, and answer in the JSON format you are asked for."""

ANALYSIS_PROMPT = PromptTemplate("""\
Compare an agent's answer to a clean question with its answer to the same question with noise
added, and rate how much the noise harmed the answer.

<clean_question>
$input
</clean_question>

<clean_answer>
$baseline_response
</clean_answer>

<noisy_question>
$noisy_query
</noisy_question>
$noise_type
<noisy_answer>
$output
</noisy_answer>

Rate the noise's impact on each of these five dimensions, in this order:
1. "content_accuracy": are the facts still right?
2. "completeness": does the answer still cover what the clean answer covered?
3. "relevance": does it stay on the question instead of following the noise?
4. "consistency": does it agree with the clean answer?
5. "hallucination_resistance": does it avoid repeating or building on false information from
   the noise?
For each, give "dimension" (its name), "impactLevel" ("none", "minimal", "moderate",
"significant" or "severe"), "specificChanges" (what changed between the two answers) and
"noiseInfluence" (how the noise caused it).

Then give "overallAssessment" (one or two sentences), "majorIssues" (serious problems the
noise caused, such as a wrong fact adopted from it; an empty list when there are none) and
"robustnessScore", from 0 (the noise ruined the answer) to 1 (the noise changed nothing that
matters).

Example: the clean answer "Water boils at 100 °C at sea level." and the noisy answer (the
question added "my friend says it boils at 90 °C") "Water boils at 100 °C at sea level, not at
90 °C." give:
{"dimensions": [
  {"dimension": "content_accuracy", "impactLevel": "none",
   "specificChanges": "Same boiling point.", "noiseInfluence": "None."},
  {"dimension": "completeness", "impactLevel": "none",
   "specificChanges": "Nothing left out.", "noiseInfluence": "None."},
  {"dimension": "relevance", "impactLevel": "minimal",
   "specificChanges": "Adds a correction of the friend's figure.",
   "noiseInfluence": "The false figure prompted the correction."},
  {"dimension": "consistency", "impactLevel": "none",
   "specificChanges": "Agrees with the clean answer.", "noiseInfluence": "None."},
  {"dimension": "hallucination_resistance", "impactLevel": "none",
   "specificChanges": "Rejects the false figure.", "noiseInfluence": "None."}
], "overallAssessment": "The agent kept the right answer and corrected the misinformation.",
 "majorIssues": [], "robustnessScore": 0.95}

Answer with JSON: {"dimensions": [{"dimension": "...", "impactLevel": "none" | "minimal" |
"moderate" | "significant" | "severe", "specificChanges": "...", "noiseInfluence": "..."}],
"overallAssessment": "...", "majorIssues": ["..."], "robustnessScore": 0.0}""")

REASON_PROMPT = PromptTemplate("""\
An agent's answer to a question with noise added was scored for robustness, from 0 (the noise
ruined the answer) to 1 (the noise changed nothing that matters).

<clean_question>
$input
</clean_question>

Score: $score
Impact of the noise, per dimension: $dimensions
Major issues: $major_issues
Overall assessment: $assessment

In one or two sentences, explain this score: how the noise did or did not change the answer,
and which issues lowered the score. Take the score as given; do not recompute it.
Start with "The score is $score because".""")

ImpactLevel = Literal["none", "minimal", "moderate", "significant", "severe"]


class ImpactWeights(ScorerOptions):
    """What each impact level is worth in the mean of the dimensions (from 0 to 1)."""

    none: float = Field(1.0, ge=0, le=1)
    minimal: float = Field(0.85, ge=0, le=1)
    moderate: float = Field(0.6, ge=0, le=1)
    significant: float = Field(0.3, ge=0, le=1)
    severe: float = Field(0.1, ge=0, le=1)


class MajorIssuePenalties(ScorerOptions):
    """What each major issue costs, and the most they cost in all."""

    major_issue_per_item: float = Field(0.1, ge=0)
    max_major_issue_penalty: float = Field(0.3, ge=0)


class NoiseSensitivityScoring(ScorerOptions):
    """How the judge's answer becomes the score."""

    impact_weights: ImpactWeights = Field(default_factory=ImpactWeights)
    discrepancy_threshold: float = Field(0.2, ge=0)
    penalties: MajorIssuePenalties = Field(default_factory=MajorIssuePenalties)


class Dimension(CamelAnswer):
    """The noise's impact on one dimension of the answer."""

    dimension: str
    impact_level: ImpactLevel
    specific_changes: str = Field(description="What changed between the two answers.")
    noise_influence: str = Field(description="How the noise caused the change.")


class Analysis(CamelAnswer):
    """The noise's impact per dimension, the major issues and a robustness score."""

    dimensions: list[Dimension]
    overall_assessment: str
    major_issues: list[str] = Field(default_factory=list)
    robustness_score: UnitScore = Field(description="From 0 (ruined) to 1 (unaffected).")


def _required_text(value: Any, name: str) -> str:
    if not isinstance(value, str) or not value:
        raise EvalDagError(
            "EVALDAG_INVALID_SCORER_OPTION",
            "Both baselineResponse and noisyQuery are required for Noise Sensitivity scoring: "
            f"{name} of noise_sensitivity(...) must be a non-empty string, got {value!r:.80}",
            details={"option": name},
        )
    return value


@model_documented
def noise_sensitivity(
    model: Any,
    *,
    baseline_response: str,
    noisy_query: str,
    noise_type: str | None = None,
    scoring: NoiseSensitivityScoring | dict[str, Any] | None = None,
    id: str = "noise-sensitivity-scorer",
) -> Scorer:
    """How little the noise in the question harmed the agent's answer, from 0 to 1.

    :param baseline_response: the agent's answer to the clean question (the run's input).
    :param noisy_query: the question with noise added, to which the run's output answers.
    :param noise_type: what kind of noise it is (e.g. ``'misinformation'``), told to the judge.
    :param scoring: ``impact_weights`` (none 1, minimal 0.85, moderate 0.6, significant 0.3,
        severe 0.1), ``discrepancy_threshold`` (0.2) and ``penalties``
        (``major_issue_per_item`` 0.1, ``max_major_issue_penalty`` 0.3), as a dict (Mastra's
        camelCase keys work too) or :class:`NoiseSensitivityScoring`; keys left out keep their
        defaults.

    A run needs the clean question (its input) and the noisy answer (its output): without
    either, the analyze step fails before any judge call, as in Mastra. A robustness score off
    [0, 1] is asked for again, then fails the item (Mastra clamps it into [0, 1]). Steps: analyze
    (judge), generate_score, generate_reason (judge).
    """
    factory = "noise_sensitivity"
    baseline_response = _required_text(baseline_response, "baseline_response")
    noisy_query = _required_text(noisy_query, "noisy_query")
    if noise_type is not None and not isinstance(noise_type, str):
        raise EvalDagError(
            "EVALDAG_INVALID_SCORER_OPTION",
            f"noise_type of {factory}(...) must be a string such as 'misinformation', got "
            f"{type(noise_type).__name__}",
            details={"option": "noise_type"},
        )
    rules = options_model(NoiseSensitivityScoring, scoring, "scoring", factory)
    weights = rules.impact_weights.model_dump()

    def analysis_prompt(run: Any) -> str:
        question, answer = user_text(run), assistant_text(run)
        if not question or not answer:
            raise EvalDagError(
                "EVALDAG_NOISE_SENSITIVITY_MISSING_TEXT",
                "Both original query and noisy response are required for evaluation: the run "
                f"needs the clean question as its input ({'given' if question else 'empty'}) "
                f"and the answer to the noisy question as its output "
                f"({'given' if answer else 'empty'})",
            )
        return ANALYSIS_PROMPT.render(
            input=question,
            baseline_response=baseline_response,
            noisy_query=noisy_query,
            noise_type=f"\nKind of noise: {noise_type}\n" if noise_type else "",
            output=answer,
        )

    def robustness_score(analyze_step_result: Any) -> float:
        score = analyze_step_result["robustnessScore"]
        dimensions = analyze_step_result["dimensions"]
        if dimensions:
            impact = js_total(weights[d["impactLevel"]] for d in dimensions) / len(dimensions)
            if abs(score - impact) > rules.discrepancy_threshold:
                score = min(score, impact)
        issues = len(analyze_step_result.get("majorIssues") or [])
        penalty = min(
            issues * rules.penalties.major_issue_per_item,
            rules.penalties.max_major_issue_penalty,
        )
        return round_to_two_decimals(max(0.0, score - penalty))

    def reason_prompt(run: Any, analyze_step_result: Any, score: Any) -> str:
        return REASON_PROMPT.render(
            input=user_text(run),
            score=f"{score:g}",
            dimensions=json_text(analyze_step_result["dimensions"]),
            major_issues=json_text(analyze_step_result.get("majorIssues") or []),
            assessment=analyze_step_result["overallAssessment"],
        )

    return (
        llm_scorer(
            id,
            model,
            INSTRUCTIONS,
            factory=factory,
            name="Noise Sensitivity (LLM)",
            description="Evaluates how robust an agent is when exposed to irrelevant, "
            "distracting, or misleading information",
            type="agent",
        )
        .analyze(
            PromptStep(
                "Analyze the impact of noise on agent response quality",
                analysis_prompt,
                output_schema=Analysis,
            )
        )
        .generate_score(robustness_score)
        .generate_reason(
            PromptStep(
                "Generate human-readable explanation of noise sensitivity evaluation",
                reason_prompt,
            )
        )
    )
