"""BEIR and TREC files: round trips, the hub cache offline, and bad input named by file and line."""

import json
import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from mama_pipeline.evaluation._beir import (
    mamaretrieval_documents,
    mamaretrieval_labels,
    mamaretrieval_queries,
    read_beir,
    write_beir,
    write_beir_parts,
)
from mama_pipeline.evaluation._errors import EvaluationInputError
from mama_pipeline.evaluation._trec import read_trec_qrels, read_trec_run, write_trec_qrels, write_trec_run

SAMPLE = Path(__file__).resolve().parents[2] / "mama_pipeline" / "sample_data" / "upstream" / "miriad_beir_sample"
SHA = "0123456789abcdef0123456789abcdef01234567"


def _copy_sample(dest: Path) -> Path:
    for rel in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv"):
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        (dest / rel).write_bytes((SAMPLE / rel).read_bytes())
    return dest


def test_beir_round_trip_is_byte_identical(tmp_path):
    bench = read_beir(SAMPLE)
    assert (bench.corpus.height, bench.queries.height, bench.qrels.height) == (200, 600, 600)
    assert json.loads(bench.queries["metadata"][0])["answer"].startswith("The upregulation")
    write_beir(bench, tmp_path / "out")
    for rel in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv"):
        assert (tmp_path / "out" / rel).read_bytes() == (SAMPLE / rel).read_bytes(), rel
    assert read_beir(tmp_path / "out").qrels.equals(bench.qrels)


def test_graded_scores_are_kept_and_split_queries_follow_file_order(tmp_path):
    folder = _copy_sample(tmp_path / "b")
    (folder / "qrels" / "dev.tsv").write_text(
        "query-id\tcorpus-id\tscore\n68_406582_8_3\t68_406582_8\t2\n68_406582_8_1\t68_406582_8\t0\n"
    )
    bench = read_beir(folder, split="dev")
    assert bench.qrels["relevance"].to_list() == [2, 0]
    assert bench.benchmark_query_ids() == ["68_406582_8_1", "68_406582_8_3"]  # queries.jsonl order
    assert bench.benchmark_query_ids(1) == ["68_406582_8_1"]


def test_mamaretrieval_export_reads_back(tmp_path):
    chunks = pl.DataFrame(
        {
            "chunk_id": ["c2", "c1"],
            "text": ["Give oxytocin 10 IU IM.", "Check the fundus."],
            "source": ["who", "msf"],
            "tier": ["high", "very_high"],
        }
    )
    queries = pl.DataFrame(
        {
            "query_id": ["q_00001"],
            "query_text": ["Oxytocin dose for PPH?"],
            "seed_chunk_id": ["c2"],
            "source": ["who"],
            "tier": ["high"],
        }
    )
    qrels = pl.DataFrame({"query_id": ["q_00001", "q_00001"], "doc_id": ["c2", "c1"], "relevance": [6, 0]})
    docs, known = mamaretrieval_documents(chunks), {"c1", "c2"}
    labels = mamaretrieval_labels(qrels, known, {"q_00001"})
    write_beir_parts(tmp_path / "mr", [docs.head(1), docs.tail(1)], [mamaretrieval_queries(queries)], [labels])
    back = read_beir(tmp_path / "mr")
    assert back.corpus["doc_id"].to_list() == ["c1", "c2"]
    assert back.qrels["doc_id"].to_list() == ["c1", "c2"] and back.qrels["relevance"].to_list() == [0, 6]  # graded
    assert json.loads(back.queries["metadata"][0]) == {"seed_chunk_id": "c2", "source": "who", "tier": "high"}
    bad = qrels.with_columns(pl.lit("c9").alias("doc_id")).head(1)
    with pytest.raises(EvaluationInputError, match="document 'c9'"):
        mamaretrieval_labels(bad, known, {"q_00001"})
    with pytest.raises(EvaluationInputError, match="query 'q_00001' that is not in the queries"):
        mamaretrieval_labels(qrels, known, set())


