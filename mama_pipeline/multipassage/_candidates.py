"""Candidate chunk sets: section neighbours and cross-source dense neighbours, seeded and tier-weighted.

Sets are anchored only in the sources the sample draws from: a source of a tier with a positive
``sets_per_source`` (:func:`sampling_sources`). A tier given no sets anchors none, so with no sets configured
the table is empty and no chunk is embedded; a partner of a cross-source set may come from any source.
Every chunk is first checked against the corpus boilerplate rules. Two kinds of set:

- ``section``: a run of ``n`` consecutive chunks (bundle order) of one source whose
  breadcrumbs agree on the first ``section_level`` levels. A run holding a
  boilerplate chunk is dropped (``boilerplate``).
- ``cross_source``: an eligible anchor chunk of a tiered source with its nearest
  chunks under a dense retriever, one per other source, best first. The set is
  dropped when fewer than ``n - 1`` other sources appear among the anchor's
  neighbours (``no_other_source``) or when a partner's cosine to the anchor is
  below ``min_similarity`` (``below_similarity``).

A set is identified by its chunks: ``set_id = "ms_" + sha256(sorted chunk ids)[:16]``.
A set found twice (both kinds, or from two anchors) is kept once, the first in
(kind, source, anchor ordinal) order; the others are dropped as ``duplicate_set``.
Kept sets are sampled per tiered source (the anchor's; a section set's anchor is
its first chunk): ``sets_per_source[tier]`` sets, split across the (kind, size)
strata in proportion to their size by largest remainder, each stratum drawn by a
generator seeded from ``sha256("<seed>:<source>")`` (as the single-chunk sample
does), so one source's draw depends only on its own candidates.
"""

from __future__ import annotations

import hashlib

import polars as pl

from mama_pipeline.corpus import boilerplate_reason, sample_source
from mama_pipeline.store.table_schema import table_schema

KINDS = ("section", "cross_source")
DROP_REASONS = ("boilerplate", "no_other_source", "below_similarity", "duplicate_set")
CANDIDATE_SCHEMA = table_schema("multipassage_candidates")


def sampling_sources(tier_of: dict[str, str], sets_per_tier: dict[str, int]) -> dict[str, str]:
    """The tiered sources (source -> tier) whose tier has a positive ``sets_per_source``: the sources that anchor
    candidate sets."""
    return {source: tier for source, tier in tier_of.items() if sets_per_tier.get(tier, 0) > 0}


def set_id(chunk_ids: list[str]) -> str:
    """Content-derived id of a chunk set (order-free)."""
    return "ms_" + hashlib.sha256("|".join(sorted(chunk_ids)).encode()).hexdigest()[:16]


def _section_key(breadcrumb: list[str] | None, level: int) -> str | None:
    return " > ".join(breadcrumb[:level]) if breadcrumb and len(breadcrumb) >= level else None


def _row(kind, size, chunk_ids, anchor, tier, sources, section, sim, reason, version) -> dict:
    return {
        "set_id": set_id(chunk_ids),
        "kind": kind,
        "size": size,
        "chunk_ids": chunk_ids,
        "anchor_chunk_id": anchor["chunk_id"],
        "source": anchor["source"],
        "tier": tier,
        "sources": sources,
        "section": section,
        "min_similarity": sim,
        "status": "dropped" if reason else "candidate",
        "drop_reason": reason,
        "corpus_version": version,
        "_ordinal": anchor["ordinal"],
    }


def section_sets(chunks: list[dict], tier_of: dict[str, str], sizes: list[int], level: int) -> list[dict]:
    """Runs of consecutive chunks sharing a section, per tiered source (chunks carry ``reason``)."""
    rows = []
    by_section: dict[tuple[str, str], list[dict]] = {}
    for c in chunks:
        key = _section_key(c["breadcrumb"], level)
        if c["source"] in tier_of and key is not None:
            by_section.setdefault((c["source"], key), []).append(c)
    for (source, section), members in sorted(by_section.items()):
        members.sort(key=lambda c: c["ordinal"])
        for n in sizes:
            for start in range(len(members) - n + 1):
                run = members[start : start + n]
                bad = next((c["reason"] for c in run if c["reason"]), None)
                rows.append(
                    _row(
                        "section",
                        n,
                        [c["chunk_id"] for c in run],
                        run[0],
                        tier_of[source],
                        [source] * n,
                        section,
                        None,
                        f"boilerplate:{bad}" if bad else None,
                        run[0]["corpus_version"],
                    )
                )
    return rows


