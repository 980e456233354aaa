"""The annotations sensor: new, edited, skipped or deleted annotations in Label Studio re-run the label assets
and the report page (``reports/clinician/agreement.html``).

The cursor is a fingerprint of every annotation's (task, id, updated_at,
cancelled, synthetic mark) across the projects; each new fingerprint requests one run (run key
= fingerprint). With no server configured the sensor skips.
"""

import dagster as dg

from mama_pipeline.clinician._label_studio import LabelStudioError
from mama_pipeline.clinician._projects import annotations_fingerprint, read_exports
from mama_pipeline.clinician.assets import ANNOTATIONS
from mama_pipeline.common.observed_inputs import observation
from mama_pipeline.resources import SettingsResource
from mama_pipeline.settings import PipelineSettings

LABEL_ASSETS = dg.AssetSelection.assets(
    "clinician_labels",
    "clinician_agreement",
    "clinician_confusion",
    "clinician_validated",
    "clinician_estimates",
    "clinician_report",
).required_multi_asset_neighbors()


def check_annotations(context: dg.SensorEvaluationContext, settings: SettingsResource):
    """One tick: the annotations' fingerprint against the cursor."""
    s = settings.get()
    url = s.clinician.label_studio_url
    if not url:
        return dg.SkipReason("clinician.label_studio_url is empty: no Label Studio server to poll")
    try:
        exports = read_exports(s.clinician, s.resolve)
    except LabelStudioError as exc:
        return dg.SkipReason(str(exc))
    fingerprint = annotations_fingerprint({kind: tasks for kind, (_, tasks) in exports.items()})
    if fingerprint == context.cursor:
        return dg.SkipReason(f"no new or changed annotations at {url} ({fingerprint})")
    context.update_cursor(fingerprint)
    annotations = sum(len(t.get("annotations") or []) for _, tasks in exports.values() for t in tasks)
    context.log.info(f"annotations at {url} changed: {annotations} now ({fingerprint})")
    request = dg.RunRequest(
        run_key=fingerprint,
        asset_selection=sorted(LABEL_ASSETS.resolve(context.repository_def.asset_graph), key=str),
        tags={"mama/trigger": "clinician_annotations_sensor"},
    )  # the annotations' new data version is recorded, so the run's provenance holds it
    return dg.SensorResult(run_requests=[request], asset_events=[observation(ANNOTATIONS, "server:" + fingerprint)])


def clinician_annotations_sensor(settings: PipelineSettings) -> dg.SensorDefinition:
    """The sensor, polling at ``clinician.sensor_interval_s``."""
    return dg.sensor(
        name="clinician_annotations_sensor",
        asset_selection=LABEL_ASSETS,
        minimum_interval_seconds=settings.clinician.sensor_interval_s,
        default_status=dg.DefaultSensorStatus.STOPPED,
        description="Polls the Label Studio projects; on new or changed annotations, re-materialises clinician_labels, "
        "the agreement figures, the clinician-validated subset, the corrected figures and the report page.",
    )(check_annotations)
