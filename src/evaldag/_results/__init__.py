"""Typed values only: a scorer run's result and judge records, an eval's result and summary."""
