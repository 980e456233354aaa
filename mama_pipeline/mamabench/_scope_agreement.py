"""Agreement between two sets of scope labels (two classifiers, or ours vs prior labels).

Pure functions over a pair table ``item_id, a, b`` where a null label means that
side has no verdict for the item (a failed call). Figures are computed on the
items both sides labelled; failures are counted and listed, not guessed.
"""

from __future__ import annotations

import hashlib
import math
import warnings
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np
import polars as pl

from mama_pipeline.llm.reference_audit import audit_kind
from mama_pipeline.mamabench._schema import CATEGORY_ALIASES, Category
from mama_pipeline.mamabench.settings import MamabenchSettings

CATEGORIES = [c.value for c in Category]
PAIR_SCHEMA = {"item_id": pl.String, "a": pl.String, "b": pl.String}


@dataclass(frozen=True)
class AgreementStats:
    items: int
    jointly_labelled: int
    failed_a: int
    failed_b: int
    agreeing: int | None
    agreement_pct: float | None
    agreement_ci95: tuple[float, float] | None  # Wilson interval, percent
    cohens_kappa: float | None
    confusion: list[dict[str, Any]]  # {a, b, n} for every category pair
    per_category: list[dict[str, Any]]  # {category, count_a, count_b, diff, diff_pct}
    failed_items: list[str]
    note: str | None = None  # why no agreement figure is given (the reference was the classifier itself)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def withheld(self, note: str) -> AgreementStats:
        """These counts with every agreement figure withdrawn, and the note saying why."""
        return replace(
            self,
            agreeing=None,
            agreement_pct=None,
            agreement_ci95=None,
            cohens_kappa=None,
            confusion=[],
            per_category=[],
            note=note,
        )

    def metadata(self, prefix: str) -> dict[str, Any]:
        return {
            f"{prefix}/items": self.items,
            f"{prefix}/jointly_labelled": self.jointly_labelled,
            f"{prefix}/agreement_pct": self.agreement_pct,
            f"{prefix}/cohens_kappa": self.cohens_kappa,
            f"{prefix}/failed_a": self.failed_a,
            f"{prefix}/failed_b": self.failed_b,
            **({f"{prefix}/refused": self.note} if self.note else {}),
        }


def sample_ids(candidates: list[str], size: int, seed: int) -> list[str]:
    """A seeded sample that does not depend on input order (0 = all)."""
    ranked = sorted(candidates, key=lambda i: hashlib.sha256(f"{seed}:{i}".encode()).hexdigest())
    return sorted(ranked if size == 0 else ranked[:size])


def normalise_label(label: str | None, item_id: str) -> str | None:
    if label is None or not label.strip():
        return None
    value = CATEGORY_ALIASES.get(label.strip().upper(), label.strip().upper())
    if value not in CATEGORIES:
        raise ValueError(f"item {item_id}: label {label!r} is not one of {CATEGORIES} (or {sorted(CATEGORY_ALIASES)})")
    return value


def confusion_matrix(pairs: pl.DataFrame) -> pl.DataFrame:
    """Counts for every (a, b) category pair over jointly labelled items, zeros included."""
    grid = pl.DataFrame({"a": CATEGORIES}).join(pl.DataFrame({"b": CATEGORIES}), how="cross")
    counts = pairs.drop_nulls(["a", "b"]).group_by("a", "b").len("n")
    return grid.join(counts, on=["a", "b"], how="left").with_columns(pl.col("n").fill_null(0).cast(pl.Int64))


def agreement_stats(pairs: pl.DataFrame) -> AgreementStats:
    from statsmodels.stats.inter_rater import cohens_kappa
    from statsmodels.stats.proportion import proportion_confint

    joint = pairs.drop_nulls(["a", "b"])
    n = joint.height
    agree = int((joint["a"] == joint["b"]).sum()) if n else 0
    conf = confusion_matrix(pairs)
    kappa = ci = pct = None
    if n:
        pct = round(100 * agree / n, 2)
        lo, hi = proportion_confint(agree, n, alpha=0.05, method="wilson")
        ci = (round(100 * lo, 2), round(100 * hi, 2))
        table = conf.pivot(on="b", index="a", values="n").select(CATEGORIES).to_numpy()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            k = float(cohens_kappa(np.asarray(table, dtype=float)).kappa)
        kappa = None if math.isnan(k) else round(k, 4)
    count_a = joint.group_by("a").len("count_a").rename({"a": "category"})
    count_b = joint.group_by("b").len("count_b").rename({"b": "category"})
    per_cat = (
        pl.DataFrame({"category": CATEGORIES})
        .join(count_a, on="category", how="left")
        .join(count_b, on="category", how="left")
        .with_columns(pl.col("count_a", "count_b").fill_null(0).cast(pl.Int64))
        .with_columns((pl.col("count_b") - pl.col("count_a")).alias("diff"))
        .with_columns((100 * pl.col("diff") / n if n else pl.lit(None, pl.Float64)).round(2).alias("diff_pct"))
    )
    failed = pairs.filter(pl.col("a").is_null() | pl.col("b").is_null())["item_id"].sort().to_list()
    return AgreementStats(
        items=pairs.height,
        jointly_labelled=n,
        failed_a=int(pairs["a"].is_null().sum()),
        failed_b=int(pairs["b"].is_null().sum()),
        agreeing=agree,
        agreement_pct=pct,
        agreement_ci95=ci,
        cohens_kappa=kappa,
        confusion=conf.sort("a", "b").to_dicts(),
        per_category=per_cat.to_dicts(),
        failed_items=failed,
    )


