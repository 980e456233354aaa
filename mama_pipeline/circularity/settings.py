"""Configuration of the circularity flags: model families named by hand where the default rule is wrong."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from mama_pipeline.common.settings_base import Section

if TYPE_CHECKING:
    from mama_pipeline.settings import PipelineSettings


class CircularitySettings(Section):
    # "llm.<stage>", "retrieval.<retriever>" or "systems.<system>" -> family, e.g. {"retrieval.e5": "qwen/qwen3"};
    # default: the model id's organisation and base name ("Qwen/Qwen3.5-397B-A17B-FP8" -> "qwen/qwen3.5")
    families: dict[str, str] = Field(default_factory=dict)


def known_parts(s: PipelineSettings) -> set[str]:
    stages = {f"llm.{k}" for k in type(s.llm).model_fields if k != "embedded_server"}
    return stages | {f"retrieval.{n}" for n in s.retrieval.retriever_names} | {f"systems.{n}" for n in s.systems.names}


def check_families(s: PipelineSettings) -> None:
    """A ValueError naming each ``circularity.families`` key that is no stage, retriever or system."""
    unknown = sorted(set(s.circularity.families) - known_parts(s))
    if unknown:
        raise ValueError(
            f"circularity.families names unknown parts {unknown}: keys are llm.<stage>, "
            "retrieval.<retriever> or systems.<system>"
        )
