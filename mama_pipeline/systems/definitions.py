"""The systems group's Dagster definitions: one partition per configured system.

A configuration without ``systems.entries`` has nothing to evaluate, and the group is left out.
"""

import dagster as dg

from mama_pipeline.partitions import Partitions, partitioned
from mama_pipeline.settings import PipelineSettings
from mama_pipeline.systems import held_out_assets
from mama_pipeline.systems.assets import ASSETS, PARTITIONED, system_retriever_files
from mama_pipeline.systems.checks import CHECKS


def build_defs(settings: PipelineSettings) -> dg.Definitions:
    """The group's assets and checks, answers and grades partitioned by ``systems.entries``; empty without one."""
    if not settings.systems.names:
        return dg.Definitions()
    systems = Partitions.of(settings).systems
    assets = [partitioned([a], systems)[0] if a in PARTITIONED else a for a in ASSETS]
    return dg.Definitions(assets=[system_retriever_files, *assets, *held_out_assets.ASSETS], asset_checks=CHECKS)
