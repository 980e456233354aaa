"""The robustness track: noisy query variants, their rankings and labels, the scoreboard and page."""

from mama_pipeline.common.face import lazy_face

DEFINED_IN = {  # public name -> the module that defines it (common/face.py)
    "AbbreviationTable": "mama_pipeline.robustness._abbreviations",
    "REWRITE_CHARS": "mama_pipeline.robustness._rewrite_prompt",
    "SEPARATOR": "mama_pipeline.robustness._variants",
    "StoredHoles": "mama_pipeline.robustness._stored_holes",
    "gate_model": "mama_pipeline.robustness._rewrite_prompt",
    "gate_template": "mama_pipeline.robustness._rewrite_prompt",
    "judge_depth": "mama_pipeline.robustness._stored_holes",
    "load_table": "mama_pipeline.robustness._abbreviations",
    "retriever_order": "mama_pipeline.robustness._variant_rankings",
    "rewrite_model": "mama_pipeline.robustness._rewrite_prompt",
    "rewrite_selection": "mama_pipeline.robustness._variants",
    "rewrite_template": "mama_pipeline.robustness._rewrite_prompt",
    "variant_id": "mama_pipeline.robustness._variants",
}
__all__ = [
    "AbbreviationTable",
    "REWRITE_CHARS",
    "SEPARATOR",
    "StoredHoles",
    "gate_model",
    "gate_template",
    "judge_depth",
    "load_table",
    "retriever_order",
    "rewrite_model",
    "rewrite_selection",
    "rewrite_template",
    "variant_id",
]
__getattr__, __dir__ = lazy_face(__name__, DEFINED_IN)
