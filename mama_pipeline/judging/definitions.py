"""The judging group's Dagster definitions."""
import dagster as dg

from mama_pipeline.judging.assets import (
    audit_judgments,
    judge_pilot_sample,
    judge_reliability,
    judged_labels,
    judging_failures,
    judgments,
    orphaned_judgments,
    pool_completeness,
    reference_judgments,
)
from mama_pipeline.judging.checks import CHECKS

defs = dg.Definitions(
    assets=[
        judged_labels, judgments, judging_failures, orphaned_judgments, judge_pilot_sample,
        reference_judgments, judge_reliability, audit_judgments, pool_completeness,
    ],
    asset_checks=CHECKS,
)
