"""Prebuilt scorers: Mastra's code scorers and trajectory helpers, under snake_case names."""

from evaldag.scorers.textual import (
    completeness,
    content_similarity,
    keyword_coverage,
    textual_difference,
    tone,
)

__all__ = [
    "completeness",
    "content_similarity",
    "keyword_coverage",
    "textual_difference",
    "tone",
]