def test_trec_run_and_qrels_round_trip(tmp_path):
    run = pl.DataFrame(
        {
            "retriever": ["bm25"] * 3,
            "query_id": ["q1"] * 3,
            "doc_id": ["a", "b", "c"],
            "rank": [1, 2, 3],
            "score": [2.5, 2.5, 1.0],
        }
    )  # a tie: written scores must keep the order
    assert write_trec_run(run, tmp_path / "run.txt") is True
    back = read_trec_run(tmp_path / "run.txt")
    assert back["doc_id"].to_list() == ["a", "b", "c"] and back["rank"].to_list() == [1, 2, 3]
    strict = run.with_columns(pl.Series("score", [3.0, 2.0, 1.0]))
    assert write_trec_run(strict, tmp_path / "run2.txt") is False
    assert (tmp_path / "run2.txt").read_text().splitlines()[0] == "q1 Q0 a 1 3.0 bm25"
    qrels = pl.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["a", "b"], "relevance": [6, 0]})
    write_trec_qrels(qrels, tmp_path / "qrels.txt")
    assert read_trec_qrels(tmp_path / "qrels.txt").equals(qrels)


def test_a_written_run_holds_each_score_as_pythons_repr_of_the_float_line_by_line(tmp_path):
    run = pl.DataFrame(
        {
            "retriever": ["dense", "bm25", "bm25", "bm25", "dense"],
            "query_id": ["q2", "q10", "q10", "q10", "q2"],
            "doc_id": ["x", "c", "a", "b", "y"],
            "rank": [2, 3, 1, 2, 1],
            "score": [1e-05, 0.1, 12.0, 0.30000000000000004, 2.5e20],
        }
    )
    assert write_trec_run(run, tmp_path / "run.txt") is False
    assert (tmp_path / "run.txt").read_text() == (
        "q10 Q0 a 1 12.0 bm25\nq10 Q0 b 2 0.30000000000000004 bm25\nq10 Q0 c 3 0.1 bm25\n"
        "q2 Q0 y 1 2.5e+20 dense\nq2 Q0 x 2 1e-05 dense\n"
    )
    assert write_trec_run(run.drop("score").filter(pl.col("retriever") == "bm25"), tmp_path / "ranks.txt") is True
    assert (tmp_path / "ranks.txt").read_text() == (
        "q10 Q0 a 1 1.0 bm25\nq10 Q0 b 2 0.5 bm25\nq10 Q0 c 3 0.3333333333333333 bm25\n"
    )


def test_trec_run_reader_orders_like_trec_eval(tmp_path):
    (tmp_path / "run.txt").write_text("q1 Q0 a 1 1.0 x\nq1 Q0 c 2 1.0 x\nq1 Q0 b 3 2.0 x\n")
    back = read_trec_run(tmp_path / "run.txt", retriever="mine")
    assert back["doc_id"].to_list() == ["b", "c", "a"]  # score desc, then doc id desc
    assert set(back["retriever"].to_list()) == {"mine"}


