"""Configuration of the clinician validation loop (Label Studio)."""

from __future__ import annotations

import re

from pydantic import Field, field_validator, model_validator

from mama_pipeline.common.settings_base import Section

ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class ExportFiles(Section):
    """Label Studio JSON exports read instead of a server (teams that annotate elsewhere, or the offline demo)."""

    relevance: str | None = None
    scope: str | None = None


class ClinicianSettings(Section):
    # Label Studio server; empty: no server, labels come from ``exports`` (paths resolve against the config file).
    label_studio_url: str = ""
    token_env: str = "LABEL_STUDIO_USER_TOKEN"  # the variable holding the API token (never the token itself)
    project_prefix: str = "mama_pipeline"  # project titles: "<prefix> relevance", "<prefix> scope"
    timeout_s: float = Field(30.0, gt=0)
    exports: ExportFiles = ExportFiles()
    relevance_sample_size: int = Field(60, ge=0)  # (query, chunk) pairs, stratified by tier x judge score band
    # pooled pairs drawn uniformly at random (seeded) for the prediction-powered estimates; 0 = none
    estimation_sample_size: int = Field(0, ge=0)
    # an estimate needs at least this many sampled pairs with a clinicians' majority label in its cell
    min_estimation_pairs: int = Field(30, ge=2)
    scope_sample_size: int = Field(40, ge=0)  # mamabench items, stratified by scope category (NONE included)
    seed: int = 20260101
    min_annotations: int = Field(2, ge=1)  # annotations a task needs to enter the clinician-validated subset
    sensor_interval_s: int = Field(60, ge=10)  # how often the sensor polls the projects
    # Offline demo only: this many made-up annotators label the tasks (SYNTHETIC, never clinicians; 0 = off).
    synthetic_annotators: int = Field(0, ge=0, le=5)
    # A release refuses a clinician_validated configuration holding synthetic labels unless this is true; then its
    # card and its rows (column ``synthetic``) say SYNTHETIC.
    release_synthetic_labels: bool = False

    @model_validator(mode="after")
    def _synthetic_only_offline(self) -> ClinicianSettings:
        if self.synthetic_annotators and self.label_studio_url:
            raise ValueError("synthetic_annotators is for the offline demo; it cannot be set with label_studio_url")
        return self

    @field_validator("token_env")
    @classmethod
    def _env_name(cls, v: str) -> str:
        if not ENV_NAME.match(v):
            raise ValueError(f"{v!r} is not an environment variable name")
        return v

    @field_validator("label_studio_url")
    @classmethod
    def _url(cls, v: str) -> str:
        if v and not re.match(r"^https?://[^\s/]+", v):
            raise ValueError(f"{v!r} is not an http(s) URL")
        return v.rstrip("/")
