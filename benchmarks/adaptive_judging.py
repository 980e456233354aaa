"""Adaptive judging: relevant pairs found against judgments made, and whether the retrievers keep their order.

For each case it prints, per judging order (pool order, random, move-to-front, MM-NS; judging/_adjudication_order.py,
rounds of ``--round-pairs``), the lenient-relevant pairs found after each tenth of the pool's judgments, the
judgments needed to find 90, 95 and 99% of them, and, at the budgets given (shares of the pool), the Kendall tau
(scipy) between the retrievers' order by HR@5 (ir_measures ``Success(rel=3)@5``) and by nDCG@10 under the labels
the adaptive order judged (unjudged pairs absent from the qrels) and under every pooled pair's label.

(a) ``sample``: the bundled MIRIAD-style BEIR sample, its qrels as the oracle (relevance 1 = relevant), pooled from
    the top ``--depth`` of the project's wheel retrievers (bm25, minilm, splade-tiny; sample_config.yaml).
(b) ``paper``: a simulation fitted to the paper's published figures (REFERENCE.md): the seven retrievers' P@3 at
    the lenient and strict cuts (companion scoreboard), six of them pooled at depth 20 (EmbeddingGemma is scored,
    not pooled), ``--queries`` queries (3,185). Fitted: a per-query difficulty (Gamma, shape fitted so that 196 of
    3,185 queries have no strict pair in the pool) and the size of each query's document universe (fitted so the
    pool holds 72.5 pairs per query). Not fitted (no published figure): how precision falls with rank below 3,
    exp(-``--decay`` x (rank - 1)) relative to ranks 1-3; run with other ``--decay`` values to see its effect.

    .venv/bin/python benchmarks/adaptive_judging.py paper
    .venv/bin/python benchmarks/adaptive_judging.py sample
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

from mama_pipeline.judging._adjudication_order import METHODS, RELEVANT, adjudicate, run_lists

SCOREBOARD = {  # P@3 lenient, strict (REFERENCE.md, companion scoreboard)
    "voyage": (0.867, 0.452),
    "octen": (0.804, 0.403),
    "embeddinggemma": (0.784, 0.388),
    "lateon": (0.738, 0.350),
    "gecko": (0.477, 0.193),
    "bm25": (0.417, 0.163),
    "medcpt": (0.334, 0.112),
}
POOLED = ["voyage", "octen", "lateon", "gecko", "bm25", "medcpt"]
PAPER_QUERIES, NO_STRICT, PAIRS_PER_QUERY = 3185, 196, 72.5
MEASURES = ("Success(rel=3)@5", "nDCG@10")
TARGETS = (0.90, 0.95, 0.99)


def simulate(queries: int, decay: float, shape: float, scale: float, seed: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(rankings: query_id, retriever, rank, chunk_id; grades: query_id, chunk_id, score) of the simulation."""
    rng = np.random.default_rng(seed)
    ranks = np.arange(1, 21)
    shape_r = np.exp(-decay * (ranks - 1))
    shape_r /= shape_r[:3].mean()
    names = list(SCOREBOARD)
    p_len = np.array([SCOREBOARD[n][0] for n in names])[:, None] * shape_r
    p_str = np.array([SCOREBOARD[n][1] for n in names])[:, None] * shape_r
    expected = {"strict": p_str.sum(), "lenient": (p_len - p_str).sum(), "other": (1 - p_len).clip(0).sum()}
    size = {k: max(2, int(round(scale * v))) for k, v in expected.items()}
    rows_q, rows_r, rows_k, rows_c, grades = [], [], [], [], {}
    for q in range(queries):
        qid = f"q_{q:05d}"
        m = rng.gamma(shape, 1 / shape)
        pl_q, ps_q = np.minimum(p_len * m, 1), np.minimum(p_str * m, 1)
        pools = {}
        for cls, n in size.items():  # each class's documents, popularity 1/(1 + i) (Zipf)
            ids = [f"{qid}_{cls}_{i}" for i in range(n)]
            pools[cls] = (ids, np.log(1.0 / (1.0 + np.arange(n))))
            for doc in ids:
                grades[doc] = (
                    qid,
                    int(
                        rng.integers(5, 7)
                        if cls == "strict"
                        else rng.integers(3, 5)
                        if cls == "lenient"
                        else rng.choice([0, 0, 0, 1, 2])
                    ),
                )
        for s, name in enumerate(names):
            u = rng.random(20)
            cls_at = np.where(u < ps_q[s], "strict", np.where(u < pl_q[s], "lenient", "other"))
            order = {
                c: list(np.array(ids)[np.argsort(-(w + rng.gumbel(size=w.size)))]) for c, (ids, w) in pools.items()
            }
            for r, c in enumerate(cls_at, start=1):
                doc = (order[c] or order["other"] or order["lenient"] or order["strict"]).pop(0)
                rows_q.append(qid)
                rows_r.append(name)
                rows_k.append(r)
                rows_c.append(doc)
    ranked = pl.DataFrame({"query_id": rows_q, "retriever": rows_r, "rank": rows_k, "chunk_id": rows_c})
    g = pl.DataFrame(
        {
            "chunk_id": list(grades),
            "query_id": [v[0] for v in grades.values()],
            "score": [v[1] for v in grades.values()],
        }
    )
    return ranked, g


