"""Clinician validation: Label Studio tasks, clinician labels, agreement, the validated subset, corrected estimates."""

from mama_pipeline.common.face import lazy_face

DEFINED_IN = {  # public name -> the module that defines it (common/face.py)
    "METRIC_SCHEMA": "mama_pipeline.clinician._clinician_agreement",
    "annotators": "mama_pipeline.clinician._clinician_page",
    "is_synthetic": "mama_pipeline.clinician._synthetic",
    "markdown_section": "mama_pipeline.clinician._clinician_page",
}
__all__ = [
    "METRIC_SCHEMA",
    "annotators",
    "is_synthetic",
    "markdown_section",
]
__getattr__, __dir__ = lazy_face(__name__, DEFINED_IN)
