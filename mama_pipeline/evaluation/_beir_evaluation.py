"""Evaluate configured retrievers (the retrieval registry) on a BEIR benchmark.

The benchmark's documents become the registry's chunks (``title text``), its
selected queries the queries; every retriever ranks the top max(cutoffs), and
the scoreboard, per-query values and paired significance are computed exactly
as for mamaretrieval, with one relevance cut (label >= 1) and graded nDCG gains.
Audits run alongside: the leak audit on the qrels, and the truncation share each
encoder retriever reports for the documents (in its own tokenizer's tokens).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from mama_pipeline.common.progress import track
from mama_pipeline.evaluation._audits import leak_audit
from mama_pipeline.evaluation._beir import PRESETS, BeirBenchmark, download_beir, read_beir
from mama_pipeline.evaluation._judged_scoreboard import check_measures
from mama_pipeline.evaluation._per_query_scoring import Evaluation, evaluate, scoreboard
from mama_pipeline.evaluation._runs import rankings_to_run
from mama_pipeline.evaluation._scoreboard_measures import beir_plan, zero_one_measures
from mama_pipeline.evaluation._significance import pairwise_significance
from mama_pipeline.evaluation.settings import BeirBenchmarkSettings

Retrieve = Callable[[pl.DataFrame, pl.DataFrame], pl.DataFrame]  # (chunks, queries) -> rankings


@dataclass
class LoadedBenchmark:
    benchmark: BeirBenchmark
    query_ids: list[str]
    provenance: dict[str, object]


@dataclass
class BeirResult:
    name: str
    evaluation: Evaluation
    board: pl.DataFrame
    significance: pl.DataFrame
    run: pl.DataFrame
    qrels: pl.DataFrame
    leak: dict[str, object]
    truncation: pl.DataFrame
    notes: dict[str, object] = field(default_factory=dict)


def load_benchmark(cfg: BeirBenchmarkSettings, resolve: Callable[[str], Path]) -> LoadedBenchmark:
    """Read the configured benchmark (local folder, preset or hub id) and pick its queries."""
    preset = PRESETS.get(cfg.preset) if cfg.preset else None
    if cfg.preset and preset is None:
        raise ValueError(f"benchmark {cfg.name!r}: unknown preset {cfg.preset!r}; known: {sorted(PRESETS)}")
    split = cfg.split or (preset.split if preset else "test")
    max_queries = cfg.max_queries or (preset.max_queries if preset else None)
    if cfg.path:
        folder = resolve(cfg.path)
        provenance: dict[str, object] = {"source": str(folder)}
    else:
        repo_id = cfg.repo_id or preset.repo_id
        folder = download_beir(repo_id, cfg.revision or "")
        provenance = {"source": f"hf://datasets/{repo_id}", "revision": cfg.revision}
    benchmark = read_beir(folder, split, cfg.name)
    query_ids = benchmark.benchmark_query_ids(max_queries)
    provenance.update(
        {"split": split, "max_queries": max_queries, "queries": len(query_ids), "documents": benchmark.corpus.height}
    )
    return LoadedBenchmark(benchmark.subset(query_ids), query_ids, provenance)


def registry_inputs(benchmark: BeirBenchmark) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(chunks, queries) in the retrieval registry's columns; corpus_version names the benchmark and its texts."""
    text = (
        pl.when(pl.col("title").fill_null("") != "")
        .then(pl.col("title") + " " + pl.col("text"))
        .otherwise(pl.col("text"))
    )
    chunks = benchmark.corpus.select(pl.col("doc_id").alias("chunk_id"), text.alias("text"))
    chunks = chunks.with_columns(pl.lit(corpus_version(chunks, benchmark.name)).alias("corpus_version"))
    queries = benchmark.queries.select("query_id", pl.col("text").alias("query_text"))
    return chunks, queries


