"""Mastra compatibility: JavaScript's semantics (sums, rounding, JSON text, whitespace, names)."""
