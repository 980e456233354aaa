"""Configuration of the versioned releases, publishing and the change watchers."""

from __future__ import annotations

import re

from pydantic import Field, field_validator, model_validator

from mama_pipeline.common.settings_base import Section

ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")


class PublishSettings(Section):
    """Pushing release folders to Hugging Face Hub dataset repos.

    Off (``enabled: false``) publishing is a dry run: the operations that would be
    sent are computed, logged and recorded, and nothing leaves the machine.
    """

    enabled: bool = False
    token_env: str = "HF_TOKEN"  # name of the environment variable holding the token (never the token)
    mamaretrieval_repo_id: str | None = None  # ORG/NAME of the dataset repo
    mamabench_repo_id: str | None = None
    branch: str = "main"
    create_repo: bool = False  # create the dataset repo when it does not exist
    private: bool = True  # visibility of a repo created here

    @field_validator("token_env")
    @classmethod
    def _env_name(cls, v: str) -> str:
        if not ENV_NAME.match(v):
            raise ValueError(f"token_env must be an environment variable name, got {v!r}")
        return v

    @field_validator("mamaretrieval_repo_id", "mamabench_repo_id")
    @classmethod
    def _repo(cls, v: str | None) -> str | None:
        if v is not None and not REPO_ID.match(v):
            raise ValueError(f"repo id {v!r} must look like ORG/NAME")
        return v

    @model_validator(mode="after")
    def _targets_when_enabled(self) -> PublishSettings:
        if self.enabled and not (self.mamaretrieval_repo_id or self.mamabench_repo_id):
            raise ValueError("publish.enabled is true but no repo id is set (mamaretrieval_repo_id, mamabench_repo_id)")
        return self


class HeldOutSettings(Section):
    """The declared held-out split (common/held_out.py): ``share`` of each benchmark's items, by a hash of their
    stable id and ``salt``, go to a private folder; 0 holds nothing out."""

    share: float = Field(0.0, ge=0.0, lt=1.0)
    salt: str = Field("mama-held-out-v1", min_length=1)

    def rule(self, id_field: str):
        from mama_pipeline.common.held_out import HeldOutRule

        return HeldOutRule(self.share, self.salt, id_field)


class ReleaseSettings(Section):
    mamabench_version: str = "0.0.0-sample"
    mamaretrieval_version: str = "0.0.0-sample"
    mamaretrieval_previous_version: str | None = None  # recorded in the manifest and card
    licence: str = "other"  # dataset card licence tag of mamaretrieval (guideline texts keep their owners' terms)
    publish: PublishSettings = PublishSettings()
    held_out: HeldOutSettings = HeldOutSettings()

    @field_validator("mamabench_version", "mamaretrieval_version", "mamaretrieval_previous_version")
    @classmethod
    def _version(cls, v: str | None) -> str | None:
        if v is not None and not re.match(r"^[0-9A-Za-z][0-9A-Za-z._+-]*$", v):
            raise ValueError(f"version {v!r} must be usable as a folder name and a git tag (letters, digits, . _ + -)")
        return v
