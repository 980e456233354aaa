"""Record which settings each asset reads while it runs: ``section`` and ``section.field`` per asset key.

Inside ``recording()`` attribute access on the pipeline's settings and on every top-level section is watched, and so
is a dump of a whole section (``model_dump``: recorded as ``section.*``, every field read at once): a read made while
a Dagster asset step runs (Dagster's current execution context) is attributed to that step's asset
keys, whether the asset reads it or a resource does for it (the LLM client's stage settings, the store's path). A
derived value of a section (a pydantic computed field, ``retrieval.pooled``) is recorded as itself, and the fields
it is derived from are not recorded while it is computed: its value is what the asset reads. A read outside an
asset's step (definitions loading, a check) is not attributed; neither is one made on a thread the step started
(the context does not follow it).

``python -c "from mama_pipeline_tests.support.settings_reads import main; main()" PATH ARGS...`` runs
``mama-pipeline ARGS`` so and writes the reads to ``PATH`` as JSON lines ``{"asset": key, "read": path}``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

LOCATION = {"data_dir", "config_dir"}  # where the data lives: part of no version


def _current_keys() -> list[str]:
    from dagster._core.execution.context.asset_execution_context import AssetExecutionContext
    from dagster._core.execution.context.compute import current_execution_context

    ctx = current_execution_context.get()
    if not isinstance(ctx, AssetExecutionContext):
        return []
    return [k.to_user_string() for k in ctx.selected_asset_keys]


@contextmanager
def recording() -> Iterator[set[tuple[str, str]]]:
    """Yield the set that fills with (asset key, settings path) while the block runs."""
    from mama_pipeline.settings import PipelineSettings

    reads: set[tuple[str, str]] = set()
    deriving = [0]  # computed fields being computed: the reads they make are theirs, not the asset's
    watched = {PipelineSettings: None}
    for name, field in PipelineSettings.model_fields.items():
        if name not in LOCATION and isinstance(field.annotation, type):
            watched[field.annotation] = name

    def recorder(cls: type, prefix: str | None):
        plain = cls.__getattribute__

        def getattribute(self, name: str):
            derived = name in type(self).model_computed_fields
            if (derived or name in type(self).model_fields) and name not in LOCATION and not deriving[0]:
                for key in _current_keys():
                    reads.add((key, name if prefix is None else f"{prefix}.{name}"))
            if not derived:
                return plain(self, name)
            deriving[0] += 1
            try:
                return plain(self, name)
            finally:
                deriving[0] -= 1

        return getattribute

    def whole(cls: type, prefix: str | None, method: str):
        plain = getattr(cls, method)

        def dump(self, *args, **kwargs):  # every field at once (pydantic reads them without attribute access)
            for key in _current_keys():
                reads.add((key, "*" if prefix is None else f"{prefix}.*"))
            return plain(self, *args, **kwargs)

        return dump

    patched = ("__getattribute__", "model_dump", "model_dump_json")
    saved = {(cls, name): cls.__dict__.get(name) for cls in watched for name in patched}
    for cls, prefix in watched.items():
        cls.__getattribute__ = recorder(cls, prefix)
        cls.model_dump = whole(cls, prefix, "model_dump")
        cls.model_dump_json = whole(cls, prefix, "model_dump_json")
    try:
        yield reads
    finally:
        for (cls, name), original in saved.items():
            if original is None:
                delattr(cls, name)
            else:
                setattr(cls, name, original)


def recorded(path: Path) -> dict[str, set[str]]:
    """Asset key -> the settings paths it was seen reading (a file ``main`` wrote)."""
    out: dict[str, set[str]] = {}
    for line in path.read_text().splitlines():
        row = json.loads(line)
        out.setdefault(row["asset"], set()).add(row["read"])
    return out


def main() -> None:
    from mama_pipeline.cli import main as cli

    with recording() as reads:
        code = cli(sys.argv[2:])
    with open(sys.argv[1], "a", encoding="utf-8") as out:
        for key, read in sorted(reads):
            out.write(json.dumps({"asset": key, "read": read}) + "\n")
    sys.exit(code)
