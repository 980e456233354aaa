"""``mama-eval``: TREC scoring and clear errors for bad files."""

import polars as pl

from mama_pipeline.evaluation.cli import main
from mama_pipeline.store import Store
from mama_pipeline_tests.evaluation.synthetic import as_judging_table
from mama_pipeline_tests.stand_ins import as_corpus_chunks, as_generated_queries
from mama_pipeline_tests.support.llm_stages import with_embedded


def _write(tmp_path):
    (tmp_path / "qrels.txt").write_text("q1 0 a 2\nq1 0 b 1\nq2 0 c 1\nq3 0 d 0\n")
    (tmp_path / "bm25.run").write_text("q1 Q0 a 1 3.0 x\nq1 Q0 z 2 2.0 x\nq2 Q0 y 1 1.0 x\n")
    (tmp_path / "dense.run").write_text("q1 Q0 b 1 0.9 y\nq2 Q0 c 1 0.8 y\nq3 Q0 d 1 0.7 y\n")


def test_trec_command_scores_every_qrels_query_and_writes_outputs(tmp_path, capsys):
    _write(tmp_path)
    code = main(
        [
            "trec",
            "--run",
            str(tmp_path / "bm25.run"),
            "--run",
            str(tmp_path / "dense.run"),
            "--qrels",
            str(tmp_path / "qrels.txt"),
            "--cutoffs",
            "1,3",
            "--resamples",
            "200",
            "--significance",
            "Success@1",
            "--out",
            str(tmp_path / "out"),
        ]
    )
    assert code == 0
    printed = capsys.readouterr().out
    assert "| retriever | HR@1" in printed
    board = pl.read_csv(tmp_path / "out" / "scoreboard.tsv", separator="\t")
    hr = dict(board.filter(pl.col("measure") == "Success@1").select("retriever", "mean").iter_rows())
    assert hr == {"bm25": 1 / 3, "dense": 2 / 3}  # three qrels queries; q3 has no relevant document
    assert set(board["n_queries"]) == {3}
    assert (tmp_path / "out" / "per_query" / "dense.perquery.tsv").exists()
    assert (tmp_path / "out" / "report" / "scoreboard.html").exists()
    sig = pl.read_csv(tmp_path / "out" / "significance.tsv", separator="\t")
    assert sig.select("only_a", "only_b").row(0) == (0, 1)


def test_trec_command_reports_file_and_line(tmp_path, capsys):
    _write(tmp_path)
    (tmp_path / "bad.run").write_text("q1 Q0 a 1 3.0 x\nq1 Q0 a 2 2.0 x\n")
    code = main(["trec", "--run", str(tmp_path / "bad.run"), "--qrels", str(tmp_path / "qrels.txt")])
    assert code == 2
    assert f"{tmp_path / 'bad.run'}:2: document 'a' appears twice" in capsys.readouterr().err


def test_export_writes_beir_and_trec_files_that_read_back(tmp_path, monkeypatch, capsys):
    from mama_pipeline.evaluation._beir import read_beir
    from mama_pipeline.evaluation._trec import read_trec_qrels, read_trec_run

    monkeypatch.delenv("MAMA_DATA_DIR", raising=False)
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(with_embedded(f"data_dir: {tmp_path / 'data'}\n"))
    store = Store(tmp_path / "data" / "mama.duckdb")
    store.write_table(
        "corpus_chunks",
        as_corpus_chunks(
            pl.DataFrame(
                {"chunk_id": ["c1", "c2"], "text": ["Fundal massage.", "Oxytocin 10 IU."], "source": ["msf", "who"]}
            )
        ),
    )
    store.write_table(
        "generated_queries",
        as_generated_queries(
            pl.DataFrame(
                {"query_id": ["q_00001"], "query_text": ["PPH first step?"], "source": ["who"], "tier": ["high"]}
            ),
            seed_chunk_ids=["c2"],
        ),
    )
    store.write_table(
        "judgments",
        as_judging_table(pl.DataFrame({"query_id": ["q_00001", "q_00001"], "chunk_id": ["c1", "c2"], "score": [3, 6]})),
    )
    store.write_table(
        "rankings",
        pl.DataFrame(
            {
                "query_id": ["q_00001"] * 2,
                "retriever": ["bm25"] * 2,
                "rank": [1, 2],
                "chunk_id": ["c2", "c1"],
                "score": [7.5, 7.5],
            }
        ),
        partition="bm25",
    )
    assert main(["export", "--out", str(tmp_path / "out"), "--config", str(cfg)]) == 0
    bench = read_beir(tmp_path / "out" / "beir")
    assert bench.qrels.sort("doc_id")["relevance"].to_list() == [3, 6]
    assert read_trec_qrels(tmp_path / "out" / "qrels.txt").height == 2
    run = read_trec_run(tmp_path / "out" / "runs" / "bm25.txt")
    assert run["doc_id"].to_list() == ["c2", "c1"]  # tied scores: the written file keeps the stored order


