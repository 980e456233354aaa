"""The query rules: every sampled chunk gets exactly one counted status."""

from __future__ import annotations

import polars as pl
import pytest

from mama_pipeline.llm.client import LLMResult
from mama_pipeline.queries._rules import gate_decisions, keep_rates, normalise_query, status_counts


def sampled(ids: list[str], tiers: list[str] | None = None) -> pl.DataFrame:
    tiers = tiers or ["high"] * len(ids)
    return pl.DataFrame(
        {
            "chunk_id": ids,
            "source": [f"src-{t}" for t in tiers],
            "tier": tiers,
            "corpus_version": ["v1"] * len(ids),
        }
    )


def ok(item: str, query: str | None, reason: str = "r") -> LLMResult:
    return LLMResult(item, "k" + item, "ok", value={"query": query, "reason": reason})


def decide(df: pl.DataFrame, results: list[LLMResult], max_words: int = 20) -> pl.DataFrame:
    return gate_decisions(df, results, max_words=max_words, model="m", prompt_hash="h", temperature=0.0)


def test_each_rule_gives_its_status():
    ids = [f"{i:016x}" for i in range(8)]
    results = [
        ok(ids[0], "What dose of oxytocin prevents postpartum haemorrhage?"),
        ok(ids[1], None, "table of contents"),
        ok(ids[2], "   "),
        ok(ids[3], " ".join(["word"] * 21)),
        ok(ids[4], "what dose of OXYTOCIN prevents postpartum haemorrhage"),  # duplicate of ids[0]
        LLMResult(ids[5], "k5", "parse_failed", raw_text="{oops", error="answer is not JSON"),
        LLMResult(ids[6], "k6", "transport_failed", error="HTTP 500"),
        ok(ids[7], " ".join(["word"] * 20)),  # exactly at the limit: kept
    ]
    d = decide(sampled(ids), results)
    assert d.get_column("status").to_list() == [
        "kept",
        "not_answerable",
        "empty_query",
        "too_long",
        "duplicate_query",
        "llm_failed",
        "llm_failed",
        "kept",
    ]
    assert d.filter(pl.col("status") == "llm_failed").get_column("error").to_list() == [
        "answer is not JSON",
        "HTTP 500",
    ]
    assert d.filter(pl.col("status") == "llm_failed").get_column("query_text").null_count() == 2
    assert status_counts(d) == {
        "kept": 2,
        "not_answerable": 1,
        "empty_query": 1,
        "too_long": 1,
        "duplicate_query": 1,
        "llm_failed": 2,
    }
    assert d.get_column("words").to_list()[3] == 21


def test_duplicates_keep_the_smallest_seed_whatever_the_answer_order():
    ids = ["ffff000000000000", "0000aaaa00000000", "7777000000000000"]
    results = [ok(ids[0], "How is mastitis treated?"), ok(ids[1], "how is mastitis treated"), ok(ids[2], "Other?")]
    d = decide(sampled(ids), results)
    status = dict(d.select("seed_chunk_id", "status").rows())
    assert status == {ids[1]: "kept", ids[0]: "duplicate_query", ids[2]: "kept"}
    assert d.get_column("seed_chunk_id").to_list() == sorted(ids)


def test_word_limit_is_a_setting():
    ids = ["a" * 16]
    assert decide(sampled(ids), [ok(ids[0], "one two three four")], max_words=3)["status"][0] == "too_long"
    assert decide(sampled(ids), [ok(ids[0], "one two three")], max_words=3)["status"][0] == "kept"


def test_normalisation():
    assert normalise_query('  "When is  magnesium\nsulfate stopped?" ') == "When is magnesium sulfate stopped?"
    assert normalise_query("“Quoted”") == "Quoted"
    assert normalise_query('""') == ""


def test_answers_must_match_the_sampled_chunks():
    with pytest.raises(ValueError, match="2 answers for 1 sampled chunks"):
        decide(sampled(["a" * 16]), [ok("a" * 16, "q"), ok("b" * 16, "q")])
    with pytest.raises(ValueError, match="answer for bbbb"):
        decide(sampled(["a" * 16]), [ok("b" * 16, "q")])


def test_keep_rates_per_tier_and_source():
    ids = [f"{i:016x}" for i in range(5)]
    tiers = ["very_high", "very_high", "very_high", "low_moderate", "low_moderate"]
    results = [
        ok(ids[0], "A?"),
        ok(ids[1], "B?"),
        ok(ids[2], None),
        ok(ids[3], None),
        LLMResult(ids[4], "k", "transport_failed", error="x"),
    ]
    rates = keep_rates(decide(sampled(ids, tiers), results), "tier")
    assert rates.rows() == [("low_moderate", 2, 1, 0, 0.0), ("very_high", 3, 3, 2, 0.6667)]
    assert keep_rates(decide(sampled(ids, tiers), results), "source").height == 2
