"""Each asset materialisation's data version, from the content its step wrote.

The store (a table or partition replaced, ``Store.write_table``, ``Store.replace_from_query``) and ``file_ops``
(``atomic_file``, ``atomic_folder``) call :func:`record` with a digest of what they wrote. Inside an asset's step
(Dagster's current execution context, or the step the IO manager passes) the step's data version becomes SHA-256
over every (name, digest) it recorded, in order, and is set on each asset of the step: Dagster records it with the
materialisation instead of its logical version (code version and inputs' versions), so an asset re-run with the
same output leaves what reads it fresh (``run_plan.run_independent`` then skips it). A step that records nothing
keeps the logical version. Caches and logs (LLM answers, embeddings, labels by judge) are written around the
recorder: they are no asset's output.
"""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path
from typing import Any

_lock = threading.Lock()
_step: dict[str, Any] = {"id": None, "written": []}  # the step being recorded and its (name, digest) in order


def asset_step(step_context: Any = None) -> Any:
    """``step_context``, or else the step execution context of the asset computing in this thread; None outside
    one (a check's step, a command-line tool)."""
    import dagster as dg
    from dagster._core.execution.context.compute import current_execution_context

    if step_context is not None:
        return step_context
    ctx = current_execution_context.get()
    return ctx.get_step_execution_context() if isinstance(ctx, dg.AssetExecutionContext) else None


def record(step_context: Any, name: str, digest: str) -> None:
    """Add what a step wrote (``name``: a table, partition or file name; ``digest``: its content's) to the data
    version of each asset of the step (``asset_step``)."""
    import dagster as dg

    with _lock:
        step = (step_context.run_id, step_context.step.key)
        if _step["id"] != step:
            _step.update(id=step, written=[])
        _step["written"].append((name, digest))
        h = hashlib.sha256()
        for what, content in _step["written"]:
            h.update(f"{what}\0{content}\n".encode())
    version = dg.DataVersion(h.hexdigest())
    for key in step_context.get_output_asset_keys():
        step_context.set_data_version(key, version)


def _file_sha256(path: Path) -> str:
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def path_digest(path: Path) -> str:
    """SHA-256 of a file's bytes; of a folder, over each file's relative path and bytes (not times)."""
    if path.is_file():
        return _file_sha256(path)
    h = hashlib.sha256()
    for p in sorted(q for q in path.rglob("*") if q.is_file()):
        h.update(f"{p.relative_to(path).as_posix()}\0{_file_sha256(p)}\n".encode())
    return h.hexdigest()


def record_path(path: Path) -> None:
    """Record a file or folder just written in the current asset's step (by its name and content)."""
    step = asset_step()
    if step is not None:
        record(step, f"file:{path.name}", path_digest(path))
