"""Configuration of the circularity flags: model families named by hand where the default rule is wrong."""
from __future__ import annotations

from pydantic import Field

from mama_pipeline.common.settings_base import Section


class CircularitySettings(Section):
    # "llm.<stage>", "retrieval.<retriever>" or "systems.<system>" -> family, e.g. {"retrieval.e5": "qwen/qwen3"};
    # default: the model id's organisation and base name ("Qwen/Qwen3.5-397B-A17B-FP8" -> "qwen/qwen3.5")
    families: dict[str, str] = Field(default_factory=dict)
