"""Paired comparisons between systems, from per-item scores (``evaluation.significance``).

Per track, every two systems that answered it are compared on the items scored
for both (the same per-item values as the scoreboard's ``mean``: invalid answers
0, unanswered items left out, or 0 under ``answer_failures: score_zero``; rubric
example scores not clipped): the BCa paired bootstrap interval of the mean
difference, the paired randomization test and, on mcq only (correctness is 0/1
by definition), the exact McNemar test. A RAG system is also compared with its
closed-book ``baseline`` within each scope category (the closed-book vs RAG
deltas). Holm's correction runs across the comparisons of one (track, segment)
family, per test. A pair with fewer than two items scored for both is not tested
(and not listed); nor is a pair with a (system, track) refused over a failure bound.
"""

from __future__ import annotations

import itertools
from collections.abc import Collection

import polars as pl

from mama_pipeline.evaluation import holm, pairwise_significance
from mama_pipeline.store.table_schema import table_schema

COMPARISON_SCHEMA = table_schema("system_comparisons")
MIN_ITEMS = 2  # a paired test needs at least two items scored for both systems
MEASURE_OF_TRACK = {"mcq": "correct", "short_answer": "grade", "rubric": "example score"}
BINARY_MEASURES = {"correct"}  # exact McNemar: mcq correctness only


def _compare(
    grades: pl.DataFrame, track: str, a: str, b: str, n_resamples: int, seed: int, confidence: float
) -> pl.DataFrame | None:
    scored = grades.filter((pl.col("track") == track) & pl.col("score").is_not_null() & pl.col("system").is_in([a, b]))
    common = scored.group_by("item_id").len().filter(pl.col("len") == 2).select("item_id")
    if common.height < MIN_ITEMS:
        return None
    per_query = scored.join(common, on="item_id").select(
        pl.lit(MEASURE_OF_TRACK[track]).alias("measure"),
        pl.col("system").alias("retriever"),
        pl.col("item_id").alias("query_id"),
        pl.col("score").alias("value"),
    )
    return pairwise_significance(
        per_query,
        [MEASURE_OF_TRACK[track]],
        [a, b],
        n_resamples=n_resamples,
        seed=seed,
        confidence=confidence,
        binary_measures=BINARY_MEASURES,
    )


def compare_systems(
    grades: pl.DataFrame,
    baselines: dict[str, str],
    n_resamples: int,
    seed: int,
    confidence: float,
    refused: Collection[tuple[str, str]] = (),
) -> pl.DataFrame:
    """Every pair per track (segment ALL) and each RAG system against its baseline per category, leaving
    out the ``refused`` (system, track)s."""
    blocks = []
    for track in sorted(grades["track"].unique().to_list()):
        systems = sorted(
            s for s in grades.filter(pl.col("track") == track)["system"].unique().to_list() if (s, track) not in refused
        )
        for a, b in itertools.combinations(systems, 2):
            kind = "rag_vs_baseline" if baselines.get(a) == b or baselines.get(b) == a else "systems"
            # the RAG system first, so a positive difference is what retrieval adds
            first, second = (b, a) if baselines.get(b) == a else (a, b)
            segments = [("ALL", grades)]
            if kind == "rag_vs_baseline":
                segments += [
                    (c, grades.filter(pl.col("category") == c)) for c in sorted(grades["category"].unique().to_list())
                ]
            for segment, part in segments:
                out = _compare(part, track, first, second, n_resamples, seed, confidence)
                if out is not None:
                    blocks.append(
                        out.rename({"retriever_a": "system_a", "retriever_b": "system_b"}).with_columns(
                            pl.lit(track).alias("track"),
                            pl.lit(segment).alias("segment"),
                            pl.lit(kind).alias("comparison"),
                        )
                    )
    if not blocks:
        return pl.DataFrame(schema=COMPARISON_SCHEMA)
    table = pl.concat(blocks).select(list(COMPARISON_SCHEMA))
    return _holm_by_family(table)


def _holm_by_family(table: pl.DataFrame) -> pl.DataFrame:
    parts = []
    for _, family in sorted(table.group_by("track", "segment", maintain_order=True), key=lambda kv: kv[0]):
        for test in ("randomization", "mcnemar"):
            adjusted = holm(family[f"p_{test}"].to_list())
            family = family.with_columns(pl.Series(f"p_{test}_holm", adjusted, dtype=pl.Float64))
        parts.append(family)
    return pl.concat(parts).sort("track", "segment", "system_a", "system_b")