def verdict_pairs(a: pl.DataFrame, b: pl.DataFrame) -> pl.DataFrame:
    """Pair two verdict tables (item_id, status, category) on item id; failures become nulls."""

    def side(df: pl.DataFrame, name: str) -> pl.DataFrame:
        return df.select("item_id", pl.when(pl.col("status") == "ok").then(pl.col("category")).alias(name))

    return (
        side(a, "a")
        .join(side(b, "b"), on="item_id", how="inner")
        .sort("item_id")
        .select([pl.col(c).cast(t) for c, t in PAIR_SCHEMA.items()])
    )


def prior_pairs(adapted: pl.DataFrame, verdicts: pl.DataFrame, pool: str) -> pl.DataFrame:
    """Pair the labels a pool's rows arrived with (``a``) with our verdicts (``b``)."""
    rows = adapted.filter(pl.col("pool") == pool, pl.col("status") == "pending", pl.col("prior_category").is_not_null())
    prior = pl.DataFrame(
        [(i, normalise_label(p, i)) for i, p in rows.select("item_id", "prior_category").iter_rows()],
        schema={"item_id": pl.String, "a": pl.String},
        orient="row",
    )
    ours = verdicts.select("item_id", pl.when(pl.col("status") == "ok").then(pl.col("category")).alias("b"))
    return (
        prior.join(ours, on="item_id", how="left")
        .sort("item_id")
        .select([pl.col(c).cast(t) for c, t in PAIR_SCHEMA.items()])
    )


def same_classifier_reason(pairs: pl.DataFrame) -> str | None:
    """Why the reference labels in a classifier pair table are no second opinion (None when they are one).

    ``identity_a``/``identity_b`` are the two stages' ``LLMClient.identity`` (endpoint, model and
    decoding, as in the LLM cache key): equal identities mean the reference stage got the
    classifier's own cached answers, and their agreement is 1.0 by construction.
    """
    shared = set(pairs.get_column("identity_a").drop_nulls()) & set(pairs.get_column("identity_b").drop_nulls())
    if not shared:
        return None
    identity = sorted(shared)[0]
    model = pairs.filter(pl.col("identity_b") == identity).get_column("model_b")[0]
    return (
        f"no agreement figure: the reference classifier is the classifier itself (model {model}, identity "
        f"{identity}: same endpoint, model and decoding), so it got the classifier's own cached answers; give "
        "llm.classifier_reference another seed or temperature (a self-consistency audit) or another model "
        "(cross-model agreement) and re-materialise mamabench_agreement"
    )


def classifier_audit(pairs: pl.DataFrame) -> str | None:
    """What the reference classifier measures: ``self_consistency`` (the classifier's model again) or
    ``cross_model`` (another model); None without pairs."""
    if not pairs.height:
        return None
    return audit_kind(set(pairs.get_column("model_a").drop_nulls()), pairs.get_column("model_b")[0])


def classifier_agreement(pairs: pl.DataFrame) -> AgreementStats:
    """Agreement of the classifier with the reference classifier, withheld when they are the same classifier."""
    stats = agreement_stats(pairs)
    reason = same_classifier_reason(pairs)
    return stats if reason is None else stats.withheld(reason)


def agreement_rows(
    adapted: pl.DataFrame, verdicts: pl.DataFrame, cfg: MamabenchSettings
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Our classifier's verdicts on the agreement pools, and the seeded sample of rows the reference re-classifies."""
    ours = verdicts.filter(pl.col("via") == "classifier", pl.col("pool").is_in(cfg.agreement_pools))
    chosen = sample_ids(ours["item_id"].to_list(), cfg.agreement_sample_size, cfg.agreement_seed)
    return ours, adapted.filter(pl.col("item_id").is_in(chosen), pl.col("status") == "pending")
