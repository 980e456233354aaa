"""Agreement of a rater (the candidate judge, or one physician) with physicians.

Figures follow HealthBench's meta-evaluation: every (rater label, reference
physician label) pair on the same row counts once. Macro-F1 and balanced
accuracy come from ``sklearn.metrics`` (``f1_score(average="macro")``,
``balanced_accuracy_score``) over those pairs; met-rates and agreement shares
are plain proportions. A figure whose denominator is empty is ``None``.

- ``agree_on_met``: share of pairs whose physician label is MET where the rater
  said MET too (recall of MET); ``agree_on_not_met`` likewise for NOT-MET.
- ``consensus_*``: rows where at least two reference physicians gave labels and
  all agree; the share where the rater gives that same label.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass

import numpy as np
import polars as pl

from mama_pipeline.store.table_schema import table_schema

MIN_CONSENSUS_RATERS = 2
ALL = "ALL"
JUDGE = "judge"
PHYSICIANS_POOLED = "physicians_pooled"


@dataclass(frozen=True)
class Agreement:
    rows: int
    pairs: int
    met_rate: float | None  # the rater's share of MET labels
    reference_met_rate: float | None  # the reference physicians' share of MET labels, same rows
    met_pairs: int
    agree_on_met: float | None
    not_met_pairs: int
    agree_on_not_met: float | None
    consensus_rows: int
    consensus_agreement: float | None
    macro_f1: float | None
    balanced_accuracy: float | None


REPORT_SCHEMA = table_schema("calibration_harness_report")


def _share(mask: np.ndarray) -> float | None:
    return float(mask.mean()) if mask.size else None


def agreement(labels: Sequence[bool], reference: Sequence[Sequence[bool]]) -> Agreement:
    """Agreement of ``labels`` (one per row) with the reference labels of each row."""
    if len(labels) != len(reference):
        raise ValueError(f"{len(labels)} rater labels for {len(reference)} rows of reference labels")
    if any(len(ref) == 0 for ref in reference):
        raise ValueError("every row needs at least one reference label")
    own = np.asarray(labels, dtype=bool)
    y_pred = np.asarray([s for s, ref in zip(labels, reference) for _ in ref], dtype=bool)
    y_true = np.asarray([r for ref in reference for r in ref], dtype=bool)
    consensus = [
        (s, ref[0])
        for s, ref in zip(labels, reference)
        if len(ref) >= MIN_CONSENSUS_RATERS and all(r == ref[0] for r in ref)
    ]
    cons = np.asarray([s == c for s, c in consensus], dtype=bool)
    return Agreement(
        rows=len(own),
        pairs=len(y_true),
        met_rate=_share(own),
        reference_met_rate=_share(y_true),
        met_pairs=int(y_true.sum()),
        agree_on_met=_share(y_pred[y_true]),
        not_met_pairs=int((~y_true).sum()),
        agree_on_not_met=_share(~y_pred[~y_true]),
        consensus_rows=len(consensus),
        consensus_agreement=_share(cons),
        macro_f1=_macro_f1(y_true, y_pred),
        balanced_accuracy=_balanced_accuracy(y_true, y_pred),
    )


def _macro_f1(y_true: np.ndarray, y_pred: np.ndarray) -> float | None:
    """Mean of the MET and NOT-MET F1; None when a class appears in neither labels."""
    present = set(y_true.tolist()) | set(y_pred.tolist())
    if present != {True, False}:
        return None
    from sklearn.metrics import f1_score

    return float(f1_score(y_true, y_pred, labels=[False, True], average="macro"))


def _balanced_accuracy(y_true: np.ndarray, y_pred: np.ndarray) -> float | None:
    """Mean of agreement on MET and on NOT-MET pairs; None unless both occur."""
    if set(y_true.tolist()) != {True, False}:
        return None
    from sklearn.metrics import balanced_accuracy_score

    return float(balanced_accuracy_score(y_true, y_pred))


def physician_views(rows: pl.DataFrame) -> dict[str, tuple[list[bool], list[list[bool]]]]:
    """Per physician: their label on each row they rated, and the other physicians' labels.

    Rows the physician rated alone have nothing to compare with and are skipped.
    """
    views: dict[str, tuple[list[bool], list[list[bool]]]] = {}
    for labels, ids in zip(rows["binary_labels"].to_list(), rows["anonymized_physician_ids"].to_list()):
        for i, pid in enumerate(ids):
            others = labels[:i] + labels[i + 1 :]
            if others:
                own, refs = views.setdefault(pid, ([], []))
                own.append(labels[i])
                refs.append(others)
    return dict(sorted(views.items()))


def _report_rows(judged: pl.DataFrame, category: str) -> Iterable[dict]:
    refs = judged["binary_labels"].to_list()
    if refs:
        yield {
            "rater": JUDGE,
            "rater_kind": "judge",
            "scope_category": category,
            **asdict(agreement(judged["criteria_met"].to_list(), refs)),
        }
    views = physician_views(judged)
    pooled_own = [label for own, _ in views.values() for label in own]
    pooled_refs = [ref for _, refs_ in views.values() for ref in refs_]
    if pooled_own:
        yield {
            "rater": PHYSICIANS_POOLED,
            "rater_kind": "physician",
            "scope_category": category,
            **asdict(agreement(pooled_own, pooled_refs)),
        }
    for pid, (own, refs_) in views.items():
        yield {
            "rater": f"physician:{pid}",
            "rater_kind": "physician",
            "scope_category": category,
            **asdict(agreement(own, refs_)),
        }


def harness_report(judged: pl.DataFrame, categories: Sequence[str]) -> pl.DataFrame:
    """Judge and physician-baseline agreement, over all rows and per scope category.

    ``judged`` holds one row per side-file row the judge answered: ``criteria_met``
    (bool, never null), ``binary_labels``, ``anonymized_physician_ids``,
    ``scope_category``. Baseline figures use the same rows as the judge's.
    """
    if judged["criteria_met"].null_count():
        raise ValueError("judged rows must not contain null criteria_met (failed calls are excluded upstream)")
    out = list(_report_rows(judged, ALL))
    for cat in categories:
        out.extend(_report_rows(judged.filter(pl.col("scope_category") == cat), cat))
    return pl.DataFrame(out, schema=REPORT_SCHEMA)
