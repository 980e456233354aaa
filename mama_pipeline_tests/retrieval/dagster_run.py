"""Materialise the retrieval group in a fresh process (partitions come from MAMA_CONFIG at import).

Usage: ``MAMA_CONFIG=cfg.yaml python -m mama_pipeline_tests.retrieval.dagster_run CHUNKS.parquet
QUERIES.parquet OUT.json``
(stub ``corpus_chunks`` and ``generated_queries`` assets serve the two files).
Writes each step's success, check results and materialisation metadata as JSON.
"""

import json
import sys

import dagster as dg
import polars as pl

from mama_pipeline.resources import shared_resources
from mama_pipeline.retrieval.definitions import build_defs as build_retrieval_defs
from mama_pipeline.settings import load_settings
from mama_pipeline.store.duckdb_store import hold_open

defs = build_retrieval_defs(load_settings())


def main(chunks_path: str, queries_path: str, out_path: str) -> None:
    @dg.asset(key="corpus_chunks")
    def chunks() -> pl.DataFrame:
        return pl.read_parquet(chunks_path)

    @dg.asset(key="generated_queries")
    def queries() -> pl.DataFrame:
        return pl.read_parquet(queries_path)

    assets = [chunks, queries, *defs.assets]
    checks = list(defs.asset_checks)
    resources = shared_resources()
    report: dict = {"steps": []}

    def run(selection, partition=None):
        result = dg.materialize(
            [*assets, *checks], resources=resources, selection=selection, partition_key=partition, raise_on_error=False
        )
        step = {
            "selection": str(selection),
            "partition": partition,
            "success": result.success,
            "checks": {c.check_name: c.passed for c in result.get_asset_check_evaluations()},
            "metadata": {},
        }
        for mat in result.get_asset_materialization_events():
            m = mat.materialization
            step["metadata"][m.asset_key.to_user_string()] = {k: str(v.value) for k, v in m.metadata.items()}
        if not result.success:
            step["errors"] = [
                _messages(e.event_specific_data.error)
                for e in result.all_events
                if e.is_failure and getattr(e.event_specific_data, "error", None)
            ]
            step["failure_metadata"] = {
                k: str(v.value)
                for e in result.all_events
                if e.is_failure
                for k, v in (
                    getattr(getattr(e.event_specific_data, "user_failure_data", None), "metadata", None) or {}
                ).items()
            }
        report["steps"].append(step)

    run(dg.AssetSelection.assets("corpus_chunks", "generated_queries"))
    for name in load_settings().retrieval.retriever_names:
        run(dg.AssetSelection.assets("rankings") | dg.AssetSelection.checks_for_assets("rankings"), name)
    run(dg.AssetSelection.assets("pooled_pairs", "audit_pool") | dg.AssetSelection.checks_for_assets("pooled_pairs"))
    with open(out_path, "w") as fh:
        json.dump(report, fh, indent=1)


def _messages(error) -> str:
    """An error and its causes, outermost first."""
    parts = []
    while error is not None:
        parts.append(error.message.strip())
        error = error.cause
    return "\n".join(parts)[:4000]


if __name__ == "__main__":
    with hold_open(load_settings().db_path):  # this process is the file's one user, as in-process materialize
        main(*sys.argv[1:4])
