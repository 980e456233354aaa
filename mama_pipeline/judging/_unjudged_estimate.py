"""What the unjudged pool holds, estimated from a uniform random sample of it (adaptive judging).

After the adaptive rounds stop, ``remainder_sample`` pairs drawn uniformly (seeded, without replacement) from the
pooled pairs the rounds did not choose are judged too. Of U such pairs, the sample's m labelled pairs hold h
relevant ones; the relevant pairs among the U, K, get the Clopper-Pearson interval of h / m scaled by U (statsmodels
``proportion_confint``, ``beta``), clipped to what is known (K >= h, and at most U - (m - h)). Pairs the rounds
chose but the judge failed on count as unknown: each may be relevant (upper bound), at the sample's rate (point).
The labelled pairs' recall R / (R + K - h + f) (R: relevant labelled pairs) is monotone in K, so its interval is
the interval of K mapped, with K's coverage (tested by simulation). No relevant pair labelled, or no sample while
pairs stay unjudged: the recall is refused with its reason.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from mama_pipeline.store.table_schema import table_schema

ESTIMATE_SCHEMA = table_schema("unjudged_estimate")


def remainder_sample(unchosen: np.ndarray, size: int, seed: int) -> np.ndarray:
    """``size`` of the ``unchosen`` pair indices (all if fewer), uniformly without replacement, sorted."""
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(unchosen, size=min(size, unchosen.size), replace=False))


def recall_interval(
    relevant: int, unjudged: int, sample: int, sample_relevant: int, failed: int = 0, confidence: float = 0.95
) -> tuple[float | None, float | None, float | None, float | None, str | None]:
    """(relevant left unlabelled estimate, recall, low, high, refusal) of the labelled pairs.

    ``relevant``: relevant labelled pairs (sample included); ``unjudged``: pairs never chosen by the rounds
    (sample included), of which ``sample`` were sampled and labelled, ``sample_relevant`` relevant; ``failed``:
    pairs chosen by the rounds without a label.
    """
    from statsmodels.stats.proportion import proportion_confint

    left = unjudged - sample  # unjudged and unsampled
    if left == 0 and failed == 0:
        return (0.0, 1.0, 1.0, 1.0, None) if relevant else (0.0, None, None, None, "no relevant pair in the pool")
    if sample == 0:
        return None, None, None, None, f"{left + failed} pairs without a label and no remainder sample"
    if relevant == 0:
        return None, None, None, None, "no relevant pair labelled: recall 0 of an unknown total"
    lo, hi = proportion_confint(sample_relevant, sample, alpha=1 - confidence, method="beta")
    k_low = max(float(sample_relevant), lo * unjudged)
    k_high = min(float(unjudged - (sample - sample_relevant)), hi * unjudged)
    rate = sample_relevant / sample
    point = unjudged * rate - sample_relevant + failed * rate  # relevant pairs without a label
    return (
        point,
        relevant / (relevant + point),
        relevant / (relevant + k_high - sample_relevant + failed),
        relevant / (relevant + k_low - sample_relevant),
        None,
    )


def unjudged_estimates(pool: pl.DataFrame, cuts: dict[str, int], confidence: float = 0.95) -> pl.DataFrame:
    """ESTIMATE_SCHEMA rows per scope (all, each tier) and cut. ``pool``: every pooled pair with ``tier``,
    ``role`` (``round``, ``sample`` or null for unjudged), ``status`` (``labelled``, ``failed`` or null) and
    ``score`` (null without a label)."""
    rows = []
    tiers = sorted(pool.get_column("tier").drop_nulls().unique().to_list())
    for scope, part in [("all", pool)] + [(t, pool.filter(pl.col("tier") == t)) for t in tiers]:
        labelled = part.filter(pl.col("status") == "labelled")
        sampled = labelled.filter(pl.col("role") == "sample")
        unjudged = int((part.get_column("role") != "round").fill_null(True).sum())
        failed = int(((part.get_column("role") == "round") & (part.get_column("status") == "failed")).sum())
        for cut, threshold in cuts.items():
            relevant = int((labelled.get_column("score") >= threshold).sum())
            hits = int((sampled.get_column("score") >= threshold).sum())
            point, recall, low, high, note = recall_interval(
                relevant, unjudged, sampled.height, hits, failed, confidence
            )
            rows.append(
                {
                    "scope": scope,
                    "cut": cut,
                    "threshold": threshold,
                    "pooled_pairs": part.height,
                    "labelled_pairs": labelled.height,
                    "unjudged_pairs": int(part.get_column("status").is_null().sum()),
                    "failed_pairs": int((part.get_column("status") == "failed").sum()),
                    "sample_pairs": sampled.height,
                    "sample_relevant": hits,
                    "relevant_labelled": relevant,
                    "relevant_unlabelled_estimate": point,
                    "recall": recall,
                    "recall_low": low,
                    "recall_high": high,
                    "confidence": confidence,
                    "note": note,
                }
            )
    return pl.DataFrame(rows, schema=ESTIMATE_SCHEMA)
