"""A one-line progress bar on the terminal, for runs that last more than a second."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class ProgressBar:
    """Items done out of the total, with rate and time left; silent when not on a terminal.

    :param enabled: True or False to force it; None shows it only on a TTY.
    """

    def __init__(
        self, total: int, *, enabled: bool | None = None, stream: TextIO | None = None
    ) -> None:
        self.total = total
        self.done = 0
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.forced = enabled is True
        self.started = time.monotonic()
        self.shown = False

    def advance(self, count: int) -> None:
        """Record ``count`` more finished items and redraw."""
        self.done += count
        elapsed = time.monotonic() - self.started
        if not self.enabled or (elapsed < 1.0 and not self.forced):
            return
        rate = self.done / elapsed if elapsed > 0 else 0.0
        left = (self.total - self.done) / rate if rate > 0 else 0.0
        width = 30
        filled = int(width * self.done / self.total) if self.total else width
        bar = "#" * filled + "-" * (width - filled)
        self.stream.write(
            f"\r[{bar}] {self.done}/{self.total} items  {rate:,.0f}/s  {left:,.0f}s left "
        )
        self.stream.flush()
        self.shown = True

    def close(self) -> None:
        """End the line the bar was drawn on."""
        if self.shown:
            self.stream.write("\n")
            self.stream.flush()
