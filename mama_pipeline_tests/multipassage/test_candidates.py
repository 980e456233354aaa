"""Candidate chunk sets: section runs, cross-source neighbours, drop reasons, seeded tier-weighted sampling."""

from __future__ import annotations

import polars as pl
import pytest

from mama_pipeline.multipassage._candidates import candidate_sets, drop_counts, set_id

BODY = (
    "Give oxytocin 10 IU intramuscularly within one minute of birth and check the uterus every fifteen minutes "
    "for the first two hours, massaging it when soft and recording blood loss."
)


def chunks(rows: list[tuple[str, str, list[str], str]]) -> pl.DataFrame:
    """(chunk_id, source, breadcrumb, text) in bundle order."""
    return pl.DataFrame(
        [
            {"chunk_id": c, "source": s, "breadcrumb": b, "text": t, "ordinal": i, "corpus_version": "v1"}
            for i, (c, s, b, t) in enumerate(rows)
        ],
        schema={
            "chunk_id": pl.String,
            "source": pl.String,
            "breadcrumb": pl.List(pl.String),
            "text": pl.String,
            "ordinal": pl.Int64,
            "corpus_version": pl.String,
        },
    )


SEC = ["Chapter 1", "Third stage"]
CORPUS = chunks(
    [
        ("a1", "src-a", SEC, BODY + " one"),
        ("a2", "src-a", SEC, BODY + " two"),
        ("a3", "src-a", SEC, "References"),  # boilerplate (short body)
        ("a4", "src-a", ["Chapter 1", "Fourth stage"], BODY + " four"),
        ("b1", "src-b", ["Ch"], BODY + " b one"),
        ("c1", "src-c", ["Ch"], BODY + " c one"),
    ]
)
NEIGHBOURS = pl.DataFrame(
    [
        ("a1", "b1", 0.9),
        ("a1", "c1", 0.7),
        ("a1", "a2", 0.95),
        ("a2", "b1", 0.4),
        ("a4", "a1", 0.8),
        ("a1", "a3", 0.99),
    ],
    schema={"anchor_chunk_id": pl.String, "chunk_id": pl.String, "score": pl.Float64},
    orient="row",
)


def build(quota: int = 100, seed: int = 1, corpus: pl.DataFrame = CORPUS, tiers=None, neighbours=NEIGHBOURS):
    tier_of = tiers or {"src-a": "high"}
    return candidate_sets(
        corpus,
        tier_of,
        {"high": quota, "low": quota},
        neighbours,
        sizes=[2, 3],
        section_level=2,
        min_similarity=0.5,
        min_body_words=10,
        seed=seed,
    )


def by_chunks(frame: pl.DataFrame) -> dict[tuple[str, ...], dict]:
    """Rows by chunk ids; a dropped row short of partners is keyed with its size too."""
    return {
        tuple(r["chunk_ids"]) + ((r["size"],) if len(r["chunk_ids"]) < r["size"] else ()): r for r in frame.to_dicts()
    }


def test_section_runs_and_boilerplate_drops():
    got = by_chunks(build().filter(pl.col("kind") == "section"))
    assert got[("a1", "a2")]["status"] == "sampled"
    assert got[("a2", "a3")]["drop_reason"] == "boilerplate:heading_references"
    assert got[("a1", "a2", "a3")]["drop_reason"] == "boilerplate:heading_references"
    assert ("a3", "a4") not in got  # a4 is in another section
    assert got[("a1", "a2")]["section"] == "Chapter 1 > Third stage"


def test_cross_source_partners_threshold_and_missing_sources():
    got = by_chunks(build().filter(pl.col("kind") == "cross_source"))
    # a1: best other-source partners b1 (0.9) then c1 (0.7); a2 (same source) and a3 (boilerplate) are skipped
    assert got[("a1", "b1")]["status"] == "sampled" and got[("a1", "b1")]["min_similarity"] == 0.9
    assert got[("a1", "b1", "c1")]["sources"] == ["src-a", "src-b", "src-c"]
    assert got[("a1", "b1", "c1")]["min_similarity"] == 0.7
    assert got[("a2", "b1")]["drop_reason"] == "below_similarity"
    assert got[("a2", "b1", 3)]["drop_reason"] == "no_other_source"  # only one other source near a2
    assert got[("a4", 2)]["drop_reason"] == "no_other_source"  # only a same-source neighbour
    assert [k for k in got if k[0] == "b1"] == []  # src-b is not tiered: no anchors there


