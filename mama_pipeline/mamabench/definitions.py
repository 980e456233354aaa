"""mamabench's Dagster definitions, merged by ``mama_pipeline.definitions``."""
import dagster as dg

from mama_pipeline.mamabench.assets import (
    RAW_ASSETS,
    healthbench_scope_verdicts,
    mamabench_adapted,
    mamabench_agreement,
    mamabench_items,
    mamabench_kenya_parity,
    mamabench_release,
    mamabench_scope_verdicts,
    mamabench_yield,
)
from mama_pipeline.mamabench.checks import CHECKS

defs = dg.Definitions(
    assets=[
        *RAW_ASSETS,
        mamabench_adapted,
        mamabench_scope_verdicts,
        healthbench_scope_verdicts,
        mamabench_items,
        mamabench_yield,
        mamabench_agreement,
        mamabench_kenya_parity,
        mamabench_release,
    ],
    asset_checks=CHECKS,
)
