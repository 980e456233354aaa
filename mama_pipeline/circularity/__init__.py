"""Circularity flags: a judge that shares a model family with what it judges (read by reports, cards, releases)."""

from mama_pipeline.common.face import lazy_face

DEFINED_IN = {  # public name -> the module that defines it (common/face.py)
    "QUERY_WRITER": "mama_pipeline.circularity._flags",
    "RELEVANCE_JUDGE": "mama_pipeline.circularity._flags",
    "circularity_flags": "mama_pipeline.circularity._flags",
    "circularity_notes": "mama_pipeline.circularity._flags",
    "circularity_notes_of": "mama_pipeline.circularity._flags",
    "flag_record": "mama_pipeline.circularity._flags",
    "flag_table": "mama_pipeline.circularity._flags",
    "retrieval_flags": "mama_pipeline.circularity._flags",
    "retriever_notes": "mama_pipeline.circularity._flags",
    "system_flags": "mama_pipeline.circularity._flags",
}
__all__ = [
    "QUERY_WRITER",
    "RELEVANCE_JUDGE",
    "circularity_flags",
    "circularity_notes",
    "circularity_notes_of",
    "flag_record",
    "flag_table",
    "retrieval_flags",
    "retriever_notes",
    "system_flags",
]
__getattr__, __dir__ = lazy_face(__name__, DEFINED_IN)
