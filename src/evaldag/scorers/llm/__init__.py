"""Prebuilt LLM-judged scorers: Mastra's ``@mastra/evals`` LLM scorers, one module each.

Each module starts with the prompts its judge reads; ``_shared`` says how a scorer is written.
"""

from evaldag.scorers.llm.answer_relevancy import answer_relevancy
from evaldag.scorers.llm.answer_similarity import answer_similarity
from evaldag.scorers.llm.bias import bias
from evaldag.scorers.llm.classifier import classifier
from evaldag.scorers.llm.context_precision import context_precision
from evaldag.scorers.llm.context_recall import context_recall
from evaldag.scorers.llm.context_relevance import context_relevance
from evaldag.scorers.llm.faithfulness import faithfulness
from evaldag.scorers.llm.hallucination import hallucination
from evaldag.scorers.llm.multi_turn_judge import multi_turn_judge
from evaldag.scorers.llm.noise_sensitivity import noise_sensitivity
from evaldag.scorers.llm.prompt_alignment import prompt_alignment
from evaldag.scorers.llm.rubric import rubric
from evaldag.scorers.llm.summarization import summarization
from evaldag.scorers.llm.tool_call_accuracy import tool_call_accuracy_llm
from evaldag.scorers.llm.toxicity import toxicity
from evaldag.scorers.llm.trajectory_accuracy import trajectory_accuracy_llm

__all__ = [
    "answer_relevancy",
    "answer_similarity",
    "bias",
    "classifier",
    "context_precision",
    "context_recall",
    "context_relevance",
    "faithfulness",
    "hallucination",
    "multi_turn_judge",
    "noise_sensitivity",
    "prompt_alignment",
    "rubric",
    "summarization",
    "tool_call_accuracy_llm",
    "toxicity",
    "trajectory_accuracy_llm",
]
