"""Boilerplate rejection, largest-remainder allocation and per-source seeded sampling."""

from __future__ import annotations

import polars as pl
import pytest

from mama_pipeline.corpus._boilerplate import boilerplate_reason, normalise_heading
from mama_pipeline.corpus._bundle import CHUNK_SCHEMA
from mama_pipeline.corpus._hashing import chunk_id
from mama_pipeline.corpus._sampling import NO_SECTION, largest_remainder, sample_chunks, source_seed
from mama_pipeline.corpus.settings import CorpusSettings

CLINICAL = (
    "Give oxytocin 10 IU by intramuscular injection within one minute of the birth, then check the uterus "
    "every fifteen minutes for the first two hours and massage it whenever it feels soft to the hand."
)


@pytest.mark.parametrize(
    ("text", "crumb", "reason"),
    [
        ("© 2015 Press. All rights reserved. " + CLINICAL, [], "front_matter"),
        ("ISBN 978-92-4-154933-3\n" + CLINICAL, ["Title page"], "front_matter"),
        (CLINICAL, ["Front matter", "Acknowledgements"], "front_matter"),
        (CLINICAL, ["Chapter 4", "References"], "heading_references"),
        ("## Further reading\n" + CLINICAL, ["Chapter 4"], "heading_references"),
        (CLINICAL, ["Table of Contents"], "heading_contents"),
        (CLINICAL, ["Unit 3", "3.1 Learning objectives:"], "heading_objectives"),
        (CLINICAL, ["FOREWORD"], "heading_foreword"),
        ("| Date | BP | Pulse |\n|---|---|---|\n| | | |\n| ___ | | |\n| | | |", ["Chapter 2"], "empty_form_table"),
        ("Name: ________\nDate: ________\nSignature: ________", ["Annex"], "empty_form_table"),
        ("Figure 3. See the next page.", ["Chapter 2", "Positions"], "short_body"),
    ],
)
def test_boilerplate_reasons(text, crumb, reason):
    assert boilerplate_reason(text, crumb, min_words=25) == reason


@pytest.mark.parametrize(
    ("text", "crumb"),
    [
        (CLINICAL, ["Chapter 3: Bleeding after birth", "Active management"]),
        (CLINICAL, ["Contents of the delivery kit"]),  # not a contents heading
        (CLINICAL, ["Objectives of postnatal care visits in the community"]),
        (
            "Dose table:\n| Drug | Dose |\n|---|---|\n| Oxytocin | 10 IU IM |\n| Misoprostol | 800 mcg |\n"
            "| Tranexamic acid | 1 g IV over 10 minutes |",
            ["Chapter 3"],
        ),
    ],
)
def test_clinical_chunks_pass(text, crumb):
    assert boilerplate_reason(text, crumb, min_words=10) is None


def test_heading_normalisation():
    assert normalise_heading("## 2.3 References:") == "references"
    assert normalise_heading("> Chapter 4. Learning Objectives") == "learning objectives"
    assert normalise_heading("IV. Foreword") == "foreword"


def test_largest_remainder():
    assert largest_remainder({"a": 50, "b": 30, "c": 20}, 10) == {"a": 5, "b": 3, "c": 2}
    # exact shares 3.89 / 2.33 / 0.78: floors 3+2+0, the two largest remainders (a, c) get the rest
    got = largest_remainder({"a": 5, "b": 3, "c": 1}, 7)
    assert got == {"a": 4, "b": 2, "c": 1} and sum(got.values()) == 7
    assert largest_remainder({"a": 2, "b": 2}, 10) == {"a": 2, "b": 2}  # never above the stratum
    assert largest_remainder({"x": 1, "y": 1, "z": 1}, 2) == {"x": 1, "y": 1, "z": 0}  # ties by name
    assert largest_remainder({"big": 3, "small": 1}, 2) == {"big": 2, "small": 0}


def corpus(spec: dict[str, dict[str, int]], boilerplate_per_source: int = 0) -> pl.DataFrame:
    """Synthetic chunks: {source: {section: n}} plus some short-body chunks per source."""
    rows = []
    for source, sections in spec.items():
        for section, n in sections.items():
            for i in range(n):
                text = f"{CLINICAL} [{source} {section} {i}]"
                rows.append((source, [section, "sub"], text))
        for i in range(boilerplate_per_source):
            rows.append((source, ["Annex"], f"Figure {i}."))
    return pl.DataFrame(
        [
            {
                "chunk_id": chunk_id(t),
                "source": s,
                "page": k,
                "breadcrumb": b,
                "text": t,
                "given_cid": None,
                "line": k * 5 + 1,
                "ordinal": k,
            }
            for k, (s, b, t) in enumerate(rows)
        ],
        schema=CHUNK_SCHEMA,
    ).with_columns(pl.lit("v1").alias("corpus_version"))


def settings(quotas: dict[str, int], seed: int = 7, tiers: dict[str, str] | None = None) -> CorpusSettings:
    tiers = tiers or {s: "t" for s in quotas}
    by_tier: dict[str, dict] = {}
    for source, q in quotas.items():
        name = f"{tiers[source]}_{source}"  # one tier per source, so quotas can differ
        by_tier[name] = {"quota": q, "sources": [source]}
    return CorpusSettings(tiers=by_tier, sampling_seed=seed, min_body_words=10)


