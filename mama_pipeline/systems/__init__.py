"""Answering systems (closed-book and RAG) evaluated on mamabench, graded as HealthBench grades."""

from mama_pipeline.common.face import lazy_face

DEFINED_IN = {  # public name -> the module that defines it (common/face.py)
    "ANSWERS_SCHEMA": "mama_pipeline.systems._answering",
    "ANSWER_FAILED": "mama_pipeline.systems._grading",
    "CONTEXT_SCHEMA": "mama_pipeline.systems._answering",
    "GRADER_STAGES": "mama_pipeline.systems._bounds",
    "GRADE_FAILED": "mama_pipeline.systems._grading",
    "LETTERS": "mama_pipeline.systems._systems_prompts",
    "PARSE_FAILED": "mama_pipeline.systems._grading",
    "SHORT_ANSWER_GRADER_PROMPT": "mama_pipeline.systems._systems_prompts",
    "ShortAnswerGrade": "mama_pipeline.systems._systems_prompts",
    "benchmark_items": "mama_pipeline.systems._items",
    "context_block": "mama_pipeline.systems._answering",
    "extract_letter": "mama_pipeline.systems._systems_prompts",
    "failure_stages": "mama_pipeline.systems._bounds",
    "grade_answers": "mama_pipeline.systems._graders",
    "refusals": "mama_pipeline.systems._bounds",
    "rubric_requests": "mama_pipeline.systems._grading",
    "sample_items": "mama_pipeline.systems._items",
    "short_answer_requests": "mama_pipeline.systems._grading",
    "track_requests": "mama_pipeline.systems._answering",
}
__all__ = [
    "ANSWERS_SCHEMA",
    "ANSWER_FAILED",
    "CONTEXT_SCHEMA",
    "GRADER_STAGES",
    "GRADE_FAILED",
    "LETTERS",
    "PARSE_FAILED",
    "SHORT_ANSWER_GRADER_PROMPT",
    "ShortAnswerGrade",
    "benchmark_items",
    "context_block",
    "extract_letter",
    "failure_stages",
    "grade_answers",
    "refusals",
    "rubric_requests",
    "sample_items",
    "short_answer_requests",
    "track_requests",
]
__getattr__, __dir__ = lazy_face(__name__, DEFINED_IN)
