"""Prompt alignment: does the response do what the user's prompt (or the system prompt) asks?

Mastra's ``createPromptAlignmentScorerLLM`` (id ``prompt-alignment-scorer``): the judge scores
four dimensions from 0 to 1: intent alignment, requirements fulfillment, completeness and
appropriateness (format and tone). Score = their weighted sum × scale: 0.4, 0.3, 0.2, 0.1 when
judging against the user's prompt (modes ``user`` and ``both``), 0.35, 0.35, 0.15, 0.15 against
the system prompt (mode ``system``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field

from evaldag._compat.js import round_to_two_decimals
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
    positive_scale,
    user_text,
)
from evaldag.transcripts import get_combined_system_prompt, get_conversation_history

EvaluationMode = Literal["user", "system", "both"]

INSTRUCTIONS = """\
You judge how well an AI agent's response does what it was asked: the intent behind the
request, its explicit requirements, how complete the response is, and whether its format and
tone fit. The request is the user's prompt, the system prompt (the instructions the agent
must always follow), or both.
- Judge against what was asked, not against what you would have liked to see.
- An explicit requirement (a length, a format, a number of items, a rule to follow) is met
  only when the response meets it exactly.
- Scores run from 0 (not at all) to 1 (fully); use the whole range.
Be specific in your reasoning, and answer in the JSON format you are asked for."""

ANALYSIS_PROMPT = PromptTemplate("""\
Judge how well the agent's response below does what it was asked.
$focus

$history$prompts
<response>
$output
</response>

Score four dimensions, each from 0 (not at all) to 1 (fully):
1. "intentAlignment": name the main purpose of what was asked in "primaryIntent", say in
   "isAddressed" whether the response achieves it, and give a "score" and your "reasoning".
2. "requirementsFulfillment": list each explicit requirement of what was asked (content,
   length, format, rules) as {"requirement", "isFulfilled", "reasoning"}, and give an
   "overallScore" for how fully they are met together.
3. "completeness": give a "score", the "missingElements" (an empty list when nothing is
   missing) and your "reasoning".
4. "responseAppropriateness": give a "score", say whether the format ("formatAlignment") and
   the tone ("toneAlignment") fit what was asked, and give your "reasoning".
Then sum up in "overallAssessment".

Example: for the request "Name three primary colours, comma-separated." and the response
"Red, blue and yellow.", answer:
{"intentAlignment": {"score": 1, "primaryIntent": "Name three primary colours",
  "isAddressed": true, "reasoning": "Three primary colours are named."},
 "requirementsFulfillment": {"requirements": [
   {"requirement": "Three colours", "isFulfilled": true, "reasoning": "Red, blue, yellow."},
   {"requirement": "Comma-separated", "isFulfilled": false,
    "reasoning": "The last two are joined with 'and'."}], "overallScore": 0.6},
 "completeness": {"score": 1, "missingElements": [], "reasoning": "Nothing is missing."},
 "responseAppropriateness": {"score": 0.8, "formatAlignment": false, "toneAlignment": true,
  "reasoning": "A plain answer, but not in the requested list format."},
 "overallAssessment": "Right content; the requested separator was not used."}

Answer with JSON: {"intentAlignment": {"score": 0.0, "primaryIntent": "...",
"isAddressed": true | false, "reasoning": "..."}, "requirementsFulfillment": {"requirements":
[{"requirement": "...", "isFulfilled": true | false, "reasoning": "..."}], "overallScore": 0.0},
"completeness": {"score": 0.0, "missingElements": ["..."], "reasoning": "..."},
"responseAppropriateness": {"score": 0.0, "formatAlignment": true | false,
"toneAlignment": true | false, "reasoning": "..."}, "overallAssessment": "..."}""")

REASON_PROMPT = PromptTemplate("""\
An agent's response was scored from 0 to $scale for how well it does what was asked in
$against. The score is the weighted sum of four dimension scores, times $scale:
- intent alignment: $intent_weight
- requirements fulfillment: $requirements_weight
- completeness: $completeness_weight
- appropriateness of format and tone: $appropriateness_weight

$history$prompts
Score: $score
Analysis: $analysis

