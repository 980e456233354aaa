"""Fingerprints of the pipeline's inputs, for the corpus sensor and the mamabench sources schedule.

A local file is fingerprinted by its SHA-256; a hub file by the commit its
configured revision points at (a moved tag or branch changes it; a pinned commit
never does). Hub lookups go through ``HfApi.repo_info`` and honour ``HF_ENDPOINT``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from mama_pipeline.common.file_ops import sha256_file
from mama_pipeline.common.settings_base import resolve_path
from mama_pipeline.corpus._location import parse_hub_spec
from mama_pipeline.mamabench.settings import SourceLocation

HubCommit = Callable[[str, str, str], str]  # (repo_type, repo_id, revision) -> commit


def hub_commit(repo_type: str, repo_id: str, revision: str) -> str:
    """The commit a hub revision (commit, tag or branch) points at now; a full commit hash is its own answer."""
    if re.fullmatch(r"[0-9a-f]{40}", revision):
        return revision
    from huggingface_hub import HfApi

    return HfApi().repo_info(repo_id, repo_type=repo_type, revision=revision).sha


def bundle_fingerprint(spec: str, base_dir: Path, resolve_commit: HubCommit = hub_commit) -> str:
    """``sha256:<hex>`` of a local bundle, or ``commit:<hex>`` of a hub bundle's revision."""
    if spec.startswith("hf://"):
        hub = parse_hub_spec(spec)
        return f"commit:{resolve_commit(hub.repo_type, hub.repo_id, hub.revision)}"
    path = resolve_path(spec, base_dir)
    if not path.is_file():
        raise FileNotFoundError(f"corpus bundle {path} (corpus.bundle: {spec!r}) does not exist")
    return f"sha256:{sha256_file(path)}"


def source_fingerprints(
    loc: SourceLocation, resolve: Callable[[str], Path], resolve_commit: HubCommit = hub_commit
) -> dict[str, str]:
    """One upstream pool: file name -> sha256 (local files), or ``"revision"`` -> commit (hub)."""
    if loc.repo_id is not None:
        return {"revision": resolve_commit("dataset", loc.repo_id, loc.revision or "")}
    base = resolve(loc.path or "")
    named = {base.name: base} if not loc.files else {name: base / name for name in loc.files}
    for path in named.values():
        if not path.is_file():
            raise FileNotFoundError(f"upstream source file {path} does not exist")
    return {name: sha256_file(path) for name, path in sorted(named.items())}


def recorded_fingerprints(metadata: Mapping[str, Any]) -> dict[str, str]:
    """The same fingerprints as a raw pool asset recorded them in its materialisation metadata."""
    if metadata.get("revision"):
        return {"revision": str(metadata["revision"])}
    return {str(k): str(v) for k, v in (metadata.get("sha256") or {}).items()}


def changed_sources(current: Mapping[str, dict[str, str]], recorded: Mapping[str, dict[str, str] | None]) -> list[str]:
    """Pools whose files differ from the last materialisation, or that were never materialised."""
    return sorted(pool for pool, now in current.items() if recorded.get(pool) != now)
