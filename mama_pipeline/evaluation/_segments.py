"""Scoreboards broken down by segment: tier, source, query length and relevant-chunk length.

Every benchmark query falls in one segment of each dimension. Length bands count
words (whitespace-separated): a query's own text, and for the relevant-chunk
band the query's most relevant chunk (highest label at or above the relevance
threshold; several at that label: the median of their lengths); a query with no
relevant chunk is its own segment. Means come from the per-query values of
``scoring.evaluate``, each with its BCa bootstrap interval (queries resampled; refused, with the reason, below
``significance.MIN_INTERVAL_N`` queries or on all-equal values); paired tests (``significance.pairwise_significance``,
Holm across the pairs of one segment and measure) run only in segments with at
least ``min_queries`` queries.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from mama_pipeline.evaluation._per_query_scoring import Evaluation
from mama_pipeline.evaluation._scoreboard_measures import zero_one_measures
from mama_pipeline.evaluation._significance import SIGNIFICANCE_SCHEMA, pairwise_significance
from mama_pipeline.store.table_schema import table_schema

KEY_SCHEMA = {"query_id": pl.String, "dimension": pl.String, "segment": pl.String, "segment_order": pl.Int64}
BOARD_SCHEMA = table_schema("segment_scoreboard")
SIG_SCHEMA = table_schema("segment_significance")
QUERY_LENGTH = "query length"
RELEVANT_LENGTH = "relevant chunk length"
NO_RELEVANT = "no relevant chunk"
MISSING = "(none)"


@dataclass
class SegmentResult:
    board: pl.DataFrame  # BOARD_SCHEMA
    significance: pl.DataFrame  # SIG_SCHEMA
    min_queries: int
    measures: list[str]
    resamples: int | None = None  # of the paired tests (evaluation.segments.resamples), stated on the page


def band_labels(edges: Sequence[int], unit: str = "words") -> list[str]:
    """Names of the bands cut at ``edges``: [8, 12] -> <8, 8-11, 12+ words."""
    if not edges:
        return ["any length"]
    names = [f"<{edges[0]} {unit}"]
    names += [f"{lo}-{hi - 1} {unit}" for lo, hi in zip(edges, edges[1:])]
    return names + [f"{edges[-1]}+ {unit}"]


def _band(words: pl.Expr, edges: Sequence[int]) -> tuple[pl.Expr, pl.Expr]:
    order = pl.lit(0, pl.Int64)
    for e in edges:
        order = order + (words >= e).cast(pl.Int64)
    labels = band_labels(edges)
    return order.replace_strict(list(range(len(labels))), labels, return_dtype=pl.String), order


def _words(text: pl.Expr) -> pl.Expr:
    return text.str.split(" ").list.eval(pl.element().filter(pl.element() != "")).list.len()


def segment_keys(
    queries: pl.DataFrame,
    qrels: pl.DataFrame,
    docs: pl.DataFrame,
    relevant_at: int,
    query_length_bands: Sequence[int],
    relevant_length_bands: Sequence[int],
    attributes: Sequence[str] = (),
    orders: dict[str, Sequence[str]] | None = None,
) -> pl.DataFrame:
    """(query_id, dimension, segment, segment_order) for every query of ``queries`` (query_id, query_text,
    attribute columns); ``docs`` (doc_id, text) holds at least the relevant documents."""
    orders = orders or {}
    parts = []
    for dim in attributes:
        values = queries.select("query_id", pl.col(dim).cast(pl.String).fill_null(MISSING).alias("segment"))
        known = list(orders.get(dim, []))
        rest = sorted(set(values["segment"].to_list()) - set(known))
        ranked = {name: i for i, name in enumerate(known + rest)}
        parts.append(
            values.with_columns(
                dimension=pl.lit(dim), segment_order=pl.col("segment").replace_strict(ranked, return_dtype=pl.Int64)
            )
        )
    label, order = _band(pl.col("n"), query_length_bands)
    parts.append(
        queries.select("query_id", n=_words(pl.col("query_text").str.replace_all(r"\s+", " "))).select(
            "query_id", dimension=pl.lit(QUERY_LENGTH), segment=label, segment_order=order
        )
    )
    relevant = qrels.filter(pl.col("relevance") >= relevant_at)
    best = relevant.filter(pl.col("relevance") == pl.col("relevance").max().over("query_id"))
    missing_docs = best.join(docs.select("doc_id"), on="doc_id", how="anti")
    if missing_docs.height:
        raise ValueError(
            f"relevant document {missing_docs['doc_id'][0]!r} of query {missing_docs['query_id'][0]!r} "
            "is not in the corpus: its length is unknown"
        )
    lengths = (
        best.join(docs.select("doc_id", "text"), on="doc_id")
        .with_columns(n=_words(pl.col("text").str.replace_all(r"\s+", " ")))
        .group_by("query_id")
        .agg(pl.col("n").median())
    )
    label, order = _band(pl.col("n"), relevant_length_bands)
    banded = (
        queries.select("query_id")
        .join(lengths, on="query_id", how="left")
        .select(
            "query_id",
            dimension=pl.lit(RELEVANT_LENGTH),
            segment=pl.when(pl.col("n").is_null()).then(pl.lit(NO_RELEVANT)).otherwise(label),
            segment_order=pl.when(pl.col("n").is_null()).then(pl.lit(len(relevant_length_bands) + 1)).otherwise(order),
        )
    )
    parts.append(banded)
    return pl.concat([p.select([pl.col(c).cast(t) for c, t in KEY_SCHEMA.items()]) for p in parts])


def segment_results(
    evaluation: Evaluation,
    keys: pl.DataFrame,
    measures: Sequence[str],
    min_queries: int,
    *,
    n_resamples: int = 5000,
    seed: int = 0,
    confidence: float = 0.95,
) -> SegmentResult:
    """Mean per (dimension, segment, retriever, measure) with its bootstrap interval (or why it is refused) and its
    query count, and paired tests where n is enough."""
    labels = {m.name: m.label for m in evaluation.measures}
    unknown = [m for m in measures if m not in labels]
    if unknown:
        raise ValueError(f"segment measures {unknown} are not scored; known: {list(labels)}")
    keys = keys.join(
        pl.DataFrame({"query_id": evaluation.query_ids}, schema={"query_id": pl.String}), on="query_id", how="semi"
    )
    values = evaluation.per_query.filter(pl.col("measure").is_in(list(measures)))
    sizes = keys.group_by("dimension", "segment").agg(pl.len().cast(pl.Int64).alias("n_queries"))
    order = pl.DataFrame({"retriever": evaluation.retrievers}).with_row_index("_r")
    m_order = pl.DataFrame({"measure": list(measures)}).with_row_index("_m")
    d_order = keys.select("dimension").unique(maintain_order=True).with_row_index("_d")
    board = (
        _means_with_intervals(values.join(keys, on="query_id"), n_resamples, seed, confidence)
        .join(sizes, on=["dimension", "segment"])
        .join(order, on="retriever")
        .join(m_order, on="measure")
        .join(d_order, on="dimension")
        .with_columns(
            label=pl.col("measure").replace_strict(labels, return_dtype=pl.String),
            tested=(pl.col("n_queries") >= min_queries) & pl.lit(len(evaluation.retrievers) > 1),
        )
        .sort("_d", "segment_order", "segment", "_m", "_r")
        .select(list(BOARD_SCHEMA))
    )
    tests = []
    testable = board.filter("tested").select("dimension", "segment").unique(maintain_order=True)
    for dim, segment in testable.iter_rows():
        ids = keys.filter((pl.col("dimension") == dim) & (pl.col("segment") == segment)).select("query_id")
        sig = pairwise_significance(
            values.join(ids, on="query_id", how="semi"),
            measures,
            evaluation.retrievers,
            n_resamples=n_resamples,
            seed=seed,
            confidence=confidence,
            binary_measures=zero_one_measures(measures),
        )
        tests.append(sig.select(*SIGNIFICANCE_SCHEMA, dimension=pl.lit(dim), segment=pl.lit(segment)))
    significance = pl.concat(tests) if tests else pl.DataFrame(schema=SIG_SCHEMA)
    return SegmentResult(
        board,
        significance.select([pl.col(c).cast(t) for c, t in SIG_SCHEMA.items()]),
        min_queries,
        list(measures),
        n_resamples,
    )


def _means_with_intervals(joined: pl.DataFrame, n_resamples: int, seed: int, confidence: float) -> pl.DataFrame:
    """Mean, bootstrap interval (values in query-id order) and refusal per segment, retriever and measure."""
    from mama_pipeline.evaluation._significance import StatisticRefused, bootstrap_mean_ci

    group = ["dimension", "segment", "segment_order", "retriever", "measure"]
    rows = []
    for key, part in joined.sort("query_id").group_by(group, maintain_order=True):
        v = part["value"].to_numpy()
        try:
            low, high = bootstrap_mean_ci(v, n_resamples, seed, confidence)
            refused = None
        except StatisticRefused as why:
            low, high, refused = None, None, str(why)
        rows.append((*key, float(v.mean()), low, high, refused))
    schema = {c: BOARD_SCHEMA[c] for c in [*group, "mean", "ci_low", "ci_high", "ci_refused"]}
    return pl.DataFrame(rows, schema=schema, orient="row")


def segment_measures(settings) -> list[str]:
    """The measures broken down by segment: ``segments.measures``, else the significance measures."""
    return list(settings.segments.measures or settings.significance_measures)


def mamaretrieval_segments(
    per_query: pl.DataFrame,
    judgments: pl.DataFrame,
    queries: pl.DataFrame,
    chunks: pl.DataFrame,
    settings,
    tier_order: Sequence[str] = (),
) -> SegmentResult:
    """Segments of the mamaretrieval scoreboard from its stored per-query values (relevant: label >= lenient);
    ``judgments`` holds at least the relevant ones (the others play no part), ``chunks`` (chunk_id, text) at
    least the relevant chunks."""
    from mama_pipeline.evaluation._judged_scoreboard import check_measures, judged_qrels
    from mama_pipeline.evaluation._scoreboard_measures import mamaretrieval_plan

    plan = mamaretrieval_plan(settings.cutoffs, settings.lenient, settings.strict, settings.max_grade)
    measures = segment_measures(settings)
    check_measures(measures, plan.by_name(), "evaluation.segments.measures")
    qrels, _ = judged_qrels(judgments)
    attributes = [c for c in ("tier", "source") if c in queries.columns]
    seg = settings.segments
    keys = segment_keys(
        queries,
        qrels,
        chunks.select(pl.col("chunk_id").alias("doc_id"), "text"),
        settings.lenient,
        seg.query_length_bands,
        seg.relevant_length_bands,
        attributes,
        {"tier": tier_order},
    )
    evaluation = Evaluation(
        per_query,
        per_query["retriever"].unique(maintain_order=True).to_list(),
        queries.sort("query_id")["query_id"].to_list(),
        plan.measures(),
    )
    return segment_results(
        evaluation,
        keys,
        measures,
        seg.min_queries,
        n_resamples=seg.resamples,
        seed=settings.seed,
        confidence=settings.confidence,
    )


def beir_segments(benchmark, evaluation: Evaluation, cfg, settings, relevant_at: int = 1) -> SegmentResult:
    """Segments of a BEIR scoreboard: tier and source when queries carry them, ``cfg.segment_fields`` (query
    metadata keys), query length and relevant-document length (``title text``, as the retrievers see it)."""
    import json

    records = [json.loads(m) if m else {} for m in benchmark.queries["metadata"].to_list()]
    wanted = list(dict.fromkeys(["tier", "source", *cfg.segment_fields]))
    present = [f for f in wanted if f in cfg.segment_fields or any(f in r for r in records)]
    columns = {f: [None if r.get(f) is None else str(r.get(f)) for r in records] for f in present}
    queries = benchmark.queries.select("query_id", pl.col("text").alias("query_text")).with_columns(
        **{f: pl.Series(v, dtype=pl.String) for f, v in columns.items()}
    )
    title = pl.col("title").fill_null("")
    docs = benchmark.corpus.select(
        "doc_id", text=pl.when(title != "").then(title + " " + pl.col("text")).otherwise(pl.col("text"))
    )
    seg = settings.segments
    keys = segment_keys(
        queries, benchmark.qrels, docs, relevant_at, seg.query_length_bands, seg.relevant_length_bands, present
    )
    return segment_results(
        evaluation,
        keys,
        list(seg.measures or cfg.significance_measures),
        seg.min_queries,
        n_resamples=seg.resamples,
        seed=settings.seed,
        confidence=settings.confidence,
    )