def corpus_version(chunks: pl.DataFrame, name: str) -> str:
    """``beir-<name>-<digest of the document ids and texts>``."""
    digest = hashlib.sha256()
    for chunk_id, body in chunks.select("chunk_id", "text").sort("chunk_id").iter_rows():
        digest.update(chunk_id.encode() + b"\0" + body.encode() + b"\0")
    return f"beir-{name}-{digest.hexdigest()[:12]}"


def run_registry(
    names: list[str], chunks: pl.DataFrame, queries: pl.DataFrame, depth: int, retrieval_settings, env_factory
) -> tuple[pl.DataFrame, dict[str, dict]]:
    """Rankings of the named registry retrievers (in order: fusions after their runs) and their metadata."""
    from mama_pipeline.retrieval import rankings_in, run_retriever

    done: dict[str, pl.DataFrame] = {}

    def load_rankings(wanted: list[str], query_ids: list[str]) -> pl.DataFrame:
        missing = [w for w in wanted if w not in done]
        if missing:
            raise ValueError(
                f"runs {missing} must be listed before the fusion or reranker that reads them "
                "in the benchmark's retrievers"
            )
        return rankings_in(pl.concat([done[w] for w in wanted]))(wanted, query_ids)

    env = env_factory(load_rankings)
    metadata = {}
    # retrievers differ in cost (BM25 in seconds, an encoder in minutes): a count, no estimate from it; each
    # encoder reports its own progress and time left
    with track(
        f"retrievers on {queries.height} queries, {chunks.height} documents",
        total=len(names),
        unit="retrievers",
        heartbeat=True,
    ) as bar:
        for name in names:
            out = run_retriever(retrieval_settings.retriever(name), chunks, queries, depth, env)
            done[name] = out.rankings
            metadata[name] = out.metadata
            bar.update()
    return pl.concat(list(done.values())) if done else pl.DataFrame(), metadata


def evaluate_beir(
    loaded: LoadedBenchmark,
    rankings: pl.DataFrame,
    cfg: BeirBenchmarkSettings,
    retriever_metadata: dict[str, dict] | None = None,
    resamples: int = 5000,
    seed: int = 0,
    confidence: float = 0.95,
) -> BeirResult:
    """Scoreboard, significance and audits of ``rankings`` (query_id, retriever, rank, chunk_id) on the benchmark."""
    plan = beir_plan(cfg.cutoffs)
    check_measures(cfg.significance_measures, plan.by_name(), f"evaluation.beir[{cfg.name}].significance_measures")
    bench = loaded.benchmark
    run = rankings_to_run(rankings)
    evaluation = evaluate(
        run, bench.qrels, loaded.query_ids, plan, cfg.retrievers, f"rankings of {cfg.name}", bench.source
    )
    board = scoreboard(evaluation, bench.qrels)
    significance = pairwise_significance(
        evaluation.per_query,
        cfg.significance_measures,
        cfg.retrievers,
        n_resamples=resamples,
        seed=seed,
        confidence=confidence,
        binary_measures=zero_one_measures(cfg.significance_measures),
    )
    leak, leaked = leak_audit(bench.queries, bench.corpus, bench.qrels)
    leak["leaked_query_ids"] = leaked["query_id"].unique(maintain_order=True).to_list()[:20]
    notes = {
        **loaded.provenance,
        "corpus_version": corpus_version(registry_inputs(bench)[0], bench.name),
        "queries_without_results": evaluation.without_results,
        "dropped": evaluation.dropped,
    }
    return BeirResult(
        cfg.name,
        evaluation,
        board,
        significance,
        run,
        bench.qrels,
        leak,
        truncation_from_metadata(retriever_metadata or {}),
        notes,
    )


