"""Pictures written to files: a graphviz drawing or DOT text, in the format a path's suffix names.

Drawing the graphs is :mod:`evaldag._graph.render`'s; here a picture only becomes a file
(whole or not at all), and a stored DOT text (``EvalResult.dag_dot``) a picture again.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from evaldag._io.files import atomic_write_bytes, atomic_write_text, writable_target
from evaldag.errors import EvalDagError

if TYPE_CHECKING:
    import graphviz


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
    return atomic_write_bytes(target, digraph.pipe(format=fmt, engine="dot"))