@pytest.mark.parametrize(
    "name,content,line,reason",
    [
        (
            "qrels/test.tsv",
            "query-id\tcorpus-id\tscore\n68_406582_8_1\t68_406582_8\t1\n68_406582_8_2\tnope\t1\n",
            3,
            "document 'nope'",
        ),
        ("qrels/test.tsv", "query-id\tcorpus-id\tscore\n68_406582_8_1\t68_406582_8 1\n", 2, "expected 3 tab-separated"),
        ("qrels/test.tsv", "query-id\tcorpus-id\tscore\n68_406582_8_1\t68_406582_8\thigh\n", 2, "is not an integer"),
        ("qrels/test.tsv", "qid\tdocid\tscore\n", 1, "header must be"),
        ("qrels/test.tsv", "query-id\tcorpus-id\tscore\nq_unknown\t68_406582_8\t1\n", 2, "query 'q_unknown'"),
        ("queries.jsonl", '{"_id": "q1", "text": "a"}\n{"_id": "q2", "text": \n', 2, "not valid JSON"),
        ("corpus.jsonl", '{"_id": "d1", "text": "a"}\n{"_id": "d1", "text": "b"}\n', 2, "duplicate _id 'd1'"),
    ],
)
def test_bad_beir_input_names_file_and_line(tmp_path, name, content, line, reason):
    folder = _copy_sample(tmp_path / "b")
    (folder / name).write_text(content)
    with pytest.raises(EvaluationInputError, match=reason) as err:
        read_beir(folder)
    assert err.value.source == str(folder / name) and err.value.line == line
    assert f"{folder / name}:{line}:" in str(err.value)


def test_bad_trec_input_names_file_and_line(tmp_path):
    run = tmp_path / "run.txt"
    run.write_text("q1 Q0 a 1 2.0 x\nq1 Q0 b 2 1.5 x\nq1 Q0 a 3 1.0 x\n")
    with pytest.raises(EvaluationInputError, match=rf"{run}:3: document 'a' appears twice for query 'q1'"):
        read_trec_run(run)
    run.write_text("q1 Q0 a 1 2.0 x\nq1 Q0 b two 1.5 x\n")
    with pytest.raises(EvaluationInputError, match=rf"{run}:2: rank 'two' must be an integer"):
        read_trec_run(run)
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 a 1\nq1 0 b\n")
    with pytest.raises(EvaluationInputError, match=rf"{qrels}:2: expected 4 fields"):
        read_trec_qrels(qrels)


def test_hub_parquet_layout(tmp_path):
    bench = read_beir(SAMPLE)
    folder = tmp_path / "hub"
    for sub in ("corpus", "queries", "qrels"):
        (folder / sub).mkdir(parents=True)
    bench.corpus.rename({"doc_id": "_id"}).write_parquet(folder / "corpus" / "corpus-00000-of-00001.parquet")
    bench.queries.select(pl.col("query_id").alias("_id"), "text").write_parquet(
        folder / "queries" / "queries-00000-of-00001.parquet"
    )
    bench.qrels.select(
        pl.col("query_id").alias("query-id"), pl.col("doc_id").alias("corpus-id"), pl.col("relevance").alias("score")
    ).write_parquet(folder / "qrels" / "test-00000-of-00001.parquet")
    back = read_beir(folder)
    assert back.corpus.equals(bench.corpus) and back.qrels.equals(bench.qrels)
    assert back.queries["query_id"].to_list() == bench.queries["query_id"].to_list()


def test_preset_from_hub_cache_offline(tmp_path):
    """The miriad-200k preset resolved offline from a hub-cache layout: first N queries, pinned commit."""
    repo = tmp_path / "hf" / "hub" / "datasets--tomaarsen--miriad-benchmark-200k"
    _copy_sample(repo / "snapshots" / SHA)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(SHA)
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "1", "MAMA_DATA_DIR": str(tmp_path / "d")}
    env.pop("HF_HUB_CACHE", None)
    cmd = [
        sys.executable,
        "-m",
        "mama_pipeline.evaluation.cli",
        "audit",
        "--benchmark",
        "miriad-200k",
        "--revision",
        SHA,
        "--max-queries",
        "25",
    ]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["source"] == "hf://datasets/tomaarsen/miriad-benchmark-200k" and report["revision"] == SHA
    assert report["queries"] == 25 and report["documents"] == 200
    assert report["leak_audit"]["queries_with_gold"] == 25 and report["leak_audit"]["leaked_any"] == 0
    unpinned = subprocess.run(cmd[:-4] + ["--revision", "main"], env=env, capture_output=True, text=True, timeout=300)
    assert unpinned.returncode == 2 and "40-hex" in unpinned.stderr
