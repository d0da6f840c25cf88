"""The text the report's parts share: escaped markup, numbers, short scorer ids."""

import html
import math
from typing import Any

from evaldag._scorer.thresholds import ThresholdSpec, figure_text


def escaped(text: Any) -> str:
    """``text`` as HTML text, quotes included."""
    return html.escape(str(text), quote=True)


def number_text(value: float | None, digits: int = 2, against: ThresholdSpec | None = None) -> str:
    """``value`` with ``digits`` decimals (more beside a threshold ``against``, as
    ``figure_text`` shows it), ``–`` for None and NaN."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return figure_text(value, against, digits=digits)


def short_id(sid: str) -> str:
    """A scorer id without its ``-scorer`` suffix and ``check-`` prefix."""
    return sid.removesuffix("-scorer").removeprefix("check-")