def test_duplicate_sets_are_dropped_once_and_counted():
    neighbours = pl.concat([NEIGHBOURS, pl.DataFrame({"anchor_chunk_id": ["b1"], "chunk_id": ["a1"], "score": [0.9]})])
    frame = candidate_sets(
        CORPUS,
        {"src-a": "high", "src-b": "high"},
        {"high": 100},
        neighbours,
        sizes=[2],
        section_level=2,
        min_similarity=0.5,
        min_body_words=10,
        seed=1,
    )
    same = frame.filter(pl.col("set_id") == set_id(["b1", "a1"]))
    assert sorted(same["status"].to_list()) == ["dropped", "sampled"]
    assert same.filter(pl.col("status") == "dropped")["drop_reason"].to_list() == ["duplicate_set"]
    counts = drop_counts(frame)
    assert counts["duplicate_set"] == 1 and counts["boilerplate"] == 1 and set(counts) >= {"below_similarity"}


def test_quota_sampling_is_seeded_and_per_source():
    many = chunks(
        [(f"a{i}", "src-a", SEC, f"{BODY} {i}") for i in range(12)]
        + [(f"z{i}", "src-z", SEC, f"{BODY} z{i}") for i in range(12)]
    )
    tiers = {"src-a": "high", "src-z": "low"}
    near = pl.DataFrame(
        {"anchor_chunk_id": [f"a{i}" for i in range(12)], "chunk_id": [f"z{i}" for i in range(12)], "score": [0.8] * 12}
    )

    def build(**kw):
        return globals()["build"](
            neighbours=near.filter(pl.col("chunk_id").is_in(kw["corpus"]["chunk_id"].to_list())), **kw
        )

    first = build(quota=3, seed=7, corpus=many, tiers=tiers)
    again = build(quota=3, seed=7, corpus=many, tiers=tiers)
    assert first.equals(again)
    sampled = first.filter(pl.col("status") == "sampled")
    assert sampled.group_by("source").len().sort("source")["len"].to_list() == [3, 3]
    assert (
        build(quota=3, seed=8, corpus=many, tiers=tiers).filter(pl.col("status") == "sampled")["set_id"].to_list()
        != sampled["set_id"].to_list()
    )
    # a source's draw depends only on its own candidates: untiering src-z leaves src-a's sample unchanged
    alone = build(quota=3, seed=7, corpus=many, tiers={"src-a": "high"})
    assert (
        alone.filter(pl.col("status") == "sampled")["set_id"].to_list()
        == sampled.filter(pl.col("source") == "src-a")["set_id"].to_list()
    )


def test_set_id_is_order_free_and_content_derived():
    assert set_id(["x", "y"]) == set_id(["y", "x"]) != set_id(["x", "z"])
    assert set_id(["x", "y"]).startswith("ms_") and len(set_id(["x", "y"])) == 19


def test_unknown_neighbour_chunk_is_named():
    bad = pl.DataFrame({"anchor_chunk_id": ["a1"], "chunk_id": ["nowhere"], "score": [0.9]})
    with pytest.raises(ValueError, match="nowhere"):
        build(neighbours=bad)


def test_a_tier_given_no_sets_anchors_none_and_no_sets_means_no_candidates():
    tiers = {"src-a": "high", "src-b": "low"}
    neighbours = pl.concat([NEIGHBOURS, pl.DataFrame({"anchor_chunk_id": ["b1"], "chunk_id": ["c1"], "score": [0.9]})])

    def frame(sets_per_tier: dict[str, int]) -> pl.DataFrame:
        return candidate_sets(
            CORPUS,
            tiers,
            sets_per_tier,
            neighbours,
            sizes=[2, 3],
            section_level=2,
            min_similarity=0.5,
            min_body_words=10,
            seed=1,
        )

    both = frame({"high": 100, "low": 100})
    assert sorted(both["source"].unique().to_list()) == ["src-a", "src-b"]  # b1 anchors (b1, c1)
    high_only = frame({"high": 100, "low": 0})
    assert high_only["source"].unique().to_list() == ["src-a"]
    assert high_only.equals(both.filter(pl.col("source") == "src-a"))
    assert frame({"high": 100}).equals(high_only)  # a tier left out gives no sets either
    assert frame({}).is_empty() and frame({"high": 0, "low": 0}).is_empty()
