"""Configuration of the scoreboard, significance tests, report and BEIR evaluations."""

from __future__ import annotations

import re

from pydantic import Field, model_validator

from mama_pipeline.common.settings_base import Section

NAME_PATTERN = r"^[a-z0-9][a-z0-9_.-]*$"


class SegmentSettings(Section):
    """Scoreboards broken down by tier, source, query length and relevant-chunk length (word-count bands)."""

    query_length_bands: list[int] = Field(default_factory=lambda: [8, 12, 16])  # edges: <8, 8-11, 12-15, 16+
    relevant_length_bands: list[int] = Field(default_factory=lambda: [100, 200, 400])  # words of the best chunk
    min_queries: int = Field(20, ge=2)  # paired tests only in segments with at least this many queries
    # resamples of each segment's bootstrap and randomization test: segments x pairs x measures tests add up
    # (release scale: ~100 segments x 15 pairs x 5 measures), so fewer than the main matrix's by default
    resamples: int = Field(1000, ge=100)
    measures: list[str] = Field(default_factory=list)  # empty: the significance measures

    @model_validator(mode="after")
    def _bands(self):
        for key in ("query_length_bands", "relevant_length_bands"):
            edges = getattr(self, key)
            if any(e < 1 for e in edges) or edges != sorted(set(edges)):
                raise ValueError(f"segments.{key} must be increasing positive word counts, got {edges}")
        return self


class RunFileSettings(Section):
    """A TREC run evaluated on the judged labels only: never pooled, never judged."""

    name: str = Field(pattern=NAME_PATTERN)
    path: str


class BeirBenchmarkSettings(Section):
    """A BEIR benchmark: a local folder, a hub dataset (pinned revision) or a named preset."""

    name: str = Field(pattern=NAME_PATTERN)
    path: str | None = None
    preset: str | None = None  # e.g. "miriad-200k" (hub id, split and query count of its protocol)
    repo_id: str | None = None
    revision: str | None = None  # hub commit sha, 40 hex (required for hub sources)
    split: str | None = None  # default: the preset's, else "test"
    max_queries: int | None = Field(None, ge=1)  # default: the preset's, else every query of the split
    retrievers: list[str] = Field(min_length=1)  # names from retrieval.retrievers
    cutoffs: list[int] = Field(default_factory=lambda: [1, 3, 5, 10, 20, 100])
    significance_measures: list[str] = Field(default_factory=lambda: ["Success@10", "RR", "nDCG@10"])
    # query metadata keys to break results down by (besides query and relevant-document length bands);
    # "tier" and "source" are used whenever queries carry them
    segment_fields: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _one_source(self):
        given = [k for k in ("path", "preset", "repo_id") if getattr(self, k)]
        if len(given) != 1:
            raise ValueError(f"benchmark {self.name!r}: give exactly one of path, preset, repo_id (got {given})")
        if self.path is None and not re.fullmatch(r"[0-9a-f]{40}", self.revision or ""):
            raise ValueError(
                f"benchmark {self.name!r}: a hub dataset needs revision, a 40-hex commit sha (got {self.revision!r})"
            )
        return self


class EvaluationSettings(Section):
    cutoffs: list[int] = Field(default_factory=lambda: [1, 3, 5, 10, 20])
    lenient: int = 3
    strict: int = 5
    max_grade: int = 6  # wHR / wP divide labels by it
    significance_measures: list[str] = Field(
        default_factory=lambda: ["Success(rel=3)@5", "Success(rel=5)@5", "RR(rel=3)", "nDCG@10", "wP@5"]
    )
    headline_measure: str = "Success(rel=3)@5"  # per-tier plot
    resamples: int = Field(5000, ge=100)  # bootstrap and randomization-test resamples
    confidence: float = Field(0.95, gt=0, lt=1)
    alpha: float = Field(0.05, gt=0, lt=1)
    seed: int = 0
    run_files: list[RunFileSettings] = Field(default_factory=list)
    segments: SegmentSettings = SegmentSettings()
    beir: list[BeirBenchmarkSettings] = Field(default_factory=list)

    @model_validator(mode="after")
    def _consistent(self):
        if not 1 <= self.lenient <= self.strict <= self.max_grade:
            raise ValueError(
                f"need 1 <= lenient ({self.lenient}) <= strict ({self.strict}) <= max_grade ({self.max_grade})"
            )
        names = [b.name for b in self.beir]
        if len(set(names)) != len(names):
            raise ValueError(f"beir benchmark names must be unique: {names}")
        return self
