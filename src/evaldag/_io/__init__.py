"""Files: results as Parquet (items plus metadata)."""
