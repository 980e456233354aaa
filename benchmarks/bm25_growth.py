"""Why exact BM25 over variants grows faster than the variants: per-query work at N = 1 and N = 10.

Reads the work folders ``benchmarks/paper_multiple.py`` left (``--root``: ``N1/`` and ``N10/``, each with its
store and its BM25 index) and, for a seeded sample of each folder's robustness variants (the queries
``variant_rankings`` ranks), prints:

- the postings an exhaustive evaluation reads per variant: the sum, over the variant's analysed terms (the
  analyzer the pipeline searches with), of each term's document frequency in that index;
- warm search rates, in one process, the two folders alternating: the pipeline's own call
  (:func:`mama_pipeline.retrieval._bm25.search`, Anserini's ``SimpleSearcher.batch_search`` in slices, top 30,
  as ``variant_rankings`` calls it a slice of 2,000 at a time) and Lucene's plain top-k (``IndexSearcher.search``,
  one thread, block-max pruning on, no document loaded: the cheapest exact top-k Lucene offers);
- the growth N = 10 over N = 1 of each, and the search work's growth: variants x per-variant time.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/bm25_growth.py --root /tmp/pm58 [--sample 4000]
"""

from __future__ import annotations

import argparse
import functools
import os
import random
import sys
import time
from pathlib import Path

import polars as pl

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DEPTH = 30  # the robustness track's depth at paper_multiple's settings
SLICE = 2000  # variants per search call, as variant_rankings hands them over


class Folder:
    """One paper_multiple work folder: its BM25 index (the corpus's, not a BEIR benchmark's) and variants."""

    def __init__(self, work: Path, sample: int):
        import duckdb

        indexes = [p for p in (work / "data/retrieval/bm25").iterdir() if not p.name.startswith("beir-")]
        if len(indexes) != 1:
            raise SystemExit(f"{work}: expected one corpus BM25 index under data/retrieval/bm25, found {indexes}")
        self.name, self.index = work.name, indexes[0]
        with duckdb.connect(str(work / "data/mama.duckdb"), read_only=True) as db:
            self.chunks = db.execute("SELECT count(*) FROM corpus_chunks").fetchone()[0]
            variants = db.execute("SELECT variant_id, query_text FROM query_variants ORDER BY variant_id").pl()
        self.variants = variants.height
        rows = random.Random(f"bm25_growth:{work.name}").sample(range(variants.height), min(sample, variants.height))
        self.queries = variants[sorted(rows)].select(pl.col("variant_id").alias("query_id"), "query_text")


@functools.cache  # one reader per folder and process
def lucene(folder: Folder):
    """(an IndexSearcher with the pipeline's BM25 on the folder's index, the reader, the pipeline's analyzer)."""
    from mama_pipeline.retrieval._bm25 import Bm25Params
    from mama_pipeline.retrieval._java import anserini_class

    params = Bm25Params()
    paths, fs = anserini_class("java.nio.file.Paths"), anserini_class("org.apache.lucene.store.FSDirectory")
    from jnius import cast  # after anserini_class: the JVM is prepared
    from pyserini.analysis import get_lucene_analyzer

    reader = anserini_class("org.apache.lucene.index.DirectoryReader").open(fs.open(paths.get(str(folder.index))))
    searcher = anserini_class("org.apache.lucene.search.IndexSearcher")(
        cast("org.apache.lucene.index.IndexReader", reader)
    )
    searcher.setSimilarity(anserini_class("org.apache.lucene.search.similarities.BM25Similarity")(params.k1, params.b))
    analyzer = get_lucene_analyzer(
        stemming=params.stemmer != "none", stemmer=params.stemmer, stopwords=params.stopwords
    )
    return searcher, reader, analyzer


