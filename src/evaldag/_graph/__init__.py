"""The Hamilton layer, and the only code that imports ``hamilton.function_modifiers``.

``scorer_dag`` (a scorer as a subdag), ``eval_dag`` (the whole eval), ``verdict`` (averages,
gates, thresholds, verdict), ``drivers`` and ``render`` (pictures).
"""

from evaldag._util.hamilton_setup import hamilton_without_autoload

# Before the package's modules import Hamilton (their imports of it come first).
hamilton_without_autoload()
