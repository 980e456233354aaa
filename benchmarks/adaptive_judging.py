"""Adaptive judging: relevant pairs found against judgments made, and whether the retrievers keep their order.

For each case it prints, per judging order (pool order, random, move-to-front, MM-NS, fusion;
judging/_adjudication_order.py, rounds of ``--round-pairs``), the lenient-relevant pairs found after each tenth of
the pool's judgments, the judgments needed to find 90, 95 and 99% of them, and, at the budgets given (shares of
the pool), the Kendall tau (scipy) between the retrievers' order by HR@5 (ir_measures ``Success(rel=3)@5``) and
by nDCG@10 under the labels the adaptive order judged (unjudged pairs absent from the qrels) and under every
pooled pair's label.

(a) ``sample``: the bundled MIRIAD-style BEIR sample, its qrels as the oracle (relevance 1 = relevant), pooled from
    the top ``--depth`` of the project's wheel retrievers (bm25, minilm, splade-tiny; sample_config.yaml).
(b) ``paper``: a simulation of ``--queries`` queries (3,185) in which relevance belongs to the document and the
    retrievers share what they see of it (``draw``): each retriever scores every candidate document of a query
    with its own strength on the document's grade, a part shared by all retrievers and a part of its own, and
    returns its top 20; six are pooled (EmbeddingGemma is scored, not pooled). Overlap between the retrievers and
    the fall of precision with rank follow from the scores. Fitted (``fit_paper``) to the published figures
    only (REFERENCE.md section 2), each printed beside its simulated value: the seven retrievers' P@3 lenient and
    strict (companion scoreboard), 72.5 pairs a query in the pool, 196 of 3,185 queries without a strict pair, and
    the first pool's lenient recall of about 0.49 (top-10 of bm25, medcpt and octen against the audit's top-20 of
    five); the first pool's 24.7 pairs a query is printed as a check, not fitted. Not published, so given and
    varied: the non-relevant candidates a query (``--n0``) and the spread of relevant documents over queries
    (``--dispersion``, a Gamma shape).
(c) ``bill``: ``mama-pipeline plan`` of the judge under the paper's configuration, ``full`` and ``adaptive`` at
    each of ``--budgets``, on a store holding a pool of the paper's size.

    .venv/bin/python benchmarks/adaptive_judging.py paper
    .venv/bin/python benchmarks/adaptive_judging.py paper --n0 300 3000 --budgets 0.5 0.6
    .venv/bin/python benchmarks/adaptive_judging.py paper --dispersion 0.5 4 --budgets 0.5 0.6
    .venv/bin/python benchmarks/adaptive_judging.py sample --round-pairs 64
    .venv/bin/python benchmarks/adaptive_judging.py bill --budgets 0.5 0.6
"""

from __future__ import annotations

import argparse
import os
import re
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
NAMES = list(SCOREBOARD)
POOLED = ["voyage", "octen", "lateon", "gecko", "bm25", "medcpt"]  # the released pool: top-20 of these six
FIRST = ["bm25", "medcpt", "octen"]  # the first pool: their top-10, 78,571 pairs (24.7 a query)
AUDIT = ["voyage", "octen", "lateon", "bm25", "medcpt"]  # the audit's wider pool: their top-20
PAPER_QUERIES, NO_STRICT, PAIRS_PER_QUERY, FIRST_PER_QUERY, FIRST_RECALL = 3185, 196, 72.5, 24.7, 0.49
MEASURES = ("Success(rel=3)@5", "nDCG@10")
TARGETS = (0.90, 0.95, 0.99)
DEPTH = 20


def _logit(v):
    return np.log(v / (1 - v))


def _expit(v):
    return 1 / (1 + np.exp(-v))


