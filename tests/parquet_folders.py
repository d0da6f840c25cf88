"""Data as streamed runs read it: a folder of Parquet files of small row groups."""

import pyarrow as pa
import pyarrow.parquet as pq


def parquet_folder(frame, folder):
    """``frame`` in ``folder`` (made here) as two Parquet files, ``a`` its first 35 rows and
    ``b`` the rest, in row groups of 7 rows: batches cross row groups and files."""
    folder.mkdir()
    for name, rows in (("a", frame.iloc[:35]), ("b", frame.iloc[35:])):
        table = pa.Table.from_pandas(rows, preserve_index=False)
        pq.write_table(table, folder / f"{name}.parquet", row_group_size=7)
    return folder
