"""mamabench's Dagster definitions, merged by ``mama_pipeline.definitions``; the release folder
(``mamabench_release``) is built by the release stage."""

import dagster as dg

from mama_pipeline.mamabench.assets import (
    RAW_ASSETS,
    SOURCES,
    healthbench_scope_verdicts,
    mamabench_adapted,
    mamabench_agreement,
    mamabench_items,
    mamabench_kenya_parity,
    mamabench_scope_verdicts,
    mamabench_yield,
)
from mama_pipeline.mamabench.checks import CHECKS
from mama_pipeline.mamabench.schedules import mamabench_sources_schedule
from mama_pipeline.settings import PipelineSettings


def build_defs(settings: PipelineSettings) -> dg.Definitions:
    """The group's assets and checks; the sources schedule runs on ``mamabench.sources_cron``."""
    return dg.Definitions(
        assets=[
            *SOURCES,
            *RAW_ASSETS,
            mamabench_adapted,
            mamabench_scope_verdicts,
            healthbench_scope_verdicts,
            mamabench_items,
            mamabench_yield,
            mamabench_agreement,
            mamabench_kenya_parity,
        ],
        asset_checks=CHECKS,
        schedules=[mamabench_sources_schedule(settings)],
    )