def postings(folder: Folder) -> float:
    """Mean over the sampled variants of the summed document frequencies of their analysed terms."""
    from mama_pipeline.retrieval._java import anserini_class

    _, reader, analyzer = lucene(folder)
    from pyserini.analysis import Analyzer  # after lucene(): the JVM is prepared

    term = anserini_class("org.apache.lucene.index.Term")
    tokens = Analyzer(analyzer)
    total = sum(
        reader.docFreq(term("contents", t)) for text in folder.queries["query_text"] for t in tokens.analyze(text)
    )
    return total / folder.queries.height


def pipeline_rate(folder: Folder) -> float:
    """Variants a second through the pipeline's BM25 search, a slice of 2,000 per call."""
    from mama_pipeline.retrieval._bm25 import Bm25Params, search

    t0 = time.perf_counter()
    for start in range(0, folder.queries.height, SLICE):
        search(folder.index, folder.queries.slice(start, SLICE), Bm25Params(), DEPTH)
    return folder.queries.height / (time.perf_counter() - t0)


def plain_rate(folder: Folder) -> float:
    """Variants a second through Lucene's plain top-k on one thread (queries built beforehand, not timed)."""
    from mama_pipeline.retrieval._java import anserini_class

    searcher, _, analyzer = lucene(folder)
    build = anserini_class("io.anserini.search.query.BagOfWordsQueryGenerator")()
    queries = [build.buildQuery("contents", analyzer, text) for text in folder.queries["query_text"]]
    t0 = time.perf_counter()
    for q in queries:
        searcher.search(q, DEPTH)
    return len(queries) / (time.perf_counter() - t0)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", required=True, help="paper_multiple's --root, with N1/ and N10/ work folders")
    ap.add_argument("--sample", type=int, default=4000, help="variants sampled from each folder")
    ap.add_argument("--rounds", type=int, default=2, help="timed rounds, the folders alternating (best kept)")
    a = ap.parse_args()
    folders = [Folder(Path(a.root) / n, a.sample) for n in ("N1", "N10")]
    print(f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}; top {DEPTH}; {a.sample:,} variants sampled each")
    for f in folders:  # warm the JIT on each index before anything is timed
        pipeline_rate(f)
        plain_rate(f)
    rates = {f.name: {"pipeline": 0.0, "plain": 0.0} for f in folders}
    for r in range(a.rounds):
        for f in folders:
            rates[f.name]["pipeline"] = max(rates[f.name]["pipeline"], pipeline_rate(f))
            rates[f.name]["plain"] = max(rates[f.name]["plain"], plain_rate(f))
            print(f"  round {r + 1}, {f.name}: {rates[f.name]['pipeline']:,.0f}/s pipeline, "
                  f"{rates[f.name]['plain']:,.0f}/s plain top-k", flush=True)  # fmt: skip
    df = {f.name: postings(f) for f in folders}
    one, ten = folders
    rows = [
        ("chunks", f"{one.chunks:,}", f"{ten.chunks:,}", ten.chunks / one.chunks),
        ("variants", f"{one.variants:,}", f"{ten.variants:,}", ten.variants / one.variants),
        ("postings per variant (sum of df)", f"{df['N1']:,.0f}", f"{df['N10']:,.0f}", df["N10"] / df["N1"]),
    ]
    for kind, label in (("pipeline", "pipeline search"), ("plain", "plain top-k, 1 thread")):
        a1, a10 = rates["N1"][kind], rates["N10"][kind]
        rows.append((f"{label}: variants/s", f"{a1:,.0f}", f"{a10:,.0f}", a10 / a1))
        rows.append((f"{label}: all variants, s", f"{one.variants / a1:,.1f}", f"{ten.variants / a10:,.1f}",
                     (ten.variants / a10) / (one.variants / a1)))  # fmt: skip
    print(f"\n{'':38} {'N = 1':>12} {'N = 10':>12} {'growth':>9}")
    for label, x1, x10, g in rows:
        print(f"{label:38} {x1:>12} {x10:>12} {'x':>3}{g:>6.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
