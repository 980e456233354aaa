"""Configuration of the circularity flags: model families named by hand where the default rule is wrong."""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import Field

from mama_pipeline.common.settings_base import Section
from mama_pipeline.llm.settings import LLM_STAGES


class CircularitySettings(Section):
    # "llm.<stage>", "retrieval.<retriever>" or "systems.<system>" -> family, e.g. {"retrieval.e5": "qwen/qwen3"};
    # default: the model id's organisation and base name ("Qwen/Qwen3.5-397B-A17B-FP8" -> "qwen/qwen3.5")
    families: dict[str, str] = Field(default_factory=dict)

    def check_families(self, retrievers: Iterable[str], systems: Iterable[str]) -> None:
        """A ValueError naming each ``circularity.families`` key that is no LLM stage, retriever or system."""
        known = {f"llm.{k}" for k in LLM_STAGES} | {f"retrieval.{n}" for n in retrievers}
        unknown = sorted(set(self.families) - known - {f"systems.{n}" for n in systems})
        if unknown:
            raise ValueError(
                f"circularity.families names unknown parts {unknown}: keys are llm.<stage>, "
                "retrieval.<retriever> or systems.<system>"
            )