def truncation_from_metadata(metadata: dict[str, dict]) -> pl.DataFrame:
    """Per encoder retriever: documents longer than its max_seq_length, as the registry counted them
    (for a reranker: its query + document pairs)."""
    rows = []
    for name, m in metadata.items():
        if m.get("max_seq_length") is None:
            continue
        kind = "pairs" if "pairs_truncated" in m else "chunks" if "chunks_truncated" in m else None
        if kind:
            total, longer = m[kind], m[f"{kind}_truncated"]
            rows.append(
                {
                    "retriever": name,
                    "model": str(m.get("model")),
                    "max_seq_length": m["max_seq_length"],
                    "documents": total,
                    "longer_than_max": longer,
                    "share_longer_than_max": longer / total if total else 0.0,
                }
            )
    return pl.DataFrame(
        rows,
        schema={
            "retriever": pl.String,
            "model": pl.String,
            "max_seq_length": pl.Int64,
            "documents": pl.Int64,
            "longer_than_max": pl.Int64,
            "share_longer_than_max": pl.Float64,
        },
    )


def beir_report_inputs(
    result: BeirResult,
    cfg: BeirBenchmarkSettings,
    retriever_metadata: dict[str, dict] | None,
    resamples: int,
    seed: int,
    confidence: float = 0.95,
    alpha: float = 0.05,
):
    """The HTML report of one BEIR evaluation: facts, intervals, significance, qrels labels, audits."""
    from mama_pipeline.evaluation._retrieval_page import ReportInputs

    notes = result.notes
    ev = result.evaluation
    qrels = result.qrels.join(
        pl.DataFrame({"query_id": ev.query_ids}, schema={"query_id": pl.String}), on="query_id", how="semi"
    )
    models = "; ".join(
        f"{name}: {meta.get('model', meta.get('kind', 'n/a'))}" for name, meta in (retriever_metadata or {}).items()
    )
    source = str(notes.get("source", ""))
    if notes.get("revision"):
        source += f" at revision {notes['revision']}"
    header = [
        ("benchmark", f"{cfg.name} ({source})"),
        ("corpus version", str(notes.get("corpus_version", ""))),
        ("relevance labels", "the benchmark's qrels (no LLM judge, no prompt)"),
        ("split", str(notes.get("split", ""))),
        (
            "counts",
            f"{notes.get('documents', '?')} documents, {len(ev.query_ids)} queries"
            + (f" (first {notes['max_queries']})" if notes.get("max_queries") else "")
            + f", {qrels.height} qrels, {len(ev.retrievers)} retrievers",
        ),
        ("retrievers", models or ", ".join(ev.retrievers)),
        (
            "statistics",
            f"{confidence:.0%} bootstrap intervals and paired randomization tests, {resamples} "
            f"resamples, seed {seed}; Holm correction across pairs",
        ),
    ]
    empty = {k: v for k, v in (notes.get("queries_without_results") or {}).items() if v}
    sentences = [f"Queries with no result: {', '.join(f'{k} {v}' for k, v in sorted(empty.items()))}."] if empty else []
    dropped = {k: v for k, v in (notes.get("dropped") or {}).items() if v}
    if dropped:
        sentences.append("Left out: " + "; ".join(f"{v} {k}" for k, v in sorted(dropped.items())) + ".")
    leak = pl.DataFrame(
        [{"figure": k, "value": str(v)} for k, v in result.leak.items() if isinstance(v, (int, float))],
        schema={"figure": pl.String, "value": pl.String},
    )
    return ReportInputs(
        title=f"BEIR benchmark {cfg.name}",
        board=result.board,
        significance=result.significance,
        headline=cfg.significance_measures[0],
        header=header,
        notes=sentences,
        per_query=ev.per_query,
        headline_measures=cfg.significance_measures,
        label_counts=qrels.group_by("relevance").agg(pl.len().alias("count")),
        audits=[
            ("Leak audit (queries found verbatim in a relevant document)", leak),
            ("Truncation audit (documents longer than each encoder's limit)", result.truncation),
        ],
        alpha=alpha,
        confidence=confidence,
        resamples=resamples,
        seed=seed,
    )
