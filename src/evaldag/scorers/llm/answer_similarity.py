"""Answer similarity: how much of the ground-truth answer the response conveys.

Mastra's ``createAnswerSimilarityScorer`` (id ``answer-similarity-scorer``): the judge breaks
the response and the ground truth into semantic units, then matches every ground-truth unit to
the response (``exact``, ``semantic``, ``partial`` or ``missing``) and lists contradictions and
extra information. The score weighs the matches and subtracts penalties (see
:func:`answer_similarity`).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from evaldag._compat.js import round_to_two_decimals
from evaldag._scorer.builder import Scorer
from evaldag._scorer.steps import PromptStep
from evaldag.scorers.llm._shared import (
    CamelAnswer,
    PromptTemplate,
    assistant_text,
    ground_truth_text,
    has_ground_truth,
    json_text,
    llm_scorer,
    model_documented,
    number_option,
    numbered,
    positive_scale,
    scorer_needing,
)

INSTRUCTIONS = """\
You compare an AI agent's answer with a reference answer (the ground truth), as a test in a
release pipeline would.
- Compare meaning, not wording: the same fact phrased differently is a match.
- Look for what the reference says and the answer leaves out, and for anything in the answer
  that contradicts the reference: a wrong name, number, date or a claim of the opposite.
- Be strict but fair: partial information earns partial credit.
Answer in the JSON format you are asked for."""

UNITS_PROMPT = PromptTemplate("""\
Break both texts below into semantic units: the facts, entities, relations, quantities and
qualities each one states.

- One unit per fact; keep a value with its unit ("30 km/h") and a fact with what qualifies it.
- Normalise the wording so that the same fact reads the same way in both lists.
- Do not split a concept that only makes sense whole.
- An empty text has no units.

For the answer "Water boils at 100 °C at sea level." and the reference "At sea level, water
boils at 100 degrees Celsius, or 212 °F.", answer:
{"outputUnits": ["Water boils at 100 °C at sea level"],
 "groundTruthUnits": ["Water boils at 100 °C at sea level", "Water boils at 212 °F at sea level"]}

<answer>
$output
</answer>

<reference>
$ground_truth
</reference>

Answer with JSON: {"outputUnits": ["..."], "groundTruthUnits": ["..."]}""")

MATCHES_PROMPT = PromptTemplate("""\
Match the units of a reference answer against the units of an agent's answer.

<answer_units>
$output_units
</answer_units>

<reference_units>
$ground_truth_units
</reference_units>

For every reference unit, in order, give one match:
- "groundTruthUnit": the reference unit;
- "outputUnit": the answer unit that corresponds to it, or null when there is none;
- "matchType": "exact" (same information, at most trivially reworded), "semantic" (same fact
  or concept in other words), "partial" (overlaps but misses an important detail) or
  "missing" (not in the answer, or stated wrongly);
- "explanation": a short reason.
When the answer states a reference fact wrongly (another name, number or date, or the
opposite claim), its match is "missing" and the pair also goes in "contradictions".
List in "extraInOutput" the answer units that match no reference unit.

Example: answer units ["The meeting is on Tuesday", "Bring a laptop"], reference units
["The meeting is on Monday"] give:
{"matches": [{"groundTruthUnit": "The meeting is on Monday",
   "outputUnit": "The meeting is on Tuesday", "matchType": "missing",
   "explanation": "The day is wrong."}],
 "extraInOutput": ["Bring a laptop"],
 "contradictions": [{"outputUnit": "The meeting is on Tuesday",
   "groundTruthUnit": "The meeting is on Monday", "explanation": "Tuesday is not Monday."}]}

Answer with JSON with all three keys, even when a list is empty: {"matches": [...],
"extraInOutput": [...], "contradictions": [...]}""")

REASON_PROMPT = PromptTemplate("""\
An agent's answer was scored for similarity to a reference answer, from 0 to $scale: matched
reference units add to the score; missing units, contradictions and extra information take
from it.

<answer>
$output
</answer>

<reference>
$ground_truth
</reference>

Score: $score out of $scale
Analysis: $analysis

In at most three sentences, say how similar the answer is (high, moderate or low), what it got
right, and what is missing or wrong, if anything. Take the score as given; do not recompute it.
Start with "The score is $score/$scale because".""")

NO_GROUND_TRUTH_REASON_PROMPT = PromptTemplate("""\
An agent's answer was to be compared with a reference answer, but the run has no reference
answer (ground truth), so its similarity score is $score by default.