def pool_of(ranked: pl.DataFrame, pooled: list[str], depth: int) -> pl.DataFrame:
    return (
        ranked.filter(pl.col("retriever").is_in(pooled) & (pl.col("rank") <= depth))
        .select("query_id", "chunk_id")
        .unique()
        .sort("query_id", "chunk_id")
    )


def fit_paper(queries: int, decay: float, seed: int) -> tuple[float, float]:
    """(difficulty shape, universe scale) matching 196/3,185 queries without a strict pair and 72.5 pairs a query
    (bisection on a 300-query simulation each)."""
    n = min(queries, 300)

    def stats(shape: float, scale: float) -> tuple[float, float]:
        ranked, g = simulate(n, decay, shape, scale, seed)
        pool = pool_of(ranked, POOLED, 20).join(g, on=["query_id", "chunk_id"])
        strict = pool.group_by("query_id").agg((pl.col("score") >= 5).any().alias("s"))
        return 1 - strict["s"].mean(), pool.height / n

    def fit_scale(shape: float, lo: float, hi: float, steps: int) -> float:
        for _ in range(steps):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if stats(shape, mid)[1] < PAIRS_PER_QUERY else (lo, mid)
        return (lo + hi) / 2

    scale = fit_scale(1.0, 0.3, 6.0, 7)
    lo, hi = 0.05, 20.0  # difficulty shape: smaller = more queries without a strict pair
    for _ in range(8):
        mid = np.sqrt(lo * hi)
        lo, hi = (mid, hi) if stats(mid, scale)[0] > NO_STRICT / PAPER_QUERIES else (lo, mid)
    scale = fit_scale(np.sqrt(lo * hi), scale * 0.8, scale * 1.25, 5)
    return float(np.sqrt(lo * hi)), float(scale)


def measures(ranked: pl.DataFrame, qrels: pl.DataFrame) -> pl.DataFrame:
    """Per retriever, the mean of each of MEASURES over the queries (ir_measures)."""
    import ir_measures

    parsed = [ir_measures.parse_measure(m) for m in MEASURES]
    qr = qrels.select(pl.col("query_id"), pl.col("chunk_id").alias("doc_id"), pl.col("score").alias("relevance"))
    out = []
    for name in ranked["retriever"].unique().sort().to_list():
        run = ranked.filter(pl.col("retriever") == name).select(
            "query_id", pl.col("chunk_id").alias("doc_id"), (100.0 - pl.col("rank")).alias("score")
        )
        agg = ir_measures.calc_aggregate(parsed, qr.to_pandas(), run.to_pandas())
        out.append({"retriever": name, **{m: float(agg[p]) for m, p in zip(MEASURES, parsed)}})
    return pl.DataFrame(out)


def curves(pool: pl.DataFrame, ranked: pl.DataFrame, grades: pl.DataFrame, round_pairs: int, seed: int, budgets):
    from scipy.stats import kendalltau

    labelled = pool.join(grades, on=["query_id", "chunk_id"], how="left").with_columns(pl.col("score").fill_null(0))
    rel = (labelled["score"].to_numpy() >= 3).astype(np.int8)
    total = int(rel.sum())
    lists = run_lists(pool, ranked.join(pool, on=["query_id", "chunk_id"], how="semi"))
    full = measures(ranked, labelled)
    tenths = [round(pool.height * k / 10) for k in range(1, 11)]
    table, taus = [], []
    for method in METHODS:
        t0 = time.perf_counter()
        done = adjudicate(
            lists, method, lambda idx: np.where(rel[idx] == 1, RELEVANT, 0), pool.height, round_pairs, seed
        )
        secs = time.perf_counter() - t0
        found = np.cumsum(done.labels == RELEVANT)
        row = {"method": method, **{f"{k * 10}%": int(found[n - 1]) for k, n in enumerate(tenths, start=1)}}
        for t in TARGETS:
            need = int(np.searchsorted(found, np.ceil(t * total)) + 1)
            row[f"for {t:.0%}"] = f"{need} ({need / pool.height:.1%})"
        row["order s"] = round(secs, 1)
        table.append(row)
        if method in ("mtf", "mmns"):
            for b in budgets:
                judged = labelled[np.sort(done.order[: round(b * pool.height)])]
                adaptive = measures(ranked, judged)
                row_t = {
                    "method": method,
                    "budget": f"{b:.0%}",
                    "lenient found": f"{int(rel[done.order[: round(b * pool.height)]].sum()) / total:.3f}",
                }
                for m in MEASURES:
                    tau = kendalltau(full[m].to_numpy(), adaptive[m].to_numpy()).statistic
                    row_t[f"tau {m}"] = round(float(tau), 3)
                taus.append(row_t)
    return total, pl.DataFrame(table), pl.DataFrame(taus), full


