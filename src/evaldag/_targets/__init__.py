"""Targets: what produces each item's output — a function, an agent, a Hamilton workflow."""

from evaldag._util.hamilton_setup import hamilton_without_autoload

# Before the package's modules import Hamilton (their imports of it come first).
hamilton_without_autoload()