In one or two sentences, explain this score: what the response got right and which
requirements or elements it missed. Take the score as given; do not recompute it.
Start with "The score is $score because".""")

HISTORY = PromptTemplate("""\
The conversation so far:
<conversation_history>
$history
</conversation_history>

""")

#: Per mode: what the judge is told was asked, and what the reason prompt calls it.
_FOCUS = {
    "user": "What was asked is the user's request below.",
    "system": """\
What was asked is the system prompt below: the instructions the agent must always follow (its
role, rules, limits, formats and things to avoid). Judge the response against those
instructions, not against the user's message.""",
    "both": """\
What was asked is both the user's request and the system prompt below (the instructions the
agent must always follow): the response should serve the user's request within the system
prompt's rules, and the requirements of both count.""",
}
_AGAINST = {
    "user": "the user's request",
    "system": "the system prompt",
    "both": "the user's request and the system prompt",
}
#: The dimension weights: intent, requirements, completeness, appropriateness.
_WEIGHTS = {
    "user": (0.4, 0.3, 0.2, 0.1),
    "system": (0.35, 0.35, 0.15, 0.15),
    "both": (0.4, 0.3, 0.2, 0.1),
}
_NONE = "(none was given)"


class ConversationHistory(ScorerOptions):
    """How much of the earlier conversation (the run's remembered messages) the judge reads."""

    max_messages: int = Field(10, ge=1, description="The last this many messages.")


class IntentAlignment(CamelAnswer):
    """Whether the response achieves the main purpose of what was asked."""

    score: UnitScore
    primary_intent: str
    is_addressed: bool
    reasoning: str


class Requirement(CamelAnswer):
    """Whether the response meets one explicit requirement."""

    requirement: str
    is_fulfilled: bool
    reasoning: str


class RequirementsFulfillment(CamelAnswer):
    """Each explicit requirement, and how fully they are met together."""

    requirements: list[Requirement]
    overall_score: UnitScore


class Completeness(CamelAnswer):
    """How complete the response is, and what it lacks."""

    score: UnitScore
    missing_elements: list[str]
    reasoning: str


class ResponseAppropriateness(CamelAnswer):
    """Whether the response's format and tone fit what was asked."""

    score: UnitScore
    format_alignment: bool
    tone_alignment: bool
    reasoning: str


class Analysis(CamelAnswer):
    """The four dimensions of alignment, each scored from 0 to 1."""

    intent_alignment: IntentAlignment
    requirements_fulfillment: RequirementsFulfillment
    completeness: Completeness
    response_appropriateness: ResponseAppropriateness
    overall_assessment: str


def _history_option(value: Any) -> ConversationHistory | None:
    if value is False or value is None:
        return None
    if value is True:
        return ConversationHistory()
    if isinstance(value, ConversationHistory | Mapping):
        return options_model(
            ConversationHistory, value, "include_conversation_history", "prompt_alignment"
        )
    raise EvalDagError(
        "EVALDAG_INVALID_SCORER_OPTION",
        "include_conversation_history of prompt_alignment(...) must be True, False or "
        f"{{'max_messages': n}}, got {value!r:.80}",
        details={"option": "include_conversation_history"},
    )


def _missing_text(mode: str, *, user: str, system: str, response: str) -> str | None:
    """What the run lacks for ``mode`` (Mastra's message, then how to fix it), or None."""
    if mode == "user" and not user:
        return (
            "User prompt is required for user prompt alignment scoring: the run's input has no "
            "user message"
        )
    if mode == "system" and not system:
        return (
            "System prompt is required for system prompt alignment scoring: the run's input "
            "has no system prompt (systemMessages, or messages with role 'system')"
        )
    if mode == "both" and not (user or system):
        return (
            "A user or system prompt is required for combined alignment scoring: the run's "
            "input has neither a user message nor a system prompt"
        )
    if not response:
        return (
            "Agent response is required for prompt alignment scoring: the run's output has no "
            "assistant text"
        )
    return None


