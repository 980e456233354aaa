"""Dagster resources and the DuckDB/polars IO manager shared by every area."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import duckdb
import polars as pl

from mama_pipeline.llm.client import LLMClient
from mama_pipeline.llm.embedded_server import embedded_server, endpoint_identity, one_server_at_a_time
from mama_pipeline.llm.kept_server import kept_url
from mama_pipeline.llm.settings import LLM_STAGES, StageSettings
from mama_pipeline.settings import PipelineSettings, load_settings
from mama_pipeline.store import Store


class SettingsResource(dg.ConfigurableResource):
    """The configuration file; empty ``config_path`` means ``MAMA_CONFIG`` or the bundled sample."""

    config_path: str = ""

    def get(self) -> PipelineSettings:
        return load_settings(self.config_path or None)


class StoreResource(dg.ConfigurableResource):
    settings: SettingsResource

    def get(self) -> Store:
        return Store(self.settings.get().db_path)


class LLMResource(dg.ConfigurableResource):
    """Opens the shared LLM client for one stage; starts the embedded server lazily when needed."""

    settings: SettingsResource

    def client(
        self, stage: str, context: dg.OpExecutionContext | None = None
    ) -> contextlib.AbstractContextManager[LLMClient]:
        if stage not in LLM_STAGES:
            raise ValueError(f"unknown LLM stage {stage!r}; expected one of {LLM_STAGES}")
        cfg = getattr(self.settings.get().llm, stage)
        if cfg is None:
            raise ValueError(f"LLM stage {stage!r} is not configured (llm.{stage})")
        return self.client_for(stage, cfg, context)

    @contextlib.contextmanager
    def client_for(
        self, stage: str, cfg: StageSettings, context: dg.OpExecutionContext | None = None
    ) -> Iterator[LLMClient]:
        """A client for a stage configured outside ``llm.*`` (e.g. an answering system's endpoint)."""
        s = self.settings.get()
        embedded = s.llm.embedded_server
        with contextlib.ExitStack() as stack:
            started: list[str] = []  # one embedded server per context, however many runs use it

            if not cfg.base_urls and not cfg.embedded:
                raise ValueError(
                    f"stage {stage!r} has no endpoint: set its base_urls and model, or embedded: true for the "
                    "embedded smoke-test model"
                )

            def resolve_urls() -> list[str]:
                if cfg.base_urls:
                    return list(cfg.base_urls)
                if not started and (kept := kept_url(embedded, s.data_path)):
                    started.append(kept)
                if not started:
                    stack.enter_context(one_server_at_a_time(s.data_path / "embedded_llm_server.lock"))
                    log = s.data_path / "logs" / "embedded_llm_server.log"
                    started.append(stack.enter_context(embedded_server(embedded, log)))
                return list(started)

            if cfg.embedded:
                endpoint = cfg.cache_namespace or endpoint_identity(embedded)
                model = cfg.model or embedded.model_alias
            else:
                endpoint = cfg.cache_namespace or ",".join(sorted(cfg.base_urls))
                if not cfg.model:
                    raise ValueError(f"stage {stage!r}: model must be set when base_urls is set")
                model = cfg.model
            yield LLMClient(
                stage,
                cfg,
                Store(s.db_path),
                endpoint=endpoint,
                model=model,
                resolve_urls=resolve_urls,
                log=context.log.info if context is not None else None,
                smoke_test=cfg.embedded,
            )


class MissingInput(LookupError):
    """An asset's or check's input was never materialised into the store."""


def _missing(context: dg.InputContext, store: Store) -> MissingInput:
    """The error for an input whose table is not in the store."""
    name = context.asset_key.to_user_string()
    return MissingInput(
        f"{_reader(context)} reads {name}, which is not in the store {store.path}: add {name} to the "
        f"selection (--select '<the selection>,{name}') or materialise it first"
    )


def _reader(context: dg.InputContext) -> str:
    """The step loading the input (an asset's or a check's op)."""
    try:
        return context.op_def.name
    except dg.DagsterInvariantViolationError:
        return "the step"


class DuckDBPolarsIOManager(dg.ConfigurableIOManager):
    """Stores polars DataFrames as DuckDB tables named after the asset; partitions per key."""

    settings: SettingsResource

    def _table(self, key: dg.AssetKey) -> str:
        return "__".join(key.path)

    def handle_output(self, context: dg.OutputContext, obj: pl.DataFrame | Iterator[pl.DataFrame] | None) -> None:
        """Write a frame, or an iterator of slices (written in order, see :meth:`Store.write_table`)."""
        if obj is None:
            return
        if not isinstance(obj, pl.DataFrame | Iterator):
            raise TypeError(
                f"asset {context.asset_key.to_user_string()} returned {type(obj).__name__}, "
                "not a polars DataFrame or an iterator of them"
            )
        partition = context.partition_key if context.has_partition_key else None
        store = Store(self.settings.get().db_path)
        rows = store.write_table(
            self._table(context.asset_key), obj, partition=partition, step_context=context.step_context
        )
        context.add_output_metadata({"table": self._table(context.asset_key), "rows": rows})

    def load_input(self, context: dg.InputContext) -> pl.DataFrame:
        """The upstream table; with ``AssetIn(metadata={"columns": [...]})`` only those columns, in that order
        (rows in the table's order); an error names a column the table lacks."""
        store = Store(self.settings.get().db_path)
        table = self._table(context.asset_key)
        if not store.path.exists():
            raise _missing(context, store)
        partitions = None
        if context.has_asset_partitions:
            partitions = sorted(context.asset_partition_keys)
        columns = context.definition_metadata.get("columns")
        try:
            if columns is None:
                return store.read_table(table, partitions=partitions)
            return store.read_table(table, partitions=partitions, columns=list(columns))
        except KeyError:  # read_table's: the table is not in the store (checked in its read, not before it)
            raise _missing(context, store) from None
        except duckdb.BinderException:
            if columns is None:
                raise
            present = store.columns(table)
            missing = [c for c in columns if c not in present]
            if not missing:
                raise
            raise ValueError(
                f"input {context.name!r} asks for column(s) {', '.join(map(repr, missing))} that table {table!r} "
                "does not have"
            ) from None


def shared_resources(config_path: str = "") -> dict[str, object]:
    settings = SettingsResource(config_path=config_path)
    return {
        "settings": settings,
        "store": StoreResource(settings=settings),
        "llm": LLMResource(settings=settings),
        "io_manager": DuckDBPolarsIOManager(settings=settings),
    }


def scratch_path(settings: SettingsResource) -> Path:
    """The data directory's scratch folder (the release's sorted copies, spilled slices), created on demand."""
    return data_path(settings, "scratch")


def data_path(settings: SettingsResource, *parts: str) -> Path:
    """A folder under the data directory, created on demand."""
    path = settings.get().data_path.joinpath(*parts)
    path.mkdir(parents=True, exist_ok=True)
    return path
