"""The clinician group's Dagster definitions: assets, checks and the annotations sensor."""

import dagster as dg

from mama_pipeline.clinician.assets import (
    clinician_agreement,
    clinician_annotations,
    clinician_estimates,
    clinician_labels,
    clinician_projects,
    clinician_report,
    clinician_tasks,
    clinician_validated,
)
from mama_pipeline.clinician.checks import CHECKS
from mama_pipeline.clinician.sensors import clinician_annotations_sensor
from mama_pipeline.settings import PipelineSettings


def build_defs(settings: PipelineSettings) -> dg.Definitions:
    """The group's assets and checks; the sensor polls at ``clinician.sensor_interval_s``."""
    return dg.Definitions(
        assets=[
            clinician_annotations,
            clinician_tasks,
            clinician_projects,
            clinician_labels,
            clinician_agreement,
            clinician_validated,
            clinician_estimates,
            clinician_report,
        ],
        asset_checks=CHECKS,
        sensors=[clinician_annotations_sensor(settings)],
    )
