"""The LLM judges measured against the annotators (clinicians, or the demo's made-up ones), and the annotators against
each other. The figures carry no provenance of their own: the pages and cards that show them judge it on the labels
(``clinician_labels``) they are computed from, and name SYNTHETIC annotators so.

Relevance: the judge against each clinician and against the clinicians'
majority, with the figures of the reference-judge check
(:func:`mama_pipeline.judging._reliability.agreement`: lenient and strict cut
agreement, exact score, within one point, linear and quadratic weighted kappa,
per-dimension agreement, the 7x7 confusion table). Scope: the classifier
against each clinician and the majority (exact agreement, in-scope vs NONE
agreement, Cohen's kappa, confusion). Between annotators: Krippendorff's alpha
(the ``krippendorff`` package) on the score (ordinal), D1 (nominal), D2-D4
(ordinal, over annotations that put the pair on topic) and the scope category
(nominal).
"""

from __future__ import annotations

import numpy as np
import polars as pl

from mama_pipeline.clinician._labelling_config import CATEGORIES
from mama_pipeline.evaluation import MAJORITY
from mama_pipeline.judging import GRADES, RUBRIC_LABEL, SCORES, agreement
from mama_pipeline.store.table_schema import table_schema

METRIC_SCHEMA = table_schema("clinician_agreement")
CONFUSION_SCHEMA = table_schema("clinician_confusion")
ANNOTATORS = "annotators"
# what the agreement reads of a label (the judge's and a clinician's alike)
AGREEMENT_COLUMNS = ["query_id", "chunk_id", *RUBRIC_LABEL]


def comparison_name(annotator: str) -> str:
    return f"annotator {annotator}"


def _alpha(data: np.ndarray, level: str, domain: list[int]) -> float | None:
    """Krippendorff's alpha; None when undefined (fewer than two values, or no unit coded twice)."""
    import krippendorff

    pairable = (np.sum(~np.isnan(data), axis=0) >= 2).sum() if data.size else 0
    if not pairable:
        return None
    try:
        with np.errstate(divide="ignore", invalid="ignore"):  # 0/0 when every value is the same: undefined
            value = float(krippendorff.alpha(reliability_data=data, level_of_measurement=level, value_domain=domain))
    except ValueError:  # one value only in the data: agreement is undefined, not perfect
        return None
    return None if np.isnan(value) else value


def _matrix(labels: pl.DataFrame, column: str) -> tuple[np.ndarray, int]:
    """Annotators x tasks matrix of a numeric column (NaN where not coded); tasks coded at least twice."""
    wide = (
        labels.select("task_key", "annotator_id", pl.col(column).cast(pl.Float64)).pivot(
            on="task_key", index="annotator_id", values=column
        )
        if labels.height
        else None
    )
    if wide is None:
        return np.empty((0, 0)), 0
    data = wide.drop("annotator_id").to_numpy().astype(float)
    return data, int((np.sum(~np.isnan(data), axis=0) >= 2).sum())


def _confusion_rows(kind: str, comparison: str, wide: pl.DataFrame) -> list[dict]:
    rows = []
    for r in wide.iter_rows(named=True):
        for col, n in r.items():
            if col.startswith("ref_"):
                rows.append(
                    {
                        "kind": kind,
                        "comparison": comparison,
                        "llm": str(r["main_score"]),
                        "clinician": col[4:],
                        "count": int(n),
                    }
                )
    return rows


