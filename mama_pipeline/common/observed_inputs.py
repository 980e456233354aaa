"""Inputs from outside the store as Dagster observable source assets, whose data version is their fingerprint.

An asset that reads a file, a folder or a server names the source in its ``deps``. Before a run is planned
(``mama-pipeline materialize``) every source is observed; an asset whose source's data version differs from the
one recorded at its last materialisation is stale, and so is everything downstream of it
(``run_plan.changed_partitions``). A source that cannot be observed (a missing file, a server down) gets a
version of its own, so its assets run and report the problem themselves.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import dagster as dg

from mama_pipeline.common.file_ops import sha256_file

DATA_VERSION_TAG = "dagster/data_version"


def observed_input(
    name: str,
    group: str,
    description: str,
    fingerprint: Callable[[Any], str | dict[str, str]],
    partitions_def: dg.PartitionsDefinition | None = None,
) -> dg.SourceAsset:
    """A source asset ``name`` whose observation is ``fingerprint(settings)`` (the pipeline's settings); with
    ``partitions_def``, ``fingerprint`` gives each partition key its version (an asset of the same partitions
    reads its own partition's; an unpartitioned one, all of them)."""

    def observe(context) -> dg.DataVersion | dg.DataVersionsByPartition:
        try:
            found = fingerprint(context.resources.settings.get())
            return dg.DataVersionsByPartition(found) if partitions_def is not None else dg.DataVersion(found)
        except Exception as exc:  # noqa: BLE001 - the reading asset reports it when it runs
            context.log.warning(f"{name} could not be observed ({type(exc).__name__}: {exc}); its assets will run")
            unobserved = f"unobserved at {time.time_ns()}"
            if partitions_def is None:
                return dg.DataVersion(unobserved)
            return dg.DataVersionsByPartition(dict.fromkeys(partitions_def.get_partition_keys(), unobserved))

    with warnings.catch_warnings():  # Dagster marks observable source assets beta; say so once, in the docs
        warnings.simplefilter("ignore", dg.BetaWarning)
        return dg.observable_source_asset(
            name=name,
            group_name=group,
            description=description,
            required_resource_keys={"settings"},
            partitions_def=partitions_def,
        )(observe)


def observation(name: str, version: str) -> dg.AssetObservation:
    """The observation a sensor records when it has just fingerprinted a source itself."""
    return dg.AssetObservation(asset_key=name, tags={DATA_VERSION_TAG: version})


def path_fingerprint(path: Path) -> str:
    """``sha256:`` of a file's bytes; of a folder, SHA-256 over each file's relative path, size and modification
    time (as make and rsync judge a change: a folder may hold gigabytes of model weights)."""
    if path.is_file():
        return f"sha256:{sha256_file(path)}"
    h = hashlib.sha256()
    for p in sorted(q for q in path.rglob("*") if q.is_file()):
        st = p.stat()
        h.update(f"{p.relative_to(path).as_posix()}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return f"tree:{h.hexdigest()}"


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _strings(v)


def settings_files_fingerprint(section: Any, resolve: Callable[[str], Path]) -> str:
    """A fingerprint of every file or folder a settings section names: each string setting (nested ones too)
    that is not a URL and resolves to an existing path, with that path's fingerprint; JSON, sorted."""
    found = {}
    for value in _strings(section.model_dump()):
        if value in ("", ".", "./", "..") or "://" in value or "\n" in value:
            continue
        try:
            path = resolve(value)
            if path.exists() and (os.sep in value or path.suffix or path.is_dir()):
                found[value] = path_fingerprint(path)
        except OSError:  # a name too long or not a path at all
            continue
    return hashlib.sha256(json.dumps(found, sort_keys=True).encode()).hexdigest()
