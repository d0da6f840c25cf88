"""A run's progress: a tqdm bar on a terminal, a plain line now and then anywhere else (CI logs,
files), where a bar's carriage returns would pile up as one unreadable line."""

from __future__ import annotations

import os
import sys
from time import monotonic
from typing import TextIO

#: On a terminal, a run shorter than this shows no bar (unless forced).
TERMINAL_DELAY = 1.0
#: Elsewhere, a run shorter than this prints no line (unless forced): quick runs stay quiet.
LOG_DELAY = 5.0
#: Elsewhere, a line each time this share of the items is done ...
LOG_STEP = 0.05
#: ... or this many seconds have passed since the last line, whichever comes first.
LOG_INTERVAL = 30.0


class ProgressBar:
    """Items done out of the total, their rate and how many failed so far.

    :param enabled: True shows it from the first batch, False never; None shows it on a
        terminal for runs over a second, elsewhere (a CI log) for runs over 5 seconds.
    :param stream: where it goes (default: stderr); a bar on a terminal, else lines.
    """

    def __init__(
        self, total: int, *, enabled: bool | None = None, stream: TextIO | None = None
    ) -> None:
        self.total = total
        self.done = 0
        self.errors = 0
        self.stream = stream or sys.stderr
        self.enabled = enabled is not False
        self.forced = enabled is True
        self.started = monotonic()
        self.logged: tuple[int, float] | None = None  # items done and time at the last line
        self.bar = (
            _tqdm()(
                total=total,
                file=self.stream,
                desc="scoring",
                unit=" items",
                bar_format="{l_bar}{bar}| {n_fmt}/{total_fmt} items "
                "[{elapsed}<{remaining}, {rate_fmt}{postfix}]",
                delay=0 if self.forced else TERMINAL_DELAY,
                dynamic_ncols=True,
            )
            if self.enabled and _is_terminal(self.stream)
            else None
        )

    def advance(self, count: int, errors: int = 0) -> None:
        """Record ``count`` more finished items, ``errors`` of them failed, and show it."""
        self.done += count
        self.errors += errors
        if self.bar is not None:
            self.bar.set_postfix_str(f"{self.errors:,} with errors", refresh=False)
            self.bar.update(count)
        elif self.enabled and self._line_due():
            self.logged = (self.done, monotonic())
            self.stream.write(self.line() + "\n")
            self.stream.flush()

    def _line_due(self) -> bool:
        now = monotonic()
        if self.logged is None:
            return self.forced or now - self.started >= LOG_DELAY
        done, at = self.logged
        return (
            self.done == self.total
            or self.done - done >= LOG_STEP * self.total
            or now - at >= LOG_INTERVAL
        )

    def line(self) -> str:
        """``scoring: 40/100 items (40%), 12.5 items/s, 2 with errors, 3 s elapsed``."""
        elapsed = monotonic() - self.started
        rate = self.done / elapsed if elapsed > 0 else 0.0
        share = self.done / self.total if self.total else 1.0
        return (
            f"scoring: {self.done:,}/{self.total:,} items ({share:.0%}), {rate:,.1f} items/s, "
            f"{self.errors:,} with errors, {elapsed:,.0f} s elapsed"
        )

    def close(self) -> None:
        """End the bar's line on a terminal."""
        if self.bar is not None:
            self.bar.close()


def _is_terminal(stream: TextIO) -> bool:
    """Whether ``stream`` is a terminal a bar can be drawn on: some CI runners open a
    pseudo-terminal of no width, where tqdm draws nothing; they get the plain lines."""
    if not getattr(stream, "isatty", lambda: False)():
        return False
    try:
        return os.get_terminal_size(stream.fileno()).columns > 0
    except (OSError, ValueError):  # no file descriptor behind it: take isatty's word
        return True


def _tqdm() -> type:
    # Imported only for a bar: a run without one (progress=False, a CI log) does not pay for it.
    from tqdm import tqdm

    return tqdm
