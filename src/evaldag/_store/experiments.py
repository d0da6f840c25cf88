"""Stored runs found by what a user calls them: an experiment id, a name, or an id's start.

A name (``run_evals(name=...)``) may be given to many runs, ``nightly`` every night: it means
the latest of them. An id is looked up first (names never look like one), then a name, then
the start of an id (``3f2a9c``, as git takes a commit's); a start that several ids share, and
text that finds nothing, are errors listing what the text is near.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence

import sqlalchemy as sa

from evaldag._store import schema
from evaldag.errors import EvalDagError

#: How short the start of an id may be.
SHORTEST_PREFIX = 4
#: How many candidates an error lists.
_LISTED = 5
_PREFIX = re.compile(r"[0-9a-fA-F-]+")


def experiment_id(connection: sa.Connection, experiment: str, location: str) -> str:
    """The id of the stored run ``experiment`` names (see the module's docstring)."""
    table = schema.experiments
    if not isinstance(experiment, str) or not experiment.strip():
        raise _not_found(f"{experiment!r} names no experiment", location, experiment)
    by_id = connection.scalar(sa.select(table.c.id).where(table.c.id == experiment))
    if by_id is not None:
        return by_id
    by_name = connection.scalar(
        sa.select(table.c.id)
        .where(table.c.name == experiment)
        .order_by(table.c.created_at.desc(), table.c.id.desc())
        .limit(1)
    )
    if by_name is not None:
        return by_name
    if len(experiment) >= SHORTEST_PREFIX and _PREFIX.fullmatch(experiment):
        starting = connection.scalars(
            sa.select(table.c.id)
            .where(table.c.id.startswith(experiment.lower()))
            .order_by(table.c.created_at.desc(), table.c.id.desc())
            .limit(_LISTED + 1)
        ).all()
        if len(starting) == 1:
            return starting[0]
        if starting:
            more = ", ..." if len(starting) > _LISTED else ""
            problem = f"'{experiment}' starts several experiment ids ({_listed(starting)}{more})"
            raise _not_found(f"{problem}; give more of the id", location, experiment)
    names = connection.scalars(
        sa.select(table.c.name).where(table.c.name.is_not(None)).distinct()
    ).all()
    ids = connection.scalars(sa.select(table.c.id)).all()
    near = difflib.get_close_matches(experiment, [*names, *ids], n=_LISTED, cutoff=0.6)
    problem = f"no experiment is named '{experiment}' or has that id"
    if near:
        problem += f"; did you mean {_listed(near)}?"
    raise _not_found(f"{problem} (store.experiments() lists the stored runs)", location, experiment)


def _listed(texts: Sequence[str]) -> str:
    return ", ".join(repr(text) for text in texts[:_LISTED])


def _not_found(problem: str, location: str, experiment: object) -> EvalDagError:
    return EvalDagError(
        "EVALDAG_STORE_NO_EXPERIMENT",
        f"The score store {location}: {problem}",
        domain="STORAGE",
        details={"store": location, "experiment": str(experiment)},
    )
