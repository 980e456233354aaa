"""Publishing a verified release folder to a Hugging Face Hub dataset repo.

One commit adds every file of the folder (and deletes files of an earlier
release that this one no longer has), then the commit is tagged with the
version. Off (``release.publish.enabled: false``) this is a dry run: the same
operations are described and logged, nothing is sent. The token is read from the
environment variable named in the configuration and is never logged or returned.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mama_pipeline.common.file_ops import sha256_file
from mama_pipeline.release._verify import verify_release
from mama_pipeline.release.settings import PublishSettings

REPO_TYPE = "dataset"
KEPT_ON_HUB = {".gitattributes"}  # hub files a release never deletes


class PublishError(RuntimeError):
    """A release that cannot be published, with the reason."""


@dataclass(frozen=True)
class PublishPlan:
    name: str
    version: str
    folder: Path
    repo_id: str
    branch: str
    files: tuple[str, ...]  # paths inside the folder = paths in the repo
    create_repo: bool
    private: bool

    @property
    def commit_message(self) -> str:
        return f"{self.name} {self.version}"

    def describe(self, deletes: tuple[str, ...] = ()) -> list[dict[str, Any]]:
        """The operations as plain data (for logs, metadata and tests)."""
        ops: list[dict[str, Any]] = []
        if self.create_repo:
            ops.append({"op": "create_repo", "repo_id": self.repo_id, "repo_type": REPO_TYPE, "private": self.private})
        ops.append(
            {
                "op": "create_commit",
                "repo_id": self.repo_id,
                "repo_type": REPO_TYPE,
                "revision": self.branch,
                "commit_message": self.commit_message,
                "add": [
                    {
                        "path_in_repo": rel,
                        "sha256": sha256_file(self.folder / rel),
                        "bytes": (self.folder / rel).stat().st_size,
                    }
                    for rel in self.files
                ],
                "delete": list(deletes),
            }
        )
        ops.append(
            {
                "op": "create_tag",
                "repo_id": self.repo_id,
                "repo_type": REPO_TYPE,
                "tag": self.version,
                "revision": "<the commit above>",
            }
        )
        return ops


@dataclass
class PublishOutcome:
    dry_run: bool
    operations: list[dict[str, Any]]
    commit_url: str | None = None
    commit_oid: str | None = None
    deleted: list[str] = field(default_factory=list)


def plan_publish(folder: Path, name: str, version: str, repo_id: str, settings: PublishSettings) -> PublishPlan:
    """Verify the folder against its manifest and list what one commit would add."""
    folder = Path(folder)
    result = verify_release(folder)
    if not result.ok:
        raise PublishError(f"{name} {version} at {folder} fails verification: " + "; ".join(result.problems))
    files = tuple(sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()))
    return PublishPlan(name, version, folder, repo_id, settings.branch, files, settings.create_repo, settings.private)


def publish_release(
    folder: Path,
    name: str,
    version: str,
    repo_id: str,
    settings: PublishSettings,
    env: Mapping[str, str] = os.environ,
    api_factory: Callable[..., Any] | None = None,
    log: Callable[[str], None] = lambda _msg: None,
) -> PublishOutcome:
    """Publish (or, when publishing is off, describe) one release folder."""
    plan = plan_publish(folder, name, version, repo_id, settings)
    if not settings.enabled:
        ops = plan.describe()
        log(
            f"dry run (release.publish.enabled is false): {name} {version} -> {repo_id}: "
            f"create_commit of {len(plan.files)} files on {plan.branch}, then create_tag {version}; nothing sent"
        )
        return PublishOutcome(dry_run=True, operations=ops)
    token = env.get(settings.token_env)
    if not token:
        raise PublishError(f"release.publish.enabled is true but environment variable {settings.token_env} is unset")
    if api_factory is None:
        from huggingface_hub import HfApi as api_factory
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete

    api = api_factory(token=token)
    if plan.create_repo:
        api.create_repo(repo_id, repo_type=REPO_TYPE, private=plan.private, exist_ok=True)
    tags = {t.name for t in api.list_repo_refs(repo_id, repo_type=REPO_TYPE).tags}
    if version in tags:
        raise PublishError(
            f"{repo_id} already has tag {version}: a published version is immutable; set a new release version"
        )
    existing = api.list_repo_files(repo_id, repo_type=REPO_TYPE, revision=plan.branch)
    deletes = tuple(sorted(set(existing) - set(plan.files) - KEPT_ON_HUB))
    operations = [CommitOperationAdd(path_in_repo=rel, path_or_fileobj=str(plan.folder / rel)) for rel in plan.files]
    operations += [CommitOperationDelete(path_in_repo=rel) for rel in deletes]
    log(f"publishing {name} {version} -> {repo_id}: {len(plan.files)} files, {len(deletes)} deletions")
    info = api.create_commit(
        repo_id, operations, commit_message=plan.commit_message, repo_type=REPO_TYPE, revision=plan.branch
    )
    api.create_tag(repo_id, tag=version, tag_message=plan.commit_message, revision=info.oid, repo_type=REPO_TYPE)
    log(f"published {name} {version}: {info.commit_url}, tagged {version}")
    return PublishOutcome(False, plan.describe(deletes), info.commit_url, info.oid, list(deletes))
