"""Asset checks of the corpus group."""

import dagster as dg
import polars as pl

from mama_pipeline.common.metadata import md_table
from mama_pipeline.corpus._hashing import chunk_id
from mama_pipeline.resources import SettingsResource


@dg.asset_check(
    asset=dg.AssetKey("corpus_chunks"),
    description="Chunk ids are unique and each equals the hash of its stored canonical text.",
)
def chunk_ids_unique_and_content_derived(corpus_chunks: pl.DataFrame) -> dg.AssetCheckResult:
    duplicated = corpus_chunks.filter(pl.col("chunk_id").is_duplicated()).select("chunk_id", "source", "line")
    wrong = [cid for cid, text in corpus_chunks.select("chunk_id", "text").iter_rows() if chunk_id(text) != cid]
    versions = corpus_chunks.get_column("corpus_version").unique().to_list()
    return dg.AssetCheckResult(
        passed=duplicated.is_empty() and not wrong and len(versions) == 1,
        metadata={
            "duplicate_ids": duplicated.height,
            "ids_not_matching_text": len(wrong),
            "corpus_versions": ", ".join(versions),
            "duplicates": md_table(duplicated),
        },
    )


@dg.asset_check(
    asset=dg.AssetKey("corpus_issues"),
    description="No chunk was skipped for a CID mismatch or other bad input, and no duplicate ids or texts.",
)
def bundle_is_clean(corpus_issues: pl.DataFrame) -> dg.AssetCheckResult:
    counts = corpus_issues.group_by("action", "reason").len("chunks").sort("action", "reason")
    cid_mismatches = corpus_issues.filter(pl.col("reason") == "cid_mismatch")
    return dg.AssetCheckResult(
        passed=corpus_issues.is_empty(),
        severity=dg.AssetCheckSeverity.WARN,
        metadata={
            "cid_mismatches": cid_mismatches.height,
            "skipped": int((corpus_issues.get_column("action") == "skipped").sum()),
            "duplicate_ids_dropped": int((corpus_issues.get_column("reason") == "duplicate_id").sum()),
            "duplicate_texts_reported": int((corpus_issues.get_column("reason") == "duplicate_text").sum()),
            "by_reason": md_table(counts),
        },
    )


@dg.asset_check(
    asset=dg.AssetKey("sampled_chunks"),
    description="Every tiered source filled its quota; shortfalls are listed per source.",
)
def quotas_filled(settings: SettingsResource, sampled_chunks: pl.DataFrame) -> dg.AssetCheckResult:
    c = settings.get().corpus
    got = dict(sampled_chunks.group_by("source").len().rows())
    rows = [
        {"source": s, "tier": c.tier_of()[s], "quota": q, "sampled": got.get(s, 0), "shortfall": q - got.get(s, 0)}
        for s, q in sorted(c.quota_of().items())
    ]
    short = pl.DataFrame(
        rows,
        schema={"source": pl.String, "tier": pl.String, "quota": pl.Int64, "sampled": pl.Int64, "shortfall": pl.Int64},
    ).filter(pl.col("shortfall") > 0)
    return dg.AssetCheckResult(
        passed=short.is_empty(),
        severity=dg.AssetCheckSeverity.WARN,
        metadata={
            "sources_short": short.height,
            "total_shortfall": int(short.get_column("shortfall").sum()),
            "shortfalls": md_table(short, 200),
        },
    )


@dg.asset_check(
    asset=dg.AssetKey("sampled_chunks"),
    additional_ins={"corpus_chunks": dg.AssetIn("corpus_chunks")},
    description="Sampled chunks are chunks of the current corpus version, each sampled once.",
)
def sample_matches_corpus(sampled_chunks: pl.DataFrame, corpus_chunks: pl.DataFrame) -> dg.AssetCheckResult:
    missing = sampled_chunks.join(corpus_chunks.select("chunk_id"), on="chunk_id", how="anti")
    repeated = sampled_chunks.filter(pl.col("chunk_id").is_duplicated())
    version = corpus_chunks.get_column("corpus_version")[0]
    stale = sampled_chunks.filter(pl.col("corpus_version") != version)
    return dg.AssetCheckResult(
        passed=missing.is_empty() and repeated.is_empty() and stale.is_empty(),
        metadata={"not_in_corpus": missing.height, "sampled_twice": repeated.height, "stale_version": stale.height},
    )


CHECKS = [chunk_ids_unique_and_content_derived, bundle_is_clean, quotas_filled, sample_matches_corpus]
