"""The LLM plan: the bill of every LLM stage before a run, bounds from the configuration and raw inputs."""

from mama_pipeline.common.face import lazy_face

DEFINED_IN = {  # public name -> the module that defines it (common/face.py)
    "plan_bills": "mama_pipeline.plan._plan_text",
    "prediction_or_reason": "mama_pipeline.plan._store_size",
}
__all__ = [
    "plan_bills",
    "prediction_or_reason",
]
__getattr__, __dir__ = lazy_face(__name__, DEFINED_IN)
