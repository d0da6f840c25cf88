"""Targets: what produces each item's output — a function, an agent, a Hamilton workflow."""
