"""Stable multi-passage question ids ``mq_00001``... (distinct from the single-chunk ``q_`` ids).

An id belongs to its chunk set (``set_id``) for good (registry table
``multipassage_id_registry``; numbering rules in :mod:`mama_pipeline.common.id_registry`).
"""

from mama_pipeline.common.id_registry import IdRegistry

QUESTION_IDS = IdRegistry("mq_", "set_id", "multi-passage id registry", "question id", "chunk sets")
ID_RE = QUESTION_IDS.pattern
assign_question_ids = QUESTION_IDS.assign
