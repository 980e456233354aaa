"""Public and held-out figures side by side: per group, each part's mean, the gap and an unpaired test.

The parts are disjoint item sets, so an entry's two parts cannot be paired: the p value is scipy's two-sided
permutation test of the difference of the two parts' means, items permuted between the parts
(``permutation_type="independent"``), seeded. Where several entries (retrievers, systems) are scored on the same
items, the relative figures pair on the item instead: per item, the entry's value minus the mean of the other
entries' values on that item, and the same test of that difference between the parts; the pairing removes how
much easier one part happens to be for every entry, so what is left is the entry's own gap. A group with fewer
than ``MIN_ITEMS`` items in a part gets no figures for that comparison, with the reason; with no held-out part
(share 0) there is nothing to compare. :data:`WHY_THIS_TEST` is what the reports say of the choice.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from mama_pipeline.common.held_out import HELD_OUT, PUBLIC, RULE, HeldOutRule

TEST = "two-sided permutation test of the difference (independent samples, scipy)"
WHY_THIS_TEST = (
    "The two parts are disjoint sets of items, so no item has a score on both sides and an entry's public and "
    "held-out scores cannot be paired. The hash rule puts an item in a part whatever its content, so for an entry "
    "that has not seen the public items its item scores are exchangeable between the parts; that is the null "
    "hypothesis the permutation test (items permuted between the parts) tests, exactly. The entries are scored on "
    "the same items, so the pairing that does exist is across entries on an item: the relative gap is the gap of "
    "the entry's per-item difference from the mean of the other entries on the same item, tested the same way. "
    "Every entry shares how much easier one part happens to be, and the pairing removes it: a positive relative "
    "gap is the entry's own advantage on the public part. A test pairing each entry's public mean with its "
    "held-out mean over the entries is not used: the entries are not independent samples (they share the items), "
    "and it would ask whether the public part is easier for the entries at large, not whether one entry has seen it."
)
MIN_ITEMS = 2  # per part: fewer gives no gap and no test
GAP_SCHEMA = {
    "n_public": pl.Int64,
    "n_held_out": pl.Int64,
    "mean_public": pl.Float64,
    "mean_held_out": pl.Float64,
    "gap": pl.Float64,
    "p_permutation": pl.Float64,
    "test": pl.String,
    "note": pl.String,
    # paired on the item across entries: the entry's value minus the other entries' mean on the same item
    "relative_gap": pl.Float64,
    "p_relative": pl.Float64,
    "relative_note": pl.String,
}


def _gap(public: np.ndarray, held: np.ndarray, resamples: int, seed: int) -> dict:
    from scipy import stats

    row = {
        "n_public": int(public.size),
        "n_held_out": int(held.size),
        "mean_public": None,
        "mean_held_out": None,
        "gap": None,
        "p_permutation": None,
        "test": None,
        "note": None,
    }
    if not held.size:
        return {**row, "note": "no held-out item (release.held_out.share is 0, or the rule held none of these out)"}
    row["mean_public"] = float(np.mean(public)) if public.size else None
    row["mean_held_out"] = float(np.mean(held))
    if public.size < MIN_ITEMS or held.size < MIN_ITEMS:
        return {**row, "note": f"fewer than {MIN_ITEMS} items in a part: no gap or test"}

    def diff(x, y, axis=-1):
        return np.mean(x, axis=axis) - np.mean(y, axis=axis)

    res = stats.permutation_test(
        (public, held),
        diff,
        permutation_type="independent",
        vectorized=True,
        n_resamples=resamples,
        alternative="two-sided",
        rng=np.random.default_rng(seed),
    )
    return {**row, "gap": row["mean_public"] - row["mean_held_out"], "p_permutation": float(res.pvalue), "test": TEST}


def part_gaps(
    values: pl.DataFrame,
    by: Sequence[str],
    id_column: str,
    rule: HeldOutRule,
    resamples: int,
    seed: int,
    key: pl.Expr | None = None,
    entry: str | None = None,
) -> pl.DataFrame:
    """One row per group of ``by``: items and mean in each part (by the rule on ``key``, default the id
    column), gap = public - held out, and the permutation p value. ``values`` has one numeric ``value`` per
    (group, item). With ``entry`` (one of ``by``: the retriever or system), also the relative gap and its p value
    (:func:`relative_values`)."""
    ids = values.select((key if key is not None else pl.col(id_column)).alias("_key")).to_series()
    parts = values.with_columns(rule.part_of(ids).alias("_part"))
    relative = relative_values(parts, by, id_column, entry) if entry else None
    rows = []
    for group, block in sorted(parts.group_by(list(by)), key=lambda kv: kv[0]):
        public = block.filter(pl.col("_part") == PUBLIC)["value"].to_numpy().astype(float)
        held = block.filter(pl.col("_part") == HELD_OUT)["value"].to_numpy().astype(float)
        row = {**dict(zip(by, group)), **_gap(public, held, resamples, seed)}
        row.update(_relative_figures(relative, dict(zip(by, group)), entry, resamples, seed))
        rows.append(row)
    schema = {**{c: values.schema[c] for c in by}, **GAP_SCHEMA}
    return pl.DataFrame(rows, schema=schema)


def relative_values(parts: pl.DataFrame, by: Sequence[str], id_column: str, entry: str) -> pl.DataFrame:
    """Per (group, item) scored by at least one other entry of the same context (``by`` without ``entry``): the
    entry's value minus the mean of the other entries' values on that item, as ``value``."""
    context = [c for c in by if c != entry]
    on = [*context, id_column]
    totals = parts.group_by(on).agg(pl.col("value").sum().alias("_sum"), pl.len().alias("_n"))
    return (
        parts.join(totals, on=on, how="left")
        .filter(pl.col("_n") > 1)
        .with_columns(value=pl.col("value") - (pl.col("_sum") - pl.col("value")) / (pl.col("_n") - 1))
    )


def _relative_figures(relative: pl.DataFrame | None, group: dict, entry: str | None, resamples: int, seed: int) -> dict:
    if relative is None:  # no entry column given: nothing to pair on
        return {"relative_gap": None, "p_relative": None, "relative_note": None}
    block = relative.filter(*(pl.col(c) == v for c, v in group.items()))
    if block.is_empty():
        return {
            "relative_gap": None,
            "p_relative": None,
            "relative_note": f"no other {entry} scored on the same items: nothing to pair with",
        }
    public = block.filter(pl.col("_part") == PUBLIC)["value"].to_numpy().astype(float)
    held = block.filter(pl.col("_part") == HELD_OUT)["value"].to_numpy().astype(float)
    r = _gap(public, held, resamples, seed)
    return {"relative_gap": r["gap"], "p_relative": r["p_permutation"], "relative_note": r["note"]}


def retrieval_gaps(
    per_query: pl.DataFrame, measures: Sequence[str], rule: HeldOutRule, resamples: int, seed: int
) -> pl.DataFrame:
    """Per retriever and measure of ``measures``: the parts' means over queries (``per_query_results``)."""
    values = per_query.filter(pl.col("measure").is_in(list(measures)))
    return part_gaps(values, ["retriever", "measure"], "query_id", rule, resamples, seed, entry="retriever")


