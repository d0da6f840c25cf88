"""Formats, which know no result type: files written whole, a frame and its metadata as Parquet,
flat CSV and JSON Lines, pictures."""
