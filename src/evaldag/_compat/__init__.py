"""Mastra compatibility: JavaScript's semantics (sums, rounding, JSON text, whitespace, names)
and Mastra's camelCase records."""
