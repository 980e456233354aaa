"""The retrieval group's Dagster definitions: ``rankings`` has one partition per configured retriever."""

import dagster as dg

from mama_pipeline.partitions import Partitions, partitioned
from mama_pipeline.retrieval.assets import audit_pool, pooled_pairs, rankings, retrieval_input_files
from mama_pipeline.retrieval.checks import CHECKS
from mama_pipeline.settings import PipelineSettings


def build_defs(settings: PipelineSettings) -> dg.Definitions:
    """The group's assets and checks, ``rankings`` and its observed input partitioned by ``retrieval.retrievers``."""
    retrievers = Partitions.of(settings).retrievers
    return dg.Definitions(
        assets=[
            retrieval_input_files(retrievers),
            *partitioned([rankings], retrievers),
            pooled_pairs,
            audit_pool,
        ],
        asset_checks=CHECKS,
    )
