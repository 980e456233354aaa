"""Dagster assets of retrieval and pooling (group ``retrieval``), thin over the pure modules.

Inputs from other areas: ``corpus_chunks`` (chunk_id, text, corpus_version, ...)
and ``generated_queries`` (query_id, query_text, seed_chunk_id, source, tier). ``rankings``
has one partition per configured retriever, fixed when definitions load; the
pools read the partitions they need from the store.
"""

from collections.abc import Iterator
from functools import partial

import dagster as dg
import polars as pl

from mama_pipeline.common.metadata import none_as_text
from mama_pipeline.common.observed_inputs import observed_input
from mama_pipeline.common.spilled_slices import SpilledSlices
from mama_pipeline.resources import SettingsResource, StoreResource, scratch_path
from mama_pipeline.retrieval._imported import RunImportError, problem_metadata
from mama_pipeline.retrieval._pooling import (
    POOL_SCHEMA,
    pool_slices,
    pool_stats,
    require_retrievers,
    sliced_pool_stats,
    stratified_query_sample,
)
from mama_pipeline.retrieval._pooling import audit_pool as build_audit_pool
from mama_pipeline.retrieval._registry import needs, ranked_slices, retrieval_env
from mama_pipeline.retrieval._retriever_rankings import empty_rankings, ranking_violations
from mama_pipeline.retrieval._retriever_versions import retriever_versions
from mama_pipeline.retrieval._stored_rankings import StoredRankings

GROUP = "retrieval"
SETTINGS_READ = {  # the settings each asset reads, ``section`` or ``section.field`` (common/code_version.py)
    # its own retriever's entry and depth (the pools' settings set it): its partition of retrieval_input_files
    "rankings": "retrieval.audit@observed retrieval.audited@observed retrieval.pool_depth@observed "
    "retrieval.pooled@observed retrieval.retrievers@observed",
    # the effective lists (retrieval.pooled, retrieval.audited), not the fields they are derived from
    "pooled_pairs": "retrieval.include_seed_chunk retrieval.pool_depth retrieval.pooled",
    "audit_pool": "retrieval.audit.depth retrieval.audit.n_queries retrieval.audit.seed retrieval.audited "
    "retrieval.include_seed_chunk",
}
INPUT_FILES = "retrieval_input_files"


def retrieval_input_files(partitions_def: dg.PartitionsDefinition) -> dg.SourceAsset:
    """The observed input of the retrievers, one partition per retriever (``retriever_versions``)."""
    return observed_input(
        INPUT_FILES,
        GROUP,
        "Each retriever's settings entry, ranking depth and the files and folders it names (imported runs: sha256; "
        "model folders: each file's path, size and modification time); a fusion's or reranker's include its runs'.",
        lambda s: retriever_versions(s.retrieval, s.resolve),
        partitions_def,
    )


INPUTS = {"chunks": dg.AssetIn("corpus_chunks"), "queries": dg.AssetIn("generated_queries")}
POOL_INPUTS = {  # the pools check ranked ids against the current tables: the chunk ids are all they read of chunks
    **INPUTS,
    "chunks": dg.AssetIn("corpus_chunks", metadata={"columns": ["chunk_id"]}),
}
POOLED_PAIRS_TABLE = "pooled_pairs"


@dg.asset(  # partitioned per retriever by build_defs (mama_pipeline.partitions)
    group_name=GROUP,
    deps=[INPUT_FILES],
    ins=INPUTS,
    description="Top-k chunks per query of one configured retriever (partition = retriever name), ordered by "
    "score descending then chunk_id descending (trec_eval's order), ranks 1..k.",
)
def rankings(
    context: dg.AssetExecutionContext,
    settings: SettingsResource,
    store: StoreResource,
    chunks: pl.DataFrame,
    queries: pl.DataFrame,
) -> dg.Output:  # slices (Iterator[pl.DataFrame]): no Dagster type for an iterator
    # a slice of queries at a time, spilled to scratch files: memory grows with a slice, and the store's write
    # lock is held only while the IO manager copies the files, not while the queries are searched
    s = settings.get()
    spec = s.retrieval.retriever(context.partition_key)
    db = store.get()
    if needs(spec):  # a fusion or reranker reads its runs a slice at a time: every stored rank checked first
        StoredRankings(db, needs(spec)).check_current(chunks, queries)
    env = retrieval_env(s, db, context.log.info)
    with SpilledSlices(scratch_path(settings), empty_rankings()) as spill:
        try:
            ranked = ranked_slices(spec, chunks, queries, s.retrieval.depth_of(spec.name), env)
            for part in ranked.slices:
                bad = ranking_violations(part)
                if bad.height:
                    raise RuntimeError(
                        f"retriever {spec.name!r} produced {bad.height} rows out of trec_eval order: {bad.head(3)}"
                    )
                spill.add(part)
            meta = ranked.metadata()
        except RunImportError as exc:  # one line names the first problem; the failure's metadata lists them
            raise dg.Failure(description=str(exc), metadata=problem_metadata(exc.problems)) from None
    return dg.Output(spill.read(), metadata=none_as_text(meta))