CORPUS = {"a": {"S1": 30, "S2": 15, "S3": 5}, "b": {"T1": 40, "T2": 40}, "c": {"U1": 6}}


def test_stratified_allocation_and_rejections():
    df = corpus(CORPUS, boilerplate_per_source=2)
    result = sample_chunks(df, settings({"a": 10, "b": 8, "c": 4}))
    counts = dict(result.sampled.group_by("section").len().rows())
    assert counts == {"S1": 6, "S2": 3, "S3": 1, "T1": 4, "T2": 4, "U1": 4}
    assert result.rejections.height == 6
    assert set(result.rejections.get_column("reason")) == {"short_body"}
    assert result.sampled.get_column("chunk_id").is_unique().all()
    assert result.sampled.filter(pl.col("text").str.starts_with("Figure")).is_empty()


def test_untiered_sources_are_never_sampled():
    df = corpus(CORPUS)
    result = sample_chunks(df, settings({"a": 5}))
    assert set(result.sampled.get_column("source")) == {"a"}
    assert result.report.get_column("source").to_list() == ["a"]


def test_sampling_is_deterministic_and_independent_of_bundle_order():
    df = corpus(CORPUS)
    s = settings({"a": 10, "b": 8, "c": 4})
    first = sample_chunks(df, s).sampled
    again = sample_chunks(df, s).sampled
    assert first.equals(again)
    other_seed = sample_chunks(df, settings({"a": 10, "b": 8, "c": 4}, seed=8)).sampled
    assert set(first.get_column("chunk_id")) != set(other_seed.get_column("chunk_id"))


def test_editing_one_source_leaves_the_others_unchanged():
    df = corpus(CORPUS)
    base = sample_chunks(df, settings({"a": 10, "b": 8, "c": 4})).sampled
    # another quota for a, and source c removed from the tiers
    edited = sample_chunks(df, settings({"a": 3, "b": 8})).sampled
    b_only = lambda d: d.filter(pl.col("source") == "b").get_column("chunk_id").to_list()  # noqa: E731
    assert b_only(base) == b_only(edited)
    # more chunks appended to source a, and a new source, leave b's sample alone as well
    grown = corpus({**CORPUS, "a": {**CORPUS["a"], "S4": 12}, "d": {"V": 9}})
    grown_sample = sample_chunks(grown, settings({"a": 10, "b": 8, "c": 4, "d": 3})).sampled
    assert b_only(grown_sample) == b_only(base)
    assert source_seed(7, "b") != source_seed(7, "a")


def test_editing_one_chunk_text_keeps_the_sampled_positions():
    df = corpus(CORPUS)
    s = settings({"a": 10, "b": 8, "c": 4})
    base = sample_chunks(df, s).sampled
    target = base.row(0, named=True)
    new_text = target["text"] + " Edited."
    edited = df.with_columns(
        pl.when(pl.col("chunk_id") == target["chunk_id"])
        .then(pl.lit(new_text))
        .otherwise(pl.col("text"))
        .alias("text"),
        pl.when(pl.col("chunk_id") == target["chunk_id"])
        .then(pl.lit(chunk_id(new_text)))
        .otherwise(pl.col("chunk_id"))
        .alias("chunk_id"),
    )
    after = sample_chunks(edited, s).sampled
    assert after.get_column("ordinal").to_list() == base.get_column("ordinal").to_list()
    changed = set(after.get_column("chunk_id")) ^ set(base.get_column("chunk_id"))
    assert changed == {target["chunk_id"], chunk_id(new_text)}


def test_shortfalls_are_reported_per_source():
    df = corpus({"a": {"S": 4}, "b": {"T": 20}}, boilerplate_per_source=3)
    s = CorpusSettings(
        tiers={"high": {"quota": 6, "sources": ["a", "b", "missing-source"]}}, sampling_seed=1, min_body_words=10
    )
    report = sample_chunks(df, s).report
    assert report.select("source", "chunks", "rejected", "eligible", "sampled", "shortfall").rows() == [
        ("a", 7, 3, 4, 4, 2),
        ("b", 23, 3, 20, 6, 0),
        ("missing-source", 0, 0, 0, 0, 6),
    ]


def test_chunks_without_breadcrumb_form_one_stratum():
    df = corpus({"a": {"S": 6}}).with_columns(pl.lit([], dtype=pl.List(pl.String)).alias("breadcrumb"))
    result = sample_chunks(df, settings({"a": 3}))
    assert result.sampled.get_column("section").unique().to_list() == [NO_SECTION]
    assert result.sampled.height == 3


def test_a_source_in_two_tiers_is_a_config_error():
    with pytest.raises(ValueError, match="listed in tiers 'x' and 'y'"):
        CorpusSettings(tiers={"x": {"quota": 1, "sources": ["a"]}, "y": {"quota": 2, "sources": ["a"]}})
