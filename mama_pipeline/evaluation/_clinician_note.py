"""The evaluation report's line on clinician validation, read from the clinician area's stored agreement table.

The clinician area sits above evaluation (its corrected estimates use evaluation's measures), so this module
reads the ``clinician_agreement`` table by name and owns the name of the comparison against the clinicians'
majority, which :mod:`mama_pipeline.clinician._clinician_agreement` writes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

if TYPE_CHECKING:
    from mama_pipeline.store import Store

AGREEMENT_TABLE = "clinician_agreement"  # asset and table other reports read
LABELS_TABLE = "clinician_labels"  # the labels the agreement rests on, each with its ``synthetic`` mark
MAJORITY = "majority"  # the comparison against the clinicians' majority label


def _fmt(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.3f}"


def summary_note(metrics: pl.DataFrame, synthetic: bool = False) -> str | None:
    """One line for other reports: the judge against the clinicians' majority (``synthetic``: any label behind it
    was made up, and the line says SYNTHETIC annotators)."""
    m = {
        r["metric"]: r
        for r in metrics.filter((pl.col("kind") == "relevance") & (pl.col("comparison") == MAJORITY)).to_dicts()
    }
    if not m or not m["lenient_agreement"]["pairs"]:
        return None
    who, what = (
        ("SYNTHETIC annotators' majority (made up, not clinicians)", "Validation against SYNTHETIC annotators")
        if synthetic
        else ("clinicians' majority", "Clinician validation")
    )
    return (
        f"{what}: on {m['lenient_agreement']['pairs']} pairs the judge agrees with the {who} "
        f"at the lenient cut on {_fmt(m['lenient_agreement']['value'])}, at the strict cut on "
        f"{_fmt(m['strict_agreement']['value'])}, exact score {_fmt(m['exact_score_agreement']['value'])} "
        "(reports/clinician/agreement.html)."
    )


def clinician_notes(store: Store) -> list[str]:
    """Lines for other reports (none before the clinician agreement exists or when nothing was compared)."""
    if not store.table_exists(AGREEMENT_TABLE):
        return []
    synthetic = store.table_exists(LABELS_TABLE) and bool(store.read_table(LABELS_TABLE)["synthetic"].any())
    note = summary_note(store.read_table(AGREEMENT_TABLE), synthetic)
    return [note] if note else []
