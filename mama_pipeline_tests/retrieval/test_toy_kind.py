"""A retriever kind written in one file outside the package (``toy_kind``) and registered: configured like any
other, it is ranked, pooled, judged (the fake LLM server), scored and put on the leaderboard by a real Dagster
materialisation of the pipeline's definitions."""

from __future__ import annotations

import dagster as dg
import polars as pl
import pytest
import yaml

from mama_pipeline.retrieval import register_retriever_kind
from mama_pipeline.retrieval._retriever_kinds import kinds
from mama_pipeline.robustness._robustness_scoreboard import PAIR_SCHEMA
from mama_pipeline.settings import load_settings
from mama_pipeline.store import Store
from mama_pipeline_tests.retrieval import toy_kind
from mama_pipeline_tests.retrieval.fixtures import TEXTS, chunk_id, chunks_frame, queries_frame
from mama_pipeline_tests.support.llm_stages import served, with_embedded


@pytest.fixture
def toy_registered():
    register_retriever_kind(toy_kind.KIND)
    return kinds()["shared_words"]


def test_a_registered_kind_is_configurable_and_its_capabilities_are_asked(toy_registered):
    from mama_pipeline.retrieval.settings import RetrievalSettings, kinds_that

    r = RetrievalSettings.model_validate({"retrievers": [{"name": "toy", "kind": "shared_words"}]})
    assert isinstance(r.retriever("toy"), toy_kind.SharedWordsRetriever)
    assert "shared_words" in kinds_that("answers_free_text") and "shared_words" not in kinds_that("dense_vectors")
    with pytest.raises(ValueError, match="min_shared"):
        RetrievalSettings.model_validate(
            {"retrievers": [{"name": "toy", "kind": "shared_words", "params": {"min_shared": 0}}]}
        )


@pytest.mark.slow
def test_a_registered_kind_goes_through_ranking_pooling_judging_scoreboard_and_leaderboard(
    tmp_path, fake_llm, monkeypatch, toy_registered
):
    from mama_pipeline.definitions import build_defs
    from mama_pipeline.resources import shared_resources

    config = {
        "data_dir": str(tmp_path / "data"),
        "llm": {"judge": served(fake_llm.url, "fake-judge", backoff_base_s=0.01)},
        "retrieval": {"retrievers": [{"name": "toy", "kind": "shared_words"}], "pool_depth": 3},
        "judging": {"shards": 1},
        "evaluation": {
            "cutoffs": [5, 10],  # the multi-passage track's default measures ask for 5 and 10
            "significance_measures": ["Success(rel=3)@5"],
            "headline_measure": "Success(rel=3)@5",
            "resamples": 100,
        },
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(with_embedded(config)))
    for var in ("MAMA_DATA_DIR", "DAGSTER_HOME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("MAMA_CONFIG", str(path))
    store = Store(tmp_path / "data" / "mama.duckdb")
    chunks, queries = chunks_frame(), queries_frame()
    store.write_table("corpus_chunks", chunks)
    store.write_table("generated_queries", queries)
    store.write_table("query_variants", pl.DataFrame(schema={"variant_id": pl.String, "parent_id": pl.String}))
    store.write_table("robustness_per_query", pl.DataFrame(schema=PAIR_SCHEMA))  # the other tracks: empty
    per_query_schema = {"retriever": pl.String, "query_id": pl.String, "measure": pl.String, "value": pl.Float64}
    store.write_table("multipassage_per_query", pl.DataFrame(schema=per_query_schema))

    defs = build_defs(load_settings(str(path)))
    everything = [*defs.assets, *defs.asset_checks]

    def materialize(selection, partition=None):
        with dg.instance_for_test() as instance:
            result = dg.materialize(
                everything,
                selection=selection,
                partition_key=partition,
                resources=shared_resources(str(path)),
                instance=instance,
                raise_on_error=True,
            )
        assert result.success

    materialize(dg.AssetSelection.assets("rankings"), "toy")
    materialize(dg.AssetSelection.assets("pooled_pairs"))
    materialize(dg.AssetSelection.assets("judged_labels"), "shard_000")
    scored = dg.AssetSelection.assets("per_query_results").required_multi_asset_neighbors()
    materialize(dg.AssetSelection.assets("judgments", "judging_failures", "mamaretrieval_leaderboard") | scored)

    rankings = store.read_table("rankings")
    # q_00001 "oxytocin dose to prevent bleeding after birth": TEXTS[0] shares the most words with it
    first = rankings.filter((pl.col("query_id") == "q_00001") & (pl.col("rank") == 1))
    assert first["chunk_id"].to_list() == [chunk_id(TEXTS[0])] and set(rankings["retriever"]) == {"toy"}
    pool = store.read_table("pooled_pairs")
    top3 = rankings.filter(pl.col("rank") <= 3).select("query_id", "chunk_id")
    assert top3.join(pool, on=["query_id", "chunk_id"], how="anti").is_empty()
    judgments = store.read_table("judgments")
    assert judgments.height == pool.height and set(judgments["judge_model"]) == {"fake-judge"}
    per_query = store.read_table("per_query_results").filter(pl.col("measure") == "Success(rel=3)@5")
    assert set(per_query["retriever"]) == {"toy"} and per_query["query_id"].n_unique() == queries.height
    board = store.read_table("leaderboard").filter((pl.col("track") == "main") & pl.col("headline"))
    assert board["name"].to_list() == ["toy"]
