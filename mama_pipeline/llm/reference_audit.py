"""What a reference stage measures, named by what it is.

A reference stage on the same model as the stage it checks (another seed, temperature
or endpoint) measures self-consistency (test-retest); one on another model measures
cross-model agreement. With the same identity (endpoint, model and decoding) it gets
the checked stage's own cached answers and measures nothing (callers refuse it).
"""

from __future__ import annotations

from mama_pipeline.llm.settings import LLMSettings

SELF_CONSISTENCY = "self_consistency"
CROSS_MODEL = "cross_model"
TITLES = {SELF_CONSISTENCY: "self-consistency (test-retest)", CROSS_MODEL: "cross-model agreement"}


def audit_kind(models: set[str], reference_model: str) -> str:
    """Self-consistency when the reference runs one of the checked stage's ``models``, else cross-model."""
    return SELF_CONSISTENCY if reference_model in models else CROSS_MODEL


def audit_title(kind: str) -> str:
    return TITLES[kind]


def reference_judge_stages(llm: LLMSettings) -> list[str]:
    """The configured reference judges: llm.reference_judge, and llm.cross_model_judge when set."""
    return ["reference_judge"] + (["cross_model_judge"] if llm.cross_model_judge is not None else [])


def decoding_text(llm: LLMSettings, stage: str) -> str:
    """How a stage decodes, as the card states it."""
    cfg = getattr(llm, stage)
    return f"temperature {cfg.temperature}, seed {cfg.seed}"
