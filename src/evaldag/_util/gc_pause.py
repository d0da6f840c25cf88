"""The cyclic garbage collector around work that allocates many objects: paused around loops
that make no cycles, kept off the heap a run starts with."""

from __future__ import annotations

import gc
import threading
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


_frozen_lock = threading.Lock()
_frozen_depth = 0
#: Whether the freeze in place is evaldag's (a run's, or a worker's): a freeze the process's own
#: code made (a server that freezes its heap before it forks) is never undone here.
_frozen_here = False


@contextmanager
def heap_frozen() -> Iterator[None]:
    """Keep what exists now out of the cyclic collector's passes while a run lasts.

    A run's process holds a large heap that outlives the run (the modules, the data, a cluster
    worker's driver) and makes many short-lived objects; each full pass of the collector walks
    the whole heap (100 to 200 ms in a worker), stopping every thread, the judge calls' event
    loop too, so the judge's slots idle. ``gc.freeze`` moves the objects alive now out of those
    passes; when the last frozen run in the process ends they go back (``gc.unfreeze``), so a
    cycle among them that became garbage meanwhile is collected as usual. A process whose own
    code froze its heap is left as it is.
    """
    global _frozen_depth, _frozen_here
    with _frozen_lock:
        if not _frozen_depth and not gc.get_freeze_count():
            _frozen_here = True
        if _frozen_here:
            gc.freeze()
        _frozen_depth += 1
    try:
        yield
    finally:
        with _frozen_lock:
            _frozen_depth -= 1
            if not _frozen_depth and _frozen_here:
                gc.unfreeze()
                _frozen_here = False


def worker_heap_frozen() -> None:
    """Freeze a cluster worker's heap once a run's driver is built there: its garbage collected
    first (what earlier runs left, which the last freeze kept from the collector), then what
    is alive frozen until the next run comes (see :func:`heap_frozen`); a freeze of the
    process's own code is left as it is."""
    global _frozen_here
    with _frozen_lock:
        if gc.get_freeze_count() and not _frozen_here:
            return
        if _frozen_depth:  # a run of this process froze it, and unfreezes it when it ends
            gc.freeze()
            return
        gc.unfreeze()
        gc.collect()
        gc.freeze()
        _frozen_here = True
