"""Parquet data read in row groups: a file, a directory or a glob, on disk or at any fsspec URL.

The rows of such data are never read whole: :func:`parquet_batches` plans a run's batches from
the files' metadata alone (which rows of which row groups of which file each batch holds, and
where in the dataset it starts), and whoever runs a batch reads its rows (:func:`batch_rows`),
a worker of a cluster or the run's own process. A batch stays within one file. Every file must
have the schema of the first; the error names the file that differs and how. An error names the
data without the credentials its URL may hold (``s3://KEY:SECRET@...``, a signed ``?sig=``).
"""

from __future__ import annotations

import logging
import os
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from evaldag._util.credentials import (
    location_without_credentials,
    redacted,
    redacting,
    remembered,
    url_secrets,
)
from evaldag.errors import EvalDagError, error_message

if TYPE_CHECKING:
    import pyarrow.parquet as pq

#: Characters that make a path a glob.
_GLOB = frozenset("*?[")
#: The loggers of fsspec and of the file systems built on it that name URLs in their records.
_FILE_SYSTEM_LOGGERS = (
    "fsspec",
    "fsspec.http",
    "fsspec.sftp",
    "fsspec.caching",
    "fsspec.cached",
    "webhdfs",
    "s3fs",
    "gcsfs",
    "adlfs",
)


@dataclass(frozen=True)
class RowGroupBatch:
    """Where a batch's rows are: ``rows`` rows of ``path``'s ``row_groups`` (consecutive),
    after the first ``skip`` rows of the first; ``start`` is its first row in the dataset."""

    path: str
    row_groups: tuple[int, ...]
    skip: int
    rows: int
    start: int


@dataclass(frozen=True)
class ParquetBatches:
    """A Parquet dataset's batches, planned from its files' metadata."""

    location: str
    files: tuple[str, ...]
    schema: pa.Schema
    batches: tuple[RowGroupBatch, ...]

    @property
    def total_rows(self) -> int:
        return sum(batch.rows for batch in self.batches)


def is_parquet_location(data: Any) -> bool:
    """Whether ``data`` names Parquet data to read in row groups: a URL (``s3://...``,
    ``file://...``), a glob, a directory (named without suffix or ``.parquet``, as Spark names
    its tables), or a path ending in ``.parquet``."""
    if not isinstance(data, str | os.PathLike):
        return False
    text = os.fspath(data)
    folder = os.path.isdir(text) and Path(text).suffix.lower() in ("", ".parquet")
    return (
        "://" in text
        or any(c in _GLOB for c in text)
        or folder
        or text.lower().endswith(".parquet")
    )


def _file_system(location: str) -> tuple[Any, str]:
    import fsspec

    remembered(url_secrets(location))  # file systems log the URLs they open, at DEBUG
    for name in _FILE_SYSTEM_LOGGERS:
        redacting(logging.getLogger(name))

    try:
        return fsspec.core.url_to_fs(location)
    except (ImportError, ValueError) as error:  # a protocol whose package is not installed
        raise EvalDagError(
            "INVALID_DATA_FILE",
            f"Cannot read data at '{location}': {error}",
            details={"path": location},
            cause=error,
        ) from error


def _files(fs: Any, path: str, location: str) -> list[str]:
    """The Parquet files ``location`` names, in name order."""
    if any(c in _GLOB for c in path):
        found = sorted(f for f in fs.glob(path) if not fs.isdir(f))
        what = "matches no file"
    elif fs.isdir(path):
        found = sorted(f for f in fs.find(path) if f.lower().endswith(".parquet"))
        what = "is a directory holding no .parquet file"
    elif fs.exists(path):
        found = [path]
        what = ""
    else:
        found, what = [], "does not exist"
    if not found:
        raise EvalDagError(
            "INVALID_DATA_FILE",
            f"Data '{location}' {what}; give a .parquet file, a directory of them or a glob "
            "such as 'data/*.parquet'",
            details={"path": location},
        )
    return found


def _url(fs: Any, path: str) -> str:
    """``path`` of ``fs`` as a URL any process can open (a local path as itself)."""
    protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
    return path if protocol in ("file", "local") else fs.unstrip_protocol(path)


def _metadata(fs: Any, path: str, location: str) -> pq.FileMetaData:
    import pyarrow.parquet as pq  # with its file systems: loaded when Parquet data is read

    try:
        with fs.open(path, "rb") as file:
            return pq.ParquetFile(file).metadata
    except (OSError, pa.ArrowException) as error:
        raise EvalDagError(
            "INVALID_DATA_FILE",
            f"Cannot read data file '{_url(fs, path)}' (of '{location}') as Parquet: {error}",
            details={"path": _url(fs, path)},
            cause=error,
        ) from error


