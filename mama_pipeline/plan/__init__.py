from mama_pipeline.common.face import lazy_face

DEFINED_IN = {  # public name -> the module that defines it (common/face.py)
    "plan_bills": "mama_pipeline.plan._plan_text",
}
__all__ = [
    "plan_bills",
]
__getattr__, __dir__ = lazy_face(__name__, DEFINED_IN)
