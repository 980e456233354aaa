"""Judge reliability: a seeded stratified pilot sample and agreement with each reference judge.

A reference on the judge's model (another seed, temperature or endpoint) measures
self-consistency (test-retest); one on another model, cross-model agreement.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from mama_pipeline.common.strata import round_robin_sample
from mama_pipeline.judging._label_score import GRADES, RUBRIC_LABEL
from mama_pipeline.llm.reference_audit import audit_kind

if TYPE_CHECKING:
    from mama_pipeline.store import Store

SCORES = 7  # score levels 0..6
COMPARED = ["query_id", "chunk_id", *RUBRIC_LABEL]  # per pair
AGREEMENT_COLUMNS = [*COMPARED, "judge_model", "judge_identity"]  # what the audits read of the judge's labels


def score_band(score: pl.Expr, lenient: int, strict: int) -> pl.Expr:
    """Score bands that keep the pilot balanced around the two relevance cuts."""
    return (
        pl.when(score >= strict)
        .then(pl.lit("strict"))
        .when(score >= lenient)
        .then(pl.lit("lenient"))
        .when(score > 0)
        .then(pl.lit("low"))
        .otherwise(pl.lit("zero"))
    )


def pilot_sample(judgments: pl.DataFrame, size: int, seed: int, lenient: int, strict: int) -> pl.DataFrame:
    """``size`` labelled pairs stratified by tier and main-judge score band.

    Strata are visited in sorted order taking one pair at a time from each (so
    rare high-score strata are represented), each stratum in an order shuffled
    with a seed derived from ``seed`` and the stratum name alone: adding pairs to
    one stratum does not reshuffle the others. ``judgments`` needs query_id,
    chunk_id, tier, score.
    """
    schema = {"query_id": pl.String, "chunk_id": pl.String, "tier": pl.String, "score": pl.Int8, "band": pl.String}
    df = (
        judgments.select("query_id", "chunk_id", "tier", "score")
        .with_columns(band=score_band(pl.col("score"), lenient, strict))
        .cast(schema)
    )
    return round_robin_sample(df, ["tier", "band"], ["query_id", "chunk_id"], size, seed)


def stored_judges(store: Store) -> pl.DataFrame:
    """The distinct (judge_model, judge_identity) of the stored judgments."""
    return store.query('SELECT DISTINCT judge_model, judge_identity FROM "judgments" ORDER BY ALL')


def same_judge_reason(main: pl.DataFrame, reference: pl.DataFrame) -> str | None:
    """Why the reference labels are no second opinion (None when they are one).

    Both frames carry judge_model and judge_identity (endpoint + model + decoding); the
    reference frame holds the reference stage's labelled rows. A shared identity means
    the reference stage reused (or would reproduce) the judge's own answers.
    """
    ref = reference.filter(pl.col("judge_identity").is_not_null())
    shared = set(main.get_column("judge_identity").drop_nulls()) & set(ref.get_column("judge_identity"))
    if not shared:
        return None
    identity = sorted(shared)[0]
    model = ref.filter(pl.col("judge_identity") == identity).get_column("judge_model")[0]
    return (
        f"not a reliability figure: the reference judge is the judge itself (model {model}, identity {identity}: "
        "same endpoint, model and decoding, so it got the judge's own cached labels); give the reference another "
        "seed or temperature (a self-consistency audit) or another model (cross-model agreement) and "
        "re-materialise reference_judgments"
    )


def _kappa(table: np.ndarray, wt: str) -> float | None:
    from statsmodels.stats.inter_rater import cohens_kappa

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a one-level table has undefined kappa
        value = float(cohens_kappa(table, wt=wt).kappa)
    return None if np.isnan(value) else value


def agreement(
    main: pl.DataFrame, reference: pl.DataFrame, lenient: int, strict: int
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Agreement of two judges on the pairs both labelled.

    Returns (metrics: metric, value, pairs) and the 7x7 score confusion table
    (rows: main judge score, columns ``ref_0``..``ref_6``: reference judge score).
    Per-dimension agreement on D2..D4 is over pairs both judges put on topic.
    """
    both = main.select(COMPARED).join(reference.select(COMPARED), on=["query_id", "chunk_id"], suffix="_ref")
    a = both.get_column("score").to_numpy().astype(int)
    b = both.get_column("score_ref").to_numpy().astype(int)
    n = len(a)
    from statsmodels.stats.inter_rater import to_table

    table = to_table(np.column_stack([a, b]), bins=SCORES)[0] if n else np.zeros((SCORES, SCORES))

    def rate(mask: np.ndarray) -> float | None:
        return float(mask.mean()) if mask.size else None

    rows = [
        ("lenient_agreement", rate((a >= lenient) == (b >= lenient)), n),
        ("strict_agreement", rate((a >= strict) == (b >= strict)), n),
        ("exact_score_agreement", rate(a == b), n),
        ("within_one_point", rate(np.abs(a - b) <= 1), n),
        ("weighted_kappa_linear", _kappa(table, "linear") if n else None, n),
        ("weighted_kappa_quadratic", _kappa(table, "quadratic") if n else None, n),
        (
            "d1_topic_agreement",
            rate(both.get_column("d1_topic").to_numpy() == both.get_column("d1_topic_ref").to_numpy()),
            n,
        ),
    ]
    on_topic = both.filter(pl.col("d1_topic") & pl.col("d1_topic_ref"))
    for dim in GRADES:
        x, y = on_topic.get_column(dim).to_numpy(), on_topic.get_column(f"{dim}_ref").to_numpy()
        rows.append((f"{dim}_agreement", rate(x == y), on_topic.height))
    metrics = pl.DataFrame(rows, schema={"metric": pl.String, "value": pl.Float64, "pairs": pl.Int64}, orient="row")
    confusion = pl.DataFrame(
        {"main_score": list(range(SCORES)), **{f"ref_{j}": table[:, j].astype(np.int64) for j in range(SCORES)}}
    )
    return metrics, confusion


