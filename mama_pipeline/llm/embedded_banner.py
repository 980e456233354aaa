"""The banner a report page shows when any of its figures came from the embedded smoke-test model."""

from __future__ import annotations

import re
from collections.abc import Iterable

from mama_pipeline.common.html_page import plural

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
SMOKE_TEST = "Smoke test"
_MEANING = "exercises the pipeline and says nothing about the quality of a retriever, a judge or an answering system"
_WRITTEN = re.compile(
    rf"{SMOKE_TEST}: the (?P<parts>.+) ran on the embedded (?P<model>\S+) model\. "
    rf"Every figure on this page that depends on them {re.escape(_MEANING)}\."
)


def embedded_banner(llm_settings, stages: Iterable[str], systems: Iterable[str] = ()) -> list[str]:
    """One banner naming the stages (in the reader's words) and answering systems that ran on the embedded model;
    none when every figure came from configured endpoints."""
    used = [STAGE_WORDS[s] for s in stages if (cfg := getattr(llm_settings, s)) is not None and cfg.embedded]
    used += [f"answering system {name}" for name in systems]
    if not used:
        return []
    return [
        f"{SMOKE_TEST}: the {', '.join(used)} ran on the embedded {llm_settings.embedded_server.model_alias} model. "
        f"Every figure on this page that depends on them {_MEANING}."
    ]


def smoke_test_summary(by_page: dict[str, list[str]]) -> str:
    """One banner for the reports index from the pages' smoke-test banners (page name -> its banners): the
    model, then each page with the stages that ran on it."""
    models, pages = [], []
    for name, banners in by_page.items():
        what = []
        for banner in banners:
            m = _WRITTEN.fullmatch(banner)
            if m:
                models.append(m["model"])
                what.append(m["parts"])
            else:
                what.append(banner.removeprefix(f"{SMOKE_TEST}: ").rstrip("."))
        pages.append(f"{name}: {'; '.join(what)}")
    on = f" on the embedded {', '.join(dict.fromkeys(models))} model" if models else ""
    return (
        f"{SMOKE_TEST}: on {plural(len(pages), 'page')} figures came from stages that ran{on}: "
        f"{' | '.join(pages)}. Every such figure {_MEANING}."
    )
