"""The Hamilton layer, and the only code that imports ``hamilton.function_modifiers``.

``scorer_dag`` (a scorer as a subdag), ``eval_dag`` (the whole eval), ``verdict`` (averages,
gates, thresholds, verdict), ``drivers`` and ``render`` (pictures).
"""
