"""The clinician-validated subset as a configuration of each release (mamaretrieval: relevance, mamabench: scope)."""
from __future__ import annotations

import polars as pl

from mama_pipeline.clinician.report import markdown_section
from mama_pipeline.release.configurations import ReleaseConfiguration
from mama_pipeline.store import Store

NAME = "clinician_validated"
LAYOUT = {  # release -> (kind, file, columns)
    "mamaretrieval": ("relevance", "data/clinician_validated.parquet",
                      ["query_id", "chunk_id", "annotations", "tie", "tied_on", "d1_topic", "d2_meaningful",
                       "d3_actionable", "d4_density", "score"]),
    "mamabench": ("scope", "data/clinician_validated/test.jsonl",
                  ["item_id", "annotations", "tie", "tied_on", "category"]),
}


def is_synthetic(labels: pl.DataFrame) -> bool:
    """Labels read from an export file named as synthetic (the bundled demo annotations)."""
    return bool(labels["source"].str.to_lowercase().str.contains("synthetic").any()) if labels.height else False


def configurations(release: str, store: Store) -> list[ReleaseConfiguration]:
    if release not in LAYOUT or not store.table_exists("clinician_validated"):
        return []
    kind, path, columns = LAYOUT[release]
    validated = store.read_table("clinician_validated")
    frame = validated.filter(pl.col("kind") == kind).select(columns).sort(columns[:2] if kind == "relevance"
                                                                          else columns[:1])
    metrics = store.read_table("clinician_agreement") if store.table_exists("clinician_agreement") else None
    synthetic = is_synthetic(store.read_table("clinician_labels")) if store.table_exists("clinician_labels") else False
    estimates = store.read_table("clinician_estimates") if store.table_exists("clinician_estimates") else None
    section = markdown_section(metrics if metrics is not None else pl.DataFrame(
        schema={"kind": pl.String, "comparison": pl.String, "metric": pl.String, "value": pl.Float64,
                "pairs": pl.Int64}), validated, kind, synthetic, estimates)
    what = "(query, chunk) pairs" if kind == "relevance" else "items' scope categories"
    return [ReleaseConfiguration(NAME, path, f"{what} labelled by at least two clinicians, majority label; ties "
                                 "listed" + (" (SYNTHETIC demo annotations)" if synthetic else ""), frame, section)]