def reference_audits(
    main: pl.DataFrame, reference: pl.DataFrame, lenient: int, strict: int, judges: pl.DataFrame | None = None
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """:func:`agreement` of the judge with each reference stage, each named by what it measures.

    ``reference`` is the reference stages' outcomes (labelled or failed) with columns
    reference_stage and reference_model. Both tables gain those two and audit:
    ``self_consistency`` when the reference ran one of the judge's models, else
    ``cross_model``. Metrics also gain note; their values are null (the note says why)
    when the reference is the judge itself. ``judges`` (judge_model, judge_identity) names every model and
    identity of the judge's labels (default: ``main``'s), so ``main`` may hold the compared pairs alone.
    """
    judges = main if judges is None else judges
    models = set(judges.get_column("judge_model").drop_nulls())
    metric_frames, confusion_frames = [], []
    for stage, model in reference.select("reference_stage", "reference_model").unique(maintain_order=True).iter_rows():
        rows = reference.filter((pl.col("reference_stage") == stage) & (pl.col("status") == "labelled"))
        metrics, confusion = agreement(main, rows, lenient, strict)
        refused = same_judge_reason(judges, rows)
        label = [
            pl.lit(stage).alias("reference_stage"),
            pl.lit(audit_kind(models, model)).alias("audit"),
            pl.lit(model).alias("reference_model"),
        ]
        metrics = metrics.with_columns(note=pl.lit(refused, pl.String))
        if refused:  # the same judge twice measures nothing: no agreement value is presented
            metrics = metrics.with_columns(value=pl.lit(None, pl.Float64))
        metric_frames.append(metrics.select(*label, pl.all()))
        confusion_frames.append(confusion.select(*label, pl.all()))
    if not metric_frames:  # an empty pilot sample: nothing was compared
        metrics, confusion = agreement(main.clear(), main.clear(), lenient, strict)
        label = [pl.lit(None, pl.String).alias(c) for c in ("reference_stage", "audit", "reference_model")]
        return (
            metrics.clear().select(*label, pl.all(), note=pl.lit(None, pl.String)),
            confusion.clear().select(*label, pl.all()),
        )
    return pl.concat(metric_frames), pl.concat(confusion_frames)