def case_paper(a) -> None:
    shape, scale = (a.shape, a.scale) if a.shape else fit_paper(a.queries, a.decay, a.seed)
    ranked, grades = simulate(a.queries, a.decay, shape, scale, a.seed)
    pool = pool_of(ranked, POOLED, 20)
    strict = pool.join(grades, on=["query_id", "chunk_id"]).group_by("query_id").agg((pl.col("score") >= 5).any())
    print(
        f"(b) simulation: {a.queries} queries, decay {a.decay}, fitted difficulty shape {shape:.3f}, "
        f"universe scale {scale:.3f}; pool {pool.height} pairs ({pool.height / a.queries:.1f} per query; paper "
        f"{PAIRS_PER_QUERY}), queries without a strict pair {int((~strict['score']).sum())} of {a.queries} "
        f"(paper {NO_STRICT} of {PAPER_QUERIES})"
    )
    report(pool, ranked, grades, a)


def case_sample(a) -> None:
    from mama_pipeline.evaluation._beir import read_beir
    from mama_pipeline.evaluation._beir_evaluation import registry_inputs, run_registry
    from mama_pipeline.retrieval._registry import RetrievalEnv
    from mama_pipeline.settings import load_settings
    from mama_pipeline.store import Store

    settings = load_settings(Path(__file__).resolve().parents[1] / "mama_pipeline" / "sample_config.yaml")
    bench = read_beir(settings.resolve("sample_data/upstream/miriad_beir_sample"), "test", "miriad-sample")
    chunks, queries = registry_inputs(bench)
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "mama.duckdb")

        def env(load_rankings):
            return RetrievalEnv(
                store=store,
                work_dir=Path(tmp) / "retrieval",
                resolve=settings.resolve,
                load_rankings=load_rankings,
                log=lambda m: print(m, file=sys.stderr),
            )

        ranked, _ = run_registry(a.retrievers, chunks, queries, a.depth, settings.retrieval, env)
    ranked = ranked.select("query_id", "retriever", pl.col("rank").cast(pl.Int64), "chunk_id")
    grades = bench.qrels.select(
        "query_id", pl.col("doc_id").alias("chunk_id"), (pl.col("relevance") * 3).alias("score")
    )  # relevant = at the lenient cut
    pool = pool_of(ranked, a.retrievers, a.depth)
    print(
        f"(a) MIRIAD-style sample: {queries.height} queries, {chunks.height} documents, retrievers "
        f"{', '.join(a.retrievers)} pooled at depth {a.depth}: {pool.height} pairs"
    )
    report(pool, ranked, grades, a)


def report(pool, ranked, grades, a) -> None:
    total, table, taus, full = curves(pool, ranked, grades, a.round_pairs, a.seed, a.budgets)
    pl.Config.set_tbl_cols(30)
    pl.Config.set_tbl_width_chars(250)
    pl.Config.set_tbl_hide_dataframe_shape(True)
    print(
        f"lenient-relevant pairs in the pool: {total} of {pool.height}; relevant found after each tenth of the "
        f"pool's judgments, and judgments needed for 90/95/99% (rounds of {a.round_pairs}):"
    )
    print(table)
    print("retrievers under full judging:")
    print(full.sort(MEASURES[1], descending=True))
    print("Kendall tau of the retrievers' order, adaptive labels (unjudged = absent) vs every pooled label:")
    print(taus)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("case", choices=["paper", "sample"])
    ap.add_argument("--queries", type=int, default=PAPER_QUERIES)
    ap.add_argument("--decay", type=float, default=0.05)
    ap.add_argument("--shape", type=float, help="skip the fit: difficulty shape")
    ap.add_argument("--scale", type=float, help="skip the fit: universe scale")
    ap.add_argument("--round-pairs", type=int, default=2048)
    ap.add_argument("--budgets", type=float, nargs="+", default=[0.4, 0.5, 0.6])
    ap.add_argument("--retrievers", nargs="+", default=["bm25", "minilm", "splade-tiny"])
    ap.add_argument("--depth", type=int, default=20)
    ap.add_argument("--seed", type=int, default=20250716)
    a = ap.parse_args()
    case_paper(a) if a.case == "paper" else case_sample(a)


if __name__ == "__main__":
    main()
