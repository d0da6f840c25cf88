"""Prebuilt scorers: Mastra's code scorers, LLM scorers and trajectory helpers, under
snake_case names.

Every factory takes ``id=``, whose default is Mastra's id for the scorer: give another one to
run two scorers of one kind in one eval (two faithfulness scorers with different judges).
"""

from evaldag.scorers._trajectory import (
    analyze_tool_failures,
    check_trajectory_blacklist,
    check_trajectory_efficiency,
    compare_trajectories,
)
from evaldag.scorers.llm import (
    answer_relevancy,
    answer_similarity,
    bias,
    classifier,
    context_precision,
    context_recall,
    context_relevance,
    faithfulness,
    hallucination,
    multi_turn_judge,
    noise_sensitivity,
    prompt_alignment,
    rubric,
    summarization,
    tool_call_accuracy_llm,
    toxicity,
    trajectory_accuracy_llm,
)
from evaldag.scorers.textual import (
    completeness,
    content_similarity,
    keyword_coverage,
    textual_difference,
    tone,
)
from evaldag.scorers.tool_calls import tool_call_accuracy
from evaldag.scorers.trajectories import trajectory, trajectory_accuracy

__all__ = [
    "analyze_tool_failures",
    "answer_relevancy",
    "answer_similarity",
    "bias",
    "check_trajectory_blacklist",
    "check_trajectory_efficiency",
    "classifier",
    "compare_trajectories",
    "completeness",
    "content_similarity",
    "context_precision",
    "context_recall",
    "context_relevance",
    "faithfulness",
    "hallucination",
    "keyword_coverage",
    "multi_turn_judge",
    "noise_sensitivity",
    "prompt_alignment",
    "rubric",
    "summarization",
    "textual_difference",
    "tone",
    "tool_call_accuracy",
    "tool_call_accuracy_llm",
    "toxicity",
    "trajectory",
    "trajectory_accuracy",
    "trajectory_accuracy_llm",
]
