"""Two runs of a process-wide setting's context that overlap: the first still in it when the
second has ended."""

import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any


def seen_by_the_first(context: Callable[[], AbstractContextManager[Any]], read: Callable[[], Any]):
    """What ``read()`` gives in the first of two overlapping ``context()``s, once the second,
    entered after it, has ended."""
    first_in, second_done, seen = threading.Event(), threading.Event(), []

    def first():
        with context():
            first_in.set()
            second_done.wait(10)
            seen.append(read())

    thread = threading.Thread(target=first)
    thread.start()
    first_in.wait(10)
    with context():
        pass
    second_done.set()
    thread.join(10)
    return seen[0]