Say so in one sentence, starting with "The score is $score because".""")


class Units(CamelAnswer):
    """The semantic units of the answer and of the reference."""

    output_units: list[str] = Field(description="Units of the agent's answer.")
    ground_truth_units: list[str] = Field(description="Units of the reference answer.")


class Match(CamelAnswer):
    """How one reference unit shows up in the answer."""

    ground_truth_unit: str
    output_unit: str | None = Field(description="The matching answer unit, or null.")
    match_type: Literal["exact", "semantic", "partial", "missing"]
    explanation: str


class Contradiction(CamelAnswer):
    """An answer unit that states a reference fact wrongly."""

    output_unit: str
    ground_truth_unit: str
    explanation: str


class Analysis(CamelAnswer):
    """The matches of the reference units, the answer's extras and its contradictions."""

    matches: list[Match]
    extra_in_output: list[str]
    contradictions: list[Contradiction]


@model_documented
def answer_similarity(
    model: Any,
    *,
    require_ground_truth: bool = True,
    semantic_threshold: float = 0.8,
    exact_match_bonus: float = 0.2,
    missing_penalty: float = 0.15,
    contradiction_penalty: float = 1.0,
    extra_info_penalty: float = 0.05,
    scale: float = 1,
    id: str = "answer-similarity-scorer",
) -> Scorer:
    """Similarity of the response to ``run.ground_truth``, times ``scale``.

    Each reference unit adds ``1 + exact_match_bonus`` (exact), ``semantic_threshold``
    (semantic), ``semantic_threshold / 2`` (partial) or ``-missing_penalty`` (missing); the sum
    is divided by ``units × (1 + exact_match_bonus)``. Then each contradiction subtracts
    ``contradiction_penalty`` and the extras subtract ``extra_info_penalty`` each, 0.2 at most;
    the result is clamped to [0, 1], times ``scale`` and rounded to two decimals.

    :param require_ground_truth: a run without ground truth is not scorable (no judge call);
        when False, it is judged against an empty reference and scores 0.

    Steps: preprocess (not scorable without ground truth, when it is required), preprocess
    (judge: the units of the response and of the reference), analyze (judge: matches),
    generate_score, generate_reason (judge).
    """
    factory = "answer_similarity"
    threshold = number_option(semantic_threshold, "semantic_threshold", factory, minimum=0)
    bonus = number_option(exact_match_bonus, "exact_match_bonus", factory, minimum=0)
    missing = number_option(missing_penalty, "missing_penalty", factory, minimum=0)
    contradiction = number_option(contradiction_penalty, "contradiction_penalty", factory)
    extra = number_option(extra_info_penalty, "extra_info_penalty", factory, minimum=0)
    scale = positive_scale(scale, factory)
    points = {"exact": 1 + bonus, "semantic": threshold, "partial": threshold / 2}

    def units_prompt(run: Any) -> str:
        return UNITS_PROMPT.render(output=assistant_text(run), ground_truth=ground_truth_text(run))

    def matches_prompt(preprocess_step_result: Any) -> str:
        return MATCHES_PROMPT.render(
            output_units=numbered(preprocess_step_result["outputUnits"], "(none)"),
            ground_truth_units=numbered(preprocess_step_result["groundTruthUnits"], "(none)"),
        )

    def similarity_score(run: Any, analyze_step_result: Any) -> float:
        matches = (analyze_step_result or {}).get("matches") or []
        if not has_ground_truth(run) or not matches:
            return 0.0
        total = sum(points.get(match["matchType"], -missing) for match in matches)
        similarity = total / (len(matches) * (1 + bonus))
        similarity -= len(analyze_step_result["contradictions"]) * contradiction
        similarity -= min(len(analyze_step_result["extraInOutput"]) * extra, 0.2)
        return round_to_two_decimals(min(max(similarity, 0.0), 1.0) * scale)

    def reason_prompt(run: Any, analyze_step_result: Any, score: Any) -> str:
        if not has_ground_truth(run):
            return NO_GROUND_TRUTH_REASON_PROMPT.render(score=f"{score:g}")
        return REASON_PROMPT.render(
            scale=f"{scale:g}",
            output=assistant_text(run),
            ground_truth=ground_truth_text(run),
            score=f"{score:g}",
            analysis=json_text(analyze_step_result),
        )

    return (
        scorer_needing(
            llm_scorer(
                id,
                model,
                INSTRUCTIONS,
                factory=factory,
                max_score=scale,
                name="Answer Similarity Scorer",
                description="Evaluates how similar an agent output is to a ground truth answer "
                "for CI/CD testing",
                type="agent",
            ),
            ground_truth=require_ground_truth,
        )
        .preprocess(
            PromptStep(
                "Extract semantic units from output and ground truth",
                units_prompt,
                output_schema=Units,
            )
        )
        .analyze(
            PromptStep(
                "Compare semantic units between output and ground truth",
                matches_prompt,
                output_schema=Analysis,
            )
        )
        .generate_score(similarity_score)
        .generate_reason(PromptStep("Generate explanation of similarity score", reason_prompt))
    )
