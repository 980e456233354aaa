"""Configuration of graded relevance judging and its audits."""

from typing import Any

from pydantic import Field, model_validator

from mama_pipeline.common.settings_base import Section


class JudgingSettings(Section):
    shards: int = Field(4, ge=1)  # query shards = partitions of the judged_labels asset
    batch_pairs: int = Field(16384, ge=1)  # pairs per client run; labels are committed after each
    # (answers reach the client's answer log every half second regardless: a kill re-asks what was in flight
    # and at most the last half second or so of answers)
    lenient_cut: int = Field(3, ge=1, le=6)
    strict_cut: int = Field(5, ge=1, le=6)
    pilot_size: int = Field(60, ge=1)  # pairs the reference judge labels
    pilot_seed: int = 20250715

    @model_validator(mode="before")
    @classmethod
    def _moved_keys(cls, data: Any) -> Any:
        if isinstance(data, dict) and "max_failure_rate" in data:
            raise ValueError("max_failure_rate moved to llm.judge.max_failure_rate (each LLM stage has its own bound)")
        return data
