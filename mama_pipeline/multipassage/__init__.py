"""The mamaretrieval multi-passage track: questions that need two or three chunks, their labels and measures."""

from mama_pipeline.common.face import lazy_face

DEFINED_IN = {  # public name -> the module that defines it (common/face.py)
    "FACTS_PER_PASSAGE": "mama_pipeline.multipassage._multipassage_prompts",
    "chunk_lookup": "mama_pipeline.multipassage._chunk_lookup",
    "fact_check_template": "mama_pipeline.multipassage._multipassage_prompts",
    "fact_judge_template": "mama_pipeline.multipassage._multipassage_prompts",
    "fact_qrels": "mama_pipeline.multipassage._multipassage_measures",
    "fact_runs": "mama_pipeline.multipassage._fact_labels",
    "facts_stated_model": "mama_pipeline.multipassage._multipassage_prompts",
    "label_bounds": "mama_pipeline.multipassage._failures",
    "label_facts": "mama_pipeline.multipassage._fact_labels",
    "over_bound": "mama_pipeline.multipassage._failures",
    "score_track": "mama_pipeline.multipassage._multipassage_scoreboard",
    "stored_track_rankings": "mama_pipeline.multipassage._track_rankings",
    "verifier_model": "mama_pipeline.multipassage._multipassage_prompts",
    "verifier_template": "mama_pipeline.multipassage._multipassage_prompts",
    "writer_model": "mama_pipeline.multipassage._multipassage_prompts",
    "writer_requests": "mama_pipeline.multipassage._questions",
    "writer_template": "mama_pipeline.multipassage._multipassage_prompts",
}
__all__ = [
    "FACTS_PER_PASSAGE",
    "chunk_lookup",
    "fact_check_template",
    "fact_judge_template",
    "fact_qrels",
    "fact_runs",
    "facts_stated_model",
    "label_bounds",
    "label_facts",
    "over_bound",
    "score_track",
    "stored_track_rankings",
    "verifier_model",
    "verifier_template",
    "writer_model",
    "writer_requests",
    "writer_template",
]
__getattr__, __dir__ = lazy_face(__name__, DEFINED_IN)
