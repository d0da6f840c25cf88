"""Runs on a cluster: row batches as Dask or Ray tasks, one judge limit and budget for all."""
