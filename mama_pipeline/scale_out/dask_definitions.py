"""The project's definitions with Dagster's dask executor: every step runs on a ``dask.distributed`` worker.

Needs the ``dask`` extra (``pip install mama_pipeline[dask]``). The scheduler's address comes from the
run config (``scripts/dask_cluster.sh start`` writes it); the workers import this module, so they need the
same code, ``MAMA_CONFIG`` and ``MAMA_DATA_DIR`` as the launching process (docs/scale-out.md).
"""
import dagster as dg
from dagster_dask import dask_executor

from mama_pipeline import definitions as project  # a module, not a second Definitions object at module scope

defs = dg.Definitions.merge(project.defs, dg.Definitions(executor=dask_executor))