def _schema_difference(first: pa.Schema, other: pa.Schema) -> str:
    """How ``other`` differs from ``first``, in words."""
    names = first.names
    for name in names:
        if name not in other.names:
            return f"it has no column {name!r}"
        if first.field(name).type != other.field(name).type:
            return f"its column {name!r} is {other.field(name).type}, not {first.field(name).type}"
    extra = [n for n in other.names if n not in names]
    if extra:
        return f"it has columns the first file has not: {extra[:5]}"
    return f"its columns are in another order: {other.names[:10]}"


def parquet_batches(location: str | os.PathLike[str], batch_size: int) -> ParquetBatches:
    """The batches of at most ``batch_size`` rows of the Parquet data at ``location``, from its
    files' metadata; errors name the location and the file."""
    text = os.fspath(location)
    try:
        return _planned_batches(text, batch_size)
    except Exception as error:
        shown = _without_credentials(error, text)
    raise shown from shown.cause  # out of the handler: the error it replaces is no context


def _planned_batches(text: str, batch_size: int) -> ParquetBatches:
    fs, path = _file_system(text)
    files = _files(fs, path, text)
    schema: pa.Schema | None = None
    first = ""
    batches: list[RowGroupBatch] = []
    start = 0
    for name in files:
        url = _url(fs, name)
        metadata = _metadata(fs, name, text)
        found = metadata.schema.to_arrow_schema().remove_metadata()
        if schema is None:
            schema, first = found, url
        elif not found.equals(schema):
            raise EvalDagError(
                "INVALID_DATA_FILE",
                f"Data file '{url}' of '{text}' has another schema than '{first}': "
                f"{_schema_difference(schema, found)}; every file of the data must have the "
                "same columns of the same types",
                details={"path": url, "first": first},
            )
        sizes = [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)]
        for batch in _file_batches(url, sizes, batch_size, start):
            batches.append(batch)
        start += sum(sizes)
    assert schema is not None
    return ParquetBatches(text, tuple(_url(fs, f) for f in files), schema, tuple(batches))


def _file_batches(
    url: str, sizes: list[int], batch_size: int, start: int
) -> Iterator[RowGroupBatch]:
    """A file's batches of ``batch_size`` rows (its last one shorter), each with the row groups
    that hold its rows."""
    ends = []  # each row group's end, in rows of the file
    total = 0
    for size in sizes:
        total += size
        ends.append(total)
    for first_row in range(0, total, batch_size):
        rows = min(batch_size, total - first_row)
        groups = [
            i for i, end in enumerate(ends) if end > first_row and end - sizes[i] < first_row + rows
        ]
        skip = first_row - (ends[groups[0]] - sizes[groups[0]])
        yield RowGroupBatch(url, tuple(groups), skip, rows, start + first_row)


def batch_rows(batch: RowGroupBatch) -> pa.Table:
    """The rows of ``batch``, read from its row groups."""
    import pyarrow.parquet as pq

    try:
        fs, path = _file_system(batch.path)
        with fs.open(path, "rb") as file:
            table = pq.ParquetFile(file).read_row_groups(list(batch.row_groups))
        return table.slice(batch.skip, batch.rows)
    except (OSError, pa.ArrowException) as error:
        unread = EvalDagError(
            "INVALID_DATA_FILE",
            f"Cannot read rows {batch.start}–{batch.start + batch.rows - 1} from '{batch.path}' "
            f"(row groups {list(batch.row_groups)}): {error}",
            details={"path": batch.path, "row": batch.start},
            cause=error,
        )
    except EvalDagError as error:
        unread = error
    shown = _without_credentials(unread, batch.path)
    raise shown from shown.cause


def _without_credentials(error: Exception, location: str) -> EvalDagError:
    """``error``, met reading the data at ``location``, as output may show it: the URL's
    credentials masked in its message and details, a cause that holds one left out (an error
    of the file system, such as aiohttp's naming the URL, is said as a data error)."""
    if not isinstance(error, EvalDagError):
        error = EvalDagError(
            "INVALID_DATA_FILE",
            f"Cannot read data at '{location}': {error_message(error)}",
            details={"path": location},
            cause=error,
        )
    secrets = url_secrets(location)
    shown = location_without_credentials(location)

    def masked(value: Any) -> Any:
        return (
            redacted(value.replace(location, shown), secrets) if isinstance(value, str) else value
        )

    cause = error.cause
    if cause is not None:
        told = "".join(traceback.format_exception(cause))
        cause = cause if masked(told) == told else None
    return EvalDagError(
        error.id,
        masked(error.message),
        domain=error.domain,
        category=error.category,
        details={name: masked(value) for name, value in error.details.items()},
        cause=cause,
    )
