"""Tier-weighted sampling of seed chunks for query writing.

Only sources named in a tier are sampled. Each chunk of such a source is first
checked against the boilerplate rules (:mod:`mama_pipeline.corpus._boilerplate`);
rejected chunks are listed with their reason. The remaining chunks of a source
are grouped by their section at breadcrumb level ``stratify_level`` (chunks
without one form the stratum ``(no section)``), the source's quota is split across
sections in proportion to their size by largest remainder (ties: larger section,
then section name), and each section is sampled without replacement by a random
generator seeded from ``sha256("<sampling_seed>:<source>")``. Sections are visited
in name order and each section's chunks are offered in bundle order, so a source's
sample depends only on its own chunks, its quota and the seed: editing another
source, or its quota, leaves it unchanged. A source with fewer eligible chunks
than its quota gives all of them and reports the shortfall.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass

import polars as pl

from mama_pipeline.corpus._boilerplate import boilerplate_reason
from mama_pipeline.corpus.settings import CorpusSettings
from mama_pipeline.store.table_schema import table_schema

NO_SECTION = "(no section)"

REPORT_SCHEMA = {
    "source": pl.String,
    "tier": pl.String,
    "quota": pl.Int64,
    "chunks": pl.Int64,
    "rejected": pl.Int64,
    "eligible": pl.Int64,
    "sampled": pl.Int64,
    "shortfall": pl.Int64,
}
REJECTION_SCHEMA = table_schema("sampling_rejections")


@dataclass
class SampleResult:
    sampled: pl.DataFrame  # the chunk columns plus tier, section; ordered by source, bundle order
    rejections: pl.DataFrame  # one row per boilerplate chunk of a tiered source
    report: pl.DataFrame  # one row per tiered source: quota, counts, shortfall


def source_seed(seed: int, source: str) -> int:
    """The random seed of one source's sample."""
    return int(hashlib.sha256(f"{seed}:{source}".encode()).hexdigest()[:16], 16)


def largest_remainder(sizes: dict[str, int], total: int) -> dict[str, int]:
    """Split ``total`` across strata in proportion to ``sizes``, never above a stratum's size."""
    n = sum(sizes.values())
    if total >= n:
        return dict(sizes)
    alloc: dict[str, int] = {}
    remainders: list[tuple[int, int, str]] = []
    for key, size in sizes.items():
        whole, rest = divmod(total * size, n)
        alloc[key] = whole
        remainders.append((-rest, -size, key))
    for _, _, key in sorted(remainders)[: total - sum(alloc.values())]:
        alloc[key] += 1
    return alloc


def section_of(breadcrumb: list[str] | None, level: int) -> str:
    return breadcrumb[level - 1] if breadcrumb and len(breadcrumb) >= level else NO_SECTION


def sample_source(ordinals: list[int], sections: list[str], quota: int, seed: int, source: str) -> list[int]:
    """Sampled ordinals of one source's eligible chunks (given in bundle order)."""
    members: dict[str, list[int]] = {}
    for ordinal, section in zip(ordinals, sections):
        members.setdefault(section, []).append(ordinal)
    alloc = largest_remainder({k: len(v) for k, v in members.items()}, quota)
    rng = random.Random(source_seed(seed, source))
    picked: list[int] = []
    for section in sorted(members):
        picked.extend(rng.sample(members[section], alloc[section]))
    return sorted(picked)


def sample_chunks(chunks: pl.DataFrame, settings: CorpusSettings) -> SampleResult:
    """Reject boilerplate, then draw each tiered source's stratified sample."""
    tier_of = settings.tier_of()
    quota_of = settings.quota_of()
    tiered = chunks.filter(pl.col("source").is_in(list(tier_of))).sort("ordinal")
    crumbs = tiered["breadcrumb"].to_list()
    reasons = [boilerplate_reason(text, crumb, settings.min_body_words) for text, crumb in zip(tiered["text"], crumbs)]
    tiered = tiered.with_columns(
        pl.Series("reason", reasons, dtype=pl.String),
        pl.col("source").replace_strict(tier_of, return_dtype=pl.String).alias("tier"),
        pl.Series("section", [section_of(c, settings.stratify_level) for c in crumbs], dtype=pl.String),
    )
    rejected = tiered.filter(pl.col("reason").is_not_null())
    eligible = tiered.filter(pl.col("reason").is_null()).drop("reason")

    picked: list[int] = []
    report_rows = []
    by_source = {key[0]: df.sort("ordinal") for key, df in eligible.group_by("source")}
    totals = dict(tiered.group_by("source").len().rows())
    n_rejected = dict(rejected.group_by("source").len().rows())
    for source in sorted(tier_of):
        part = by_source.get(source)
        quota = quota_of[source]
        chosen = (
            sample_source(part["ordinal"].to_list(), part["section"].to_list(), quota, settings.sampling_seed, source)
            if part is not None
            else []
        )
        picked.extend(chosen)
        n_eligible = 0 if part is None else part.height
        report_rows.append(
            {
                "source": source,
                "tier": tier_of[source],
                "quota": quota,
                "chunks": totals.get(source, 0),
                "rejected": n_rejected.get(source, 0),
                "eligible": n_eligible,
                "sampled": len(chosen),
                "shortfall": quota - len(chosen),
            }
        )
    sampled = eligible.filter(pl.col("ordinal").is_in(picked)).sort("source", "ordinal")
    rejections = rejected.select(
        "chunk_id",
        "source",
        "tier",
        "page",
        "line",
        "reason",
        pl.col("text").str.slice(0, 160).alias("excerpt"),
        "corpus_version",
    ).sort("source", "line")
    return SampleResult(
        sampled=sampled,
        rejections=rejections.cast(REJECTION_SCHEMA),
        report=pl.DataFrame(report_rows, schema=REPORT_SCHEMA),
    )
