"""Bundle locations: local paths and pinned hub files, read offline from a hub cache."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mama_pipeline.corpus._bundle import load_bundle
from mama_pipeline.corpus._location import BundleLocationError, parse_hub_spec, resolve_bundle

SAMPLE = Path(__file__).resolve().parents[2] / "mama_pipeline" / "sample_data" / "corpus" / "chunks_for_rag.txt"
COMMIT = "0123456789abcdef0123456789abcdef01234567"


def test_local_paths_resolve_against_the_config_folder(tmp_path):
    assert resolve_bundle("corpus/x.txt", tmp_path).path == tmp_path / "corpus" / "x.txt"
    assert resolve_bundle(str(SAMPLE), tmp_path).path == SAMPLE
    assert resolve_bundle("corpus/x.txt", tmp_path).commit is None


def test_hub_spec_parsing():
    hub = parse_hub_spec("hf://datasets/org/mama-corpus@v0.2.0/bundles/chunks_for_rag.txt")
    assert (hub.repo_type, hub.repo_id, hub.revision, hub.path) == (
        "dataset",
        "org/mama-corpus",
        "v0.2.0",
        "bundles/chunks_for_rag.txt",
    )
    assert parse_hub_spec(f"hf://org/model@{COMMIT}/x.parquet").repo_type == "model"


@pytest.mark.parametrize(
    "spec", ["hf://datasets/org/name/chunks_for_rag.txt", "hf://datasets/org@v1/x.txt", "hf://datasets/org/name@v1"]
)
def test_hub_spec_without_pinned_revision_is_refused(spec):
    with pytest.raises(BundleLocationError, match="REVISION"):
        parse_hub_spec(spec)


def _hub_cache(hf_home: Path) -> None:
    repo = hf_home / "hub" / "datasets--org--mama-corpus"
    snapshot = repo / "snapshots" / COMMIT / "bundles"
    snapshot.mkdir(parents=True)
    (snapshot / "chunks_for_rag.txt").write_bytes(SAMPLE.read_bytes())
    (repo / "refs").mkdir()
    (repo / "refs" / "v0.2.0").write_text(COMMIT)


def _resolve_offline(hf_home: Path, spec: str) -> dict:
    code = (
        "import json, sys\n"
        "from mama_pipeline.corpus._location import resolve_bundle, BundleLocationError\n"
        "from mama_pipeline.corpus._bundle import load_bundle\n"
        "try:\n"
        "    r = resolve_bundle(sys.argv[1], None)\n"
        "except BundleLocationError as exc:\n"
        "    print(json.dumps({'error': str(exc)})); sys.exit(0)\n"
        "b = load_bundle(r.path)\n"
        "print(json.dumps({'path': str(r.path), 'commit': r.commit, 'version': b.corpus_version, 'n': b.chunks.height}))\n"
    )
    env = {**os.environ, "HF_HOME": str(hf_home), "HF_HUB_OFFLINE": "1"}
    env.pop("HF_HUB_CACHE", None)
    out = subprocess.run(
        [sys.executable, "-c", code, spec],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_hub_bundle_read_offline_by_tag_and_by_commit(tmp_path):
    _hub_cache(tmp_path / "hf")
    local = load_bundle(SAMPLE)
    for rev in ("v0.2.0", COMMIT):
        got = _resolve_offline(tmp_path / "hf", f"hf://datasets/org/mama-corpus@{rev}/bundles/chunks_for_rag.txt")
        assert got.get("error") is None, got
        assert got["commit"] == COMMIT
        assert Path(got["path"]).is_relative_to(tmp_path / "hf")
        assert (got["version"], got["n"]) == (local.corpus_version, local.chunks.height)


def test_hub_file_missing_from_offline_cache_is_a_clear_error(tmp_path):
    _hub_cache(tmp_path / "hf")
    got = _resolve_offline(tmp_path / "hf", "hf://datasets/org/mama-corpus@v9.9.9/bundles/chunks_for_rag.txt")
    assert "cannot fetch corpus bundle 'hf://datasets/org/mama-corpus@v9.9.9" in got["error"]
