"""Handing the interpreter lock over quickly while judge calls run beside computing threads."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

#: Seconds a thread holding the interpreter lock runs before one waiting for it takes it, while
#: judge calls run (Python's default is 0.005).
SWITCH_SECONDS = 0.001
_switch_lock = threading.Lock()
_switch_depth = 0
_switch_before = 0.005


@contextmanager
def quick_lock_handover() -> Iterator[None]:
    """Hand the interpreter lock over every ``SWITCH_SECONDS`` while judge calls run.

    The judge calls' event loop gives the lock up at every wait for the network and must then
    wait for it again while a batch's thread computes (a stage, a frame): up to the switch
    interval each time, during which the replies that came are not read and their slots not
    passed on.
    """
    global _switch_depth, _switch_before
    with _switch_lock:
        if not _switch_depth:
            _switch_before = sys.getswitchinterval()
            sys.setswitchinterval(min(_switch_before, SWITCH_SECONDS))
        _switch_depth += 1
    try:
        yield
    finally:
        with _switch_lock:
            _switch_depth -= 1
            if not _switch_depth:
                sys.setswitchinterval(_switch_before)
