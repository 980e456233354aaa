"""The bundled sample's document vectors, encoded once per test run, and stores seeded with them.

A vector is a function of the encoder setup and the text (``retrieval/_embedding_cache.py``), so a test whose
run would encode the sample's documents again starts from a store holding these vectors: encoding the sample
corpus's chunks with MiniLM and SPLADE costs about 27 s of CPU, and its BEIR sample's documents with MiniLM about 19 s,
which each such test spent again. Only documents are seeded (every query, and a chunk a test edits, is encoded by
the run), by the product's own ``embed_with_cache`` with the sample configuration's retrievers (conftest's
``sample_embeddings``: one build per test run, shared by the xdist workers).
"""

from __future__ import annotations

import fcntl
from pathlib import Path

import duckdb

from mama_pipeline.store.duckdb_store import ddl_path

EMBEDDINGS = "embedding_cache"


def with_embeddings_of(source: Path, db: Path) -> None:
    """A new store at ``db`` holding ``source``'s embedding cache, created from the table's SQL contract."""
    db.parent.mkdir(parents=True, exist_ok=True)
    with duckdb.connect(str(db)) as con:
        con.execute(ddl_path(EMBEDDINGS).read_text())
        con.execute(f"ATTACH '{source}' AS source (READ_ONLY)")
        con.execute(f"INSERT INTO {EMBEDDINGS} SELECT * FROM source.{EMBEDDINGS}")
        assert con.execute(f"SELECT count(*) FROM {EMBEDDINGS}").fetchone()[0] > 0


def encode_sample_documents(db: Path) -> None:
    """Into the embedding cache of a new store at ``db``, as documents: the sample configuration's chunks (as
    ``corpus_chunks`` parses them) by every retriever of the configuration that embeds, and the documents of each
    of its BEIR benchmarks (as ``beir_evaluations`` reads them) by each of the benchmark's retrievers that embeds."""
    from mama_pipeline.corpus._bundle import load_bundle
    from mama_pipeline.evaluation._beir_evaluation import load_benchmark, registry_inputs
    from mama_pipeline.retrieval._embedding_cache import embed_with_cache
    from mama_pipeline.retrieval._retriever_kinds import kind_of
    from mama_pipeline.settings import SAMPLE_CONFIG, load_settings
    from mama_pipeline.store import Store

    s = load_settings(SAMPLE_CONFIG)
    c = s.corpus
    texts = load_bundle(s.resolve(c.bundle), canonical=c.canonical_text, on_bad=c.on_bad_chunk).chunks["text"]
    store = Store(db)

    def encode(specs, documents: list[str]) -> None:
        for spec in specs:
            kind = kind_of(spec)
            if kind.encoder is not None:
                embed_with_cache(store, kind.encoder(spec.params, s.resolve), documents, "document")

    encode(s.retrieval.retrievers, texts.to_list())
    for benchmark in s.evaluation.beir:
        documents, _ = registry_inputs(load_benchmark(benchmark, s.resolve).benchmark)
        encode([s.retrieval.retriever(name) for name in benchmark.retrievers], documents["text"].to_list())


def sample_embeddings(root: Path) -> Path:
    """The store under ``root`` holding the sample's document vectors (:func:`encode_sample_documents`), built by
    the first caller; the others wait for it (a file lock: xdist workers are processes)."""
    db = root / "sample_embeddings.duckdb"
    with open(root / "sample_embeddings.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not db.exists():
            building = root / "sample_embeddings.building.duckdb"
            building.unlink(missing_ok=True)
            encode_sample_documents(building)
            building.rename(db)
    return db
