"""Test-only definitions: the judging group over synthetic upstream assets and the real resources."""

import dagster as dg
import polars as pl

from mama_pipeline.common.shared_inputs import CHUNKS, QUERIES
from mama_pipeline.judging import definitions as judging
from mama_pipeline.resources import shared_resources
from mama_pipeline.settings import load_settings
from mama_pipeline_tests.stand_ins import as_corpus_chunks, as_generated_queries
from mama_pipeline_tests.support.synthetic_judging import make_chunks, make_pool, make_queries

N_QUERIES, N_CHUNKS = 12, 40
FAULTY_CHUNK = 7  # every request about this chunk answers HTTP 500


@dg.asset(key="generated_queries")
def queries() -> pl.DataFrame:
    return as_generated_queries(make_queries(N_QUERIES))


@dg.asset(key="corpus_chunks")
def chunks() -> pl.DataFrame:
    return as_corpus_chunks(
        make_chunks(N_CHUNKS, texts={FAULTY_CHUNK: "[[fault:500]] a passage the server never answers"})
    )


@dg.asset(ins={"queries": QUERIES, "chunks": CHUNKS})
def pooled_pairs(queries: pl.DataFrame, chunks: pl.DataFrame) -> pl.DataFrame:
    return make_pool(queries, chunks, per_query=5)


@dg.asset(ins={"queries": QUERIES, "chunks": CHUNKS})
def audit_pool(queries: pl.DataFrame, chunks: pl.DataFrame, pooled_pairs: pl.DataFrame) -> pl.DataFrame:
    """A wider pool (8 chunks per query) for every other query."""
    sample = queries.filter(pl.int_range(pl.len()) % 2 == 0)
    main = pooled_pairs.select("query_id", "chunk_id", in_main_pool=pl.lit(True))
    pool = make_pool(sample, chunks, per_query=8).join(main, on=["query_id", "chunk_id"], how="left")
    return pool.with_columns(pl.col("in_main_pool").fill_null(False))


def judging_area() -> dg.Definitions:
    """The judging group built from MAMA_CONFIG (a function: one Definitions object at module scope)."""
    return judging.build_defs(load_settings())


defs = dg.Definitions.merge(
    judging_area(),
    dg.Definitions(assets=[queries, chunks, pooled_pairs, audit_pool], resources=shared_resources()),
)
