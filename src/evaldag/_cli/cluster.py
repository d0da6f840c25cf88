"""``evaldag run --executor``: the cluster a run's row batches go to."""

from __future__ import annotations

import argparse
import re

from evaldag._util.credentials import location_without_credentials

#: What --executor takes: a local cluster of either kind, or one's address.
_EXECUTOR = re.compile(r"(dask|ray)(://[^\s/:]+:\d{1,5})?")


def add_executor_option(run: argparse.ArgumentParser) -> None:
    """``--executor`` on ``evaldag run``."""
    run.add_argument(
        "--executor",
        type=_executor,
        metavar="WHERE",
        help="run the row batches as tasks on a cluster: 'dask' or 'ray' (one started on this "
        "machine; 'ray' joins this machine's Ray cluster if one runs), 'dask://HOST:PORT' (a "
        "Dask scheduler) or 'ray://HOST:PORT' (a Ray head's client port); one judge limit "
        "and budget for every worker (see docs/cluster.md)",
    )


def _executor(text: str) -> str:
    if not _EXECUTOR.fullmatch(text):
        raise argparse.ArgumentTypeError(
            "must be dask, ray, dask://HOST:PORT or ray://HOST:PORT, got "
            f"{location_without_credentials(text)!r}"
        )
    return text