@dg.asset(
    group_name=GROUP,
    deps=[rankings],
    ins=POOL_INPUTS,
    description="Judging pool: union of the pooled retrievers' top-k per query (plus the seed chunk when "
    "configured), with the retrievers behind each pair and the query's pool size.",
)
def pooled_pairs(
    settings: SettingsResource, store: StoreResource, chunks: pl.DataFrame, queries: pl.DataFrame
) -> dg.Output:  # slices (Iterator[pl.DataFrame]): no Dagster type for an iterator
    # a slice of queries at a time, their ranks 1..pool_depth alone: memory grows with a slice, not with the pool;
    # the metadata comes before the slices are written: they are counted as they are spilled to scratch files
    r = settings.get().retrieval
    stored = StoredRankings(store.get(), r.pooled)
    stored.check_current(chunks, queries)
    require_retrievers(stored.present(), r.pooled)

    def spilled(spill: SpilledSlices) -> Iterator[pl.DataFrame]:
        for part in pool_slices(
            partial(stored.top, r.pool_depth), r.pooled, r.pool_depth, queries, r.include_seed_chunk
        ):
            spill.add(part)
            yield part

    with SpilledSlices(scratch_path(settings), pl.DataFrame(schema=POOL_SCHEMA)) as spill:
        stats = sliced_pool_stats(spilled(spill), r.pooled, queries.height)
    meta = {"retrievers": ", ".join(r.pooled), "depth": r.pool_depth, "include_seed_chunk": r.include_seed_chunk}
    return dg.Output(spill.read(), metadata={**meta, **stats})


@dg.asset(
    group_name=GROUP,
    deps=[rankings, pooled_pairs],  # the sampled queries' pairs of pooled_pairs, read from the store
    ins=POOL_INPUTS,
    description="Completeness-audit pool: a wider pool (more retrievers or deeper) on a tier-stratified, "
    "seeded query sample; in_main_pool marks pairs already in pooled_pairs.",
)
def audit_pool(
    settings: SettingsResource, store: StoreResource, chunks: pl.DataFrame, queries: pl.DataFrame
) -> dg.Output[pl.DataFrame]:
    r = settings.get().retrieval
    a = r.audit
    db = store.get()
    stored = StoredRankings(db, r.audited)
    stored.check_current(chunks, queries)
    sample = stratified_query_sample(queries, a.n_queries, a.seed)
    ids = sample.get_column("query_id").cast(pl.String).to_list()
    main = db.read_table(POOLED_PAIRS_TABLE, columns=["query_id", "chunk_id"], where={"query_id": ids})
    pool = build_audit_pool(
        stored.top(a.depth, ids), r.audited, a.depth, sample, r.include_seed_chunk, main, stored.present()
    )
    per_tier = sample.group_by("tier").agg(pl.len()).sort("tier")
    meta = {
        "retrievers": ", ".join(r.audited),
        "depth": a.depth,
        "seed": a.seed,
        "sampled_queries": sample.height,
        **{f"sampled_queries/{tier}": n for tier, n in per_tier.iter_rows()},
        "pairs_not_in_main_pool": int((~pool["in_main_pool"]).sum()),
        **pool_stats(pool, r.audited, sample.height),
    }
    return dg.Output(pool, metadata=meta)