def test_beir_command_breaks_results_down_by_segment(tmp_path, capsys):
    import json

    bench = tmp_path / "bench"
    (bench / "qrels").mkdir(parents=True)
    docs = [{"_id": f"d{i}", "title": "", "text": "word " * (20 + 30 * i)} for i in range(6)]
    (bench / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    queries = [
        {
            "_id": f"q{i}",
            "text": "a short question" if i % 2 else "a rather longer question about things",
            "metadata": {"server": "biorxiv" if i < 4 else "medrxiv"},
        }
        for i in range(6)
    ]
    (bench / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    (bench / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"q{i}\td{i}\t1\n" for i in range(6))
    )
    (tmp_path / "a.trec").write_text("".join(f"q{i} Q0 d{i} 1 2.0 a\n" for i in range(6)))
    (tmp_path / "b.trec").write_text("".join(f"q{i} Q0 d{(i + 1) % 6} 1 2.0 b\n" for i in range(6)))
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(
        with_embedded(
            f"data_dir: {tmp_path / 'data'}\nretrieval:\n  retrievers:\n"
            f"    - {{name: a, kind: imported, params: {{path: {tmp_path / 'a.trec'}}}}}\n"
            f"    - {{name: b, kind: imported, params: {{path: {tmp_path / 'b.trec'}}}}}\n"
            "evaluation:\n  segments: {min_queries: 4, relevant_length_bands: [100]}\n"
        )
    )
    code = main(
        [
            "beir",
            "--benchmark",
            str(bench),
            "--retriever",
            "a",
            "--retriever",
            "b",
            "--segment-field",
            "server",
            "--resamples",
            "200",
            "--cutoffs",
            "1,3",
            "--significance",
            "RR",
            "--out",
            str(tmp_path / "out"),
            "--config",
            str(cfg),
        ]
    )
    assert code == 0
    seg = pl.read_csv(tmp_path / "out" / "segment_scoreboard.tsv", separator="\t")
    sizes = dict(seg.filter(pl.col("dimension") == "server").select("segment", "n_queries").unique().iter_rows())
    assert sizes == {"biorxiv": 4, "medrxiv": 2}
    rr = seg.filter((pl.col("measure") == "RR") & (pl.col("dimension") == "relevant chunk length"))
    assert dict(rr.filter(pl.col("retriever") == "a").select("segment", "n_queries").iter_rows()) == {
        "<100 words": 3,
        "100+ words": 3,
    }
    sig = pl.read_csv(tmp_path / "out" / "segment_significance.tsv", separator="\t")
    # tested: 4 >= 4 and 6 queries; not medrxiv (2) nor the length bands of 3
    assert set(sig.select("dimension", "segment").unique().iter_rows()) == {
        ("server", "biorxiv"),
        ("query length", "<8 words"),
    }
    html = (tmp_path / "out" / "report" / "scoreboard.html").read_text()
    assert "By server" in html and "medrxiv</td><td>2</td>" in html
