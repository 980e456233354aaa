"""Per-query results as files, one per retriever, pairable by query id (as BioMed Eval publishes them).

``<retriever>.perquery.tsv``: a ``query_id`` column, then one column per measure
(ir_measures names), one row per benchmark query in benchmark order.
``<retriever>.run`` (when the run is given): the retriever's ranking as a TREC run file.
``<retriever>.first_relevant.tsv`` (run and qrels given): per query, the rank of its first
document labelled ``relevant_at`` or more (empty when none was retrieved).
``manifest.json`` lists the files, the measures with their labels and the query count,
so anyone can run a paired test against a new system without rescoring these.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path

import polars as pl

from mama_pipeline.common.file_ops import atomic_folder
from mama_pipeline.evaluation._scoreboard_measures import Measure
from mama_pipeline.evaluation._trec import write_trec_run

SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def per_query_wide(
    per_query: pl.DataFrame, retriever: str, measures: list[Measure], query_ids: list[str]
) -> pl.DataFrame:
    """One retriever's per-query values: a row per query, a column per measure."""
    names = [m.name for m in measures]
    wide = per_query.filter(pl.col("retriever") == retriever).pivot(on="measure", index="query_id", values="value")
    order = pl.DataFrame({"query_id": query_ids}, schema={"query_id": pl.String})
    return order.join(wide, on="query_id", how="left", maintain_order="left").select("query_id", *names)


def first_relevant_ranks(
    run: pl.DataFrame, qrels: pl.DataFrame, retriever: str, query_ids: list[str], relevant_at: int
) -> pl.DataFrame:
    """Per benchmark query (in order), the rank of the retriever's first document labelled >= ``relevant_at``."""
    relevant = qrels.filter(pl.col("relevance") >= relevant_at).select("query_id", "doc_id")
    first = (
        run.filter(pl.col("retriever") == retriever)
        .join(relevant, on=["query_id", "doc_id"])
        .group_by("query_id")
        .agg(pl.col("rank").min().alias("first_relevant_rank"))
    )
    order = pl.DataFrame({"query_id": query_ids}, schema={"query_id": pl.String})
    return order.join(first, on="query_id", how="left", maintain_order="left")


def write_per_query_files(
    per_query: pl.DataFrame | Callable[[str], pl.DataFrame],
    retrievers: list[str],
    measures: list[Measure],
    query_ids: list[str],
    folder: str | os.PathLike[str],
    benchmark: str,
    run: pl.DataFrame | Callable[[str], pl.DataFrame] | None = None,
    qrels: pl.DataFrame | None = None,
    relevant_at: int = 1,
) -> Path:
    """Write the folder (replaced atomically); returns it.

    ``per_query`` (retriever, query_id, measure, value), or a retriever's name -> its values (one retriever's are
    held at a time).

    ``run`` (retriever, query_id, doc_id, rank[, score]), or a retriever's name -> its run rows, adds each
    retriever's TREC run file; with ``qrels`` (query_id, doc_id, relevance) too, its first-relevant ranks.
    """
    for name in retrievers:
        if not SAFE_NAME.match(name):
            raise ValueError(f"retriever name {name!r} cannot be a file name (letters, digits, '_', '.', '-')")
    manifest = {
        "benchmark": benchmark,
        "queries": len(query_ids),
        "measures": [{"name": m.name, "label": m.label} for m in measures],
        "files": {},
    }
    if run is not None:
        manifest["run_files"] = {}
    if run is not None and qrels is not None:
        manifest["first_relevant_files"] = {}
        manifest["first_relevant_at"] = relevant_at
    with atomic_folder(folder) as tmp:
        for name in retrievers:
            file = f"{name}.perquery.tsv"
            values = per_query(name) if callable(per_query) else per_query
            per_query_wide(values, name, measures, query_ids).write_csv(tmp / file, separator="\t")
            manifest["files"][name] = file
            if run is None:
                continue
            one = run(name) if callable(run) else run.filter(pl.col("retriever") == name)
            one = one.filter(pl.col("query_id").is_in(query_ids))
            write_trec_run(one, tmp / f"{name}.run")
            manifest["run_files"][name] = f"{name}.run"
            if qrels is not None:
                ranks = first_relevant_ranks(one, qrels, name, query_ids, relevant_at)
                ranks.write_csv(tmp / f"{name}.first_relevant.tsv", separator="\t")
                manifest["first_relevant_files"][name] = f"{name}.first_relevant.tsv"
        (tmp / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return Path(folder)


def read_per_query_file(path: str | os.PathLike[str]) -> pl.DataFrame:
    """A per-query file back as a wide table (query_id + measures)."""
    return pl.read_csv(path, separator="\t", schema_overrides={"query_id": pl.String})
