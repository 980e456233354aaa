"""The card's Judging section and the manifest's judging record: strategy, budget, judged share, recall."""

import polars as pl

from mama_pipeline.judging._unjudged_estimate import ESTIMATE_SCHEMA
from mama_pipeline.release._mamaretrieval_card import judging_section
from mama_pipeline.release.assets import judging_record
from mama_pipeline.settings import PipelineSettings
from mama_pipeline.store import Store
from mama_pipeline_tests.support.llm_stages import with_embedded
from mama_pipeline_tests.support.synthetic_judging import make_chunks, make_pool, make_queries


def _settings(raw: dict) -> PipelineSettings:
    """Settings whose LLM stages are all marked embedded (none of them is asked here)."""
    return PipelineSettings.model_validate(with_embedded(raw))


CUTS = {"lenient": 3, "strict": 5}


def test_full_says_every_pair_was_asked():
    assert judging_record(_settings({}), None) == {
        "strategy": "full",
        "note": "every pooled pair was asked (the paper's protocol)",
    }
    assert "Strategy `full`: every pooled pair was asked" in judging_section(judging_record(_settings({}), None), CUTS)


def test_adaptive_record_and_card_from_the_store(tmp_path):
    store = Store(tmp_path / "mama.duckdb")
    store.write_table("pooled_pairs", make_pool(make_queries(1), make_chunks(10), per_query=10))
    ids = store.read_table("pooled_pairs")["chunk_id"].to_list()
    store.write_table(
        "judged_set",
        pl.DataFrame(
            {"query_id": ["q_00001"] * 6, "chunk_id": ids[:6], "role": ["round"] * 4 + ["sample"] * 2}
        ).with_columns(round=pl.lit(0), position=pl.int_range(6)),
    )
    row = dict.fromkeys(ESTIMATE_SCHEMA)
    estimate = [
        {**row, "scope": "all", "cut": "lenient", "recall": 0.81234, "recall_low": 0.6, "recall_high": 0.95},
        {**row, "scope": "all", "cut": "strict", "note": "no relevant pair labelled: x"},
    ]
    counts = dict.fromkeys(["threshold", "pooled_pairs", "labelled_pairs", "unjudged_pairs", "failed_pairs"], 0)
    counts.update(sample_pairs=2, sample_relevant=0, relevant_labelled=0, confidence=0.95)
    estimate = [{**e, **counts} for e in estimate]
    store.write_table("unjudged_estimate", pl.DataFrame(estimate, schema=ESTIMATE_SCHEMA))
    s = _settings({"judging": {"strategy": "adaptive", "budget": 0.4, "remainder_sample": 2}})
    rec = judging_record(s, store)
    assert (rec["budget_pairs"], rec["pairs_asked_by_rounds"], rec["remainder_sample_pairs"]) == (4, 4, 2)
    assert rec["judged_share"] == 0.6 and rec["estimated_recall"]["all"]["lenient"]["recall"] == 0.8123
    card = judging_section(rec, CUTS)
    assert "| judged share of the pool | 0.6 |" in card
    assert "| estimated recall of the labels, lenient (score >= 3) | 0.8123 (95% interval 0.6 to 0.95) |" in card
    assert "refused: no relevant pair labelled: x" in card and "not labels, never non-relevant" in card


def test_unjudged_pairs_are_nowhere_in_the_release(tmp_path):
    import dataclasses

    from mama_pipeline.release._mamaretrieval import write_mamaretrieval_release
    from mama_pipeline_tests.release import fixtures as fx

    base = fx.inputs()
    labels = base.judgments if isinstance(base.judgments, pl.DataFrame) else base.judgments.collect()
    unjudged = labels.select("query_id", "chunk_id").head(2)  # adaptive judging left these two unasked
    record = {
        "strategy": "adaptive",
        "method": "mtf",
        "budget": 0.5,
        "budget_pairs": 3,
        "stop_yield": None,
        "pairs_asked_by_rounds": 3,
        "remainder_sample_pairs": 1,
        "judged_share": 0.6667,
        "estimated_recall": {},
        "note": "x",
    }
    inp = dataclasses.replace(
        base, judgments=labels.join(unjudged, on=["query_id", "chunk_id"], how="anti"), judging=record
    )
    out = tmp_path / "release"
    manifest = write_mamaretrieval_release(out, inp)
    keys = ["query_id", "chunk_id"]
    for path, cols in (
        ("data/judgments.parquet", keys),
        ("audit/judgment_reasoning.parquet", keys),
        ("qrels/test-00000-of-00001.parquet", ["query-id", "corpus-id"]),
    ):
        shipped = pl.read_parquet(out / path).select(cols).rename(dict(zip(cols, keys)))
        assert shipped.join(unjudged, on=keys, how="semi").is_empty(), path
        assert shipped.height == labels.height - 2, path
    assert manifest["judging"] == record and manifest["figures"]["pooled_pairs_without_label"] == 2
    card = (out / "README.md").read_text()
    assert "| pooled pairs without a label (unjudged or judge failures) | 2 |" in card and "### Judging" in card
