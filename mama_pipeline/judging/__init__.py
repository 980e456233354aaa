"""Judging: graded LLM relevance labels of the pooled pairs (full or adaptive), reliability and completeness audits."""

from mama_pipeline.common.face import lazy_face

DEFINED_IN = {  # public name -> the module that defines it (common/face.py)
    "DIMENSIONS": "mama_pipeline.judging._label_score",
    "GRADES": "mama_pipeline.judging._label_score",
    "OFF_TOPIC": "mama_pipeline.judging._label_score",
    "OUTCOME_SCHEMA": "mama_pipeline.judging._judge",
    "RELEVANCE_JUDGE": "mama_pipeline.judging._rubric",
    "RUBRIC_LABEL": "mama_pipeline.judging._label_score",
    "SCORES": "mama_pipeline.judging._reliability",
    "SYSTEM": "mama_pipeline.judging._rubric",
    "agreement": "mama_pipeline.judging._reliability",
    "judge_holes": "mama_pipeline.judging._judge",
    "judge_pair_slices": "mama_pipeline.judging._judge",
    "judge_pairs": "mama_pipeline.judging._judge",
    "label_prompt_hash": "mama_pipeline.judging._rubric",
    "merge_metadata": "mama_pipeline.judging._judge",
    "neutralise": "mama_pipeline.judging._rubric",
    "output_model": "mama_pipeline.judging._rubric",
    "pair_batches": "mama_pipeline.judging._judge",
    "pilot_sample": "mama_pipeline.judging._reliability",
    "score_verdicts": "mama_pipeline.judging._label_score",
}
__all__ = [
    "DIMENSIONS",
    "GRADES",
    "OFF_TOPIC",
    "OUTCOME_SCHEMA",
    "RELEVANCE_JUDGE",
    "RUBRIC_LABEL",
    "SCORES",
    "SYSTEM",
    "agreement",
    "judge_holes",
    "judge_pair_slices",
    "judge_pairs",
    "label_prompt_hash",
    "merge_metadata",
    "neutralise",
    "output_model",
    "pair_batches",
    "pilot_sample",
    "score_verdicts",
]
__getattr__, __dir__ = lazy_face(__name__, DEFINED_IN)
