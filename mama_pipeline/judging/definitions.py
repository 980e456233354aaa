"""The judging group's Dagster definitions: ``judged_labels`` has one partition per query shard."""

import dagster as dg

from mama_pipeline.judging.assets import (
    audit_judgments,
    judge_pilot_sample,
    judge_reliability,
    judged_labels,
    judged_set,
    judging_failures,
    judgments,
    orphaned_judgments,
    pool_completeness,
    reference_judgments,
    unjudged_estimate,
)
from mama_pipeline.judging.checks import CHECKS
from mama_pipeline.partitions import Partitions, partitioned
from mama_pipeline.settings import PipelineSettings


def build_defs(settings: PipelineSettings) -> dg.Definitions:
    """The group's assets and checks, ``judged_labels`` partitioned by ``judging.shards``."""
    return dg.Definitions(
        assets=[
            *partitioned([judged_labels], Partitions.of(settings).shards),
            judged_set,
            judgments,
            judging_failures,
            unjudged_estimate,
            orphaned_judgments,
            judge_pilot_sample,
            reference_judgments,
            judge_reliability,
            audit_judgments,
            pool_completeness,
        ],
        asset_checks=CHECKS,
    )
