"""A shard of judged_labels reads its own pooled pairs and the chunks of those pairs, not the pool or the corpus."""

import dagster as dg
import polars as pl

from mama_pipeline.judging import definitions as judging
from mama_pipeline.resources import shared_resources
from mama_pipeline.settings import load_settings
from mama_pipeline.store import Store
from mama_pipeline_tests.judging import judging_defs
from mama_pipeline_tests.support.llm_stages import with_embedded


def test_a_shard_reads_its_pairs_and_their_chunks_only(tmp_path, fake_llm, monkeypatch):
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(
        with_embedded(
            f"data_dir: {tmp_path / 'data'}\n"
            f"llm:\n  judge: {{base_urls: [{fake_llm.url}], model: fake-judge, max_retries: 1, backoff_base_s: 0.01, "
            "max_failure_rate: 0.5}\n"
            "judging: {shards: 4}\n"
        )
    )
    monkeypatch.setenv("MAMA_CONFIG", str(cfg))
    monkeypatch.delenv("MAMA_DATA_DIR", raising=False)
    resources = shared_resources(str(cfg))
    upstream = [judging_defs.queries, judging_defs.chunks, judging_defs.pooled_pairs]
    assert dg.materialize(upstream, resources=resources).success
    store = Store(tmp_path / "data" / "mama.duckdb")
    pool = store.read_table("pooled_pairs")

    reads: list[tuple[str, list | None, dict]] = []
    read_table = Store.read_table

    def spy(self, table, partitions=None, columns=None, where=None):
        reads.append((table, columns, {k: sorted(v) for k, v in (where or {}).items()}))
        return read_table(self, table, partitions, columns, where)

    monkeypatch.setattr(Store, "read_table", spy)
    area = judging.build_defs(load_settings())
    result = dg.materialize(
        [*area.assets, *upstream, judging_defs.audit_pool],
        selection=dg.AssetSelection.assets("judged_labels"),
        partition_key="shard_001",
        resources=resources,
    )
    monkeypatch.setattr(Store, "read_table", read_table)
    assert result.success
    labelled = store.read_table("judged_labels", partitions=["shard_001"])
    mine = sorted(labelled["query_id"].unique().to_list())
    assert 0 < len(mine) < pool["query_id"].n_unique()  # 12 queries in four shards
    shard_pool = pool.filter(pl.col("query_id").is_in(mine))
    assert labelled.height == shard_pool.height
    by_table = {table: (columns, where) for table, columns, where in reads}
    assert set(by_table) == {"generated_queries", "pooled_pairs", "corpus_chunks"}
    assert by_table["pooled_pairs"] == (["query_id", "chunk_id"], {"query_id": mine})
    chunk_columns, chunk_where = by_table["corpus_chunks"]
    assert chunk_where == {"chunk_id": sorted(shard_pool["chunk_id"].unique().to_list())}
    assert "text" in chunk_columns and len(chunk_where["chunk_id"]) < 40
