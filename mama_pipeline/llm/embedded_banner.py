"""The banner a report page shows when any of its figures came from the embedded smoke-test model."""

from __future__ import annotations

from collections.abc import Iterable

STAGE_WORDS = {
    "classifier": "scope classifier",
    "classifier_reference": "reference scope classifier",
    "query_writer": "query writer",
    "judge": "relevance judge",
    "reference_judge": "reference judge",
    "cross_model_judge": "cross-model judge",
    "rubric_judge": "rubric grader",
    "query_rewriter": "query rewriter",
    "rewrite_gate": "rewrite gate",
    "answer_grader": "answer grader",
}


def embedded_banner(llm_settings, stages: Iterable[str], systems: Iterable[str] = ()) -> list[str]:
    """One banner naming the stages (in the reader's words) and answering systems that ran on the embedded model;
    none when every figure came from configured endpoints."""
    used = [STAGE_WORDS[s] for s in stages if (cfg := getattr(llm_settings, s)) is not None and cfg.embedded]
    used += [f"answering system {name}" for name in systems]
    if not used:
        return []
    return [
        f"Smoke test: the {', '.join(used)} ran on the embedded {llm_settings.embedded_server.model_alias} model. "
        "Every figure on this page that depends on them exercises the pipeline and says nothing about the "
        "quality of a retriever, a judge or an answering system."
    ]
