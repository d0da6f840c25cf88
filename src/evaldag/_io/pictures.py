"""Pictures written to files: a graphviz drawing or DOT text, in the format a path's suffix names.

Drawing the graphs is :mod:`evaldag._graph.render`'s; here a picture only becomes a file
(whole or not at all), and a stored DOT text (``EvalResult.dag_dot``) a picture again.

Graphviz's ``dot`` runs bounded (:func:`drawn_dot`): a results file's ``dag_dot`` is read from
disk, and a crafted one of 197 kB kept ``dot`` busy for minutes. It gets DOT text of at most
:data:`DOT_MAX_BYTES` and :data:`DOT_SECONDS` to draw it, is killed past them, and on Linux dies
with the process that started it (``PR_SET_PDEATHSIG``), so that a killed run leaves none behind.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from evaldag._io.files import atomic_write_bytes, atomic_write_text, writable_target
from evaldag.errors import EvalDagError

if TYPE_CHECKING:
    import graphviz

#: The longest ``dot`` may take to draw one picture.
DOT_SECONDS = 30.0
#: The largest DOT text given to ``dot`` (an eval's DAG is a few kB to a few hundred).
DOT_MAX_BYTES = 1024 * 1024
#: prctl's option that sends the child a signal when its parent dies (linux/prctl.h).
_PR_SET_PDEATHSIG = 1


def stored_picture(dot: str, path: str | os.PathLike[str] | None) -> graphviz.Source:
    """A stored DOT text as a graphviz object, written to ``path`` if given."""
    import graphviz

    source = graphviz.Source(dot)
    if path is not None:
        write_picture(source, path)
    return source


def write_picture(
    digraph: graphviz.Digraph | graphviz.Source, path: str | os.PathLike[str]
) -> Path:
    """Write ``digraph`` to ``path``, in the format its suffix names."""
    target = Path(path)
    fmt = target.suffix.lstrip(".").lower()
    if fmt == "dot" or fmt == "gv":
        return atomic_write_text(target, digraph.source)
    import graphviz

    if fmt not in graphviz.FORMATS:
        raise EvalDagError(
            "EVALDAG_UNKNOWN_PICTURE_FORMAT",
            f"Cannot write a DAG picture as '{target.name}': use a .png, .svg, .pdf or .dot path",
            details={"path": str(target)},
        )
    if shutil.which("dot") is None:
        raise EvalDagError(
            "EVALDAG_GRAPHVIZ_MISSING",
            f"Writing {target.name} needs Graphviz's 'dot' program, which is not on PATH. Install "
            "it (apt-get install graphviz, brew install graphviz) or write a .dot file instead.",
            category="SYSTEM",
            details={"path": str(target)},
        )
    writable_target(target)  # refused before Graphviz runs
    return atomic_write_bytes(target, drawn_dot(digraph.source, fmt))


def drawn_dot(dot: str, fmt: str) -> bytes:
    """``dot`` drawn by Graphviz's ``dot`` as ``fmt`` (``svg``, ``png`` ...), or an error: DOT
    text over :data:`DOT_MAX_BYTES`, a drawing longer than :data:`DOT_SECONDS` (``dot`` is
    killed), or ``dot`` failing."""
    source = dot.encode()
    if len(source) > DOT_MAX_BYTES:
        raise EvalDagError(
            "EVALDAG_DOT_TOO_LARGE",
            f"the DOT text is {len(source):,} bytes, over the {DOT_MAX_BYTES:,} evaldag gives "
            "Graphviz to draw (an eval's DAG is far smaller: was the file made by evaldag?)",
            details={"bytes": len(source), "limit": DOT_MAX_BYTES},
        )
    process = subprocess.Popen(
        ["dot", f"-T{fmt}"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # a Ctrl-C in the terminal is the parent's to handle
        preexec_fn=_dying_with_parent(),
    )
    try:
        drawn, complaint = process.communicate(source, timeout=DOT_SECONDS)
    except subprocess.TimeoutExpired:
        raise EvalDagError(
            "EVALDAG_DOT_TIMEOUT",
            f"Graphviz's dot took longer than {DOT_SECONDS:g} s to draw {len(source):,} bytes of "
            "DOT text and was stopped (a DAG that large or that tangled is not an eval's)",
            details={"seconds": DOT_SECONDS, "bytes": len(source)},
        ) from None
    finally:
        if process.poll() is None:  # a timeout, or the caller interrupted (Ctrl-C, SIGTERM)
            process.kill()
            process.wait()
    if process.returncode != 0:
        raise EvalDagError(
            "EVALDAG_DOT_FAILED",
            f"Graphviz's dot failed (exit {process.returncode}): "
            f"{complaint.decode('utf-8', 'replace').strip()[:500]}",
            details={"returncode": process.returncode},
        )
    return drawn


@functools.cache
def _dying_with_parent() -> Callable[[], None] | None:
    """What a child runs before ``exec`` to be killed when its parent dies (Linux), or None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True).prctl
    except (OSError, AttributeError):
        return None

    def die_with_parent() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)

    return die_with_parent