def cross_source_sets(
    chunks: list[dict], tier_of: dict[str, str], sizes: list[int], neighbours: pl.DataFrame, min_similarity: float
) -> list[dict]:
    """Each eligible tiered anchor with its best partner from each of n - 1 other sources.

    ``neighbours`` (anchor_chunk_id, chunk_id, score): the dense retriever's nearest
    eligible chunks of each anchor, with cosine scores.
    """
    by_id = {c["chunk_id"]: c for c in chunks}
    best: dict[str, list[tuple[float, str]]] = {}
    for anchor_id, chunk_id, score in neighbours.sort(
        ["anchor_chunk_id", "score", "chunk_id"], descending=[False, True, False]
    ).iter_rows():
        if chunk_id not in by_id:
            raise ValueError(f"dense neighbours of {anchor_id} name chunk {chunk_id}, which is not in the chunks table")
        best.setdefault(anchor_id, []).append((score, chunk_id))
    rows = []
    for anchor in sorted(chunks, key=lambda c: c["ordinal"]):
        if anchor["source"] not in tier_of or anchor["reason"]:
            continue
        partners: list[tuple[float, dict]] = []
        seen_sources = {anchor["source"]}
        for score, cid in best.get(anchor["chunk_id"], []):
            other = by_id[cid]
            if other["source"] not in seen_sources and not other["reason"]:
                seen_sources.add(other["source"])
                partners.append((score, other))
        for n in sizes:
            chosen = partners[: n - 1]
            members = [anchor] + [c for _, c in chosen]
            sim = min((s for s, _ in chosen), default=None)
            if len(chosen) < n - 1:
                reason = "no_other_source"
            elif sim < min_similarity:
                reason = "below_similarity"
            else:
                reason = None
            rows.append(
                _row(
                    "cross_source",
                    n,
                    [c["chunk_id"] for c in members],
                    anchor,
                    tier_of[anchor["source"]],
                    [c["source"] for c in members],
                    None,
                    None if sim is None else float(sim),
                    reason,
                    anchor["corpus_version"],
                )
            )
    return rows


def _mark_duplicates(rows: list[dict]) -> None:
    seen: set[str] = set()
    order = sorted(
        range(len(rows)),
        key=lambda i: (KINDS.index(rows[i]["kind"]), rows[i]["source"], rows[i]["_ordinal"], rows[i]["size"]),
    )
    for i in order:
        r = rows[i]
        if r["status"] != "candidate":
            continue
        if r["set_id"] in seen:
            r["status"], r["drop_reason"] = "dropped", "duplicate_set"
        else:
            seen.add(r["set_id"])


def _sample(rows: list[dict], quota_of: dict[str, int], seed: int) -> None:
    by_source: dict[str, list[int]] = {}
    for i, r in enumerate(rows):
        if r["status"] == "candidate":
            by_source.setdefault(r["source"], []).append(i)
    for source, members in by_source.items():
        strata = [f"{rows[i]['kind']}/{rows[i]['size']}" for i in members]
        picked = set(sample_source(members, strata, quota_of.get(source, 0), seed, source))
        for i in members:
            rows[i]["status"] = "sampled" if i in picked else "not_sampled"


def candidate_sets(
    chunks: pl.DataFrame,
    tier_of: dict[str, str],
    sets_per_tier: dict[str, int],
    neighbours: pl.DataFrame,
    *,
    sizes: list[int],
    section_level: int,
    min_similarity: float,
    min_body_words: int,
    seed: int,
) -> pl.DataFrame:
    """Every candidate set of the sampling sources (:func:`sampling_sources`) with its status (sampled, not_sampled,
    dropped) and drop reason."""
    tier_of = sampling_sources(tier_of, sets_per_tier)
    if not tier_of:
        return pl.DataFrame(schema=CANDIDATE_SCHEMA)
    reasons = [
        boilerplate_reason(t, b, min_body_words)
        for t, b in zip(chunks["text"].to_list(), chunks["breadcrumb"].to_list())
    ]
    records = (
        chunks.select("chunk_id", "source", "breadcrumb", "ordinal", "corpus_version")
        .with_columns(pl.Series("reason", reasons, dtype=pl.String))
        .to_dicts()
    )
    rows = section_sets(records, tier_of, sizes, section_level) + cross_source_sets(
        records, tier_of, sizes, neighbours, min_similarity
    )
    _mark_duplicates(rows)
    quota_of = {source: sets_per_tier[tier] for source, tier in tier_of.items()}
    _sample(rows, quota_of, seed)
    frame = pl.DataFrame(rows, schema={**CANDIDATE_SCHEMA, "_ordinal": pl.Int64})
    return frame.sort("source", "kind", "_ordinal", "size", "set_id").drop("_ordinal")


def drop_counts(candidates: pl.DataFrame) -> dict[str, int]:
    """Dropped candidates per reason (boilerplate reasons folded into ``boilerplate``), every reason present."""
    dropped = candidates.filter(pl.col("status") == "dropped").get_column("drop_reason").str.split(":").list.first()
    counts = dict(dropped.value_counts().iter_rows())
    return {r: int(counts.get(r, 0)) for r in DROP_REASONS}
