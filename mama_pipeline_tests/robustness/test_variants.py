"""Deterministic variants: seeded noise, the shorthand table, stable ids, identical variants dropped."""

from __future__ import annotations

import random

import polars as pl
import pytest

from mama_pipeline.robustness._abbreviations import BUNDLED_TABLE, AbbreviationTableError, load_table
from mama_pipeline.robustness._noise import add_noise, variant_seed
from mama_pipeline.robustness._variants import (
    decisions_frame,
    deterministic_decisions,
    kept_variants,
    rewrite_selection,
)
from mama_pipeline.robustness.settings import KindSettings, NoiseRates, RobustnessSettings

QUERIES = pl.DataFrame(
    {
        "query_id": [f"q_{i:05d}" for i in range(1, 7)],
        "query_text": [
            "What is the loading dose of magnesium sulfate for severe pre-eclampsia?",
            "How is postpartum haemorrhage managed with intravenous oxytocin?",
            "When should a pregnant patient with high blood pressure be referred?",
            "How often is the fetal heart rate checked in active labour?",
            "Ok?",
            "Which antibiotics treat premature rupture of membranes for 24 hours?",
        ],
        "tier": ["very_high", "high", "high", "moderate", "low_moderate", "very_high"],
        "source": ["a", "b", "b", "c", "d", "a"],
    }
)
KINDS = [
    KindSettings(name="typo", steps=["noise"]),
    KindSettings(name="shorthand", steps=["shorthand"]),
    KindSettings(name="hurried", steps=["shorthand", "noise"]),
]


def build(settings: RobustnessSettings, table) -> pl.DataFrame:
    rows = [r for k in KINDS for r in deterministic_decisions(QUERIES, k, table, settings)]
    return decisions_frame(rows)


def test_noise_is_seeded_byte_for_byte_and_leaves_global_random_alone():
    text = QUERIES["query_text"][0]
    rates = NoiseRates(nearby_char=0.05, missing_char=0.05, repeated_char=0.05, char_swap=0.05)
    random.seed(123)
    expected_next = random.random()
    random.seed(123)
    first = add_noise(text, rates, 7)
    assert random.random() == expected_next  # the library's reseeding did not leak out
    assert add_noise(text, rates, 7) == first
    assert first[0] != text and sum(first[1].values()) > 0
    others = {add_noise(text, rates, s)[0] for s in range(8)}
    assert len(others) > 4  # the seed matters
    assert variant_seed(1, "q_00001", "typo") != variant_seed(1, "q_00001", "hurried")


def test_noise_rates_are_the_stated_expectation():
    text = "a" * 20_000
    rates = NoiseRates(nearby_char=0.01, missing_char=0.02, repeated_char=0.0, char_swap=0.0)
    noisy, counts = add_noise(text, rates, 3)
    assert counts["repeated_char"] == counts["char_swap"] == 0
    assert 150 < counts["nearby_char"] < 250 and 320 < counts["missing_char"] < 480
    assert len(noisy) == len(text) - counts["missing_char"]
    zero = NoiseRates(nearby_char=0, missing_char=0, repeated_char=0, char_swap=0)
    assert add_noise(QUERIES["query_text"][0], zero, 3)[0] == QUERIES["query_text"][0]


def test_same_seed_same_variants_and_identical_ones_are_counted_not_kept():
    settings = RobustnessSettings()
    table = load_table()
    first, second = build(settings, table), build(settings, table)
    assert first.equals(second)
    assert first.get_column("variant_id").to_list()[:3] == ["q_00001~hurried", "q_00001~shorthand", "q_00001~typo"]
    shorthand = dict(first.filter(pl.col("kind") == "shorthand").select("parent_id", "variant_text").iter_rows())
    assert shorthand["q_00002"] == "How is PPH managed with IV oxytocin?"
    assert shorthand["q_00006"] == "Which antibiotics treat PROM for 24 hrs?"
    status = dict(first.filter(pl.col("kind") == "shorthand").select("parent_id", "status").iter_rows())
    assert status["q_00005"] == "identical_to_parent"  # no long form in "Ok?"
    variants = kept_variants(first, QUERIES)
    assert "q_00005~shorthand" not in variants["variant_id"].to_list()
    assert (variants["query_text"] != variants["parent_text"]).all()
    assert set(variants.filter(pl.col("kind") == "typo")["seed"].to_list()) == {
        variant_seed(settings.seed, p, "typo") for p in variants.filter(pl.col("kind") == "typo")["parent_id"]
    }
    reseeded = build(RobustnessSettings(seed=settings.seed + 1), table)
    assert not reseeded.filter(pl.col("kind") == "typo")["variant_text"].equals(
        first.filter(pl.col("kind") == "typo")["variant_text"]
    )


def test_editing_the_table_changes_only_the_variants_it_touches(tmp_path):
    edited = tmp_path / "abbreviations.tsv"
    edited.write_text(BUNDLED_TABLE.read_text().replace("blood pressure\tBP", "blood pressure\tB/P"))
    settings = RobustnessSettings()
    before, after = build(settings, load_table()), build(settings, load_table(edited))
    changed = before.join(after, on="variant_id").filter(pl.col("variant_text") != pl.col("variant_text_right"))
    assert sorted(changed["variant_id"].to_list()) == ["q_00003~hurried", "q_00003~shorthand"]
    assert "B/P" in changed.filter(pl.col("kind") == "shorthand")["variant_text_right"][0]


@pytest.mark.parametrize(
    "body, message",
    [
        (
            "long_form\tshort_form\nblood pressure\tBP\nBlood Pressure\tB/P\n",
            ":3: long form 'Blood Pressure' already given on line 2",
        ),
        ("long_form\tshort_form\nhours\n", ":2: expected 2 tab-separated fields, found 1"),
        ("long_form\tshort_form\nhours\t \n", ":2: empty long or short form"),
        ("long_form\tshort_form\nIV\tiv\n", ":2: short form 'iv' equals its long form"),
        ("hours\thrs\n", ":1: expected the header"),
    ],
)
def test_a_bad_table_line_is_named(tmp_path, body, message):
    path = tmp_path / "t.tsv"
    path.write_text(body)
    with pytest.raises(AbbreviationTableError) as err:
        load_table(path)
    assert str(err.value).startswith(str(path)) and message in str(err.value)


def test_rewrite_selection_is_seeded_per_query_and_stable_when_queries_are_added():
    some = rewrite_selection(QUERIES.head(5), 2, 9)
    assert some.height == 2 and some.equals(rewrite_selection(QUERIES.head(5), 2, 9))
    for n in range(1, 6):  # adding q_00006 either takes a place or leaves the others' choice alone
        with_more = set(rewrite_selection(QUERIES, n, 9)["query_id"].to_list())
        alone = set(rewrite_selection(QUERIES.head(5), n, 9)["query_id"].to_list())
        assert with_more == alone or (with_more - alone == {"q_00006"} and len(alone - with_more) == 1)
    assert rewrite_selection(QUERIES, None, 9).height == 6
