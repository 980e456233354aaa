"""Where a bundle comes from: a local path, or a file in a Hugging Face Hub repository.

Hub files are named ``hf://datasets/ORG/NAME@REVISION/PATH/IN/REPO`` (or
``hf://models/...``, ``hf://spaces/...``; a bare ``hf://ORG/NAME@...`` is a model
repository, as in the hub's own URLs). The revision is required so that a run is
pinned: a commit hash, or a tag whose commit is recorded. Files are fetched with
``huggingface_hub.hf_hub_download`` into the hub cache, which honours ``HF_HOME``
and ``HF_HUB_OFFLINE``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from mama_pipeline.common.input_errors import InputError, one_line
from mama_pipeline.common.settings_base import resolve_path

HF_RE = re.compile(
    r"^hf://(?:(?P<kind>datasets|models|spaces)/)?(?P<repo>(?!(?:datasets|models|spaces)/)[^/@]+/[^/@]+)@(?P<revision>[^/]+)/(?P<path>.+)$"
)


class BundleLocationError(InputError):
    """A bundle location that cannot be resolved."""


@dataclass(frozen=True)
class HubFile:
    repo_type: str  # dataset | model | space
    repo_id: str
    revision: str
    path: str


@dataclass(frozen=True)
class ResolvedBundle:
    path: Path
    spec: str  # as configured
    commit: str | None  # hub commit the file was read at; None for local files


def parse_hub_spec(spec: str) -> HubFile:
    """Split an ``hf://`` location; the revision must be given."""
    m = HF_RE.match(spec)
    if m is None:
        raise BundleLocationError(
            f"hub bundle location {spec!r} must look like hf://datasets/ORG/NAME@REVISION/PATH "
            "(the revision pins the file)"
        )
    kind = {"datasets": "dataset", "spaces": "space"}.get(m.group("kind") or "", "model")
    return HubFile(kind, m.group("repo"), m.group("revision"), m.group("path"))


def resolve_bundle(spec: str, local_base: Path) -> ResolvedBundle:
    """A local path for a configured bundle location, downloading hub files."""
    if not spec.startswith("hf://"):
        return ResolvedBundle(resolve_path(spec, local_base), spec, None)
    hub = parse_hub_spec(spec)
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError

    try:
        local = Path(hf_hub_download(hub.repo_id, hub.path, repo_type=hub.repo_type, revision=hub.revision))
    except (LocalEntryNotFoundError, HfHubHTTPError, OSError) as exc:
        raise BundleLocationError(f"cannot fetch corpus bundle {spec!r}: {one_line(str(exc))}") from exc
    commit = _snapshot_commit(local, hub.path)
    return ResolvedBundle(local, spec, commit)


def _snapshot_commit(local: Path, repo_path: str) -> str | None:
    """The commit folder of a file in the hub cache (``.../snapshots/<commit>/<path>``)."""
    folder = local
    for _ in repo_path.split("/"):
        folder = folder.parent
    return folder.name if folder.parent.name == "snapshots" else None
