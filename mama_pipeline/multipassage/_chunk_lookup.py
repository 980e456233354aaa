"""The chunks a multi-passage set names, by id: source, section and text, for the prompts."""

import polars as pl


def _section_text(breadcrumb: list[str] | None) -> str:
    return " > ".join(breadcrumb or []) or "(none)"


def chunk_lookup(chunks: pl.DataFrame, ids: set[str]) -> dict[str, dict]:
    """chunk id -> source, section, text for the chunks named by the sets."""
    part = chunks.filter(pl.col("chunk_id").is_in(list(ids))).select("chunk_id", "source", "breadcrumb", "text")
    return {
        r["chunk_id"]: {"source": r["source"], "section": _section_text(r["breadcrumb"]), "text": r["text"]}
        for r in part.to_dicts()
    }
