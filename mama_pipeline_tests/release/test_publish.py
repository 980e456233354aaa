"""Publishing: dry run describes the commit and tag; enabled, it sends them with the token from the environment."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from types import SimpleNamespace

import pytest
from huggingface_hub import CommitOperationAdd, CommitOperationDelete

from mama_pipeline.release._mamaretrieval import write_mamaretrieval_release
from mama_pipeline.release._publish import PublishError, publish_release
from mama_pipeline.release.settings import PublishSettings
from mama_pipeline_tests.release import fixtures as fx

TOKEN = "hf_SECRET_test_token_51c2"


@pytest.fixture
def release(tmp_path):
    folder = tmp_path / "mamaretrieval" / "0.3.0"
    write_mamaretrieval_release(folder, fx.inputs())
    return folder


@dataclass
class FakeHub:
    """Records the calls an HfApi would receive."""

    tags: tuple[str, ...] = ()
    files_on_hub: tuple[str, ...] = (".gitattributes", "README.md", "data/old.parquet")

    def __post_init__(self):
        self.calls: list[tuple[str, tuple, dict]] = []
        self.tokens: list[str] = []

    def __call__(self, token=None):
        self.tokens.append(token)
        return self

    def _record(self, name, *args, **kwargs):
        self.calls.append((name, args, kwargs))

    def create_repo(self, *a, **k):
        self._record("create_repo", *a, **k)

    def list_repo_refs(self, *a, **k):
        self._record("list_repo_refs", *a, **k)
        return SimpleNamespace(tags=[SimpleNamespace(name=t) for t in self.tags])

    def list_repo_files(self, *a, **k):
        self._record("list_repo_files", *a, **k)
        return list(self.files_on_hub)

    def create_commit(self, *a, **k):
        self._record("create_commit", *a, **k)
        return SimpleNamespace(oid="c" * 40, commit_url="https://huggingface.co/datasets/org/mr/commit/" + "c" * 40)

    def create_tag(self, *a, **k):
        self._record("create_tag", *a, **k)


def test_dry_run_describes_commit_and_tag_and_sends_nothing(release):
    hub, logs = FakeHub(), []
    outcome = publish_release(
        release,
        "mamaretrieval",
        "0.3.0",
        "org/mr",
        PublishSettings(),
        env={"HF_TOKEN": TOKEN},
        api_factory=hub,
        log=logs.append,
    )
    assert outcome.dry_run and hub.calls == [] and hub.tokens == []
    commit, tag = outcome.operations
    assert commit["op"] == "create_commit" and commit["repo_id"] == "org/mr" and commit["repo_type"] == "dataset"
    assert commit["revision"] == "main" and commit["commit_message"] == "mamaretrieval 0.3.0"
    added = {a["path_in_repo"]: a for a in commit["add"]}
    assert set(added) == {p.relative_to(release).as_posix() for p in release.rglob("*") if p.is_file()}
    assert "manifest.json" in added and "data/judgments.parquet" in added
    assert added["README.md"]["sha256"] == hashlib.sha256((release / "README.md").read_bytes()).hexdigest()
    assert tag == {
        "op": "create_tag",
        "repo_id": "org/mr",
        "repo_type": "dataset",
        "tag": "0.3.0",
        "revision": "<the commit above>",
    }
    assert any("dry run" in line for line in logs)
    assert TOKEN not in repr(outcome) + "".join(logs)


def test_enabled_sends_one_commit_then_the_tag_with_the_env_token(release):
    hub, logs = FakeHub(), []
    settings = PublishSettings(enabled=True, mamaretrieval_repo_id="org/mr", token_env="MY_HF_TOKEN", create_repo=True)
    outcome = publish_release(
        release,
        "mamaretrieval",
        "0.3.0",
        "org/mr",
        settings,
        env={"MY_HF_TOKEN": TOKEN},
        api_factory=hub,
        log=logs.append,
    )
    assert hub.tokens == [TOKEN]
    names = [c[0] for c in hub.calls]
    assert names == ["create_repo", "list_repo_refs", "list_repo_files", "create_commit", "create_tag"]
    _, args, kwargs = hub.calls[3]
    repo_id, operations = args
    assert repo_id == "org/mr" and kwargs["repo_type"] == "dataset" and kwargs["revision"] == "main"
    adds = {op.path_in_repo for op in operations if isinstance(op, CommitOperationAdd)}
    deletes = [op.path_in_repo for op in operations if isinstance(op, CommitOperationDelete)]
    assert adds == {p.relative_to(release).as_posix() for p in release.rglob("*") if p.is_file()}
    assert deletes == ["data/old.parquet"]  # stale file of an earlier release; .gitattributes is kept
    assert hub.calls[4][2] == {
        "tag": "0.3.0",
        "tag_message": "mamaretrieval 0.3.0",
        "revision": "c" * 40,
        "repo_type": "dataset",
    }
    assert not outcome.dry_run and outcome.commit_oid == "c" * 40 and outcome.deleted == ["data/old.parquet"]
    assert TOKEN not in repr(outcome) + "".join(logs) + repr(outcome.operations)


def test_enabled_without_token_or_with_existing_tag_refuses(release):
    settings = PublishSettings(enabled=True, mamaretrieval_repo_id="org/mr")
    with pytest.raises(PublishError, match="environment variable HF_TOKEN is unset"):
        publish_release(release, "mamaretrieval", "0.3.0", "org/mr", settings, env={}, api_factory=FakeHub())
    hub = FakeHub(tags=("0.3.0",))
    with pytest.raises(PublishError, match="already has tag 0.3.0"):
        publish_release(release, "mamaretrieval", "0.3.0", "org/mr", settings, env={"HF_TOKEN": TOKEN}, api_factory=hub)
    assert "create_commit" not in [c[0] for c in hub.calls]


def test_a_corrupted_folder_is_never_published(release):
    (release / "data" / "chunks.parquet").write_bytes(b"not parquet")
    hub = FakeHub()
    with pytest.raises(PublishError, match="fails verification: data/chunks.parquet"):
        publish_release(
            release,
            "mamaretrieval",
            "0.3.0",
            "org/mr",
            PublishSettings(enabled=True, mamaretrieval_repo_id="org/mr"),
            env={"HF_TOKEN": TOKEN},
            api_factory=hub,
        )
    assert hub.calls == []


def test_settings_validation():
    with pytest.raises(ValueError, match="no repo id is set"):
        PublishSettings(enabled=True)
    with pytest.raises(ValueError, match="environment variable name"):
        PublishSettings(token_env="hf_abc token")
    with pytest.raises(ValueError, match="ORG/NAME"):
        PublishSettings(mamaretrieval_repo_id="just-a-name")
