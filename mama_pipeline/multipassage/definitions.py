"""The multipassage group's Dagster definitions: ``multipassage_rankings`` has one partition per retriever."""

import dagster as dg

from mama_pipeline.multipassage.assets import ASSETS, multipassage_rankings
from mama_pipeline.multipassage.checks import CHECKS
from mama_pipeline.partitions import Partitions, partitioned
from mama_pipeline.settings import PipelineSettings


def build_defs(settings: PipelineSettings) -> dg.Definitions:
    """The group's assets and checks, the rankings partitioned by ``retrieval.retrievers`` (as ``rankings``)."""
    retrievers = Partitions.of(settings).retrievers
    assets = [partitioned([a], retrievers)[0] if a is multipassage_rankings else a for a in ASSETS]
    return dg.Definitions(assets=assets, asset_checks=CHECKS)
