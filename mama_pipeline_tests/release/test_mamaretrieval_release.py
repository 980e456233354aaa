"""The mamaretrieval release folder: layout, manifest, card, refusals, atomic and deterministic writes."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import polars as pl
import pytest
import yaml

from mama_pipeline.judging._rubric import RELEVANCE_JUDGE
from mama_pipeline.llm.client import SMOKE_TEST_NOTE
from mama_pipeline.release._mamaretrieval import ReleaseError, write_mamaretrieval_release
from mama_pipeline.release._sorted_tables import StoredTable
from mama_pipeline.store import Store
from mama_pipeline_tests.release import fixtures as fx

EXPECTED_FILES = {
    "README.md",
    "manifest.json",
    "data/queries.parquet",
    "data/rankings.parquet",
    "data/judgments.parquet",
    "data/chunks.parquet",
    "audit/judgment_reasoning.parquet",
    "audit/judge_relevance_prompt.txt",
    "audit/query_writer_prompt.txt",
    "schema/judge_answer.schema.json",
    "schema/query_answer.schema.json",
    "corpus/corpus-00000-of-00001.parquet",
    "queries/queries-00000-of-00001.parquet",
    "qrels/test-00000-of-00001.parquet",
}


def files_of(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_layout_tables_and_manifest(tmp_path):
    out = tmp_path / "releases" / "mamaretrieval" / "0.3.0"
    manifest = write_mamaretrieval_release(out, fx.inputs())
    assert set(files_of(out)) == EXPECTED_FILES
    assert json.loads((out / "manifest.json").read_text()) == manifest

    queries = pl.read_parquet(out / "data/queries.parquet")
    assert queries.columns == ["query_id", "query_text", "seed_chunk_id", "source", "tier"]
    assert queries["query_id"].to_list() == ["q_00001", "q_00002"]
    rankings = pl.read_parquet(out / "data/rankings.parquet")
    assert rankings.columns == ["query_id", "retriever", "rank", "chunk_id", "score"]
    assert set(rankings["retriever"]) == {"bm25", "dense"}  # the audit-only retriever is not pooled
    assert rankings["rank"].max() == 3 and rankings.height == 2 * 2 * 3
    judgments = pl.read_parquet(out / "data/judgments.parquet")
    assert judgments.columns == [
        "query_id",
        "chunk_id",
        "d1_topic",
        "d2_meaningful",
        "d3_actionable",
        "d4_density",
        "score",
    ]
    assert judgments.height == fx.pooled_pairs().height
    chunks = pl.read_parquet(out / "data/chunks.parquet")
    assert chunks.sort("chunk_id")["text"].to_list() == fx.chunks().sort("chunk_id")["text"].to_list()
    audit = pl.read_parquet(out / "audit/judgment_reasoning.parquet")
    assert audit["reasoning"].null_count() == 0 and set(audit["label_prompt_hash"]) == {fx.JUDGE_HASH}
    assert (out / "audit/judge_relevance_prompt.txt").read_text() == RELEVANCE_JUDGE.text

    assert manifest["version"] == "0.3.0" and manifest["previous_version"] == "0.2.0"
    assert manifest["corpus"]["version"] == fx.CORPUS_VERSION
    assert manifest["corpus"]["source"] == "sample_data/corpus/chunks_for_rag.txt"
    assert manifest["judge"]["model"] == "judge-test" and manifest["judge"]["prompt_hash"] == fx.JUDGE_HASH
    assert manifest["judge"]["template_hash"] == RELEVANCE_JUDGE.hash
    assert len(manifest["judge"]["answer_schema_version"]) == 16
    assert manifest["query_writer"]["model"] == "qwen-test"
    assert manifest["query_writer"]["prompt_hash"] == fx.WRITER_TEMPLATE.hash
    assert [r["name"] for r in manifest["retrieval"]["retrievers"]] == ["bm25", "dense"]
    assert manifest["retrieval"]["pool_depth"] == 3
    assert manifest["smoke_test"] is False and manifest["note"] is None
    assert set(manifest["files"]) == EXPECTED_FILES - {"manifest.json"}
    for rel, entry in manifest["files"].items():
        data = (out / rel).read_bytes()
        assert entry["sha256"] == hashlib.sha256(data).hexdigest() and entry["bytes"] == len(data)
    assert manifest["files"]["data/judgments.parquet"]["rows"] == judgments.height
    assert manifest["files"]["data/rankings.parquet"]["rows"] == 12
    assert manifest["files"]["README.md"]["rows"] is None


def test_figures_match_the_tables(tmp_path):
    manifest = write_mamaretrieval_release(tmp_path / "r", fx.inputs())
    f = manifest["figures"]
    j = fx.judgments()
    assert sum(f["score_distribution"].values()) == f["judged_pairs"] == j.height
    assert f["score_distribution"]["0"] == int((j["score"] == 0).sum())
    best = j.group_by("query_id").agg(pl.col("score").max())
    assert f["queries_without_strict_chunk"] == int((best["score"] < 5).sum())
    assert f["lenient_relevant_pairs"] == int((j["score"] >= 3).sum())
    assert f["rankings_by_retriever"] == {"bm25": 6, "dense": 6}
    assert f["pooled_pairs_without_label"] == 0
    fewer = fx.judgments().head(3)
    f2 = write_mamaretrieval_release(tmp_path / "r2", fx.inputs(judgments=fewer))["figures"]
    assert f2["pooled_pairs_without_label"] == fx.pooled_pairs().height - 3


def test_card_front_matter_configs_and_figures(tmp_path):
    out = tmp_path / "r"
    manifest = write_mamaretrieval_release(out, fx.inputs())
    card = (out / "README.md").read_text()
    assert card.startswith("---\n")
    meta = yaml.safe_load(card.split("---\n")[1])
    configs = {c["config_name"]: c["data_files"][0]["path"] for c in meta["configs"]}
    assert configs["judgments"] == "data/judgments.parquet" and configs["chunks"] == "data/chunks.parquet"
    for path in configs.values():
        assert (out / path).is_file()
    assert meta["task_categories"] == ["text-retrieval"] and meta["size_categories"] == ["n<1K"]
    assert f"| judged pairs | {manifest['figures']['judged_pairs']} |" in card
    assert fx.CORPUS_VERSION in card and "Smoke test" not in card


def test_smoke_test_model_is_declared(tmp_path):
    inp = fx.inputs()
    smoke_judge = type(inp.judge)(inp.judge.template, inp.judge.answer_schema, inp.judge.version_hash, 0.0, True)
    out = tmp_path / "r"
    manifest = write_mamaretrieval_release(out, fx.inputs(judge=smoke_judge))
    assert manifest["smoke_test"] is True and manifest["judge"]["smoke_test"] is True
    assert manifest["note"] == SMOKE_TEST_NOTE
    assert "Smoke test, not a benchmark" in (out / "README.md").read_text()


def test_same_inputs_give_byte_identical_files(tmp_path):
    a = tmp_path / "a"
    write_mamaretrieval_release(a, fx.inputs())
    shuffled = fx.inputs(
        chunks=fx.chunks().sample(fraction=1.0, shuffle=True, seed=3),
        rankings=fx.rankings().sample(fraction=1.0, shuffle=True, seed=4),
        judgments=fx.judgments().sample(fraction=1.0, shuffle=True, seed=5),
        queries=fx.queries().reverse(),
    )
    b = tmp_path / "b"
    write_mamaretrieval_release(b, shuffled)
    assert files_of(a) == files_of(b)
    write_mamaretrieval_release(a, fx.inputs())  # rebuilt in place: same bytes again
    assert files_of(a) == files_of(b)


def test_a_corpus_larger_than_a_row_group_gives_the_same_bytes_from_any_row_order(tmp_path):
    extra = 230_000  # chunks beyond the fixture's six: three row groups of 100,000 rows, a list column among them
    big = pl.concat(
        [
            fx.chunks(),
            fx.chunks()
            .head(1)
            .select(pl.exclude("chunk_id", "breadcrumb", "page"))
            .join(pl.DataFrame({"i": range(extra)}), how="cross")
            .with_columns(
                chunk_id=pl.format("x{}", pl.col("i").cast(pl.String).str.zfill(7)),
                breadcrumb=pl.concat_list(pl.lit("Part"), pl.col("i").cast(pl.String)),
                page=pl.col("i").cast(pl.Int64),
            )
            .drop("i")
            .select(fx.chunks().columns),
        ]
    )
    a, b = tmp_path / "a", tmp_path / "b"
    write_mamaretrieval_release(a, fx.inputs(chunks=big))
    write_mamaretrieval_release(b, fx.inputs(chunks=big.sample(fraction=1.0, shuffle=True, seed=7)))
    assert files_of(a) == files_of(b)
    import pyarrow.parquet as pq

    meta = pq.ParquetFile(a / "data/chunks.parquet").metadata
    assert [meta.row_group(i).num_rows for i in range(meta.num_row_groups)] == [100_000, 100_000, 30_006]
    released = pl.read_parquet(a / "data/chunks.parquet")
    assert released["chunk_id"].to_list() == sorted(fx.IDS + [f"x{i:07d}" for i in range(extra)])
    assert released.filter(pl.col("chunk_id") == "x0001234").row(0) == (
        "x0001234",
        "who-a",
        1234,
        ["Part", "1234"],
        fx.TEXTS[0],
    )


def test_a_release_from_the_store_equals_the_one_from_frames(tmp_path):
    store = Store(tmp_path / "mama.duckdb")
    for table in ("chunks", "queries", "judgments", "pooled_pairs"):
        store.write_table(f"fx_{table}", getattr(fx, table)())
    for retriever, rows in fx.rankings().group_by("retriever"):
        store.write_table("fx_rankings", rows, partition=retriever[0])
    stored = {t: StoredTable(store, f"fx_{t}") for t in ("chunks", "queries", "judgments", "pooled_pairs")}
    rankings = StoredTable(store, "fx_rankings", ("bm25", "dense"))
    write_mamaretrieval_release(tmp_path / "frames", fx.inputs())
    write_mamaretrieval_release(tmp_path / "store", fx.inputs(**stored, rankings=rankings))
    assert files_of(tmp_path / "frames") == files_of(tmp_path / "store")


@pytest.mark.parametrize(
    "table,what", [("judgments", "labels"), ("rankings", "ranking rows"), ("pooled_pairs", "pooled pairs")]
)
def test_refuses_chunk_ids_outside_the_corpus_version(tmp_path, table, what):
    out = tmp_path / "r"
    write_mamaretrieval_release(out, fx.inputs())
    before = files_of(out)
    df = getattr(fx, table)()
    stale = df.with_columns(
        pl.when(pl.int_range(pl.len()) == 0)
        .then(pl.lit("deadbeefdeadbeef"))
        .otherwise(pl.col("chunk_id"))
        .alias("chunk_id")
    )
    with pytest.raises(ReleaseError) as err:
        write_mamaretrieval_release(out, fx.inputs(**{table: stale}))
    msg = str(err.value)
    assert f"1 {what} name a chunk_id not in corpus version {fx.CORPUS_VERSION}" in msg
    assert "deadbeefdeadbeef" in msg
    assert files_of(out) == before, "a refused build must leave the previous release in place"
    assert [p.name for p in tmp_path.iterdir()] == ["r"], "no temporary folder may be left behind"


def test_refuses_labels_of_unknown_queries_and_mixed_or_stale_prompts(tmp_path):
    j = fx.judgments()
    with pytest.raises(ReleaseError, match="name a query_id not in the released queries"):
        write_mamaretrieval_release(
            tmp_path / "r", fx.inputs(judgments=j.with_columns(pl.lit("q_09999").alias("query_id")))
        )
    mixed = j.with_columns(
        pl.when(pl.int_range(pl.len()) == 0)
        .then(pl.lit("other-judge"))
        .otherwise(pl.col("judge_model"))
        .alias("judge_model")
    )
    with pytest.raises(ReleaseError, match="judgments come from 2 \\(model, prompt\\) versions"):
        write_mamaretrieval_release(tmp_path / "r", fx.inputs(judgments=mixed))
    with pytest.raises(ReleaseError, match="queries were made with prompt hash 0000"):
        write_mamaretrieval_release(
            tmp_path / "r", fx.inputs(queries=fx.queries().with_columns(pl.lit("0000").alias("prompt_hash")))
        )
    with pytest.raises(ReleaseError, match="no rankings of pooled retriever"):
        write_mamaretrieval_release(
            tmp_path / "r", fx.inputs(rankings=fx.rankings().filter(pl.col("retriever") != "dense"))
        )
    with pytest.raises(ReleaseError, match="table judgments lacks column"):
        write_mamaretrieval_release(tmp_path / "r", fx.inputs(judgments=j.drop("reasoning")))
    assert not (tmp_path / "r").exists()


def test_card_shows_self_consistency_and_cross_model_agreement_side_by_side_each_named(tmp_path):
    cross = fx.reliability().with_columns(
        reference_stage=pl.lit("cross_model_judge"),
        audit=pl.lit("cross_model"),
        reference_model=pl.lit("other-judge"),
        value=pl.Series([0.5, 0.25, 0.1]),
    )
    inputs = fx.inputs(
        reliability=pl.concat([fx.reliability(), cross]),
        reference_decoding={
            "reference_judge": "temperature 0.8, seed 1",
            "cross_model_judge": "temperature 0.0, seed 0",
        },
    )
    manifest = write_mamaretrieval_release(tmp_path / "r", inputs)
    kinds = [(a["reference_stage"], a["audit"], a["reference_judge"]) for a in manifest["judge_reliability"]]
    assert kinds == [
        ("reference_judge", "self_consistency", "judge-test"),
        ("cross_model_judge", "cross_model", "other-judge"),
    ]
    card = (tmp_path / "r" / "README.md").read_text()
    assert (
        "- **Self-consistency (test-retest)** on a pilot sample of 4 pairs: the judge's own model `judge-test` "
        "asked again (temperature 0.8, seed 1): how stable its labels are, not whether another judge would "
        "give them."
    ) in card
    assert (
        "- **Cross-model agreement** on a pilot sample of 4 pairs: another model, `other-judge` "
        "(temperature 0.0, seed 0), labelling the same pairs."
    ) in card
    assert (
        "| measure | self-consistency (test-retest): judge-test | cross-model agreement: other-judge |\n"
        "|---|---|---|\n| lenient_agreement | 0.75 | 0.5 |\n| strict_agreement | 0.5 | 0.25 |\n"
        "| weighted_kappa_linear | 0.4 | 0.1 |"
    ) in card
    assert "different reference judge" not in card


def test_circularity_flags_stand_next_to_the_query_writer_and_the_retrievers_they_touch(tmp_path):
    flags = [
        {
            "judge": "llm.judge",
            "judge_model": "Qwen/Qwen3-8B",
            "part": "llm.query_writer",
            "model": "Qwen/Qwen3-8B",
            "shared": "model",
            "family": "qwen/qwen3",
            "note": "circular: llm.judge (Qwen/Qwen3-8B) and llm.query_writer (Qwen/Qwen3-8B) share the model",
        },
        {
            "judge": "llm.judge",
            "judge_model": "Qwen/Qwen3-8B",
            "part": "retrieval.dense",
            "model": "Qwen/Qwen3-Emb",
            "shared": "family",
            "family": "qwen/qwen3",
            "note": "circular: llm.judge (Qwen/Qwen3-8B) and retrieval.dense (Qwen/Qwen3-Emb) share the model family "
            "qwen/qwen3",
        },
    ]
    manifest = write_mamaretrieval_release(tmp_path / "rel", fx.inputs(circularity=flags))
    assert manifest["circularity"] == flags
    card = (tmp_path / "rel" / "README.md").read_text()
    assert (
        "| query writer | qwen-test (temperature 0.0) (circular: llm.judge (Qwen/Qwen3-8B) and llm.query_writer "
        "(Qwen/Qwen3-8B) share the model) |"
    ) in card
    assert "| retriever | kind | rankings | circularity |" in card
    assert "| bm25 | bm25 | 6 | none |" in card
    assert (
        "| dense | dense | 6 | circular: llm.judge (Qwen/Qwen3-8B) and retrieval.dense (Qwen/Qwen3-Emb) share "
        "the model family qwen/qwen3 |"
    ) in card
    assert "### Circularity\n\n- Circular: llm.judge (Qwen/Qwen3-8B) and llm.query_writer" in card
    plain = write_mamaretrieval_release(tmp_path / "plain", fx.inputs())
    assert "circularity" not in plain
    assert "| retriever | kind | rankings |\n" in (tmp_path / "plain" / "README.md").read_text()
