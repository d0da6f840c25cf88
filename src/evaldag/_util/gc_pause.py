"""Pausing the cyclic garbage collector around loops that allocate many objects and no cycles."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a loop allocates many short-lived objects.

    Scoring a column, or reading traces into items, creates several objects per row and no
    reference cycles; with the collector on, its repeated scans of the growing heap cost more
    than the work itself (measured: 2.5x on 10,000 rows x 3 scorers,
    ``benchmarks/scorer_overhead.py``; 1.4x to 1.7x reading traces, ``benchmarks/read_traces.py``).
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
