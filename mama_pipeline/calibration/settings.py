"""Configuration of the judge-calibration side-file and harness."""

from __future__ import annotations

from pydantic import Field, model_validator

from mama_pipeline.common.settings_base import Section, bundled

META_EVAL_FILE = "2025-05-07-06-14-12_oss_meta_eval.jsonl"


class MetaEvalSource(Section):
    """Where HealthBench's physician meta-evaluation file lives.

    ``path`` alone: a local jsonl file, or a local folder laid out like the hub
    repo (holding ``file``). ``repo_id`` + ``revision``: ``file`` of a hub dataset
    repo at that pinned revision. Relative paths resolve against the folder of
    the configuration file; the default is the sample bundled with the package.
    """

    path: str | None = bundled("sample_data/calibration/oss_meta_eval-sample.jsonl")
    repo_id: str | None = None
    revision: str | None = None
    file: str = META_EVAL_FILE
    licence: str = "MIT"

    @model_validator(mode="after")
    def _one_place(self) -> MetaEvalSource:
        if (self.path is None) == (self.repo_id is None):
            raise ValueError("set exactly one of 'path' (local) or 'repo_id' (hub)")
        if self.repo_id is not None and not self.revision:
            raise ValueError(f"hub source {self.repo_id}: 'revision' must pin a commit, tag or branch")
        return self


class CalibrationSettings(Section):
    meta_eval: MetaEvalSource = MetaEvalSource()
    harness_sample_size: int = Field(200, ge=0)  # side-file rows the candidate rubric judge grades (0 = all)
    harness_seed: int = 0
