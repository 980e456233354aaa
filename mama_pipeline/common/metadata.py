"""Helpers for Dagster materialisation metadata."""
import dagster as dg
import polars as pl


def md_table(df: pl.DataFrame, limit: int = 50, digits: int = 3) -> dg.MetadataValue:
    """A small table as Markdown metadata (first ``limit`` rows)."""
    if df.is_empty():
        return dg.MetadataValue.md("(none)")
    lines = ["| " + " | ".join(df.columns) + " |", "|" + "---|" * df.width]
    for row in df.head(limit).iter_rows():
        cells = ["" if v is None else (f"{v:.{digits}f}" if isinstance(v, float) else str(v)) for v in row]
        lines.append("| " + " | ".join(c.replace("|", "/").replace("\n", " ") for c in cells) + " |")
    if df.height > limit:
        lines.append(f"\n({df.height - limit} more rows)")
    return dg.MetadataValue.md("\n".join(lines))
