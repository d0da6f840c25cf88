"""Prebuilt LLM-judged scorers: Mastra's ``@mastra/evals`` LLM scorers, one module each.

Each module starts with the prompts its judge reads; ``_shared`` says how a scorer is written.
"""

from evaldag.scorers.llm.faithfulness import faithfulness

__all__ = ["faithfulness"]
