"""Running the pipeline's steps on a distributed engine (dagster-dask): see docs/scale-out.md."""
