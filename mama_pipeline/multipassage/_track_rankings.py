"""The multi-passage track's stored rankings (``multipassage_rankings``), read for the pool and the releases."""

import polars as pl

RANKINGS_TABLE = "multipassage_rankings"


def stored_track_rankings(store, names: list[str], questions: pl.DataFrame) -> pl.DataFrame:
    """The track's rankings of these retrievers; an error names partitions never materialised."""
    from mama_pipeline.retrieval import empty_rankings

    if not names or questions.is_empty():
        return empty_rankings()
    table = (
        store.read_table(RANKINGS_TABLE, partitions=names) if store.table_exists(RANKINGS_TABLE) else empty_rankings()
    )
    table = table.filter(pl.col("query_id").is_in(questions["query_id"].to_list()))
    missing = sorted(set(names) - set(table["retriever"].unique().to_list()))
    if missing:
        raise ValueError(
            f"multipassage_rankings of {missing} do not cover the current questions: materialise those partitions first"
        )
    return table
