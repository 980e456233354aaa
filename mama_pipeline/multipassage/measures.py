"""Measures of the multi-passage track, all computed by ir_measures.

Three qrels tables per question:

- **pieces**: each chunk of the question's set is one required piece (relevance 1);
- **diversity**: the same pieces, each its own subtopic (``iteration`` = its position
  in the set), for the ndeval provider's alpha-nDCG@k;
- **graded**: the judge's 0..6 labels of the pooled chunks, with every required
  piece raised to at least the lenient cut (a piece is relevant by construction;
  other pooled chunks count as relevant when the judge says so). The single-chunk
  headline measures (``evaluation.measures.mamaretrieval_plan``) run on it.

Track measures, per question: ``alpha_nDCG@k`` (pyndeval, one subtopic per piece);
``R@k[pieces]``, the share of required pieces in the top k (pytrec_eval ``R@k`` on
the pieces qrels); ``AllIn@k[pieces]``, 1 when every piece is in the top k: exactly
when that ``R@k`` is 1 (pieces are the only relevant documents, so recall 1 means
all of them were retrieved), else 0. A question the retriever returned nothing for
scores 0, as a user would experience it.
"""
from __future__ import annotations

from collections.abc import Sequence

import ir_measures
import polars as pl

from mama_pipeline.evaluation.scoring import PER_QUERY_SCHEMA, _run_dict

PIECES = "[pieces]"


def alpha_ndcg_name(k: int, alpha: float) -> str:
    return str(ir_measures.parse_measure(f"alpha_nDCG(alpha={alpha})@{k}"))


def track_measure_names(cutoffs: Sequence[int], alpha: float) -> list[str]:
    """The track's measure names, per cutoff: alpha-nDCG, piece recall, all pieces in."""
    names = []
    for k in cutoffs:
        names += [alpha_ndcg_name(k, alpha), f"R@{k}{PIECES}", f"AllIn@{k}{PIECES}"]
    return names


def piece_qrels(questions: pl.DataFrame) -> pl.DataFrame:
    """(query_id, doc_id, relevance 1, iteration = piece position) for every required piece."""
    return (
        questions.select("query_id", pl.col("chunk_ids").alias("doc_id"))
        .with_columns(iteration=pl.int_ranges(pl.col("doc_id").list.len()))
        .explode("doc_id", "iteration")
        .select(pl.col("query_id").cast(pl.String), pl.col("doc_id").cast(pl.String),
                pl.lit(1, pl.Int64).alias("relevance"), pl.col("iteration").cast(pl.String))
    )


def graded_qrels(labels: pl.DataFrame, questions: pl.DataFrame, lenient: int) -> pl.DataFrame:
    """Judge labels (query_id, chunk_id, score) with required pieces raised to at least ``lenient``."""
    judged = labels.select(pl.col("query_id").cast(pl.String), pl.col("chunk_id").cast(pl.String).alias("doc_id"),
                           pl.col("score").cast(pl.Int64).alias("relevance"))
    pieces = piece_qrels(questions).select("query_id", "doc_id", pl.lit(lenient, pl.Int64).alias("piece"))
    return (
        judged.join(pieces, on=["query_id", "doc_id"], how="full", coalesce=True)
        .select("query_id", "doc_id", pl.max_horizontal(pl.col("relevance").fill_null(0),
                                                         pl.col("piece").fill_null(0)).alias("relevance"))
        .sort("query_id", "doc_id")
    )


def track_values(
    run: pl.DataFrame, questions: pl.DataFrame, retrievers: Sequence[str], cutoffs: Sequence[int], alpha: float
) -> pl.DataFrame:
    """Per (retriever, question, track measure) value; ``run``: (retriever, query_id, doc_id, rank)."""
    pieces = piece_qrels(questions)
    qids = questions["query_id"].cast(pl.String).to_list()
    diversity = [ir_measures.Qrel(*row) for row in pieces.select("query_id", "doc_id", "relevance", "iteration").iter_rows()]
    binary = {q: dict(zip(d, r)) for q, d, r in pieces.group_by("query_id").agg("doc_id", "relevance").iter_rows()}
    alpha_ms = {alpha_ndcg_name(k, alpha): ir_measures.parse_measure(alpha_ndcg_name(k, alpha)) for k in cutoffs}
    recall_ms = {k: ir_measures.parse_measure(f"R@{k}") for k in cutoffs}
    rows: dict[str, list] = {c: [] for c in PER_QUERY_SCHEMA}

    def add(retriever: str, qid: str, measure: str, value: float) -> None:
        for col, v in zip(PER_QUERY_SCHEMA, (retriever, qid, measure, value)):
            rows[col].append(v)

    for name in retrievers:
        run_dict = {q: d for q, d in _run_dict(run.filter(pl.col("retriever") == name)).items() if q in binary}
        found: dict[tuple[str, str], float] = {}
        if run_dict:
            for metric in ir_measures.pyndeval.evaluator(list(alpha_ms.values()), diversity).iter_calc(run_dict):
                found[(metric.query_id, str(metric.measure))] = float(metric.value)
            for metric in ir_measures.pytrec_eval.evaluator(list(recall_ms.values()), binary).iter_calc(run_dict):
                k = metric.measure["cutoff"]
                found[(metric.query_id, f"R@{k}{PIECES}")] = float(metric.value)
                found[(metric.query_id, f"AllIn@{k}{PIECES}")] = 1.0 if metric.value == 1.0 else 0.0
        for qid in qids:
            for measure in track_measure_names(cutoffs, alpha):
                add(name, qid, measure, found.get((qid, measure), 0.0))
    return pl.DataFrame(rows, schema=PER_QUERY_SCHEMA)