@model_documented
def prompt_alignment(
    model: Any,
    *,
    scale: float = 1,
    evaluation_mode: EvaluationMode = "both",
    include_conversation_history: bool | ConversationHistory | dict[str, int] = False,
    id: str = "prompt-alignment-scorer",
) -> Scorer:
    """Weighted alignment of the response with the prompt, from 0 to ``scale``.

    :param scale: the score of a fully aligned response.
    :param evaluation_mode: ``'user'`` judges against the user's message, ``'system'`` against
        the run's system prompts, ``'both'`` against both (weighted as ``'user'``).
    :param include_conversation_history: ``True`` shows the judge the last 10 remembered
        messages of the run's input, ``{'max_messages': n}`` the last n.

    The analyze step fails before any judge call when the response is empty or the prompt the
    mode needs is missing (mode ``'both'``: neither prompt), as in Mastra. A dimension score off
    [0, 1] is asked for again, then fails the item (Mastra clamps it into [0, 1]). Steps: analyze
    (judge), generate_score, generate_reason (judge).
    """
    factory = "prompt_alignment"
    scale = positive_scale(scale, factory)
    if evaluation_mode not in _WEIGHTS:
        raise EvalDagError(
            "EVALDAG_INVALID_SCORER_OPTION",
            f"evaluation_mode of {factory}(...) must be 'user', 'system' or 'both', got "
            f"{evaluation_mode!r:.80}",
            details={"option": "evaluation_mode"},
        )
    history = _history_option(include_conversation_history)
    weights = _WEIGHTS[evaluation_mode]

    def prompts(run: Any) -> str:
        blocks = []
        if evaluation_mode != "system":
            blocks.append(f"<user_request>\n{user_text(run) or _NONE}\n</user_request>\n")
        if evaluation_mode != "user":
            system = get_combined_system_prompt(run.input) or _NONE
            blocks.append(f"<system_prompt>\n{system}\n</system_prompt>\n")
        return "\n".join(blocks)

    def history_block(run: Any) -> str:
        earlier = history and get_conversation_history(run.input, history.max_messages)
        if not earlier:
            return ""
        return HISTORY.render(history=earlier)

    def analysis_prompt(run: Any) -> str:
        missing = _missing_text(
            evaluation_mode,
            user=user_text(run),
            system=get_combined_system_prompt(run.input),
            response=assistant_text(run),
        )
        if missing:
            raise EvalDagError(
                "EVALDAG_PROMPT_ALIGNMENT_MISSING_TEXT",
                missing,
                details={"evaluationMode": evaluation_mode},
            )
        return ANALYSIS_PROMPT.render(
            focus=_FOCUS[evaluation_mode],
            history=history_block(run),
            prompts=prompts(run),
            output=assistant_text(run),
        )

    def alignment_score(analyze_step_result: Any) -> float:
        intent, requirements, completeness, appropriateness = weights
        analysis = analyze_step_result
        weighted = (
            analysis["intentAlignment"]["score"] * intent
            + analysis["requirementsFulfillment"]["overallScore"] * requirements
            + analysis["completeness"]["score"] * completeness
            + analysis["responseAppropriateness"]["score"] * appropriateness
        )
        return round_to_two_decimals(weighted * scale)

    def reason_prompt(run: Any, analyze_step_result: Any, score: Any) -> str:
        intent, requirements, completeness, appropriateness = weights
        return REASON_PROMPT.render(
            against=_AGAINST[evaluation_mode],
            scale=f"{scale:g}",
            intent_weight=f"{intent:g}",
            requirements_weight=f"{requirements:g}",
            completeness_weight=f"{completeness:g}",
            appropriateness_weight=f"{appropriateness:g}",
            history=history_block(run),
            prompts=prompts(run),
            score=f"{score:g}",
            analysis=json_text(analyze_step_result),
        )

    return (
        llm_scorer(
            id,
            model,
            INSTRUCTIONS,
            factory=factory,
            max_score=scale,
            name="Prompt Alignment (LLM)",
            description="Evaluates how well the agent response aligns with the intent and "
            "requirements of the user prompt",
        )
        .analyze(
            PromptStep(
                "Analyze prompt-response alignment across multiple dimensions",
                analysis_prompt,
                output_schema=Analysis,
            )
        )
        .generate_score(alignment_score)
        .generate_reason(
            PromptStep(
                "Generate human-readable explanation of prompt alignment evaluation",
                reason_prompt,
            )
        )
    )
