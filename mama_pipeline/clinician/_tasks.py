"""The seeded samples clinicians label, as Label Studio tasks.

Two designs of relevance pairs. Agreement: judged pairs drawn with the
reference-judge pilot's sampler (tier x judge score band,
:func:`mama_pipeline.judging._reliability.pilot_sample`). Estimation (with
``clinician.estimation_sample_size`` set): pooled pairs drawn uniformly at
random (:func:`mama_pipeline.common.strata.uniform_sample`), flagged
``estimation_sample``; the prediction-powered estimates use these alone. A pair
in both designs is one task. Scope items are drawn by the classifier's category,
NONE included, like the agreement design: strata visited in turn, each shuffled
with a seed derived from the stratum alone.

Task data carries the ids, the query and chunk (or the item as the classifier
read it) and nothing the LLMs said: annotators must not see the labels they
are checking. The stratum (which reveals the judge's score band) stays in the
pipeline's ``clinician_tasks`` table.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import polars as pl

from mama_pipeline.common.strata import round_robin_sample, uniform_sample
from mama_pipeline.judging import pilot_sample
from mama_pipeline.store.table_schema import table_schema

RELEVANCE = "relevance"
SCOPE = "scope"
KINDS = (RELEVANCE, SCOPE)
TASK_DATA_KEYS = {
    RELEVANCE: ("task_key", "query_id", "chunk_id", "query", "where", "chunk"),
    SCOPE: ("task_key", "item_id", "pool", "item"),
}
TASK_SCHEMA = table_schema("clinician_tasks")
UNIFORM = "uniform"  # the stratum of a task drawn by the estimation design alone
TASK_JUDGMENT_COLUMNS = ["query_id", "chunk_id", "tier", "score"]  # what the samples read of the judgments
POOL_COLUMNS = ["query_id", "chunk_id"]  # ... and of the pooled pairs
CHUNK_COLUMNS = ["chunk_id", "text", "source", "page"]  # what a relevance task shows of its chunk


def relevance_key(query_id: str, chunk_id: str) -> str:
    return f"{RELEVANCE}:{query_id}:{chunk_id}"


def scope_key(item_id: str) -> str:
    return f"{SCOPE}:{item_id}"


def _data_json(data: dict) -> str:
    return json.dumps(data, ensure_ascii=False, sort_keys=True)


def relevance_tasks(
    judgments: pl.DataFrame,
    queries: pl.DataFrame,
    chunks_of: Callable[[list[str]], pl.DataFrame],
    size: int,
    seed: int,
    lenient: int,
    strict: int,
    pool: pl.DataFrame | None = None,
    estimation_size: int = 0,
) -> pl.DataFrame:
    """``size`` judged pairs stratified by tier x score band and ``estimation_size`` pooled pairs drawn
    uniformly from ``pool`` (query_id, chunk_id), as tasks. ``judgments``: query_id, chunk_id, tier, score;
    ``queries``: query_id, query_text; ``chunks_of(ids)``: the chunks of these ids (chunk_id, text, source, page),
    read for the sampled pairs alone."""
    pair = {"query_id": pl.String, "chunk_id": pl.String}
    picked = [pl.DataFrame(schema={**pair, "stratum": pl.String})]
    if size and judgments.height:
        strata = pilot_sample(judgments, size, seed, lenient, strict)
        picked.append(
            strata.select(*pair, stratum=pl.concat_str(pl.col("tier").fill_null("None"), "band", separator="|"))
        )
    uniform = pl.DataFrame(schema=pair)
    if estimation_size and pool is not None and pool.height:
        uniform = uniform_sample(pool.select(*pair).cast(pair), list(pair), estimation_size, seed)
        picked.append(uniform.with_columns(stratum=pl.lit(UNIFORM)))
    sample = (
        pl.concat(picked)
        .unique(list(pair), keep="first", maintain_order=True)
        .join(uniform.with_columns(estimation_sample=pl.lit(True)), on=list(pair), how="left")
        .with_columns(pl.col("estimation_sample").fill_null(False))
    )
    if sample.is_empty():
        return pl.DataFrame(schema=TASK_SCHEMA)
    rows = sample.join(queries.select("query_id", "query_text"), on="query_id", how="left").join(
        chunks_of(sample["chunk_id"].unique().sort().to_list()).select(*CHUNK_COLUMNS), on="chunk_id", how="left"
    )
    missing = rows.filter(pl.col("query_text").is_null() | pl.col("text").is_null())
    if missing.height:
        q, c = missing.row(0, named=True)["query_id"], missing.row(0, named=True)["chunk_id"]
        raise ValueError(
            f"sampled pair ({q}, {c}) has no query text or chunk text: pool, judgments and inputs disagree"
        )
    out = []
    for r in rows.iter_rows(named=True):
        key = relevance_key(r["query_id"], r["chunk_id"])
        page = "unknown" if r["page"] is None else r["page"]
        data = {
            "task_key": key,
            "query_id": r["query_id"],
            "chunk_id": r["chunk_id"],
            "query": r["query_text"],
            "where": f"{r['source']}, page {page}",
            "chunk": r["text"],
        }
        out.append(
            {
                "task_key": key,
                "kind": RELEVANCE,
                "stratum": r["stratum"],
                "query_id": r["query_id"],
                "chunk_id": r["chunk_id"],
                "item_id": None,
                "pool": None,
                "data_json": _data_json(data),
                "estimation_sample": r["estimation_sample"],
            }
        )
    return pl.DataFrame(out, schema=TASK_SCHEMA).sort("task_key")


def scope_tasks(verdicts: pl.DataFrame, adapted: pl.DataFrame, size: int, seed: int) -> pl.DataFrame:
    """``size`` classified mamabench items stratified by the classifier's category (NONE included), as tasks."""
    classified = verdicts.filter((pl.col("via") == "classifier") & (pl.col("status") == "ok")).select(
        "item_id", "pool", "category"
    )
    if not size or classified.is_empty():
        return pl.DataFrame(schema=TASK_SCHEMA)
    sample = round_robin_sample(classified, ["category"], ["item_id"], size, seed).join(
        adapted.select("item_id", "scope_input"), on="item_id", how="left"
    )
    missing = sample.filter(pl.col("scope_input").is_null())
    if missing.height:
        raise ValueError(f"classified item {missing['item_id'][0]} has no scope_input in mamabench_adapted")
    out = []
    for r in sample.iter_rows(named=True):
        key = scope_key(r["item_id"])
        data = {"task_key": key, "item_id": r["item_id"], "pool": r["pool"], "item": r["scope_input"]}
        out.append(
            {
                "task_key": key,
                "kind": SCOPE,
                "stratum": r["category"],
                "query_id": None,
                "chunk_id": None,
                "item_id": r["item_id"],
                "pool": r["pool"],
                "data_json": _data_json(data),
                "estimation_sample": False,
            }
        )
    return pl.DataFrame(out, schema=TASK_SCHEMA).sort("task_key")


def label_studio_tasks(tasks: pl.DataFrame, kind: str) -> list[dict]:
    """Tasks of one kind in Label Studio's import format (``[{"data": {...}}, ...]``)."""
    return [{"data": json.loads(d)} for d in tasks.filter(pl.col("kind") == kind).sort("task_key")["data_json"]]
