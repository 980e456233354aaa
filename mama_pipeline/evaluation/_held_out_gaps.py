"""Public and held-out figures side by side: per group, each part's mean, the gap and an unpaired test.

The parts are disjoint item sets, so an entry's two parts cannot be paired. The hash rule assigns whole groups to
a part, not items: every item whose hashed key is the same (a robustness variant and its parent query, the
HealthBench items of one prompt) falls on one side, so items of a group are not exchangeable between the parts
one by one, and a test permuting items would reject a true null far too often. The p value is scipy's two-sided
permutation test (``permutation_type="independent"``, seeded) with the hashed key's groups as the unit: whole
groups are permuted between the parts, the statistic is the difference of the parts' item means. Every group is
its own key where nothing groups the items (the retrieval queries). It is a randomization test: with ``resamples``
random arrangements of the groups (scipy enumerates them all, and the p value is exact, only when there are no
more arrangements than resamples), so the smallest p it can give is ``2 / (resamples + 1)`` or ``2 / arrangements``
(a row's note says so when that is above 0.05). Where several entries (retrievers, systems) are scored on the same
items, the relative figures pair on the item instead: per item, the entry's value minus the mean of the other
entries' values on that item, and the same test of that difference between the parts; the pairing removes how
much easier one part happens to be for every entry, so what is left is the entry's own gap. A part with fewer
than ``MIN_GROUPS`` groups gets no figures for that comparison, with the reason; with no held-out part (share 0)
there is nothing to compare. :data:`WHY_THIS_TEST` is what the reports say of the choice.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from mama_pipeline.common.held_out import HELD_OUT, RULE, HeldOutRule
from mama_pipeline.common.metadata import md_table

if TYPE_CHECKING:
    from mama_pipeline.release.settings import HeldOutSettings

TEST = "two-sided permutation test of the difference, whole groups of the hashed key permuted (independent, scipy)"
WHY_THIS_TEST = (
    "The two parts are disjoint sets of items, so no item has a score on both sides and an entry's public and "
    "held-out scores cannot be paired. The hash rule puts an item in a part whatever its content, so for an entry "
    "that has not seen the public items its scores are exchangeable between the parts group by group (the rule "
    "hashes one key per group: a variant goes with its parent query, a HealthBench item with its prompt); that "
    "is the null hypothesis the permutation test (whole groups permuted between the parts, random arrangements "
    "drawn) tests. The entries are scored on "
    "the same items, so the pairing that does exist is across entries on an item: the relative gap is the gap of "
    "the entry's per-item difference from the mean of the other entries on the same item, tested the same way. "
    "Every entry shares how much easier one part happens to be, and the pairing removes it: a positive relative "
    "gap is the entry's own advantage on the public part. A test pairing each entry's public mean with its "
    "held-out mean over the entries is not used: the entries are not independent samples (they share the items), "
    "and it would ask whether the public part is easier for the entries at large, not whether one entry has seen it."
)
MIN_GROUPS = 2  # per part: fewer gives no gap and no test
CALLABLE_P = 0.05  # a row whose smallest attainable p is above this says so
GAP_SCHEMA = {
    "n_public": pl.Int64,
    "n_held_out": pl.Int64,
    "groups_public": pl.Int64,  # the test's unit: the hashed keys in each part
    "groups_held_out": pl.Int64,
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


def smallest_p(groups_public: int, groups_held_out: int, resamples: int) -> float:
    """The smallest two-sided p :func:`grouped_gap` can give: ``2 / arrangements`` when scipy enumerates every
    arrangement of the groups, ``2 / (resamples + 1)`` when it draws them."""
    from math import comb

    arrangements = comb(groups_public + groups_held_out, groups_held_out)
    return min(1.0, 2 / arrangements if arrangements <= resamples else 2 / (resamples + 1))


def grouped_gap(values: np.ndarray, groups: np.ndarray, held: np.ndarray, resamples: int, seed: int) -> dict:
    """Gap (public mean - held-out mean, over items) and its permutation p, whole groups permuted.

    ``values``: one per item; ``groups``: the item's group (the hashed key; any labels); ``held``: True where the
    item is held out (one side per group). Returns the figures of :data:`GAP_SCHEMA`'s first columns, refused
    (``note``) with fewer than :data:`MIN_GROUPS` groups in a part."""
    from scipy import stats

    values, held = np.asarray(values, dtype=float), np.asarray(held, dtype=bool)
    codes, first, index = np.unique(np.asarray(groups), return_index=True, return_inverse=True)
    sums = np.bincount(index, weights=values, minlength=codes.size)
    sizes = np.bincount(index, minlength=codes.size).astype(float)
    group_held = held[first]
    if (group_held[index] != held).any():
        raise ValueError("a group has items on both sides of the held-out split: the rule hashes one key per group")
    public_groups, held_groups = (  # each part's groups in the order the items came: singletons give the rows'
        g[np.argsort(first[g], kind="stable")] for g in (np.flatnonzero(~group_held), np.flatnonzero(group_held))
    )
    row = {
        "n_public": int((~held).sum()),
        "n_held_out": int(held.sum()),
        "groups_public": int(public_groups.size),
        "groups_held_out": int(held_groups.size),
        "mean_public": None,
        "mean_held_out": None,
        "gap": None,
        "p_permutation": None,
        "test": None,
        "note": None,
    }
    if not held_groups.size:
        return {**row, "note": "no held-out item (release.held_out.share is 0, or the rule held none of these out)"}
    row["mean_public"] = float(np.mean(values[~held])) if public_groups.size else None
    row["mean_held_out"] = float(np.mean(values[held]))
    if public_groups.size < MIN_GROUPS or held_groups.size < MIN_GROUPS:
        return {**row, "note": f"fewer than {MIN_GROUPS} groups (hashed keys) in a part: no gap or test"}

    def diff(x, y, axis=-1):  # x, y: group indices (scipy permutes them); the item means of the groups they hold
        x, y = x.astype(np.intp), y.astype(np.intp)
        return sums[x].sum(axis) / sizes[x].sum(axis) - sums[y].sum(axis) / sizes[y].sum(axis)

    res = stats.permutation_test(
        (public_groups.astype(float), held_groups.astype(float)),
        diff,
        permutation_type="independent",
        vectorized=True,
        n_resamples=resamples,
        alternative="two-sided",
        rng=np.random.default_rng(seed),
    )
    floor = smallest_p(public_groups.size, held_groups.size, resamples)
    note = (
        f"{public_groups.size} + {held_groups.size} groups: the smallest attainable p is {floor:.3g}, above "
        f"{CALLABLE_P}, so this test cannot call a gap"
        if floor > CALLABLE_P
        else None
    )
    gap = row["mean_public"] - row["mean_held_out"]
    return {**row, "gap": gap, "p_permutation": float(res.pvalue), "test": TEST, "note": note}


def _block_gap(block: pl.DataFrame, resamples: int, seed: int) -> dict:
    return grouped_gap(
        block["value"].to_numpy().astype(float),
        block["_key"].to_numpy(),
        (block["_part"] == HELD_OUT).to_numpy(),
        resamples,
        seed,
    )


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
    """One row per group of ``by``: items, groups and mean in each part (by the rule on ``key``, default the id
    column), gap = public - held out, and the permutation p value with the items of one ``key`` (the id the rule
    hashes: a variant's parent query, a HealthBench prompt) permuted together. ``values`` has one numeric ``value``
    per (group, item). With ``entry`` (one of ``by``: the retriever or system), also the relative gap and its p value
    (:func:`relative_values`)."""
    ids = values.select((key if key is not None else pl.col(id_column)).alias("_key")).to_series()
    parts = values.with_columns(ids, rule.part_of(ids).alias("_part"))
    relative = relative_values(parts, by, id_column, entry) if entry else None
    rows = []
    for group, block in sorted(parts.group_by(list(by)), key=lambda kv: kv[0]):
        row = {**dict(zip(by, group)), **_block_gap(block, resamples, seed)}
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
    r = _block_gap(block, resamples, seed)
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
    from mama_pipeline.mamabench import split_key

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
        "groups public",
        "groups held out",
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
        "groups_public",
        "groups_held_out",
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
        f"{resamples} resamples, seed {seed}; the {items} whose hashed key is the same (a variant and its parent "
        f"query, the items of one HealthBench prompt) are permuted together (the groups in each part beside n); no "
        f"gap or test with fewer than {MIN_GROUPS} such groups in a part. "
        f"{html.escape(WHY_THIS_TEST)}</p>" + table
    )


def gap_metadata(held_out: HeldOutSettings, board: pl.DataFrame) -> dict:
    """A public vs held-out table's metadata: the split's settings (``release.held_out``), the test and the table."""
    return {"share": held_out.share, "salt": held_out.salt, "test": TEST, "gaps": md_table(board.drop("test"))}
