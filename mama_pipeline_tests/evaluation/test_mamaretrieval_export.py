"""``mama-pipeline eval export`` reads the store a slice of queries or one retriever at a time and writes the same
bytes as the export that held every table whole (kept in ``fixtures/mamaretrieval_export``)."""

import json
from pathlib import Path

import polars as pl

from mama_pipeline.evaluation._mamaretrieval_export import export_mamaretrieval
from mama_pipeline.evaluation.cli import main
from mama_pipeline.settings import load_settings
from mama_pipeline.store import Store
from mama_pipeline_tests.evaluation.synthetic import as_judging_table
from mama_pipeline_tests.stand_ins import as_corpus_chunks, as_generated_queries
from mama_pipeline_tests.support.llm_stages import with_embedded

FIXTURES = Path(__file__).parent / "fixtures"
EXPECTED = FIXTURES / "mamaretrieval_export"  # written by the export that held the tables whole
# what that export wrote scoring 2 queries at a time: the files it changes (polars' sums differ in the last bit)
EXPECTED_2_QUERY_SLICES = FIXTURES / "mamaretrieval_export_2_query_slices"


def _store(tmp_path) -> Path:
    """A config over a store of 6 queries (q_00006 unjudged), 8 chunks and two retrievers: bm25 with strictly
    decreasing scores and a row of a query outside the benchmark, dense with tied scores and no row for q_00002;
    judgments and rankings stored out of order."""
    store = Store(tmp_path / "data" / "mama.duckdb")
    texts = ["Fundal massage.", 'Oxytocine 10 UI — « IM », "now".', "Misoprostol 800 µg.", "Check bleeding."]
    chunks = pl.DataFrame(
        {
            "chunk_id": [f"c{i}" for i in (4, 1, 8, 2, 7, 3, 6, 5)],
            "text": texts * 2,
            "source": ["who", "msf"] * 4,
        }
    )
    store.write_table("corpus_chunks", as_corpus_chunks(chunks))
    queries = pl.DataFrame(
        {
            "query_id": [f"q_0000{i}" for i in (3, 1, 6, 2, 5, 4)],
            "query_text": ["PPH first step?", "Oxytocin dose?", "Ergometrine?", "Bleeding?", "Misoprostol?", "Ü?"],
            "tier": ["high", "very_high", "moderate", "high", "moderate", "very_high"],
            "source": ["who", "msf", "who", "msf", "who", "msf"],
        }
    )
    store.write_table(
        "generated_queries", as_generated_queries(queries, seed_chunk_ids=["c4", "c1", "c8", "c2", "c7", "c3"])
    )
    judged = [
        ("q_00003", "c2", 4),
        ("q_00001", "c5", 0),
        ("q_00001", "c1", 6),
        ("q_00004", "c3", 2),
        ("q_00002", "c2", 5),
        ("q_00003", "c7", 1),
        ("q_00001", "c3", 3),
        ("q_00005", "c8", 6),
        ("q_00002", "c6", 0),
        ("q_00004", "c1", 3),
    ]
    judgments = pl.DataFrame(judged, schema=["query_id", "chunk_id", "score"], orient="row")
    store.write_table("judgments", as_judging_table(judgments))
    ranked = {
        "bm25": {
            "q_00001": ["c1", "c5", "c2"],
            "q_00002": ["c6", "c2", "c4"],
            "q_00003": ["c7", "c2", "c8"],
            "q_00004": ["c3", "c6", "c1"],
            "q_00005": ["c4", "c8", "c3"],
            "q_00009": ["c1", "c2", "c3"],
        },
        "dense": {
            "q_00001": ["c3", "c1", "c7"],
            "q_00003": ["c2", "c5", "c6"],
            "q_00004": ["c1", "c3", "c4"],
            "q_00005": ["c8", "c7", "c2"],
            "q_00006": ["c5", "c4", "c3"],
        },
    }
    for name, by_query in ranked.items():
        rows = [
            (q, name, rank, c, 9.5 - rank if name == "bm25" else float(rank < 3))
            for q, docs in by_query.items()
            for rank, c in enumerate(docs, start=1)
        ]
        frame = pl.DataFrame(rows, schema=["query_id", "retriever", "rank", "chunk_id", "score"], orient="row")
        store.write_table("rankings", frame.reverse(), partition=name)
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(with_embedded(f"data_dir: {tmp_path / 'data'}\n"))
    return cfg


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_the_export_writes_the_bytes_of_the_export_that_held_the_tables_whole(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("MAMA_DATA_DIR", raising=False)
    cfg = _store(tmp_path)
    out = tmp_path / "out"
    assert main(["export", "--out", str(out), "--config", str(cfg)]) == 0
    assert _files(out) == _files(EXPECTED)
    assert json.loads(capsys.readouterr().out) == {
        "out": str(out),
        "documents": 8,
        "queries": 6,
        "qrels": 10,
        "dropped_judgments": {},
        "runs": ["bm25", "dense"],
        "per_query": str(out / "per_query"),
    }


def test_no_read_holds_more_than_a_slice_or_one_retriever(tmp_path, monkeypatch):
    """Slices of 2 queries, 3 judgments in table order and 3 chunks write the bytes the whole-table export writes
    scoring 2 queries at a time; every read of the labels, the rankings and the corpus holds one slice or one
    retriever."""
    monkeypatch.delenv("MAMA_DATA_DIR", raising=False)
    cfg = _store(tmp_path)
    reads: list[tuple[str, pl.DataFrame]] = []
    read_table, query = Store.read_table, Store.query

    def spy_table(self, table, partitions=None, columns=None, where=None):
        reads.append((table, got := read_table(self, table, partitions, columns, where)))
        return got

    def spy_query(self, sql, params=None):
        reads.append((sql, got := query(self, sql, params)))
        return got

    monkeypatch.setattr(Store, "read_table", spy_table)
    monkeypatch.setattr(Store, "query", spy_query)
    summary = export_mamaretrieval(
        Store(tmp_path / "data" / "mama.duckdb"),
        load_settings(cfg).evaluation,
        tmp_path / "out",
        query_slice=2,
        row_slice=3,
        chunk_slice=3,
    )
    assert _files(tmp_path / "out") == _files(EXPECTED) | _files(EXPECTED_2_QUERY_SLICES)
    assert summary["dropped_judgments"] == {} and summary["qrels"] == 10

    def of(name: str) -> list[pl.DataFrame]:
        return [got for what, got in reads if what == name or f'FROM "{name}"' in what]

    labels = [(what, got) for what, got in reads if "judgments" in what and "chunk_id" in got.columns]
    in_order = [got for what, got in labels if "rowid >= ?" in what]
    relevant = [got for what, got in labels if "score >= ?" in what]  # the labels >= lenient, as the scoreboard step
    of_queries = [got for what, got in labels if what == "judgments"]
    assert len(labels) == len(in_order) + len(relevant) + len(of_queries)
    assert [got.height for got in in_order] == [3, 3, 3, 1]  # 10 judgments in the table's order
    assert [got.height for got in relevant] == [6]
    assert max(got["query_id"].n_unique() for got in of_queries) == 2
    rankings = [got for got in of("rankings") if "query_id" in got.columns]
    assert max(got["retriever"].n_unique() for got in rankings) == 1
    whole = [got for got in rankings if got["query_id"].n_unique() > 2]
    assert len(whole) == 4  # each retriever's run file, read twice: runs/ and per_query/
    chunks = [got for got in of("corpus_chunks") if "text" in got.columns]
    assert len(chunks) == 3 and max(got.height for got in chunks) == 3


def test_bad_stores_are_one_line_errors_as_before(tmp_path, monkeypatch, capsys):
    """A label of a chunk outside the corpus writes nothing; a store without rankings stops after the qrels."""
    monkeypatch.delenv("MAMA_DATA_DIR", raising=False)
    cfg = _store(tmp_path)
    store = Store(tmp_path / "data" / "mama.duckdb")
    judgments = store.read_table("judgments")
    store.write_table("judgments", pl.concat([judgments, judgments.head(1).with_columns(chunk_id=pl.lit("c9"))]))
    out = tmp_path / "out"
    assert main(["export", "--out", str(out), "--config", str(cfg)]) == 2
    assert capsys.readouterr().err == (
        "mama-pipeline eval: error: judgments: qrels name document 'c9' (query 'q_00003') that is not in the corpus\n"
    )
    assert not [p for p in out.rglob("*") if p.is_file()]
    store.write_table("judgments", judgments)
    with store.connect(write=True) as con:
        con.execute("DROP TABLE rankings")
    assert main(["export", "--out", str(out), "--config", str(cfg)]) == 2
    assert "table 'rankings' is not in" in capsys.readouterr().err
    assert sorted(p.name for p in out.iterdir()) == ["beir", "qrels.txt"]
