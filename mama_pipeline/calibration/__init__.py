"""Grader calibration: the HealthBench meta-evaluation side-file, the rubric judge's labels and the harness report."""

from mama_pipeline.common.face import lazy_face

DEFINED_IN = {  # public name -> the module that defines it (common/face.py)
    "RUBRIC_JUDGE_PROMPT": "mama_pipeline.calibration._rubric_judge",
    "RubricVerdict": "mama_pipeline.calibration._rubric_judge",
    "judge_requests": "mama_pipeline.calibration._rubric_judge",
    "locate": "mama_pipeline.calibration._meta_eval",
    "read_meta_eval": "mama_pipeline.calibration._meta_eval",
    "render_conversation": "mama_pipeline.calibration._rubric_judge",
    "rubric_score": "mama_pipeline.calibration._rubric_score",
    "sample_rows": "mama_pipeline.calibration._rubric_judge",
}
__all__ = [
    "RUBRIC_JUDGE_PROMPT",
    "RubricVerdict",
    "judge_requests",
    "locate",
    "read_meta_eval",
    "render_conversation",
    "rubric_score",
    "sample_rows",
]
__getattr__, __dir__ = lazy_face(__name__, DEFINED_IN)
