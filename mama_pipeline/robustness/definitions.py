"""The robustness group's Dagster definitions: ``variant_rankings`` has one partition per retriever."""

import dagster as dg

from mama_pipeline.partitions import Partitions, partitioned
from mama_pipeline.robustness.assets import (
    query_variants,
    robustness_input_files,
    robustness_scoreboard,
    variant_labels,
    variant_rankings,
)
from mama_pipeline.robustness.checks import CHECKS
from mama_pipeline.settings import PipelineSettings


def build_defs(settings: PipelineSettings) -> dg.Definitions:
    """The group's assets and checks, the variant rankings partitioned by ``retrieval.retrievers`` (as ``rankings``)."""
    retrievers = Partitions.of(settings).retrievers
    return dg.Definitions(
        assets=[
            robustness_input_files,
            query_variants,
            *partitioned([variant_rankings], retrievers),
            variant_labels,
            robustness_scoreboard,
        ],
        asset_checks=CHECKS,
    )