def system_gaps(grades: pl.DataFrame, rule: HeldOutRule, resamples: int, seed: int) -> pl.DataFrame:
    """Per system and track: the parts' means over scored items (``system_grades``; the rubric track's unclipped
    example scores, as the scoreboard's mean), a HealthBench prompt split by its prompt id."""
    from mama_pipeline.mamabench.held_out_key import split_key

    scored = grades.filter(pl.col("score").is_not_null()).select(
        "system", "track", "item_id", pl.col("score").cast(pl.Float64).alias("value")
    )
    return part_gaps(scored, ["system", "track"], "item_id", rule, resamples, seed, key=split_key(), entry="system")


def _cell(v) -> str:
    """A cell at the pages' one precision (``html_page.cell``: three decimals, no ``-0.000``)."""
    from mama_pipeline.common.html_page import cell

    return cell(v)


def gaps_html(
    board: pl.DataFrame, entry: Sequence[str], rule: HeldOutRule, items: str, resamples: int, seed: int
) -> str:
    """The reports' section: each entry's public and held-out mean with its n, the gap and the test, the rule and
    why this test; empty when the rule holds nothing out."""
    import html

    if not rule.active:
        return ""
    head = [
        *entry,
        "public mean",
        "n public",
        "held-out mean",
        "n held out",
        "gap (public - held out)",
        "p (permutation)",
        "relative gap",
        "p (relative)",
        "note",
    ]
    columns = (
        *entry,
        "mean_public",
        "n_public",
        "mean_held_out",
        "n_held_out",
        "gap",
        "p_permutation",
        "relative_gap",
        "p_relative",
    )
    rows = "".join(
        "<tr>"
        + "".join(f"<td>{_cell(r[c])}</td>" for c in columns)
        + f"<td>{_cell('; '.join(dict.fromkeys(n for n in (r['note'], r['relative_note']) if n)))}</td></tr>"
        for r in board.iter_rows(named=True)
    )
    table = "<table><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in head) + f"</tr>{rows}</table>"
    return (
        "<h2>Public and held-out parts</h2>"
        f"<p class='note'>The declared held-out split holds out the {items} whose id hashes below share "
        f"{rule.share} (salt <code>{html.escape(rule.salt)}</code>; rule <code>{html.escape(RULE)}</code>). Each "
        f"mean is over the {items} of its part (n beside it). A model trained on the public part scores higher "
        f"there than on the held-out part. Relative gap: the gap of the entry's per-item value minus the other "
        f"entries' mean on the same item (only {items} another entry was scored on). p: {html.escape(TEST)}, "
        f"{resamples} resamples, seed {seed}; no gap or test with fewer than {MIN_ITEMS} {items} in a part. "
        f"{html.escape(WHY_THIS_TEST)}</p>" + table
    )