def relevance_agreement(
    judgments: pl.DataFrame, labels: pl.DataFrame, majority: pl.DataFrame, lenient: int, strict: int
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(metrics, confusion) of the judge against each clinician and the majority, plus inter-annotator alpha."""
    usable = labels.filter((pl.col("kind") == "relevance") & (pl.col("status") == "labelled"))
    metrics, confusion = [], []
    against = [(comparison_name(a), g) for (a,), g in sorted(usable.group_by("annotator_id"), key=lambda kv: kv[0][0])]
    against.append((MAJORITY, majority.filter((pl.col("kind") == "relevance") & ~pl.col("tie"))))
    for name, ref in against:
        m, c = agreement(judgments, ref.select(AGREEMENT_COLUMNS), lenient, strict)
        metrics += [{"kind": "relevance", "comparison": name, **r} for r in m.to_dicts()]
        confusion += _confusion_rows("relevance", name, c)
    on_topic = usable.with_columns([pl.when(pl.col("d1_topic")).then(pl.col(d)).alias(d) for d in GRADES])
    for column, level, domain in (
        ("score", "ordinal", list(range(SCORES))),
        ("d1_topic", "nominal", [0, 1]),
        *((d, "ordinal", [0, 1, 2]) for d in GRADES),
    ):
        data, units = _matrix(on_topic, column)
        metrics.append(
            {
                "kind": "relevance",
                "comparison": ANNOTATORS,
                "metric": f"krippendorff_alpha_{column}",
                "value": _alpha(data, level, domain),
                "pairs": units,
            }
        )
    return pl.DataFrame(metrics, schema=METRIC_SCHEMA), pl.DataFrame(confusion, schema=CONFUSION_SCHEMA)


def _kappa(a: list[str], b: list[str]) -> float | None:
    from statsmodels.stats.inter_rater import cohens_kappa

    idx = {c: i for i, c in enumerate(CATEGORIES)}
    table = np.zeros((len(CATEGORIES), len(CATEGORIES)))
    for x, y in zip(a, b):
        table[idx[x], idx[y]] += 1
    if not a:
        return None
    with np.errstate(divide="ignore", invalid="ignore"):
        value = float(cohens_kappa(table).kappa)
    return value if np.isfinite(value) else None  # undefined when both sides use one and the same category


def scope_agreement(
    verdicts: pl.DataFrame, labels: pl.DataFrame, majority: pl.DataFrame
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(metrics, confusion) of the scope classifier against each clinician and the majority, plus alpha."""
    llm = verdicts.filter((pl.col("via") == "classifier") & (pl.col("status") == "ok")).select(
        "item_id", pl.col("category").alias("llm")
    )
    usable = labels.filter((pl.col("kind") == "scope") & (pl.col("status") == "labelled"))
    against = [(comparison_name(a), g) for (a,), g in sorted(usable.group_by("annotator_id"), key=lambda kv: kv[0][0])]
    against.append((MAJORITY, majority.filter((pl.col("kind") == "scope") & ~pl.col("tie"))))
    metrics, confusion = [], []
    for name, ref in against:
        both = llm.join(ref.select("item_id", pl.col("category").alias("clinician")), on="item_id")
        a, b = both["llm"].to_list(), both["clinician"].to_list()
        n = len(a)
        exact = sum(x == y for x, y in zip(a, b)) / n if n else None
        in_scope = sum((x == "NONE") == (y == "NONE") for x, y in zip(a, b)) / n if n else None
        metrics += [
            {"kind": "scope", "comparison": name, "metric": "category_agreement", "value": exact, "pairs": n},
            {"kind": "scope", "comparison": name, "metric": "in_scope_agreement", "value": in_scope, "pairs": n},
            {"kind": "scope", "comparison": name, "metric": "cohens_kappa", "value": _kappa(a, b), "pairs": n},
        ]
        counts = both.group_by("llm", "clinician").len()
        confusion += [
            {"kind": "scope", "comparison": name, "llm": x, "clinician": y, "count": int(k)}
            for x, y, k in counts.sort("llm", "clinician").iter_rows()
        ]
    coded = usable.with_columns(
        pl.col("category").replace_strict({c: i for i, c in enumerate(CATEGORIES)}, return_dtype=pl.Int64).alias("code")
    )
    data, units = _matrix(coded, "code")
    metrics.append(
        {
            "kind": "scope",
            "comparison": ANNOTATORS,
            "metric": "krippendorff_alpha_category",
            "value": _alpha(data, "nominal", list(range(len(CATEGORIES)))),
            "pairs": units,
        }
    )
    return pl.DataFrame(metrics, schema=METRIC_SCHEMA), pl.DataFrame(confusion, schema=CONFUSION_SCHEMA)