def draw(queries: int, p: dict, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(top: retriever x query x rank -> document, relevant and strict: query x document) of one simulation.

    A query holds 1 + Poisson(lam x Gamma(k, 1/k)) relevant documents (document 0 is its seed chunk, strict with
    chance sigma; the others strict with chance pi) and n0 non-relevant candidates. Retriever s scores document d
    mu_s x g_d + sqrt(rho) c_d + sqrt(1 - rho) e_sd (g: 0 non-relevant, 1 lenient, b strict; c shared by the
    retrievers, e its own) and returns its top 20: overlap and rank decay follow from the scores."""
    rng = np.random.default_rng(seed)
    relevant_n = 1 + rng.poisson(p["lam"] * rng.gamma(p["k"], 1 / p["k"], queries))
    rmax, n0 = int(relevant_n.max()), int(p["n0"])
    doc = np.arange(rmax + n0)
    rel = doc[None] < relevant_n[:, None]
    valid = rel | (doc[None] >= rmax)
    strict = rel & (rng.random(rel.shape) < p["pi"])
    strict[:, 0] = rng.random(queries) < p["sigma"]
    gain = np.where(strict, p["b"], rel.astype(float))
    shared = np.sqrt(p["rho"]) * rng.standard_normal(rel.shape)
    x = p["mu"][:, None, None] * gain[None] + shared[None]
    x += np.sqrt(1 - p["rho"]) * rng.standard_normal((len(NAMES), *rel.shape))
    x[:, ~valid] = -np.inf
    top = np.argpartition(-x, DEPTH, axis=2)[..., :DEPTH]
    top = np.take_along_axis(top, np.argsort(-np.take_along_axis(x, top, 2), axis=2), 2)
    return top, rel, strict


def published_figures(top: np.ndarray, rel: np.ndarray, strict: np.ndarray) -> dict:
    """The simulation's values of the published figures (REFERENCE.md section 2)."""
    q = np.arange(rel.shape[0])[:, None]
    at = {n: i for i, n in enumerate(NAMES)}

    def union(names, depth):
        m = np.zeros(rel.shape, dtype=bool)
        for n in names:
            m[q, top[at[n], :, :depth]] = True
        return m

    pool, first, audit = union(POOLED, DEPTH), union(FIRST, 10), union(AUDIT, DEPTH)
    return {
        "p3_lenient": np.array([rel[q, top[s, :, :3]].mean() for s in range(len(NAMES))]),
        "p3_strict": np.array([strict[q, top[s, :, :3]].mean() for s in range(len(NAMES))]),
        "pairs_per_query": pool.sum() / rel.shape[0],
        "first_per_query": first.sum() / rel.shape[0],
        "first_recall": (first & rel).sum() / (audit & rel).sum(),
        "no_strict_share": 1 - (pool & strict).any(1).mean(),
        "relevant_share": (pool & rel).sum() / pool.sum(),
    }


def fit_paper(n0: int, k: float, seed: int, queries: int = 1600, iters: int = 45) -> dict:
    """mu (7), pi, b, sigma, rho and lam fitted to the published figures: each step moves every parameter
    against its figure's error on one simulation of ``queries`` queries (the same random numbers each step);
    the parameters are averaged over the last third of the steps. n0 and k are not published: given."""
    target_l = np.array([v[0] for v in SCOREBOARD.values()])
    target_s = np.array([v[1] for v in SCOREBOARD.values()])
    p = {"mu": np.full(len(NAMES), 2.0), "rho": 0.5, "pi": 0.4, "b": 1.5, "lam": 10.0, "sigma": 0.8, "k": k, "n0": n0}
    kept, eta = [], 0.35
    for step in range(iters):
        f = published_figures(*draw(queries, p, seed))
        p["mu"] = p["mu"] + eta * (_logit(target_l) - _logit(np.clip(f["p3_lenient"], 1e-3, 1 - 1e-3)))
        share = np.clip(f["p3_strict"] / np.maximum(f["p3_lenient"], 1e-3), 1e-3, 1 - 1e-3)
        miss = _logit(target_s / target_l) - _logit(share)  # strict share of the top-3 relevant, per retriever
        p["pi"] = float(_expit(_logit(p["pi"]) + eta * miss.mean()))
        p["b"] = float(np.clip(p["b"] + 0.5 * eta * np.polyfit(_logit(target_l), miss, 1)[0], 1.0, 4.0))
        p["rho"] = float(_expit(_logit(p["rho"]) + 3 * eta * (f["pairs_per_query"] / PAIRS_PER_QUERY - 1)))
        p["lam"] = float(p["lam"] * np.exp(3 * eta * (f["first_recall"] - FIRST_RECALL)))
        no_strict = NO_STRICT / PAPER_QUERIES
        sigma = _logit(np.clip(p["sigma"], 1e-4, 1 - 1e-4))
        p["sigma"] = float(_expit(sigma + 3 * eta * (f["no_strict_share"] / no_strict - 1)))
        if step >= iters - iters // 3:
            kept.append({key: np.copy(v) for key, v in p.items()})
    return {key: np.mean([kp[key] for kp in kept], axis=0) for key in p}


def simulate(queries: int, p: dict, seed: int) -> tuple[pl.DataFrame, pl.DataFrame, dict]:
    """(rankings: query_id, retriever, rank, chunk_id; grades: query_id, chunk_id, score; published figures) of a
    simulation of ``queries`` queries, drawn 500 at a time. Grades: strict 5-6, lenient 3-4, non-relevant 0-2."""
    ranked, grades, figures = [], [], []
    for part, first in enumerate(range(0, queries, 500)):
        n = min(500, queries - first)
        top, rel, strict = draw(n, p, seed + part)
        figures.append((n, published_figures(top, rel, strict)))
        qid = np.char.add("q_", np.char.zfill((np.arange(n) + first).astype(str), 5))
        s, q, r = np.meshgrid(np.arange(len(NAMES)), np.arange(n), np.arange(DEPTH), indexing="ij")
        rng = np.random.default_rng(seed + 10_000 + part)
        score = np.where(strict, 5, np.where(rel, 3, 0)) + rng.integers(0, 2, rel.shape)
        score = np.where(rel, score, rng.choice([0, 0, 0, 1, 2], rel.shape))
        rows = pl.DataFrame(
            {
                "query_id": qid[q.ravel()],
                "retriever": np.array(NAMES)[s.ravel()],
                "rank": r.ravel() + 1,
                "doc": top.ravel(),
                "score": score[q.ravel(), top.ravel()],
            }
        ).with_columns(chunk_id=pl.format("{}_d{}", "query_id", "doc"))
        ranked.append(rows.select("query_id", "retriever", "rank", "chunk_id"))
        grades.append(rows.select("query_id", "chunk_id", "score").unique())
    weights = np.array([n for n, _ in figures]) / queries
    merged = {key: sum(w * f[key] for w, (_, f) in zip(weights, figures)) for key in figures[0][1]}
    return pl.concat(ranked), pl.concat(grades), merged


def pool_of(ranked: pl.DataFrame, pooled: list[str], depth: int) -> pl.DataFrame:
    return (
        ranked.filter(pl.col("retriever").is_in(pooled) & (pl.col("rank") <= depth))
        .select("query_id", "chunk_id")
        .unique()
        .sort("query_id", "chunk_id")
    )


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
        if method not in ("pool", "random"):
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
    published = {
        "pairs a query in the pool (top-20 of six)": (PAIRS_PER_QUERY, "pairs_per_query", "fitted"),
        "share of queries without a strict pair": (NO_STRICT / PAPER_QUERIES, "no_strict_share", "fitted"),
        "first pool's lenient recall (top-10 of bm25, medcpt, octen)": (FIRST_RECALL, "first_recall", "fitted"),
        "pairs a query in the first pool": (FIRST_PER_QUERY, "first_per_query", "not fitted: a check"),
    }
    for n0 in a.n0:
        for k in a.dispersion:
            p = fit_paper(n0, k, a.seed)
            ranked, grades, fig = simulate(a.queries, p, a.seed + 1)
            print(
                f"(b) simulation of {a.queries} queries; not published, given: {n0} non-relevant candidates a "
                f"query, dispersion k {k} of the relevant count. Fitted: mu "
                f"{', '.join(f'{n} {m:.2f}' for n, m in zip(NAMES, p['mu']))}; rho {p['rho']:.3f}, lam "
                f"{p['lam']:.1f}, pi {p['pi']:.3f}, b {p['b']:.2f}, sigma {p['sigma']:.3f}"
            )
            print("  figure: published / simulated")
            for n, (lenient, strict) in SCOREBOARD.items():
                i = NAMES.index(n)
                print(
                    f"  P@3 {n} (fitted): lenient {lenient} / {fig['p3_lenient'][i]:.3f}, strict {strict} / "
                    f"{fig['p3_strict'][i]:.3f}"
                )
            for name, (target, key, how) in published.items():
                print(f"  {name} ({how}): {target:.4g} / {fig[key]:.4g}")
            print(f"  lenient-relevant share of the pool (not published): {fig['relevant_share']:.3f}")
            report(pool_of(ranked, POOLED, DEPTH), ranked, grades, a)


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


def case_bill(a) -> None:
    """``mama-pipeline plan`` of the judge under the paper's configuration (config/mamaretrieval-v0.2.yaml) on a
    store holding a pool of the paper's size (3,185 queries, 230,964 pairs; placeholder text, so its prompt
    tokens are not the paper's): under ``full`` and under ``adaptive`` at each of ``--budgets`` (``--method``),
    with the remainder sample's default size. Its bound needs the corpus bundle, which is not here."""
    import subprocess

    import yaml

    from mama_pipeline.store import Store
    from mama_pipeline_tests.support.synthetic_judging import make_chunks, make_pool, make_queries

    root = Path(__file__).resolve().parents[1]
    paper = yaml.safe_load((root / "config" / "mamaretrieval-v0.2.yaml").read_text())
    queries, chunks = make_queries(PAPER_QUERIES), make_chunks(63_650)
    pool = make_pool(queries, chunks, 73).head(230_964)
    strategies = [{}] + [{"strategy": "adaptive", "method": a.method, "budget": b} for b in a.budgets]
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "data" / "mama.duckdb")
        store.write_table(
            "generated_queries",
            queries.with_columns(
                seed_chunk_id=chunks["chunk_id"][: queries.height],
                model=pl.lit("m"),
                prompt_hash=pl.lit("h"),
                temperature=pl.lit(0.0),
                reason=pl.lit(None, pl.String),
                corpus_version=pl.lit("v1"),
            ),
        )
        store.write_table(
            "corpus_chunks",
            chunks.drop("tier").with_columns(
                breadcrumb=pl.lit([], pl.List(pl.String)),
                given_cid=pl.lit(None, pl.String),
                line=pl.col("page"),
                ordinal=pl.col("page"),
            ),
        )
        store.write_table("pooled_pairs", pool)
        for extra in strategies:
            cfg = Path(tmp) / "paper.yaml"
            cfg.write_text(
                yaml.safe_dump({**paper, "data_dir": str(Path(tmp) / "data"), "judging": {**paper["judging"], **extra}})
            )
            out = subprocess.run(
                [
                    str(root / ".venv" / "bin" / "mama-pipeline"),
                    "plan",
                    "--select",
                    'key:"judged_labels"',
                    "--rate",
                    str(a.rate),
                    "--gpus-per-server",
                    "8",
                ],
                env={**os.environ, "MAMA_CONFIG": str(cfg)},
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            sent = int(re.search(r"cached, ([\d,]+) to send", out).group(1).replace(",", ""))
            print(f"judging {extra or {'strategy': 'full'}}: {pool.height:,} pooled pairs; the plan says:")
            print("\n".join("  " + line for line in out.strip().splitlines()))
            print(
                f"  = {sent:,} judge requests; at {a.rate} pairs/s per 8-GPU server (the paper's 0.5-0.7): "
                f"{sent / a.rate / 3600:,.1f} server-hours, {sent / a.rate / 3600 * 8:,.0f} GPU-hours"
            )


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
    ap.add_argument("case", choices=["paper", "sample", "bill"])
    ap.add_argument("--queries", type=int, default=PAPER_QUERIES)
    ap.add_argument("--n0", type=int, nargs="+", default=[1000], help="non-relevant candidates a query")
    ap.add_argument("--dispersion", type=float, nargs="+", default=[1.0], help="Gamma shape k of the relevant count")
    ap.add_argument("--round-pairs", type=int, default=2048)
    ap.add_argument("--budgets", type=float, nargs="+", default=[0.4, 0.5, 0.6])
    ap.add_argument("--retrievers", nargs="+", default=["bm25", "minilm", "splade-tiny"])
    ap.add_argument("--depth", type=int, default=20)
    ap.add_argument("--seed", type=int, default=20250716)
    ap.add_argument("--method", default="fusion", help="bill: the adjudication method")
    ap.add_argument("--rate", type=float, default=0.6, help="bill: judge pairs a second per server")
    a = ap.parse_args()
    {"paper": case_paper, "sample": case_sample, "bill": case_bill}[a.case](a)


if __name__ == "__main__":
    main()
