"""Synthetic inputs shaped like the other groups' tables."""

import polars as pl


def as_judging_table(labels: pl.DataFrame) -> pl.DataFrame:
    """(query_id, chunk_id, score) with the judging group's columns (sql/tables/judging/judgments.sql)."""
    return labels.with_columns(
        pl.lit(False).alias("reused"),
        pl.lit("fake-judge").alias("judge_model"),
        pl.lit("h").alias("prompt_hash"),
        (pl.col("score") > 0).alias("d1_topic"),
        pl.lit(False).alias("structural_violation"),
        pl.lit("fake").alias("judge_endpoint"),
        pl.lit("k").alias("cache_key"),
    )
