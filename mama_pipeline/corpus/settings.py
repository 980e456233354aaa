"""Configuration of the guideline corpus and its tier-weighted sampling."""

from typing import Literal

from pydantic import Field, model_validator

from mama_pipeline.common.settings_base import Section, bundled


class TierSettings(Section):
    quota: int = Field(ge=0)  # chunks sampled per source of this tier
    sources: list[str]


class CorpusSettings(Section):
    # local file (.txt bundle, .parquet, .jsonl), or hf://datasets/ORG/NAME@REVISION/PATH (revision required);
    # default: the synthetic sample bundled with the package
    bundle: str = bundled("sample_data/corpus/chunks_for_rag.txt")
    # "body": chunk text without its breadcrumb lines (hashed, retrieved, judged and released);
    # "with_breadcrumb": the breadcrumb lines as written, then the body. The bundle's own CIDs may hash either
    # text (the convention found is recorded in the corpus metadata); chunk ids always hash this one.
    canonical_text: Literal["body", "with_breadcrumb"] = "body"
    on_bad_chunk: Literal["fail", "skip"] = "fail"  # skip: bad chunks are dropped and counted with their reason
    tiers: dict[str, TierSettings] = Field(default_factory=dict)  # tier name -> quota and sources
    sampling_seed: int = 20250601
    min_body_words: int = Field(25, ge=0)  # shorter bodies are rejected as boilerplate
    stratify_level: int = Field(1, ge=1)  # breadcrumb level whose sections are the sampling strata
    sensor_interval_s: int = Field(300, ge=30)  # corpus_version_sensor: how often the bundle is hashed

    @model_validator(mode="after")
    def _one_tier_per_source(self) -> "CorpusSettings":
        seen: dict[str, str] = {}
        for tier, spec in self.tiers.items():
            for source in spec.sources:
                if source in seen:
                    raise ValueError(f"source {source!r} is listed in tiers {seen[source]!r} and {tier!r}")
                seen[source] = tier
        return self

    def tier_of(self) -> dict[str, str]:
        """Source slug -> tier name for every tiered source."""
        return {source: tier for tier, spec in self.tiers.items() for source in spec.sources}

    def quota_of(self) -> dict[str, int]:
        """Source slug -> number of chunks to sample from it."""
        return {source: spec.quota for spec in self.tiers.values() for source in spec.sources}
