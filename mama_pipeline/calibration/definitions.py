"""The calibration area's Dagster definitions (resources come from the top-level merge)."""

import dagster as dg

from mama_pipeline.calibration.assets import (
    calibration_harness_report,
    calibration_input_files,
    calibration_judge_labels,
    calibration_meta_eval,
    calibration_side_file,
)
from mama_pipeline.calibration.checks import (
    every_meta_eval_row_accounted,
    harness_covers_answered_rows,
    judge_labels_consistent,
)
from mama_pipeline.settings import PipelineSettings


def build_defs(settings: PipelineSettings) -> dg.Definitions:
    """The group's assets and checks (none depends on the settings)."""
    return dg.Definitions(
        assets=[
            calibration_input_files,
            calibration_meta_eval,
            calibration_side_file,
            calibration_judge_labels,
            calibration_harness_report,
        ],
        asset_checks=[every_meta_eval_row_accounted, judge_labels_consistent, harness_covers_answered_rows],
    )
