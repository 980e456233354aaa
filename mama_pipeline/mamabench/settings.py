"""Configuration of mamabench's upstream sources and scope checks.

Each pool is read from a local file, a local folder laid out like the hub
repository, or the Hugging Face hub at a pinned revision. Defaults are the
fixtures bundled with the package (resolved against the package, wherever the
configuration file is).
"""

from __future__ import annotations

from pydantic import Field, field_validator, model_validator

from mama_pipeline.common.settings_base import Section, bundled
from mama_pipeline.mamabench._pools import POOL_BY_NAME


class SourceLocation(Section):
    """Where one upstream pool's files live.

    ``path`` alone: one local file. ``path`` + ``files``: those files inside a
    local folder laid out like the hub repo. ``repo_id`` + ``revision`` +
    ``files``: those files of a hub dataset repo at that revision.
    """

    path: str | None = None
    repo_id: str | None = None
    revision: str | None = None
    files: list[str] = Field(default_factory=list)
    licence: str | None = None  # default: the pool's upstream licence

    @model_validator(mode="after")
    def _one_place(self) -> SourceLocation:
        if (self.path is None) == (self.repo_id is None):
            raise ValueError("set exactly one of 'path' (local) or 'repo_id' (hub)")
        if self.repo_id is not None:
            if not self.revision:
                raise ValueError(f"hub source {self.repo_id}: 'revision' must pin a commit, tag or branch")
            if not self.files:
                raise ValueError(f"hub source {self.repo_id}: 'files' must list the repo files to read")
        return self


_UP = bundled("sample_data/upstream")
_OWN = bundled("sample_data/mamabench")


class SourcesSettings(Section):
    medmcqa: SourceLocation = SourceLocation(path=f"{_UP}/medmcqa/validation-sample-120.parquet")
    medqa_usmle: SourceLocation = SourceLocation(path=f"{_UP}/medqa_usmle/us_4_options_test-sample-150.jsonl")
    afrimedqa_mcq: SourceLocation = SourceLocation(path=f"{_UP}/afrimedqa/afrimedqa_v2_sample_10.csv")
    afrimedqa_saq: SourceLocation = SourceLocation(path=f"{_OWN}/afrimedqa/afrimedqa_v2_saq_sample.csv")
    kenya_vignettes: SourceLocation = SourceLocation(path=f"{_UP}/kenya_vignettes/vignettes-sample-60.csv")
    whb: SourceLocation = SourceLocation(path=f"{_UP}/whb/WHB_subset.json")
    healthbench_oss_eval: SourceLocation = SourceLocation(path=f"{_UP}/healthbench/oss_eval-sample-40.jsonl")
    healthbench_consensus: SourceLocation = SourceLocation(path=f"{_OWN}/healthbench/consensus-sample.jsonl")
    healthbench_hard: SourceLocation = SourceLocation(path=f"{_OWN}/healthbench/hard-sample.jsonl")


class MamabenchSettings(Section):
    sources: SourcesSettings = SourcesSettings()
    sources_cron: str = "0 6 * * *"  # mamabench_sources_schedule: when the upstream files are checked
    # pre-scoping of the pools that bypass the classifier
    medmcqa_subjects: list[str] = Field(default_factory=lambda: ["Gynaecology & Obstetrics", "Pediatrics"])
    afrimedqa_specialty_contains: str = "Obstetric"
    afrimedqa_tier: str = "expert"
    # cosmetic-defect threshold: stems with fewer words are counted as terse
    terse_stem_words: int = Field(5, ge=1)
    # second-classifier agreement check (stage llm.classifier_reference)
    agreement_pools: list[str] = Field(default_factory=lambda: ["healthbench_oss_eval"])
    agreement_sample_size: int = Field(50, ge=0)  # 0 = every classified item of those pools
    agreement_seed: int = 0
    # pools that sit in many models' training data: named on the card, marked in the systems report's per-pool scores
    widely_trained_pools: list[str] = Field(default_factory=lambda: ["medmcqa", "medqa_usmle"])

    @field_validator("widely_trained_pools")
    @classmethod
    def _known_pools(cls, v: list[str]) -> list[str]:
        bad = [n for n in v if n not in POOL_BY_NAME]
        if bad:
            raise ValueError(f"widely_trained_pools {bad}: not mamabench pools; known: {sorted(POOL_BY_NAME)}")
        return v

    @field_validator("agreement_pools")
    @classmethod
    def _classified_pools(cls, v: list[str]) -> list[str]:
        allowed = sorted(n for n, p in POOL_BY_NAME.items() if p.scoping == "classifier")
        bad = [n for n in v if n not in allowed]
        if bad:
            raise ValueError(f"agreement_pools {bad}: the check re-classifies pools the classifier scopes: {allowed}")
        return v
