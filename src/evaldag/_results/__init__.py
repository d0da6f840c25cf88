"""Typed values: a scorer run's result, an eval's result and summary, the item columns."""
