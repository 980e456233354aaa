"""The answerability gate and query writer: one LLM call per sampled chunk, stable query ids."""

from mama_pipeline.common.face import lazy_face

DEFINED_IN = {  # public name -> the module that defines it (common/face.py)
    "QUERY_CHARS": "mama_pipeline.queries._query_prompt",
    "REASON_CHARS": "mama_pipeline.queries._query_prompt",
    "answer_model": "mama_pipeline.queries._query_prompt",
    "duplicate_key": "mama_pipeline.queries._rules",
    "normalise_query": "mama_pipeline.queries._rules",
    "query_requests": "mama_pipeline.queries._query_prompt",
    "query_writer_template": "mama_pipeline.queries._query_prompt",
}
__all__ = [
    "QUERY_CHARS",
    "REASON_CHARS",
    "answer_model",
    "duplicate_key",
    "normalise_query",
    "query_requests",
    "query_writer_template",
]
__getattr__, __dir__ = lazy_face(__name__, DEFINED_IN)
