"""Measures of the multi-passage track, all computed by ir_measures.

The track is nugget-based, as TREC's nugget evaluations are: each question carries the
facts (nuggets) a complete answer needs, each stated by one chunk of its set; the judge
says, for every pooled chunk, which of the question's facts it states. Qrels per question:

- **facts** (diversity qrels): one subtopic per fact (``iteration`` = its number, from 1),
  listing every chunk that states it: the chunk the writer took it from (verified) and
  every pooled chunk the judge found stating it. Two chunks carrying the same fact are
  redundant: alpha-nDCG gains ``(1 - alpha)^c`` for a fact already seen ``c`` times.
- **graded**: the judge's 0..6 relevance labels of the pooled chunks, with every chunk of
  the question's set raised to at least the lenient cut (relevant by construction). The
  single-chunk headline measures (``evaluation.measures.mamaretrieval_plan``) run on it.

Track measures, per question, on the facts qrels: ``alpha_nDCG@k`` (pyndeval);
``R@k[pieces]``, the share of the question's facts (its required pieces of information)
stated by some chunk in the top k (pyndeval ``StRecall@k``, subtopic recall);
``AllIn@k[pieces]``, 1 when every fact is stated in the top k (that recall is 1), else 0.
A question the retriever returned nothing for scores 0, as a user would experience it.
"""

from __future__ import annotations

from collections.abc import Sequence

import ir_measures
import polars as pl

from mama_pipeline.evaluation import PER_QUERY_SCHEMA, pytrec_run

PIECES = "[pieces]"


def alpha_ndcg_name(k: int, alpha: float) -> str:
    return str(ir_measures.parse_measure(f"alpha_nDCG(alpha={alpha})@{k}"))


def track_measure_names(cutoffs: Sequence[int], alpha: float) -> list[str]:
    """The track's measure names, per cutoff: alpha-nDCG, fact recall, every fact in."""
    names = []
    for k in cutoffs:
        names += [alpha_ndcg_name(k, alpha), f"R@{k}{PIECES}", f"AllIn@{k}{PIECES}"]
    return names


def fact_qrels(questions: pl.DataFrame, fact_labels: pl.DataFrame) -> pl.DataFrame:
    """(query_id, doc_id, relevance 1, iteration = fact number) for every chunk stating each fact.

    ``questions``: query_id, fact_chunk_ids (the chunk each fact was taken from, in fact order);
    ``fact_labels``: query_id, chunk_id, facts (numbers, from 1, of the facts the judge found stated).
    """
    own = (
        questions.select("query_id", pl.col("fact_chunk_ids").alias("doc_id"))
        .with_columns(fact=pl.int_ranges(1, pl.col("doc_id").list.len() + 1))
        .explode("doc_id", "fact")
    )
    judged = fact_labels.select("query_id", pl.col("chunk_id").alias("doc_id"), pl.col("facts").alias("fact")).explode(
        "fact"
    )
    known = questions.select("query_id", n=pl.col("fact_chunk_ids").list.len())
    judged = judged.join(known, on="query_id").drop_nulls("fact")
    bad = judged.filter(~pl.col("fact").is_between(1, pl.col("n")))
    if bad.height:
        q, c, f, n = bad.row(0)
        raise ValueError(
            f"fact label of ({q}, {c}) names fact {f} of a question with {n} facts: the labels are stale; "
            "re-materialise multipassage_fact_labels"
        )
    both = pl.concat(
        [
            own.select("query_id", "doc_id", pl.col("fact").cast(pl.Int64)),
            judged.select("query_id", "doc_id", pl.col("fact").cast(pl.Int64)),
        ]
    ).unique()
    return both.sort("query_id", "fact", "doc_id").select(
        pl.col("query_id").cast(pl.String),
        pl.col("doc_id").cast(pl.String),
        pl.lit(1, pl.Int64).alias("relevance"),
        pl.col("fact").cast(pl.String).alias("iteration"),
    )


def graded_qrels(labels: pl.DataFrame, questions: pl.DataFrame, lenient: int) -> pl.DataFrame:
    """Judge labels (query_id, chunk_id, score) with the chunks of each question's set raised to ``lenient``."""
    judged = labels.select(
        pl.col("query_id").cast(pl.String),
        pl.col("chunk_id").cast(pl.String).alias("doc_id"),
        pl.col("score").cast(pl.Int64).alias("relevance"),
    )
    pieces = (
        questions.select(pl.col("query_id").cast(pl.String), pl.col("chunk_ids").alias("doc_id"))
        .explode("doc_id")
        .select("query_id", pl.col("doc_id").cast(pl.String), pl.lit(lenient, pl.Int64).alias("piece"))
    )
    return (
        judged.join(pieces, on=["query_id", "doc_id"], how="full", coalesce=True)
        .select(
            "query_id",
            "doc_id",
            pl.max_horizontal(pl.col("relevance").fill_null(0), pl.col("piece").fill_null(0)).alias("relevance"),
        )
        .sort("query_id", "doc_id")
    )


def track_values(
    run: pl.DataFrame,
    qrels: pl.DataFrame,
    query_ids: Sequence[str],
    retrievers: Sequence[str],
    cutoffs: Sequence[int],
    alpha: float,
) -> pl.DataFrame:
    """Per (retriever, question, track measure) value.

    ``run``: (retriever, query_id, doc_id, rank); ``qrels``: the facts qrels (:func:`fact_qrels`).
    """
    diversity = [
        ir_measures.Qrel(*row) for row in qrels.select("query_id", "doc_id", "relevance", "iteration").iter_rows()
    ]
    judged = set(qrels["query_id"].to_list())
    # ndeval runs once per alpha: StRecall (no alpha) is asked in a call of its own, as pyndeval returns 0 for
    # it when it shares a call with an alpha other than ndeval's default
    groups = [
        [ir_measures.parse_measure(alpha_ndcg_name(k, alpha)) for k in cutoffs],
        [ir_measures.parse_measure(f"StRecall@{k}") for k in cutoffs],
    ]
    name_of = {str(m): (f"R@{m['cutoff']}{PIECES}" if m.NAME == "StRecall" else str(m)) for g in groups for m in g}
    rows: dict[str, list] = {c: [] for c in PER_QUERY_SCHEMA}

    def add(retriever: str, qid: str, measure: str, value: float) -> None:
        for col, v in zip(PER_QUERY_SCHEMA, (retriever, qid, measure, value)):
            rows[col].append(v)

    for name in retrievers:
        run_dict = {q: d for q, d in pytrec_run(run.filter(pl.col("retriever") == name)).items() if q in judged}
        found: dict[tuple[str, str], float] = {}
        if run_dict:
            for group in groups:
                for metric in ir_measures.pyndeval.evaluator(group, diversity).iter_calc(run_dict):
                    measure = name_of[str(metric.measure)]
                    found[(metric.query_id, measure)] = float(metric.value)
                    if measure.startswith("R@"):
                        found[(metric.query_id, "AllIn@" + measure[2:])] = 1.0 if metric.value == 1.0 else 0.0
        for qid in query_ids:
            for measure in track_measure_names(cutoffs, alpha):
                add(name, qid, measure, found.get((qid, measure), 0.0))
    return pl.DataFrame(rows, schema=PER_QUERY_SCHEMA)
