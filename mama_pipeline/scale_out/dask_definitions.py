"""The project's definitions with Dagster's dask executor: every step runs on a ``dask.distributed`` worker.

Needs the ``dask`` extra (``pip install mama_pipeline[dask]``). The scheduler's address comes from the
run config (``scripts/dask_cluster.sh start`` writes it); the workers import this module, so they need the
same code, ``MAMA_CONFIG`` and ``MAMA_DATA_DIR`` as the launching process (docs/scale-out.md).
"""

from unittest import mock

import dagster as dg
import dask.distributed
from dagster_dask import dask_executor
from dagster_dask.executor import DaskExecutor

from mama_pipeline import definitions as project  # a module, not a second Definitions object at module scope


class RunScopedDaskExecutor(DaskExecutor):
    """dagster-dask names a step's task ``<job>.<step>``: two runs of one job at once (two judging shards) would
    share a task key, and the scheduler would hand the second run the first run's result without running its
    step. Here every task key starts with the run id."""

    def execute(self, plan_context, execution_plan):
        submit, run_id = dask.distributed.Client.submit, plan_context.dagster_run.run_id

        def submit_for_run(client, *args, key, **kwargs):
            return submit(client, *args, key=f"{run_id}.{key}", **kwargs)

        with mock.patch.object(dask.distributed.Client, "submit", submit_for_run):  # this run's process only
            yield from super().execute(plan_context, execution_plan)


@dg.executor(
    name="dask", requirements=dg.multiple_process_executor_requirements(), config_schema=dask_executor.config_schema
)
def run_scoped_dask_executor(init_context):
    ((cluster_type, cluster_configuration),) = init_context.executor_config["cluster"].items()
    return RunScopedDaskExecutor(cluster_type, cluster_configuration)


defs = dg.Definitions.merge(project.defs, dg.Definitions(executor=run_scoped_dask_executor))
