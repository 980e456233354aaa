"""Each asset materialisation's data version, from the content its step wrote.

The store (a table or partition replaced, ``Store.write_table``, ``Store.replace_from_query``) and ``file_ops``
(``atomic_file``, ``atomic_folder``) call :func:`record_written` with what they wrote and how to digest it. Inside an asset's step
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
from collections.abc import Callable
from typing import Any

_lock = threading.Lock()
_step: dict[str, Any] = {"id": None, "written": []}  # the step being recorded and its (name, digest) in order


def _asset_step(step_context: Any = None) -> Any:
    """``step_context``, or else the step execution context of the asset computing in this thread; None outside
    one (a check's step, a command-line tool)."""
    import dagster as dg
    from dagster._core.execution.context.compute import current_execution_context

    if step_context is not None:
        return step_context
    ctx = current_execution_context.get()
    return ctx.get_step_execution_context() if isinstance(ctx, dg.AssetExecutionContext) else None


def _record(step_context: Any, name: str, digest: str) -> None:
    """Add what a step wrote (``name``: a table, partition or file name; ``digest``: its content's) to the data
    version of each asset of the step."""
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


def record_written(name: str, digest: Callable[[], str], step_context: Any = None) -> None:
    """Record what was just written (``name``: a table, partition or file name; ``digest()``: its content's,
    computed only inside an asset's step) in the data version of the asset whose step wrote it: ``step_context``,
    or else the asset computing in this thread; outside one (a check's step, a command-line tool), nothing."""
    step = _asset_step(step_context)
    if step is not None:
        _record(step, name, digest())
