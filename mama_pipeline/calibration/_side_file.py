"""The judge-calibration side-file: meta-evaluation rows whose prompt is in scope.

Scope verdicts come from mamabench's classification of HealthBench oss_eval
(columns ``prompt_id``, ``category``; a null category means the item could not be
classified). Every meta-evaluation row ends in exactly one outcome:

- ``kept``: in scope, written to the side-file with ``scope_category`` added;
- ``out_of_scope``: the verdict is NONE;
- ``unclassified``: the prompt has a verdict row whose category is null;
- ``no_verdict``: the prompt_id has no verdict row at all.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from mama_pipeline.store.table_schema import table_schema

SCOPE_CATEGORIES = ("MATERNAL", "NEONATAL", "CHILD_HEALTH", "SEXUAL_AND_REPRODUCTIVE_HEALTH")
OUT_OF_SCOPE = "NONE"
OUTCOMES = ("kept", "out_of_scope", "unclassified", "no_verdict")
ACCOUNTING_SCHEMA = table_schema("calibration_side_file_accounting")


@dataclass(frozen=True)
class SideFile:
    rows: pl.DataFrame  # meta-eval columns + scope_category, ordered by upstream_line
    accounting: pl.DataFrame  # outcome, scope_category, rows, prompts (zeros included)


def check_verdicts(verdicts: pl.DataFrame, source: str = "scope verdicts") -> pl.DataFrame:
    """The (prompt_id, category) pairs, validated: one verdict per prompt, known categories.

    Repeated identical verdicts (a prompt listed by several HealthBench pools) count once.
    """
    missing = [c for c in ("prompt_id", "category") if c not in verdicts.columns]
    if missing:
        raise ValueError(f"{source}: missing column(s) {missing}; has {verdicts.columns}")
    v = verdicts.select(pl.col("prompt_id").cast(pl.String), pl.col("category").cast(pl.String))
    if v["prompt_id"].null_count():
        raise ValueError(f"{source}: {v['prompt_id'].null_count()} verdict row(s) with a null prompt_id")
    v = v.unique(maintain_order=False).sort("prompt_id")  # the same verdict listed twice is one verdict
    conflicts = v.group_by("prompt_id").len().filter(pl.col("len") > 1)["prompt_id"].sort()
    if len(conflicts):
        raise ValueError(f"{source}: prompt_id(s) with conflicting verdicts: {conflicts.head(5).to_list()}")
    allowed = {*SCOPE_CATEGORIES, OUT_OF_SCOPE}
    unknown = sorted(set(v["category"].drop_nulls().unique().to_list()) - allowed)
    if unknown:
        bad = v.filter(pl.col("category").is_in(unknown))["prompt_id"].head(3).to_list()
        raise ValueError(f"{source}: unknown category {unknown} (e.g. prompt_id {bad}); expected {sorted(allowed)}")
    return v


def build_side_file(meta_eval: pl.DataFrame, verdicts: pl.DataFrame) -> SideFile:
    """Join scope verdicts onto meta-eval rows by prompt_id and account for every row."""
    v = check_verdicts(verdicts).with_columns(pl.lit(True).alias("_has_verdict"))
    joined = meta_eval.join(v.rename({"category": "scope_category"}), on="prompt_id", how="left")
    joined = joined.with_columns(
        pl.when(pl.col("_has_verdict").is_null())
        .then(pl.lit("no_verdict"))
        .when(pl.col("scope_category").is_null())
        .then(pl.lit("unclassified"))
        .when(pl.col("scope_category") == OUT_OF_SCOPE)
        .then(pl.lit("out_of_scope"))
        .otherwise(pl.lit("kept"))
        .alias("_outcome")
    )
    rows = (
        joined.filter(pl.col("_outcome") == "kept").select(*meta_eval.columns, "scope_category").sort("upstream_line")
    )
    return SideFile(rows=rows, accounting=_accounting(joined))


def _accounting(joined: pl.DataFrame) -> pl.DataFrame:
    keys = [("kept", c) for c in SCOPE_CATEGORIES] + [(o, None) for o in OUTCOMES[1:]]
    counted = (
        joined.with_columns(pl.when(pl.col("_outcome") == "kept").then(pl.col("scope_category")).alias("_cat"))
        .group_by("_outcome", "_cat")
        .agg(pl.len().alias("rows"), pl.col("prompt_id").n_unique().alias("prompts"))
    )
    found = {(r["_outcome"], r["_cat"]): (r["rows"], r["prompts"]) for r in counted.iter_rows(named=True)}
    return pl.DataFrame([(o, c, *found.get((o, c), (0, 0))) for o, c in keys], schema=ACCOUNTING_SCHEMA, orient="row")
